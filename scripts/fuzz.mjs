// `npm run fuzz`: a longer run of the boundary fuzzer than `npm test` makes, against a
// test server this script starts (or MONGODB_URI). FUZZ_CALLS (default 200000) calls,
// split over seeds from FUZZ_SEED (default: the time), with progress per seed. Then the
// mongoose plugin's differential test against mongoose-sequence: FUZZ_PLUGIN_RUNS
// (default 1000) random histories, 50 per seed from the same first seed, shrunk to a
// small counterexample on failure (0 skips it).
import { startServer } from './lib/test-server.mjs';
import { runFuzzWorker, describeRun } from './lib/fuzz-run.mjs';
import { checkPluginDifferential } from './lib/plugin-differential.mjs';

const total = Number(process.env.FUZZ_CALLS ?? 200_000);
const firstSeed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const perSeed = 20_000;
const pluginRuns = Number(process.env.FUZZ_PLUGIN_RUNS ?? 1000);
const pluginPerSeed = 50;
const server = await startServer({ log: console.log });
const started = Date.now();
let calls = 0;
let failed = false;
try {
  for (let seed = firstSeed; calls < total; seed++) {
    const run = await runFuzzWorker({ uri: server.uri, db: `mseq_fuzz_${seed}`, calls: Math.min(perSeed, total - calls), seed });
    console.log(describeRun(run));
    calls += run.summary?.calls ?? 0;
    if (run.exit.code !== 0 || run.exit.signal || !run.summary) {
      failed = true;
      console.log(run.summary?.failure ?? '');
      console.log((run.summary?.failures ?? []).join('\n'));
      if (!run.summary) console.log(`inputs of the batch running when it died:\n${run.lastBatch}\n${run.stderr}`);
      break;
    }
  }
  if (!failed && pluginRuns > 0) {
    const seeds = Array.from({ length: Math.ceil(pluginRuns / pluginPerSeed) }, (_, i) => firstSeed + i);
    try {
      const stats = await checkPluginDifferential({ uri: server.uri, dbName: `mseq_fuzz_plugin_${firstSeed}`, seeds, numRuns: pluginPerSeed, shrink: true, log: console.log });
      console.log(`plugin differential: ${stats.runs} histories agree with mongoose-sequence (${stats.skipped} with inc_amount 0, refused)`);
    } catch (error) {
      failed = true;
      console.log(`plugin differential FAILED: ${error.message}`);
    }
  }
} finally {
  await server.stop();
}
console.log(`fuzz total: ${calls} calls in ${((Date.now() - started) / 1000).toFixed(1)} s, ${failed ? 'FAILED' : '0 aborts, 0 hangs, every rejection typed'}`);
process.exit(failed ? 1 : 0);
