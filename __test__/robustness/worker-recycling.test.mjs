// Worker pools (Vitest's threads pool, Piscina, Jest workerThreads): workers load the
// addon one after another while the main thread never does. When the last thread that
// loaded the addon ends, napi-rs shuts its async runtime down and the next thread gets a
// new one; the shared clients (and everything else bound to the old runtime) must follow,
// so every worker's calls succeed and the counters carry on without a duplicate.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { withQuery } from '../fixtures/uri.mjs';

let server;
let node;
const dbName = `mseq_recycle_${randomBytes(4).toString('hex')}`;
before(async () => {
  server = await startServer();
  node = new MongoClient(server.uri);
});
after(async () => {
  await node
    ?.db(dbName)
    .dropDatabase()
    .catch(() => {});
  await node?.close();
  await server?.stop();
});

function runWorker(calls) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('../fixtures/recycle-worker.cjs', import.meta.url), {
      workerData: { uri: server.uri, uriOption: withQuery(server.uri, 'serverSelectionTimeoutMS=5000'), dbName, calls },
    });
    let message;
    worker.once('message', (m) => (message = m));
    worker.once('error', reject);
    worker.once('exit', (code) => (message ? resolve(message) : reject(new Error(`worker exited ${code} without a report`))));
  });
}

test('workers one after another, the main thread never loading the addon', { timeout: 180_000 }, async () => {
  const require = (await import('node:module')).createRequire(import.meta.url);
  assert.equal(
    Object.keys(require.cache).some((k) => k.endsWith('index.js') && k.includes('mongodb-sequence')),
    false,
    'the main thread has not loaded the addon',
  );
  const all = { derived: [], uri: [], own: [], cached: [], inserted: [] };
  const CALLS = 6;
  for (let round = 1; round <= 4; round++) {
    const report = await runWorker(CALLS);
    assert.deepEqual(report.errors, [], `worker ${round}: every call succeeded`);
    assert.ok(report.took < 20_000, `worker ${round} took ${report.took} ms`);
    for (const key of Object.keys(all)) {
      assert.equal(report.values[key].length, CALLS, `worker ${round}: ${key}`);
      all[key].push(...report.values[key]);
    }
  }
  for (const [key, values] of Object.entries(all)) {
    assert.equal(new Set(values).size, values.length, `${key}: no value twice across workers`);
  }
  // Counters without a cache hand out exactly 1..n across the workers.
  for (const key of ['derived', 'uri', 'own', 'inserted']) {
    assert.deepEqual(
      [...all[key]].sort((a, b) => a - b),
      Array.from({ length: all[key].length }, (_, i) => i + 1),
      key,
    );
  }
});
