// A server killed under load: calls reject with CONNECTION within the selection timeout,
// the process lives on, and after a restart on the same port the same client recovers and
// continues without handing out any value twice.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { seq } from '../helpers.mjs';

const kind = process.env.MONGODB_URI ? 'external' : process.env.MONGO_SEQUENCE_SERVER || 'mongoeco';
const skip =
  kind === 'secantus' ? false : 'needs a server it can kill and restart with its data (SecantusDB on disk): runs in the secantus pass';

const storage = mkdtempSync(join(tmpdir(), 'mseq-outage-'));
let server;
after(async () => {
  await server?.stop();
  rmSync(storage, { recursive: true, force: true });
});

const SELECTION_TIMEOUT_MS = 1500;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('kill mid-load, reject with CONNECTION, restart, recover without duplicates', { skip, timeout: 180_000 }, async () => {
  server = await startServer({ kind: 'secantus', storagePath: storage });
  const node = new MongoClient(server.uri);
  await node.db('outage').collection('counters').insertOne({ _id: 'n', sequence_value: 0 });
  await node.close();

  const client = await seq.connect(server.uri, { serverSelectionTimeoutMS: SELECTION_TIMEOUT_MS });
  const db = client.db('outage');
  const values = [];
  const errors = [];
  let running = true;
  let killedAt = 0;
  let firstFailureAfterKill = 0;
  const workers = Array.from({ length: 16 }, async () => {
    while (running) {
      const t0 = Date.now();
      try {
        values.push(await seq.getNextSequenceValue(db, 'n'));
      } catch (e) {
        errors.push({ code: e.code, message: e.message, took: Date.now() - t0 });
        if (killedAt && !firstFailureAfterKill) firstFailureAfterKill = Date.now();
        await sleep(50);
      }
    }
  });

  await sleep(1000);
  const before = values.length;
  assert.ok(before > 0, 'values were drawn before the kill');
  killedAt = Date.now();
  await server.kill();
  while (!firstFailureAfterKill && Date.now() - killedAt < 30_000) await sleep(50);
  assert.ok(firstFailureAfterKill, 'calls failed after the kill');
  assert.ok(firstFailureAfterKill - killedAt < SELECTION_TIMEOUT_MS + 10_000, 'failed within a bounded time');
  await sleep(SELECTION_TIMEOUT_MS * 2);
  assert.ok(errors.length > 0);
  for (const e of errors) {
    assert.equal(e.code, 'CONNECTION', e.message);
    assert.ok(e.took < SELECTION_TIMEOUT_MS + 10_000, `no hang: took ${e.took} ms`);
  }
  const drawnWhileDown = values.length;

  server = await startServer({ kind: 'secantus', port: server.port, storagePath: storage });
  const deadline = Date.now() + 60_000;
  while (values.length < drawnWhileDown + 200 && Date.now() < deadline) await sleep(100);
  running = false;
  await Promise.all(workers);
  assert.ok(values.length >= drawnWhileDown + 200, 'the same client recovered after the restart');
  assert.equal(new Set(values).size, values.length, 'no value handed out twice across the outage');
  assert.ok(values.filter((v, i) => i >= drawnWhileDown).every((v) => v > 0));
  await client.close();
});
