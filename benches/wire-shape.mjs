// What goes on the wire for a default call and a `coalesce: false` call of the same kind
// of counter: a relay in this process decodes every OP_MSG both ways. Prints each side's
// requests and replies with the parts that change from call to call (the counter's
// `_id`, `txnNumber`, `$clusterTime`, values) blanked, and whether the two sides' shapes
// and sizes are the same.
//   node benches/wire-shape.mjs [mongoeco|secantus]
import { createServer, connect } from 'node:net';
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
import { deserialize } from 'bson';
import { startServer } from '../scripts/lib/test-server.mjs';
const require = createRequire(import.meta.url);
const seq = require('../index.js');
const kind = process.argv[2] || 'secantus';
const server = await startServer({ kind });
const { port } = new URL(server.uri);
const log = [];
let tag = '';
const parse = (buf) => {
  const out = [];
  let off = 0;
  while (off + 16 <= buf.length) {
    const len = buf.readInt32LE(off);
    if (off + len > buf.length) break;
    const op = buf.readInt32LE(off + 12);
    const msg = { len, op, req: buf.readInt32LE(off + 4), to: buf.readInt32LE(off + 8), docs: [] };
    if (op === 2013) {
      let p = off + 20;
      while (p < off + len) {
        const k = buf[p++];
        if (k === 0) {
          const n = buf.readInt32LE(p);
          msg.docs.push(deserialize(buf.subarray(p, p + n)));
          p += n;
        } else {
          const n = buf.readInt32LE(p);
          msg.docs.push({ seq: buf.subarray(p + 4, p + n).toString('latin1') });
          p += n;
        }
      }
    }
    out.push(msg);
    off += len;
  }
  return [out, buf.subarray(off)];
};
const relay = createServer((c) => {
  const up = connect({ host: '127.0.0.1', port: Number(port) });
  c.setNoDelay(true);
  up.setNoDelay(true);
  let a = Buffer.alloc(0),
    b = Buffer.alloc(0);
  c.on('data', (d) => {
    up.write(d);
    let m;
    [m, a] = parse(Buffer.concat([a, d]));
    for (const x of m) log.push({ tag, dir: 'out', ...x });
  });
  up.on('data', (d) => {
    c.write(d);
    let m;
    [m, b] = parse(Buffer.concat([b, d]));
    for (const x of m) log.push({ tag, dir: 'in', ...x });
  });
  c.on('error', () => {});
  up.on('error', () => {});
  c.on('close', () => up.destroy());
  up.on('close', () => c.destroy());
});
await new Promise((r) => relay.listen(0, '127.0.0.1', r));
const uri = `mongodb://127.0.0.1:${relay.address().port}/?directConnection=true`;
const client = new MongoClient(uri);
await client.connect();
const db = client.db('wire');
await db.collection('counters').insertMany([
  { _id: 'a', sequence_value: 0 },
  { _id: 'b', sequence_value: 0 },
]);
for (let i = 0; i < 3; i++) {
  await seq.getNextSequenceValue(db, 'a');
  await seq.getNextSequenceValue(db, 'b', { coalesce: false });
}
log.length = 0;
for (let i = 0; i < 3; i++) {
  tag = 'default';
  await seq.getNextSequenceValue(db, 'a');
  tag = 'direct';
  await seq.getNextSequenceValue(db, 'b', { coalesce: false });
}
const blank = (key, value) => {
  if (typeof value === 'bigint') return 'n';
  if (['_id', 'txnNumber', '$clusterTime', 'operationTime', 'sequence_value', 'id'].includes(key) && typeof value !== 'object') return '*';
  if (key === '$clusterTime' || key === 'operationTime' || key === 'lsid') return '*';
  return value;
};
const shapes = { default: new Set(), direct: new Set() };
for (const m of log) shapes[m.tag].add(`${m.dir} ${m.len} bytes ${JSON.stringify(m.docs, blank)}`);
for (const [tag, set] of Object.entries(shapes)) for (const line of set) console.log(`${tag}: ${line}`);
const same = [...shapes.default].join() === [...shapes.direct].join();
console.log(`messages: default ${log.filter((m) => m.tag === 'default').length}, coalesce: false ${log.filter((m) => m.tag === 'direct').length}; same shapes and sizes: ${same}`);
await client.close();
await seq.closeSharedClients();
relay.close();
await server.stop();
