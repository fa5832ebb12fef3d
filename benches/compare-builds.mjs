// Two builds of the addon in one process, taking turns against the same server: did a
// change make calls slower? Round trips (the function form, a handle, `coalesce: false`,
// next to the documented helper) and cached calls (`cache: 1000`, ns per awaited call).
//   node benches/compare-builds.mjs <before.node> <after.node> [--server mongoeco|secantus]
//        [--calls N] [--rounds R] [--cached N]
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { helperGetNextSequenceValue } from '../scripts/lib/documented-helper.mjs';
import { takeTurns, latencyTable, quantile } from './turns.mjs';

const require = createRequire(import.meta.url);
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const [beforePath, afterPath] = process.argv.slice(2, 4);
if (!beforePath || !afterPath || beforePath.startsWith('--')) {
  console.error('usage: node benches/compare-builds.mjs <before.node> <after.node> [--server kind]');
  process.exit(2);
}
const builds = { before: require(resolve(beforePath)), after: require(resolve(afterPath)) };
const CALLS = Number(arg('calls', 200));
const ROUNDS = Number(arg('rounds', 6));
const CACHED = Number(arg('cached', 200_000));
const progress = (msg) => process.stderr.write(`[compare] ${msg}\n`);
const kinds = arg('server') ? [arg('server')] : ['mongoeco', 'secantus'];

for (const kind of kinds) {
  const server = await startServer({ kind, log: progress });
  const client = await new MongoClient(server.uri).connect();
  const db = client.db(`mseq_compare_${process.pid}`);
  try {
    const names = ['helper', ...Object.keys(builds).flatMap((b) => [`${b}_function`, `${b}_handle`, `${b}_direct`, `${b}_cached`])];
    await db.collection('counters').insertMany(names.map((_id) => ({ _id, sequence_value: 0 })));
    const sides = { helper: () => helperGetNextSequenceValue(db, 'helper') };
    for (const [b, seq] of Object.entries(builds)) {
      const handle = seq.sequence(db, `${b}_handle`);
      sides[`${b}: function`] = () => seq.getNextSequenceValue(db, `${b}_function`);
      sides[`${b}: handle`] = () => handle.next();
      sides[`${b}: coalesce: false`] = () => seq.getNextSequenceValue(db, `${b}_direct`, { coalesce: false });
    }
    const best = await takeTurns(sides, { calls: CALLS, rounds: ROUNDS, progress });
    console.log(`\n${kind}, round trips:\n${latencyTable(best, 'helper')}`);
    const paired = (what) => best[`before: ${what}`].ratio[`after: ${what}`];
    console.log(
      `after / before, paired p50: function ${paired('function').toFixed(3)}, handle ${paired('handle').toFixed(3)}, coalesce: false ${paired('coalesce: false').toFixed(3)}`,
    );

    // Cached calls: ns per awaited call, builds taking turns, median of the rounds.
    const cached = {};
    for (const [b, seq] of Object.entries(builds)) {
      const handle = seq.sequence(db, `${b}_cached`, { cache: 1000 });
      const options = { cache: 1000 };
      await handle.next();
      await seq.getNextSequenceValue(db, `${b}_cached`, options);
      cached[b] = { handle: () => handle.next(), function: () => seq.getNextSequenceValue(db, `${b}_cached`, options), ns: { handle: [], function: [] } };
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? Object.keys(builds) : Object.keys(builds).reverse();
      for (const b of order) {
        for (const form of ['handle', 'function']) {
          const call = cached[b][form];
          const t0 = process.hrtime.bigint();
          for (let i = 0; i < CACHED; i++) await call();
          cached[b].ns[form].push(Number(process.hrtime.bigint() - t0) / CACHED);
        }
      }
    }
    const median = (b, form) => quantile(Float64Array.from(cached[b].ns[form]).sort(), 0.5);
    for (const form of ['handle', 'function']) {
      console.log(
        `cached ${form} (cache: 1000), ns per awaited call, median of ${ROUNDS} rounds of ${CACHED}: before ${median('before', form).toFixed(0)}, after ${median('after', form).toFixed(0)}`,
      );
    }
  } finally {
    await db.dropDatabase();
    await client.close();
    for (const seq of Object.values(builds)) await seq.closeSharedClients();
    await server.stop();
  }
}
