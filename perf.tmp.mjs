import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
const require = createRequire(import.meta.url);
const seq = require('./index.js');
const uri = 'mongodb://127.0.0.1:37017/?directConnection=true';
const c = new MongoClient(uri); await c.connect();
const db = c.db('perf'); await db.dropDatabase();
const own = await seq.connect(uri);
const odb = own.db('perf');
for (const [label, d] of [['node Db', db], ['SequenceDb', odb]]) {
  await seq.getNextSequenceValue(d, 'cached', { upsert: true, cache: 1000 });
  let t0 = performance.now(); const N = 200000;
  for (let i = 0; i < N; i++) await seq.getNextSequenceValue(d, 'cached', { upsert: true, cache: 1000 });
  let ms = performance.now() - t0;
  console.log(label, 'sequential cached ids/s', Math.round(N / ms * 1000));
  t0 = performance.now();
  const vals = await Promise.all(Array.from({ length: N }, () => seq.getNextSequenceValue(d, 'cached', { upsert: true, cache: 1000 })));
  ms = performance.now() - t0;
  console.log(label, 'concurrent cached ids/s', Math.round(N / ms * 1000), new Set(vals).size);
}
for (const conc of [1, 8, 64, 256]) {
  await db.collection('counters').insertOne({ _id: 'c' + conc, sequence_value: 0 });
  const t0 = performance.now(); let n = 0;
  await Promise.all(Array.from({ length: conc }, async () => { while (performance.now() - t0 < 2000) { await seq.getNextSequenceValue(db, 'c' + conc); n++; } }));
  console.log('coalesced conc', conc, Math.round(n / (performance.now() - t0) * 1000), '/s');
}
await own.close(); await c.close();
{
const c2 = new MongoClient(uri); await c2.connect();
const db2 = c2.db('perf');
for (const [label, opts] of [['handle cache 1000', { upsert: true, cache: 1000 }]]) {
  const s = seq.sequence(db2, 'h', opts);
  await s.next();
  let t0 = performance.now(); const N = 1000000;
  for (let i = 0; i < N; i++) await s.next();
  let ms = performance.now() - t0;
  console.log(label, 'sequential ids/s', Math.round(N / ms * 1000));
  t0 = performance.now();
  const vals = await Promise.all(Array.from({ length: N }, () => s.next()));
  ms = performance.now() - t0;
  console.log(label, 'concurrent ids/s', Math.round(N / ms * 1000), new Set(vals).size);
}
await c2.close();
}
