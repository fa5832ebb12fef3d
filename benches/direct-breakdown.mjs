// `coalesce: false` against the default, split into client and server time: the relay of
// latency-breakdown.mjs (a child process) stamps each findAndModify request and reply,
// so each awaited call splits into out (JS call -> request at the relay), server (request
// -> reply at the relay) and in (reply -> promise settled). Both sides use the same
// counter document; a third side (the default on a second document) is the control: the
// same code path, so its differences from the default are the noise of the run; a fourth
// passes `{ coalesce: true }`, which reads an options object as `coalesce: false` does. Sides
// take turns (turns.mjs's `roundOrder`); for each part, the median over rounds of the
// per-round difference of p50s (side minus default) is reported, in microseconds.
//   node benches/direct-breakdown.mjs [--server mongoeco|secantus] [--calls N] [--rounds R]
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { median, roundOrder } from './turns.mjs';
import { startRelay, hopMedians } from './relay-stamps.mjs';

const require = createRequire(import.meta.url);
const seq = require(process.env.MSEQ_ADDON || '../index.js');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const CALLS = Number(arg('calls', 200));
const ROUNDS = Number(arg('rounds', 24));
const now = () => process.hrtime.bigint();

/** One round: the p50 (ms) of total, out, server and in over CALLS awaited calls. */
async function round(relay, call) {
  await relay.take();
  const calls = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = now();
    await call();
    calls.push([t0, now()]);
  }
  const stamps = await relay.take();
  return hopMedians(calls, stamps);
}

const kinds = arg('server') ? [arg('server')] : ['mongoeco', 'secantus'];
for (const kind of kinds) {
  const server = await startServer({ kind });
  const address = server.uri.slice('mongodb://'.length).split(/[/?]/)[0];
  const relay = await startRelay(address);
  const client = await new MongoClient(`mongodb://127.0.0.1:${relay.port}/?directConnection=true`).connect();
  const db = client.db(`mseq_direct_${process.pid}`);
  try {
    await db.collection('counters').insertMany(['a', 'b'].map((_id) => ({ _id, sequence_value: 0 })));
    const sides = {
      default: () => seq.getNextSequenceValue(db, 'a'),
      'coalesce: false': () => seq.getNextSequenceValue(db, 'a', { coalesce: false }),
      'control: default, other document': () => seq.getNextSequenceValue(db, 'b'),
      'default, with an options object': () => seq.getNextSequenceValue(db, 'a', { coalesce: true }),
    };
    const names = Object.keys(sides);
    for (const name of names) for (let i = 0; i < 20; i++) await sides[name]();
    const all = [];
    for (let r = 0; r < ROUNDS; r++) {
      const got = {};
      for (const name of roundOrder(names, r)) got[name] = await round(relay, sides[name]);
      all.push(got);
    }
    console.log(`\n${kind}: ${ROUNDS} rounds of ${CALLS} awaited calls per side, same counter document`);
    console.log('| side | total p50 ms | total - default, µs | out - default, µs | server - default, µs | in - default, µs | total / default |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const name of names) {
      const diff = (part) => median(all.map((g) => (g[name][part] - g.default[part]) * 1000)).toFixed(1);
      const ratio = median(all.map((g) => g[name].total / g.default.total)).toFixed(3);
      console.log(`| ${name} | ${median(all.map((g) => g[name].total)).toFixed(3)} | ${diff('total')} | ${diff('out')} | ${diff('server')} | ${diff('in')} | ${ratio} |`);
    }
  } finally {
    await db.dropDatabase();
    await client.close();
    await seq.closeSharedClients();
    relay.stop();
    await server.stop();
  }
}
