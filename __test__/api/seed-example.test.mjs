// The seed's Node example, step by step, with the package in place of the hand-written
// helper; and the helper itself run side by side to show the results are the same.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';
import { helperGetNextSequenceValue } from '../../scripts/lib/documented-helper.mjs';

let env;
before(async () => {
  env = await setup('my_app_db');
});
after(async () => {
  await env?.close();
});

test('seed example: initialise, two ids, two products read back', async () => {
  const db = env.db; // use my_app_db
  await db.collection('counters').insertOne({ _id: 'productId', sequence_value: 0 });

  const first = await seq.getNextSequenceValue(db, 'productId');
  const second = await seq.getNextSequenceValue(db, 'productId');
  assert.equal(first, 1);
  assert.equal(second, 2);

  await db.collection('products').insertOne({ _id: first, name: 'Laptop', price: 1200 });
  await db.collection('products').insertOne({ _id: second, name: 'Mouse', price: 25 });
  const products = await db.collection('products').find().sort({ _id: 1 }).toArray();
  assert.deepEqual(products, [
    { _id: 1, name: 'Laptop', price: 1200 },
    { _id: 2, name: 'Mouse', price: 25 },
  ]);
  const counter = await db.collection('counters').findOne({ _id: 'productId' });
  assert.equal(counter.sequence_value, 2);
});

test('same results and same error as the documented helper', async () => {
  const db = env.db;
  await db.collection('counters').insertMany([
    { _id: 'helper', sequence_value: 41 },
    { _id: 'ours', sequence_value: 41 },
  ]);
  for (let i = 0; i < 5; i++) {
    assert.equal(await seq.getNextSequenceValue(db, 'ours'), await helperGetNextSequenceValue(db, 'helper'));
  }
  const helperError = await helperGetNextSequenceValue(db, 'missing').catch((e) => e);
  const ours = await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'missing'), 'SEQUENCE_NOT_FOUND');
  assert.equal(ours.message, helperError.message);
  assert.equal(ours.message, "Sequence 'missing' not found. Please initialize it.");
  assert.equal(await db.collection('counters').countDocuments({ _id: 'missing' }), 0, 'nothing created');
});

test('upsert variant: seq_value on posts, created on first use', async () => {
  const db = env.db;
  const options = { field: 'seq_value', upsert: true };
  const a = await seq.getNextSequenceValue(db, 'posts', options);
  const b = await seq.getNextSequenceValue(db, 'posts', options);
  assert.deepEqual([a, b], [1, 2]);
  await db.collection('posts').insertMany([
    { _id: a, title: 'Hello' },
    { _id: b, title: 'World' },
  ]);
  assert.deepEqual(
    (await db.collection('posts').find().sort({ _id: 1 }).toArray()).map((p) => p._id),
    [1, 2],
  );
  const counter = await db.collection('counters').findOne({ _id: 'posts' });
  assert.deepEqual(counter, { _id: 'posts', seq_value: 2 });
});

test('upsert with start and a custom collection', async () => {
  const db = env.db;
  const options = { collection: 'my_counters', field: 'seq', upsert: true, start: 1000 };
  assert.equal(await seq.getNextSequenceValue(db, 'orders', options), 1000);
  assert.equal(await seq.getNextSequenceValue(db, 'orders', options), 1001);
  assert.deepEqual(await db.collection('my_counters').findOne({ _id: 'orders' }), { _id: 'orders', seq: 1001 });
});

test('batch variant: getIdBatch(ticket_id, 100) in one call', async () => {
  const db = env.db;
  await db.collection('counters').insertOne({ _id: 'ticket_id', sequence_value: 500 });
  const ids = await seq.getNextSequenceBatch(db, 'ticket_id', 100);
  assert.equal(ids.length, 100);
  assert.deepEqual(
    ids,
    Array.from({ length: 100 }, (_, i) => 501 + i),
  );
  const counter = await db.collection('counters').findOne({ _id: 'ticket_id' });
  assert.equal(counter.sequence_value, 600, 'advanced by exactly 100');

  const range = await seq.getNextSequenceRange(db, 'ticket_id', 1_000_000);
  assert.deepEqual(range, { first: 601, last: 1_000_600, count: 1_000_000, step: 1 });
  assert.equal((await db.collection('counters').findOne({ _id: 'ticket_id' })).sequence_value, 1_000_600);
});

test('ESM import gives the same functions as require', async () => {
  const esm = await import('mongodb-sequence');
  assert.equal(typeof esm.getNextSequenceValue, 'function');
  assert.equal(esm.getNextSequenceValue, seq.getNextSequenceValue);
  assert.equal(esm.getNextSequenceBatch, seq.getNextSequenceBatch);
  assert.equal(esm.connect, seq.connect);
});
