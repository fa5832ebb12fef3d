// `npm run bench`: ours vs the documented JS helper on the official Node driver, same
// server, same run. Prints a table, writes bench-results/bench.json and
// bench-results/throughput.svg. Not a test.
//   --calls N       sequential calls per side per round (default 200)
//   --rounds R      sequential rounds, sides taking turns (default 8)
//   --seconds S     duration of each concurrency measurement (default 2)
//   --check         verify every value handed out was unique, and contiguous where the
//                   mode promises it (all but cached mode)
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import { startServer, SERVER_KINDS } from '../scripts/lib/test-server.mjs';
import { helperGetNextSequenceValue } from '../scripts/lib/documented-helper.mjs';
import { throughputSvg } from './plot.mjs';
import { mongooseRows, mongooseTable } from './mongoose.mjs';
import { latencyRows, latencyReport } from './latency.mjs';

const require = createRequire(import.meta.url);
const seq = require('../index.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const CALLS = arg('calls', 200);
const ROUNDS = arg('rounds', 8);
const SECONDS = arg('seconds', 2);
const CHECK = process.argv.includes('--check');
const LEVELS = [1, 8, 64, 256];
const progress = (msg) => process.stderr.write(`[bench] ${msg}\n`);

/** Values handed out per counter, and whether that mode promises no gap. */
const seen = new Map();
function record(name, values, gapless) {
  const entry = seen.get(name) ?? { values: [], gapless };
  for (const v of values) entry.values.push(v);
  seen.set(name, entry);
}

function verify(name, { values, gapless }) {
  const sorted = Float64Array.from(values).sort();
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1]) throw new Error(`${name}: value ${sorted[i]} handed out twice`);
    if (gapless && sorted[i] !== sorted[i - 1] + 1) throw new Error(`${name}: gap before ${sorted[i]}`);
  }
  return `${name}: ${values.length} values unique${gapless ? ' and contiguous' : ''}`;
}

/** Runs `callers` loops of `call` for SECONDS; returns ids per second. */
async function throughput(callers, call) {
  const deadline = performance.now() + SECONDS * 1000;
  let ids = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < deadline) {
        const got = await call(); // read `ids` only after the await
        ids += got;
      }
    }),
  );
  return (ids / (performance.now() - t0)) * 1000;
}

const server = await startServer({ log: progress });
const client = new MongoClient(server.uri);
const dbName = `mseq_bench_${process.pid}`;
const results = { date: new Date().toISOString(), server: server.kind, node: process.version, rows: [], concurrency: [] };
const started = performance.now();
try {
  await client.connect();
  const db = client.db(dbName);
  const init = async (name) => db.collection('counters').insertOne({ _id: name, sequence_value: 0 });
  const helper = (name) => async () => {
    record(name, [await helperGetNextSequenceValue(db, name)], true);
    return 1;
  };
  const ours = (name) => async () => {
    record(name, [await seq.getNextSequenceValue(db, name)], true);
    return 1;
  };

  // 1. Sequential latency, one await at a time, sides taking turns, on both servers
  // (only the given one with MONGODB_URI).
  const latencyKinds = server.kind === 'external' ? ['external'] : [server.kind, ...SERVER_KINDS.filter((k) => k !== server.kind)];
  results.latency = {};
  for (const kind of latencyKinds) {
    const other = kind === server.kind ? server : await startServer({ kind, log: progress });
    try {
      results.latency[kind] = await latencyRows({ uri: other.uri, dbName: `${dbName}_latency`, calls: CALLS, rounds: ROUNDS, progress });
    } finally {
      if (other !== server) await other.stop();
    }
  }
  const sequential = results.latency[server.kind].counters;
  results.rows.push({
    case: `sequential getNextSequenceValue, best of ${ROUNDS} rounds of ${CALLS} calls`,
    helper: sequential.helper.perSecond,
    ours: sequential.function.perSecond,
    note: `p50 ${sequential.function.p50.toFixed(3)} ms vs ${sequential.helper.p50.toFixed(3)} ms`,
  });

  // 2. Concurrent callers on one name.
  for (const level of LEVELS) {
    await init(`c${level}_helper`);
    await init(`c${level}_ours`);
    const h = await throughput(level, helper(`c${level}_helper`));
    const o = await throughput(level, ours(`c${level}_ours`));
    results.concurrency.push({ callers: level, helper: h, ours: o });
    results.rows.push({ case: `${level} concurrent callers, one name`, helper: h, ours: o, note: 'coalesced' });
    progress(`${level} callers: helper ${h.toFixed(0)}/s, ours ${o.toFixed(0)}/s`);
  }

  // 3. 10,000 ids: one batch vs 10,000 helper calls.
  await init('batch_helper');
  await init('batch_ours');
  const IDS = 10_000;
  let t0 = performance.now();
  for (let i = 0; i < IDS; i++) await helper('batch_helper')();
  const helperBatchMs = performance.now() - t0;
  t0 = performance.now();
  record('batch_ours', await seq.getNextSequenceBatch(db, 'batch_ours', IDS), true);
  const oursBatchMs = performance.now() - t0;
  results.rows.push({
    case: '10,000 ids: one getNextSequenceBatch vs 10,000 helper calls',
    helper: (IDS / helperBatchMs) * 1000,
    ours: (IDS / oursBatchMs) * 1000,
    note: `${helperBatchMs.toFixed(0)} ms vs ${oursBatchMs.toFixed(1)} ms`,
  });
  progress('batch done');

  // 4. Cached mode, one process.
  await init('cached');
  const handle = seq.sequence(db, 'cached', { cache: 1000 });
  await handle.next();
  const CACHED = 1_000_000;
  const cachedValues = new Float64Array(CACHED);
  t0 = performance.now();
  for (let i = 0; i < CACHED; i++) cachedValues[i] = await handle.next();
  const handleMs = performance.now() - t0;
  record('cached', cachedValues, false);
  const fnValues = [];
  t0 = performance.now();
  for (let i = 0; i < 100_000; i++) fnValues.push(await seq.getNextSequenceValue(db, 'cached', { cache: 1000 }));
  const fnMs = performance.now() - t0;
  record('cached', fnValues, false);
  results.rows.push({
    case: 'cache: 1000, sequence(...).next() awaited one by one',
    helper: results.rows[0].helper,
    ours: (CACHED / handleMs) * 1000,
    note: 'vs sequential helper',
  });
  results.rows.push({
    case: 'cache: 1000, getNextSequenceValue(db, name, { cache }) awaited one by one',
    helper: results.rows[0].helper,
    ours: (100_000 / fnMs) * 1000,
    note: 'vs sequential helper',
  });
  const batchValues = [];
  t0 = performance.now();
  for (let i = 0; i < 10_000; i++) for (const v of await handle.nextBatch(100)) batchValues.push(v);
  const batchMs = performance.now() - t0;
  record('cached', batchValues, false);
  results.rows.push({
    case: 'cache: 1000, sequence(...).nextBatch(100) awaited one by one (ids/s)',
    helper: results.rows[0].helper,
    ours: (batchValues.length / batchMs) * 1000,
    note: 'vs sequential helper',
  });
  progress('cached done');
  // The mongoose table runs on SecantusDB unless a server was chosen: mongoeco takes about
  // 2 ms per inserted document, so there every side would only measure its inserts.
  const mongooseKind = process.env.MONGO_SEQUENCE_SERVER || 'secantus';
  const mongooseServer = mongooseKind === server.kind ? server : await startServer({ kind: mongooseKind, log: progress });
  try {
    results.mongoose = { server: mongooseServer.kind, ...(await mongooseRows({ uri: mongooseServer.uri, dbName, progress })) };
  } finally {
    if (mongooseServer !== server) await mongooseServer.stop();
  }
  await db.dropDatabase();
} finally {
  await client.close();
  await seq.closeSharedClients();
  await server.stop();
}

for (const [kind, rows] of Object.entries(results.latency)) console.log(`\n${latencyReport(kind, rows)}`);
console.log(`\nserver: ${results.server}, node ${results.node}, ${((performance.now() - started) / 1000).toFixed(0)} s`);
console.log('| case | helper ids/s | ours ids/s | ours/helper | note |');
console.log('|---|---:|---:|---:|---|');
for (const r of results.rows) {
  console.log(`| ${r.case} | ${r.helper.toFixed(0)} | ${r.ours.toFixed(0)} | ${(r.ours / r.helper).toFixed(2)}x | ${r.note} |`);
}
console.log(`\n${mongooseTable(results.mongoose).join('\n')}`);
if (CHECK) {
  console.log('');
  for (const [name, entry] of seen) console.log(verify(name, entry));
  for (const line of results.mongoose.checks) console.log(line);
  for (const rows of Object.values(results.latency)) for (const line of rows.checks) console.log(line);
}
mkdirSync('bench-results', { recursive: true });
writeFileSync('bench-results/bench.json', JSON.stringify(results, null, 2));
writeFileSync(
  'bench-results/throughput.svg',
  throughputSvg(`ids/s vs concurrency (${results.server})`, [
    { label: 'mongodb-sequence (coalesced)', color: '#c0392b', points: results.concurrency.map((c) => [c.callers, c.ours]) },
    { label: 'documented helper, Node driver', color: '#2c3e50', points: results.concurrency.map((c) => [c.callers, c.helper]) },
  ]),
);
console.log('\nwritten: bench-results/bench.json, bench-results/throughput.svg');
