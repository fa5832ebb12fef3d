// Per-call cost of cached calls: a sequence() handle against the function form (same
// options object, and a new options object per call), against a local test server.
import { startServer } from '../scripts/lib/test-server.mjs';
import { MongoClient } from 'mongodb';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const seq = require('../index.js');
process.env.MONGO_SEQUENCE_SERVER ??= 'mongoeco';
const server = await startServer();
const client = await new MongoClient(server.uri).connect();
const db = client.db('cost');
const N = 200000;
const h = seq.sequence(db, 'h', { cache: 1000, upsert: true });
await h.next();
let t = process.hrtime.bigint();
for (let i = 0; i < N; i++) await h.next();
const handle = Number(process.hrtime.bigint() - t) / N;
const o = { cache: 1000, upsert: true };
await seq.getNextSequenceValue(db, 'f', o);
t = process.hrtime.bigint();
for (let i = 0; i < N; i++) await seq.getNextSequenceValue(db, 'f', o);
const fn = Number(process.hrtime.bigint() - t) / N;
t = process.hrtime.bigint();
for (let i = 0; i < N; i++) await seq.getNextSequenceValue(db, 'g', { cache: 1000, upsert: true });
const fresh = Number(process.hrtime.bigint() - t) / N;
console.log(`handle ${handle.toFixed(0)} ns/call, function ${fn.toFixed(0)} ns/call (same options object), ${fresh.toFixed(0)} ns/call (new options object each call); ratio ${(fn/handle).toFixed(2)} / ${(fresh/handle).toFixed(2)}`);
await client.close(); await seq.closeSharedClients(); await server.stop();
