// The boundary fuzzer (fast-check): every export, every argument position, arbitrary
// and hostile values, in a child process so that an abort fails this test and names the
// inputs that caused it. Every call must resolve or reject with an Error carrying one of
// this package's codes within a bound. FUZZ_CALLS / FUZZ_SEED change the run;
// `npm run fuzz` runs a longer one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from '../helpers.mjs';
import { runFuzzWorker, describeRun } from '../../scripts/lib/fuzz-run.mjs';

const CALLS = Number(process.env.FUZZ_CALLS ?? 20_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);

let env;
before(async () => {
  env = await setup('fuzz');
});
after(async () => {
  await env?.close();
});

test(`${CALLS} fuzzed calls: no abort, no hang, every rejection typed`, async (t) => {
  const run = await runFuzzWorker({ uri: env.uri, db: env.dbName, calls: CALLS, seed: SEED });
  const line = describeRun(run);
  t.diagnostic(line);
  assert.equal(run.exit.signal, null, `the worker was killed by ${run.exit.signal} (an abort) while running:\n${run.lastBatch}\n${run.stderr}`);
  assert.ok(run.summary, `the worker died (exit ${run.exit.code}) while running:\n${run.lastBatch}\n${run.stderr}`);
  assert.equal(run.summary.failure, null, `${run.summary.failure}\n${run.summary.failures.join('\n')}`);
  assert.equal(run.exit.code, 0);
  assert.equal(run.summary.hangs, 0);
  assert.ok(run.summary.calls >= CALLS, `${run.summary.calls} calls made`);
});
