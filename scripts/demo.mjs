// The seed's example, end to end: `npm run demo`. Starts a local MongoDB-compatible
// server (unless MONGODB_URI is set), initialises a counter, takes two ids with
// getNextSequenceValue, inserts two products with them and prints them.
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
import { startServer } from './lib/test-server.mjs';

const require = createRequire(import.meta.url);
const { getNextSequenceValue, getNextSequenceBatch } = require('../index.js');

const log = (m) => console.log(m);
const started = Date.now();
const server = await startServer({ log });
const client = new MongoClient(server.uri);
const dbName = process.env.MONGODB_URI ? `my_app_db_demo_${process.pid}` : 'my_app_db';
try {
  await client.connect();
  const db = client.db(dbName); // use my_app_db
  await db.collection('counters').deleteOne({ _id: 'productId' });
  await db.collection('products').deleteMany({});
  await db.collection('counters').insertOne({ _id: 'productId', sequence_value: 0 });
  log(`[demo] counter initialised in ${dbName}.counters: { _id: 'productId', sequence_value: 0 }`);

  const id1 = await getNextSequenceValue(db, 'productId');
  const id2 = await getNextSequenceValue(db, 'productId');
  log(`[demo] getNextSequenceValue(db, 'productId') -> ${id1}, then ${id2}`);

  await db.collection('products').insertOne({ _id: id1, name: 'Laptop', price: 1200 });
  await db.collection('products').insertOne({ _id: id2, name: 'Mouse', price: 25 });
  const products = await db.collection('products').find().sort({ _id: 1 }).toArray();
  log('[demo] products:');
  for (const p of products) log(`  ${JSON.stringify(p)}`);

  const tickets = await getNextSequenceBatch(db, 'ticket_id', 5, { upsert: true });
  log(`[demo] getNextSequenceBatch(db, 'ticket_id', 5, { upsert: true }) -> [${tickets.join(', ')}]`);
  if (process.env.MONGODB_URI) await db.dropDatabase();
} finally {
  await client.close();
  await server.stop();
}
log(`[demo] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
