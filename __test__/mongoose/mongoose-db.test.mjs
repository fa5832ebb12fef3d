// mongoose.connection.db is a Node driver Db: the functions accept it as it is.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import mongoose from 'mongoose';
import { setup, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('mongoose');
  await mongoose.connect(env.uri, { dbName: env.dbName, serverSelectionTimeoutMS: 10_000 });
});
after(async () => {
  await mongoose.disconnect();
  await seq.closeSharedClients();
  await env?.close();
});

test('ids for mongoose documents, including insertMany, from mongoose.connection.db', async () => {
  const Invoice = mongoose.model('Invoice', new mongoose.Schema({ _id: Number, total: Number }));
  const db = mongoose.connection.db;
  const first = await seq.getNextSequenceValue(db, 'invoices', { upsert: true });
  await Invoice.create({ _id: first, total: 10 });
  // insertMany gets its ids too: one round trip for the whole batch.
  const ids = await seq.getNextSequenceBatch(db, 'invoices', 3, { upsert: true });
  await Invoice.insertMany(ids.map((_id, i) => ({ _id, total: 20 + i })));
  const stored = await Invoice.find().sort({ _id: 1 }).lean();
  assert.deepEqual(
    stored.map((d) => d._id),
    [1, 2, 3, 4],
  );
  assert.equal((await env.db.collection('counters').findOne({ _id: 'invoices' })).sequence_value, 4);
});
