// listSequences reads only what it reports: the counters' `_id`, value and configuration
// fields travel (a projection in the find command), whatever else the documents hold.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { setup, seq } from '../helpers.mjs';
import { recordingProxy } from '../fixtures/security-lab.mjs';

let env;
let proxy;
let client;
before(async () => {
  env = await setup('list');
  proxy = await recordingProxy(env.address);
  client = new MongoClient(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`, { serverSelectionTimeoutMS: 5000 });
});
after(async () => {
  await seq.closeSharedClients();
  await client?.close();
  await proxy?.close();
  await env?.close();
});

test('listSequences projects the value and configuration fields, and lists every counter', { timeout: 60_000 }, async () => {
  const notes = 'n'.repeat(100_000);
  const counters = env.db.collection('counters');
  await counters.insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: `big${i}`, sequence_value: i, notes })));
  await seq.sequence(env.db, 'configured', {}).init({ start: 10, step: 2 });
  const db = client.db(env.dbName);
  proxy.clear();
  const listed = await seq.listSequences(db);
  assert.deepEqual(
    listed.map((e) => [e.name, e.value]),
    [
      ['big0', 0],
      ['big1', 1],
      ['big2', 2],
      ['big3', 3],
      ['big4', 4],
      ['configured', 8],
    ],
  );
  assert.equal(listed.find((e) => e.name === 'configured').step, 2);
  const find = proxy.commands().find((c) => c.find === 'counters');
  assert.ok(find, 'a find on the counters collection went through the proxy');
  assert.ok(find.projection, 'the find carries a projection');
  assert.equal(find.projection.sequence_value, 1);
  assert.equal(find.projection.notes, undefined);
  assert.ok(!Object.values(find.projection).includes(0), 'an inclusion projection: other fields never travel');
});

test('a counter past 2^53 - 1 is listed to a reader of numbers at 100 %, the others as they are', async () => {
  const { Long } = await import('mongodb');
  const coll = env.db.collection('past_safe');
  await coll.insertMany([
    { _id: 'big', sequence_value: Long.fromString('9007199254740993') },
    { _id: 'small', sequence_value: 7 },
  ]);
  const numbers = await seq.listSequences(env.db, { collection: 'past_safe' });
  const big = numbers.find((c) => c.name === 'big');
  assert.equal(typeof big.value, 'number');
  assert.equal(big.value, 9007199254740992, 'the nearest number');
  assert.equal(big.rangeKind, 'number');
  assert.equal(big.usedPercent, 100);
  assert.equal(numbers.find((c) => c.name === 'small').value, 7);
  const exact = await seq.listSequences(env.db, { collection: 'past_safe', bigint: true });
  assert.equal(exact.find((c) => c.name === 'big').value, 9007199254740993n);
});
