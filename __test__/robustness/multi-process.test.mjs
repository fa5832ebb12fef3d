// Several processes, many callers each, one sequence: nothing handed out twice and,
// without a cache, nothing skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { setup, runScript, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('multiproc');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const WORKER = fileURLToPath(new URL('../fixtures/draw-worker.cjs', import.meta.url));
const CYCLE_WORKER = fileURLToPath(new URL('../fixtures/cycle-worker.cjs', import.meta.url));

const draw = (vars) => runScript(WORKER, { URI: env.uri, DB: env.dbName, ...vars });

async function drawFromProcesses(name, extra = {}) {
  const runs = [1, 2, 3, 4].map((seed) => draw({ NAME: name, QUOTA: '5000', CALLERS: '64', SEED: String(seed * 7919), ...extra }));
  return Promise.all(runs);
}

test('4 processes x 64 callers draw 20,000 values: no duplicate, no gap', async () => {
  await env.db.collection('counters').insertOne({ _id: 'fleet', sequence_value: 0 });
  const perProcess = await drawFromProcesses('fleet');
  for (const values of perProcess) assert.equal(values.length, 5000);
  const all = perProcess.flat().sort((a, b) => a - b);
  assert.equal(new Set(all).size, 20_000, 'no duplicate');
  assert.equal(all[0], 1);
  assert.equal(all[all.length - 1], 20_000, 'no gap');
  assert.equal((await env.db.collection('counters').findOne({ _id: 'fleet' })).sequence_value, 20_000);
});

test('with cache: 50, 4 processes draw 20,000 values with no duplicate', async () => {
  await env.db.collection('counters').insertOne({ _id: 'fleetCached', sequence_value: 0 });
  const perProcess = await drawFromProcesses('fleetCached', { CACHE: '50' });
  const all = perProcess.flat();
  assert.equal(all.length, 20_000);
  assert.equal(new Set(all).size, 20_000, 'no duplicate across processes');
  const stored = (await env.db.collection('counters').findOne({ _id: 'fleetCached' })).sequence_value;
  assert.ok(
    all.every((v) => v >= 1 && v <= stored),
    'every value was reserved on the server',
  );
});

test('3 processes cross restarts of a small cycle: every call is served, none gives up', async () => {
  // A cycle of 38 values; ranges of 19 need a restart about every other call, while
  // singles and small batches race them from other processes (each call its own round
  // trip). A restart is one write that some caller wins; the others go on in the new
  // cycle instead of retrying until CONTENTION.
  await seq.sequence(env.db, 'smallCycle').init({ step: 1, minValue: -16, maxValue: 21, cycle: true });
  const runs = [32, 16, 8].map((callers, i) =>
    runScript(CYCLE_WORKER, { URI: env.uri, DB: env.dbName, NAME: 'smallCycle', CALLS: '400', CALLERS: String(callers), RANGE: '19', SEED: String(7 + i) }),
  );
  const outcomes = await Promise.all(runs);
  let values = 0;
  for (const { values: got, errors } of outcomes) {
    assert.deepEqual(errors, {}, 'no call failed');
    for (const v of got) {
      const [first, last] = Array.isArray(v) ? v : [v, v];
      assert.ok(first >= -16 && last <= 21 && first <= last, `${first}..${last} within the cycle`);
      values += last - first + 1;
    }
  }
  assert.ok(values > 1200, `${values} values drawn`);
});
