// Many callers at once: no duplicate, no gap, no failure on concurrent first use.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('concurrency');
});
after(async () => {
  await env?.close();
});

test('500 concurrent calls on one name give exactly 1..500', async () => {
  await env.db.collection('counters').insertOne({ _id: 'hot', sequence_value: 0 });
  const values = await Promise.all(Array.from({ length: 500 }, () => seq.getNextSequenceValue(env.db, 'hot')));
  const sorted = [...values].sort((a, b) => a - b);
  assert.deepEqual(
    sorted,
    Array.from({ length: 500 }, (_, i) => i + 1),
  );
  assert.equal((await env.db.collection('counters').findOne({ _id: 'hot' })).sequence_value, 500);
});

test('100 new names used concurrently with upsert: no error, no duplicate', async () => {
  const names = Array.from({ length: 100 }, (_, i) => `new_${i}`);
  // Five callers per name race to create it.
  const calls = names.flatMap((name) => Array.from({ length: 5 }, () => seq.getNextSequenceValue(env.db, name, { upsert: true }).then((v) => [name, v])));
  const results = await Promise.all(calls);
  const byName = new Map();
  for (const [name, v] of results) byName.set(name, [...(byName.get(name) ?? []), v]);
  assert.equal(byName.size, 100);
  for (const [name, values] of byName) {
    assert.deepEqual(
      values.sort((a, b) => a - b),
      [1, 2, 3, 4, 5],
      name,
    );
  }
  assert.equal(await env.db.collection('counters').countDocuments({ _id: { $in: names } }), 100);
});

test('batches and single calls mixed concurrently stay disjoint and gapless', async () => {
  await env.db.collection('counters').insertOne({ _id: 'mixed', sequence_value: 0 });
  const calls = [];
  for (let i = 0; i < 50; i++) {
    calls.push(seq.getNextSequenceValue(env.db, 'mixed').then((v) => [v]));
    calls.push(seq.getNextSequenceBatch(env.db, 'mixed', 7));
    calls.push(
      seq.getNextSequenceRange(env.db, 'mixed', 3).then(({ first, last }) => {
        const out = [];
        for (let v = first; v <= last; v++) out.push(v);
        return out;
      }),
    );
  }
  const all = (await Promise.all(calls)).flat().sort((a, b) => a - b);
  assert.equal(all.length, 50 * 11);
  assert.deepEqual(
    all,
    Array.from({ length: 550 }, (_, i) => i + 1),
  );
});
