// Concurrent insertOne calls get their numbers in the order they were made, as
// getNextSequenceValue does (both with coalescing, the default, and with `cache`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('insorder');
});
after(async () => {
  await env?.close();
});

const ascending = (values) => values.every((v, i) => i === 0 || v > values[i - 1]);

for (const [label, options] of [
  ['coalesced (default)', {}],
  ['cached', { cache: 4 }],
]) {
  test(`concurrent insertOne calls are numbered in call order: ${label}`, async () => {
    const collection = `order_${label.split(' ')[0]}`;
    // The first call opens the client; later rounds find it open.
    for (let round = 0; round < 12; round++) {
      const docs = Array.from({ length: 8 }, (_, i) => ({ round, i }));
      const results = await Promise.all(docs.map((doc) => seq.insertOne(env.db, collection, doc, options)));
      const ids = results.map((r) => r.insertedId);
      assert.deepEqual(ids, docs.map((d) => d._id), 'each document carries its own number');
      assert.ok(ascending(ids), `round ${round}: ${ids.join(', ')}`);
    }
    // Mixed with insertMany and getNextSequenceValue on the same counter with the same
    // options (inserts create the counter on first use, so upsert: true): one order.
    const calls = [];
    for (let i = 0; i < 8; i++) {
      if (i % 3 === 0) calls.push(seq.getNextSequenceValue(env.db, collection, { ...options, upsert: true }).then((v) => [v]));
      else if (i % 3 === 1) calls.push(seq.insertMany(env.db, collection, [{ m: i }, { m: i }], options).then((r) => Object.values(r.insertedIds)));
      else calls.push(seq.insertOne(env.db, collection, { m: i }, options).then((r) => [r.insertedId]));
    }
    const flat = (await Promise.all(calls)).flat();
    assert.ok(ascending(flat), flat.join(', '));
    const stored = await env.db.collection(collection).find({}, { projection: { _id: 1 } }).toArray();
    assert.equal(new Set(stored.map((d) => d._id)).size, stored.length, 'no number twice');
  });
}
