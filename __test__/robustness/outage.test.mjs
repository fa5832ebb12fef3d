// A server that stops answering and one that dies, under load and at shutdown.
// Frozen (SIGSTOP: connected, but silent, as a frozen or partitioned primary), then killed:
// - every call settles within its own timeout (the connection's serverSelectionTimeoutMS)
//   from when it was made, whatever is queued before it; calls queued behind a round trip
//   that found no server fail with it;
// - closeSharedClients() / close() take at most their timeoutMS (default 5 s), and calls
//   still pending reject with CLIENT_CLOSED at once.
// Killed under load and restarted with its data: calls reject with CONNECTION within the
// selection timeout, the process lives on, and after a restart on the same port the same
// client recovers and continues without handing out any value twice.
import { test, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { seq } from '../helpers.mjs';

const external = Boolean(process.env.MONGODB_URI);
const skip = external ? 'needs a server it can freeze and kill' : false;
const SELECTION_MS = 1500;
// Scheduling on a loaded machine: a timer may fire this late.
const SLACK_MS = 600;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let server;
afterEach(async () => {
  if (server) {
    try {
      process.kill(server.pid, 'SIGCONT');
    } catch {}
    await server.kill();
    server = undefined;
  }
});

async function freshServer(label) {
  server = await startServer();
  const dbName = `mseq_${label}_${randomBytes(4).toString('hex')}`;
  const node = new MongoClient(server.uri);
  await node
    .db(dbName)
    .collection('counters')
    .insertMany([
      { _id: 'coalesced', sequence_value: 0 },
      { _id: 'cached', sequence_value: 0 },
      { _id: 'direct', sequence_value: 0 },
    ]);
  await node.close();
  return dbName;
}

/** Whether every thread of process `pid` has stopped. */
function stopped(pid) {
  const tasks = `/proc/${pid}/task`;
  if (!existsSync(tasks))
    return execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' })
      .trim()
      .startsWith('T');
  return readdirSync(tasks).every((thread) => {
    let stat;
    try {
      stat = readFileSync(`${tasks}/${thread}/stat`, 'utf8');
    } catch {
      return true; // the thread has ended
    }
    return /^[Tt]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  });
}

/**
 * Stops the server (SIGSTOP) and resolves once it has stopped, with the milliseconds that
 * took. The signal takes effect when the kernel next runs the process: on a loaded
 * machine its threads can go on answering for a while after kill() returns.
 */
async function freeze() {
  process.kill(server.pid, 'SIGSTOP');
  const sent = Date.now();
  while (!stopped(server.pid)) {
    assert.ok(Date.now() - sent < 10_000, `the server had not stopped 10 s after SIGSTOP`);
    await sleep(1);
  }
  return Date.now() - sent;
}

/** Makes `call()` now and records when it was made and settled, and how. */
function timed(kind, call) {
  const record = { kind, made: Date.now(), settled: 0, code: null, value: undefined };
  record.done = call().then(
    (value) => {
      record.settled = Date.now();
      record.value = value;
    },
    (error) => {
      record.settled = Date.now();
      // The Node driver's own errors (its insert after our numbers) are named Mongo…
      record.driver = /^Mongo/.test(error.name);
      record.code = record.driver ? 'DRIVER' : (error.code ?? `no code: ${error.message}`);
    },
  );
  return record;
}

const KINDS = {
  coalesced: (db) => seq.getNextSequenceValue(db, 'coalesced'),
  cached: (db) => seq.getNextSequenceValue(db, 'cached', { cache: 2 }),
  direct: (db) => seq.getNextSequenceValue(db, 'direct', { coalesce: false }),
  insertOne: (db) => seq.insertOne(db, 'docs', { at: 1 }).then((r) => r.insertedId),
  batch: (db) => seq.getNextSequenceBatch(db, 'coalesced', 3),
};

// insertOne inserts through a Node driver Db: not with a connect() client.
const { insertOne, ...withoutInsert } = KINDS;

async function everyCallWithinItsDeadline(makeDb, kinds) {
  const dbName = await freshServer('deadline');
  const { db, close } = await makeDb(dbName);
  try {
    return await deadlines(db, kinds);
  } finally {
    await close();
  }
}

async function deadlines(db, kinds) {
  for (const call of Object.values(kinds)) await call(db);

  const calls = [];
  const burst = () => {
    for (const [kind, call] of Object.entries(kinds)) calls.push(timed(kind, () => call(db)));
  };
  // 50-65 calls in flight when the server freezes, then a few every 100 ms; the server is
  // killed one second in; calls go on being made after that.
  for (let i = 0; i < 13; i++) burst();
  await freeze();
  const frozenAt = Date.now();
  let killed = false;
  while (Date.now() - frozenAt < 2500) {
    burst();
    await sleep(100);
    if (!killed && Date.now() - frozenAt >= 1000) {
      killed = true;
      await server.kill();
      server = undefined;
    }
  }
  const all = Promise.all(calls.map((c) => c.done));
  const settledInTime = await Promise.race([all.then(() => true), sleep(SELECTION_MS * 4 + 5000).then(() => false)]);
  // Our part of a call is bounded by its own timeout; an insertOne then runs the Node
  // driver's insert, bounded by that driver's own timeout (the same here).
  const bound = (c) => (c.kind === 'insertOne' ? 2 * SELECTION_MS : SELECTION_MS) + SLACK_MS;
  const late = calls.filter((c) => (c.settled || Date.now()) - c.made > bound(c));
  const summary = late
    .slice(0, 10)
    .map((c) => `${c.kind} made ${c.made - frozenAt} ms after the freeze, ${c.settled ? `settled after ${c.settled - c.made} ms (${c.code})` : 'still pending'}`);
  assert.ok(settledInTime, `calls still pending:\n${summary.join('\n')}`);
  assert.deepEqual(summary, [], `${late.length} of ${calls.length} calls outlived their own timeout`);
  const failed = calls.filter((c) => c.code);
  assert.ok(failed.length > calls.length / 2, 'most calls made during the outage failed');
  for (const c of failed) {
    if (c.code === 'DRIVER') assert.equal(c.kind, 'insertOne');
    else assert.equal(c.code, 'CONNECTION', `${c.kind}: ${c.code}`);
  }
  const values = calls.filter((c) => !c.code && c.kind !== 'batch').map((c) => `${c.kind}:${c.value}`);
  assert.equal(new Set(values).size, values.length, 'no value handed out twice');
  const ours = calls.filter((c) => c.kind !== 'insertOne');
  const longest = Math.max(...ours.map((c) => c.settled - c.made));
  const longestInsert = Math.max(0, ...calls.filter((c) => c.kind === 'insertOne').map((c) => c.settled - c.made));
  return `${calls.length} calls, ${failed.length} failed, longest wait ${longest} ms (insertOne with the driver's insert: ${longestInsert} ms; timeout ${SELECTION_MS} ms)`;
}

test('frozen then killed server: no call waits longer than its own timeout (connect)', { skip, timeout: 120_000 }, async (t) => {
  t.diagnostic(
    await everyCallWithinItsDeadline(async (dbName) => {
      const client = await seq.connect(server?.uri ?? '', { serverSelectionTimeoutMS: SELECTION_MS });
      return { db: client.db(dbName), close: () => client.close({ timeoutMS: 1000 }) };
    }, withoutInsert),
  );
});

test('frozen then killed server: no call waits longer than its own timeout (Node driver Db)', { skip, timeout: 120_000 }, async (t) => {
  t.diagnostic(
    await everyCallWithinItsDeadline(async (dbName) => {
      const node = new MongoClient(`${server.uri}&serverSelectionTimeoutMS=${SELECTION_MS}`);
      return { db: node.db(dbName), close: () => Promise.all([node.close(), seq.closeSharedClients({ timeoutMS: 1000 })]) };
    }, KINDS),
  );
});

// Reads and management writes, on a server frozen after connecting (it holds the
// connections but answers nothing): each is bounded as value-taking calls are.
test('a frozen server: reads and management calls reject within their own timeout', { skip, timeout: 90_000 }, async (t) => {
  const dbName = await freshServer('frozen_reads');
  const client = await seq.connect(server.uri, { serverSelectionTimeoutMS: SELECTION_MS });
  t.after(() => client.close({ timeoutMS: 1000 }));
  const db = client.db(dbName);
  const handle = seq.sequence(db, 'coalesced');
  await handle.next();
  await seq.listSequences(db);
  const calls = {
    current: () => handle.current(),
    set: () => handle.set(50),
    init: () => seq.sequence(db, 'fresh').init({ start: 1 }),
    reset: () => handle.reset(),
    raiseTo: () => handle.raiseTo(70),
    drop: () => seq.sequence(db, 'direct').drop(),
    listSequences: () => seq.listSequences(db),
    syncToMax: () => seq.syncToMax(db, 'docs', 'n', 'coalesced'),
    setCountersWhere: () => seq.setCountersWhere(db, { id: 'cached' }, 3),
  };
  await freeze();
  const records = Object.entries(calls).map(([kind, call]) => timed(kind, call));
  const all = Promise.all(records.map((r) => r.done));
  const settled = await Promise.race([all.then(() => true), sleep(SELECTION_MS * 4 + 5000).then(() => false)]);
  const shown = records.map((r) => `${r.kind}: ${r.settled ? `${r.code} after ${r.settled - r.made} ms` : 'still pending'}`);
  assert.ok(settled, shown.join('\n'));
  for (const r of records) {
    assert.equal(r.code, 'CONNECTION', shown.join('\n'));
    assert.ok(r.settled - r.made <= SELECTION_MS + SLACK_MS, shown.join('\n'));
  }
  t.diagnostic(shown.join(', '));
});

test('a call queued behind a round trip that finds no server fails with it', { skip, timeout: 90_000 }, async (t) => {
  const dbName = await freshServer('queued');
  const selectionMs = 3000;
  const client = await seq.connect(server.uri, { serverSelectionTimeoutMS: selectionMs });
  t.after(() => client.close({ timeoutMS: 1000 }));
  const db = client.db(dbName);
  await seq.getNextSequenceValue(db, 'coalesced');
  await server.kill();
  server = undefined;
  // When the driver notices the kill depends on the machine's load: a call may fail at
  // once on its dead connection, or wait for a server and be rejected by its own deadline
  // while its round trip is still under way (a call made just then joins that round trip
  // and fails with it at once). So probe on another counter, without coalescing, one call
  // at a time, until one has waited for a server to select: from then on no server is
  // selectable (nothing makes a killed server known again), and the coalesced counter has
  // had no round trip since the kill.
  const probes = [];
  const waited = (p) => p.took >= selectionMs - 100;
  while (probes.length < 5 && !probes.some(waited)) {
    const started = Date.now();
    const code = await seq.getNextSequenceValue(db, 'direct', { coalesce: false }).then(
      () => 'resolved',
      (e) => e.code,
    );
    probes.push({ code, took: Date.now() - started });
  }
  const seen = probes.map((p) => `${p.code} after ${p.took} ms`).join(', ');
  assert.ok(
    probes.every((p) => p.code === 'CONNECTION'),
    seen,
  );
  assert.ok(probes.some(waited), `no call waited for a server: ${seen}`);

  const a = timed('a', () => seq.getNextSequenceValue(db, 'coalesced'));
  // b is made 1 s later, while a's round trip waits for a server (at least selectionMs
  // from a's call): with a selection of its own it would settle ~1 s after a.
  await sleep(1000);
  const b = timed('b', () => seq.getNextSequenceValue(db, 'coalesced'));
  const bQueuedBy = Date.now();
  await Promise.all([a.done, b.done]);
  assert.ok(bQueuedBy - a.made < selectionMs - 250, `b was made ${bQueuedBy - a.made} ms after a, when a's round trip may have ended`);
  assert.equal(a.code, 'CONNECTION');
  assert.equal(b.code, 'CONNECTION');
  // a is the first call of its counter since the server went: it waits for a server.
  assert.ok(a.settled - a.made >= selectionMs - 100, `a waited for server selection: ${a.settled - a.made} ms`);
  // One selection, not two; loose above for a loaded machine.
  assert.ok(a.settled - a.made < selectionMs + 1500, `a took ${a.settled - a.made} ms`);
  // b was queued behind a's round trip: it fails with it, not after a selection of its own.
  assert.ok(b.settled - a.settled < 700, `b settled ${b.settled - a.settled} ms after a`);
  t.diagnostic(`probes: ${seen}; a settled after ${a.settled - a.made} ms, b (made ${b.made - a.made} ms later) ${b.settled - a.settled} ms after a`);
});

test('closeSharedClients() is bounded on a frozen server and rejects pending calls with CLIENT_CLOSED', { skip, timeout: 120_000 }, async (t) => {
  const dbName = await freshServer('close');
  // A long selection timeout: nothing but the close ends these calls.
  const node = new MongoClient(`${server.uri}&serverSelectionTimeoutMS=60000`);
  t.after(() => node.close());
  const db = node.db(dbName);
  for (const call of Object.values(KINDS)) await call(db);
  assert.ok(seq.sharedClientCount() >= 1);

  const stops = [await freeze()];
  const pending = Object.entries(KINDS).flatMap(([kind, call]) => [timed(kind, () => call(db)), timed(kind, () => call(db))]);
  await sleep(200);
  let started = Date.now();
  await seq.closeSharedClients({ timeoutMS: 1000 });
  const tookExplicit = Date.now() - started;
  await Promise.all(pending.map((c) => c.done));
  assert.ok(tookExplicit < 1000 + SLACK_MS, `closeSharedClients({ timeoutMS: 1000 }) took ${tookExplicit} ms`);
  for (const c of pending) {
    if (c.code === null) continue; // served from the cache before the freeze mattered
    assert.equal(c.code, 'CLIENT_CLOSED', `${c.kind}: ${c.code}`);
    assert.ok(c.settled - started < 300, `${c.kind} rejected ${c.settled - started} ms after the close began`);
  }
  assert.ok(pending.filter((c) => c.code === 'CLIENT_CLOSED').length >= 8, 'pending calls were rejected');
  assert.equal(seq.sharedClientCount(), 0);

  // The default bound, with nothing pending: a client connected to the frozen server.
  process.kill(server.pid, 'SIGCONT');
  await seq.getNextSequenceValue(db, 'coalesced');
  stops.push(await freeze());
  started = Date.now();
  await seq.closeSharedClients();
  const tookDefault = Date.now() - started;
  assert.ok(tookDefault < 5000 + SLACK_MS, `closeSharedClients() took ${tookDefault} ms`);

  // Own clients: close({ timeoutMS }) likewise.
  process.kill(server.pid, 'SIGCONT');
  const own = await seq.connect(server.uri, { serverSelectionTimeoutMS: 60000 });
  await seq.getNextSequenceValue(own.db(dbName), 'coalesced');
  stops.push(await freeze());
  const ownPending = timed('own', () => seq.getNextSequenceValue(own.db(dbName), 'coalesced'));
  await sleep(100);
  started = Date.now();
  await own.close({ timeoutMS: 500 });
  const tookOwn = Date.now() - started;
  await ownPending.done;
  assert.ok(tookOwn < 500 + SLACK_MS, `close({ timeoutMS: 500 }) took ${tookOwn} ms`);
  assert.equal(ownPending.code, 'CLIENT_CLOSED');
  t.diagnostic(
    `closeSharedClients({ timeoutMS: 1000 }) ${tookExplicit} ms with calls pending, closeSharedClients() ${tookDefault} ms, close({ timeoutMS: 500 }) ${tookOwn} ms; the server stopped ${stops.join(', ')} ms after each SIGSTOP`,
  );
  await assert.rejects(seq.closeSharedClients({ timeoutMS: -1 }), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(seq.closeSharedClients({ timeout: 1 }), { code: 'INVALID_ARGUMENT' });
  process.kill(server.pid, 'SIGCONT');
});

// ---------------------------------------------------------------- killed and restarted

const kind = process.env.MONGODB_URI ? 'external' : process.env.MONGO_SEQUENCE_SERVER || 'mongoeco';
const skipRestart = kind === 'secantus' ? false : 'needs a server it can kill and restart with its data (SecantusDB on disk): runs in the secantus pass';

const storage = mkdtempSync(join(tmpdir(), 'mseq-outage-'));
// Its own server: afterEach above kills `server`, the frozen one.
let restartable;
after(async () => {
  await restartable?.stop();
  rmSync(storage, { recursive: true, force: true });
});

const SELECTION_TIMEOUT_MS = 1500;

test('kill mid-load, reject with CONNECTION, restart, recover without duplicates', { skip: skipRestart, timeout: 180_000 }, async () => {
  restartable = await startServer({ kind: 'secantus', storagePath: storage });
  const node = new MongoClient(restartable.uri);
  await node.db('outage').collection('counters').insertOne({ _id: 'n', sequence_value: 0 });
  await node.close();

  const client = await seq.connect(restartable.uri, { serverSelectionTimeoutMS: SELECTION_TIMEOUT_MS });
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
  await restartable.kill();
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

  restartable = await startServer({ kind: 'secantus', port: restartable.port, storagePath: storage });
  const deadline = Date.now() + 60_000;
  while (values.length < drawnWhileDown + 200 && Date.now() < deadline) await sleep(100);
  running = false;
  await Promise.all(workers);
  assert.ok(values.length >= drawnWhileDown + 200, 'the same client recovered after the restart');
  assert.equal(new Set(values).size, values.length, 'no value handed out twice across the outage');
  assert.ok(values.filter((v, i) => i >= drawnWhileDown).every((v) => v > 0));
  await client.close();
});
