// Per-call cost of cached calls: a sequence() handle against the function form (same
// options object, and a new options object per call), against a local test server.
//
//   node benches/call-cost.mjs
//       this checkout's addon, all three forms.
//   node benches/call-cost.mjs --sides A B [--rounds R] [--calls N]
//       two builds compared on cached handle calls, each side an addon (`x.node`) or a
//       package entry (`<checkout>/lib/entry.js`, as users load it): each round runs
//       each side in a fresh process against one server, in the order A, B, B, A, …
//       (both servers slow down as a run goes on), and each side's best round is kept.
//       The handles are made on `connect(uri)` databases, which every build takes (an
//       older build refuses a newer driver's MongoClient whose options it does not know).
//   node benches/call-cost.mjs --entry [--rounds R] [--calls N] [--subscribed]
//       the package entry's tracing wrapper (lib/entry.js) against the addon's own
//       method, in one process on one handle: rounds of N cached next() calls, native and
//       wrapped in the order A, B, B, A, …; `--subscribed` with a subscriber on
//       `tracing:mongodb-sequence:call` (empty handlers), else none.
import { startServer } from '../scripts/lib/test-server.mjs';
import { MongoClient } from 'mongodb';
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const require = createRequire(import.meta.url);
process.env.MONGO_SEQUENCE_SERVER ??= 'mongoeco';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};

/** One side's run in this process: ns per cached handle call over `calls` calls. */
async function handleCost(seq, uri, name, calls) {
  const client = await seq.connect(uri);
  const db = client.db('cost');
  const h = seq.sequence(db, name, { cache: 1000, upsert: true });
  for (let i = 0; i < 2000; i++) await h.next(); // warm-up
  const t = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await h.next();
  const ns = Number(process.hrtime.bigint() - t) / calls;
  await client.close();
  await seq.closeSharedClients();
  return ns;
}

const SIDE = process.env.CALL_COST_SIDE;
if (SIDE) {
  // A child of --sides: load that build and measure once.
  const seq = require(resolve(SIDE));
  const ns = await handleCost(seq, process.env.MONGODB_URI, process.env.CALL_COST_NAME, Number(process.env.CALL_COST_CALLS));
  process.stdout.write(JSON.stringify({ ns }));
} else if (process.argv.includes('--entry')) {
  const rounds = Number(arg('rounds', 20));
  const calls = Number(arg('calls', 50000));
  // The addon's method, taken before the entry wraps it on the prototype.
  const nativeNext = require('../index.js').Sequence.prototype.next;
  const seq = require('../lib/entry.js');
  if (process.argv.includes('--subscribed')) {
    const handlers = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {} };
    (await import('node:diagnostics_channel')).tracingChannel('mongodb-sequence:call').subscribe(handlers);
  }
  const server = await startServer();
  const client = await new MongoClient(server.uri).connect();
  const h = seq.sequence(client.db('cost'), 'entry', { cache: 1000, upsert: true });
  for (let i = 0; i < 20000; i++) {
    await nativeNext.call(h);
    await h.next();
  }
  const times = { native: [], wrapped: [] };
  const time = async (side, call) => {
    const t = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await call();
    times[side].push(Number(process.hrtime.bigint() - t) / calls);
  };
  for (let r = 0; r < rounds; r++) {
    const sides = [
      ['native', () => nativeNext.call(h)],
      ['wrapped', () => h.next()],
    ];
    if (r % 2 === 1) sides.reverse();
    for (const [side, call] of sides) await time(side, call);
  }
  await client.close();
  await seq.closeSharedClients();
  await server.stop();
  const median = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
  for (const side of ['native', 'wrapped']) {
    console.log(`${side}: best ${Math.min(...times[side]).toFixed(0)} ns/call, median ${median(times[side]).toFixed(0)}`);
  }
  const ratio = (f) => (f(times.wrapped) / f(times.native)).toFixed(3);
  console.log(`wrapped / native: best ${ratio((x) => Math.min(...x))}, median ${ratio(median)}`);
} else if (process.argv.includes('--sides')) {
  const i = process.argv.indexOf('--sides');
  const sides = [process.argv[i + 1], process.argv[i + 2]];
  const rounds = Number(arg('rounds', 6));
  const calls = Number(arg('calls', 200000));
  const server = await startServer();
  const self = fileURLToPath(import.meta.url);
  const once = (side, name) =>
    new Promise((done, fail) => {
      const child = spawn(process.execPath, [self], {
        env: { ...process.env, MONGODB_URI: server.uri, CALL_COST_SIDE: side, CALL_COST_NAME: name, CALL_COST_CALLS: String(calls) },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (code) => (code === 0 ? done(JSON.parse(out).ns) : fail(new Error(err))));
    });
  const best = [Infinity, Infinity];
  const all = [[], []];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const s of order) {
      const ns = await once(sides[s], `side${s}-round${r}`);
      all[s].push(ns);
      best[s] = Math.min(best[s], ns);
    }
  }
  await server.stop();
  for (const s of [0, 1]) {
    console.log(`${sides[s]}: best ${best[s].toFixed(0)} ns/call; rounds ${all[s].map((n) => n.toFixed(0)).join(' ')}`);
  }
  console.log(`B / A (best): ${(best[1] / best[0]).toFixed(3)}`);
} else {
  const seq = require('../index.js');
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
  console.log(
    `handle ${handle.toFixed(0)} ns/call, function ${fn.toFixed(0)} ns/call (same options object), ${fresh.toFixed(0)} ns/call (new options object each call); ratio ${(fn / handle).toFixed(2)} / ${(fresh / handle).toFixed(2)}`,
  );
  await client.close();
  await seq.closeSharedClients();
  await server.stop();
}
