// `npm run bench`: ours vs the documented JS helper on the official Node driver, same
// server, same run. Prints a table, writes bench-results/bench.json. Not a test.
//   --calls N     sequential calls per side per round (default 200)
//   --rounds R    alternating rounds (default 5)
//   --check       verify every value handed out was unique and contiguous
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { helperGetNextSequenceValue } from '../scripts/lib/documented-helper.mjs';

const require = createRequire(import.meta.url);
const seq = require('../index.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const CALLS = arg('calls', 200);
const ROUNDS = arg('rounds', 5);
const CHECK = process.argv.includes('--check');

const seen = { helper: [], ours: [], oursBatch: [], helperBatch: [] };

async function timed(fn) {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

function progress(msg) {
  process.stderr.write(`[bench] ${msg}\n`);
}

function verify(label, values) {
  const sorted = [...values].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] !== sorted[i - 1] + 1) throw new Error(`${label}: not unique and contiguous at ${sorted[i]}`);
  }
  return `${label}: ${values.length} values unique and contiguous`;
}

const server = await startServer({ log: progress });
const client = new MongoClient(server.uri);
const dbName = `mseq_bench_${process.pid}`;
const results = { server: server.kind, calls: CALLS, rounds: ROUNDS, node: process.version, rows: [] };
try {
  await client.connect();
  const db = client.db(dbName);
  await db.collection('counters').insertMany([
    { _id: 'helper', sequence_value: 0 },
    { _id: 'ours', sequence_value: 0 },
    { _id: 'helperBatch', sequence_value: 0 },
    { _id: 'oursBatch', sequence_value: 0 },
  ]);
  // Warm-up: connection pools, the shared Rust client.
  for (let i = 0; i < 20; i++) {
    seen.helper.push(await helperGetNextSequenceValue(db, 'helper'));
    seen.ours.push(await seq.getNextSequenceValue(db, 'ours'));
  }

  let helperMs = 0;
  let oursMs = 0;
  for (let r = 1; r <= ROUNDS; r++) {
    helperMs += await timed(async () => {
      for (let i = 0; i < CALLS; i++) seen.helper.push(await helperGetNextSequenceValue(db, 'helper'));
    });
    oursMs += await timed(async () => {
      for (let i = 0; i < CALLS; i++) seen.ours.push(await seq.getNextSequenceValue(db, 'ours'));
    });
    progress(`sequential round ${r}/${ROUNDS}: helper ${helperMs.toFixed(0)} ms, ours ${oursMs.toFixed(0)} ms so far`);
  }
  const n = CALLS * ROUNDS;
  results.rows.push({
    case: `sequential getNextSequenceValue (${n} calls each)`,
    helper_per_s: (n / helperMs) * 1000,
    ours_per_s: (n / oursMs) * 1000,
    helper_ms_per_call: helperMs / n,
    ours_ms_per_call: oursMs / n,
    latency_ratio: oursMs / helperMs,
  });

  const IDS = 10_000;
  const helperBatchMs = await timed(async () => {
    for (let i = 0; i < IDS; i++) seen.helperBatch.push(await helperGetNextSequenceValue(db, 'helperBatch'));
  });
  progress(`10,000 helper calls: ${helperBatchMs.toFixed(0)} ms`);
  const oursBatchMs = await timed(async () => {
    seen.oursBatch.push(...(await seq.getNextSequenceBatch(db, 'oursBatch', IDS)));
  });
  results.rows.push({
    case: '10,000 ids: one getNextSequenceBatch vs 10,000 helper calls',
    helper_per_s: (IDS / helperBatchMs) * 1000,
    ours_per_s: (IDS / oursBatchMs) * 1000,
    helper_ms_per_call: helperBatchMs,
    ours_ms_per_call: oursBatchMs,
    latency_ratio: oursBatchMs / helperBatchMs,
  });
  await db.dropDatabase();
} finally {
  await client.close();
  await seq.closeSharedClients();
  await server.stop();
}

console.log(`\nserver: ${results.server}, node ${results.node}`);
console.log('| case | helper ids/s | ours ids/s | speed-up | time ratio ours/helper |');
console.log('|---|---:|---:|---:|---:|');
for (const r of results.rows) {
  console.log(
    `| ${r.case} | ${r.helper_per_s.toFixed(0)} | ${r.ours_per_s.toFixed(0)} | ${(r.ours_per_s / r.helper_per_s).toFixed(2)}x | ${r.latency_ratio.toFixed(3)} |`,
  );
}
if (CHECK) {
  for (const [label, values] of Object.entries(seen)) console.log(verify(label, values));
}
mkdirSync('bench-results', { recursive: true });
writeFileSync('bench-results/bench.json', JSON.stringify(results, null, 2));
console.log('\nwritten: bench-results/bench.json');
