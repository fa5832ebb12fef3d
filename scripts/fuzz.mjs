// `npm run fuzz`: a longer run of the boundary fuzzer than `npm test` makes, against a
// test server this script starts (or MONGODB_URI). FUZZ_CALLS (default 200000) calls,
// split over seeds from FUZZ_SEED (default: the time), with progress per seed.
import { startServer } from './lib/test-server.mjs';
import { runFuzzWorker, describeRun } from './lib/fuzz-run.mjs';

const total = Number(process.env.FUZZ_CALLS ?? 200_000);
const firstSeed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const perSeed = 20_000;
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
} finally {
  await server.stop();
}
console.log(`fuzz total: ${calls} calls in ${((Date.now() - started) / 1000).toFixed(1)} s, ${failed ? 'FAILED' : '0 aborts, 0 hangs, every rejection typed'}`);
process.exit(failed ? 1 : 0);
