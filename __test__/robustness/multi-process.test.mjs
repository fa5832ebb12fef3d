// Several processes, many callers each, one sequence: nothing handed out twice and,
// without a cache, nothing skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { setup, runScript } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('multiproc');
});
after(async () => {
  await env?.close();
});

const WORKER = fileURLToPath(new URL('../fixtures/draw-worker.cjs', import.meta.url));

const draw = (vars) => runScript(WORKER, { URI: env.uri, DB: env.dbName, ...vars });

async function drawFromProcesses(name, extra = {}) {
  const runs = [1, 2, 3, 4].map((seed) =>
    draw({ NAME: name, QUOTA: '5000', CALLERS: '64', SEED: String(seed * 7919), ...extra }),
  );
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
  assert.ok(all.every((v) => v >= 1 && v <= stored), 'every value was reserved on the server');
});
