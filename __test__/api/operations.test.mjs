// Running in production: capacity in listSequences, statistics that add up, a handle's
// release() and the close that gives cached values back, raced by processes, and
// round-trip events on the diagnostics channel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import diagnostics from 'node:diagnostics_channel';
import fc from 'fast-check';
import { Long, MongoClient, ObjectId } from 'mongodb';
import { holdingProxy } from '../fixtures/holding-proxy.mjs';
import { setup, seq, runScript, failure } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('operations');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const INT32_MAX = 2 ** 31 - 1;

test('listSequences: range and share used per counter (81 % warns, 96 % is critical)', async () => {
  const counters = env.db.collection('capacity');
  await counters.insertMany([
    { _id: 'int32-81', sequence_value: Math.floor(INT32_MAX * 0.81) + 1 },
    { _id: 'int32-96', sequence_value: Math.floor(INT32_MAX * 0.96) + 1 },
    { _id: 'long-small', sequence_value: Long.fromNumber(5) },
    { _id: 'double', sequence_value: 2 ** 51 },
  ]);
  const limited = seq.sequence(env.db, 'limited-81', { collection: 'capacity' });
  await limited.init({ maxValue: 100 });
  await limited.set(81);
  const listed = await seq.listSequences(env.db, { collection: 'capacity' });
  const by = Object.fromEntries(listed.map((c) => [c.name, c]));
  assert.equal(by['int32-81'].storedType, 'int');
  assert.equal(by['int32-81'].rangeKind, 'int32');
  assert.equal(by['int32-81'].rangeEnd, INT32_MAX);
  assert.ok(by['int32-81'].usedPercent > 81 && by['int32-81'].usedPercent < 81.1, `${by['int32-81'].usedPercent}`);
  assert.ok(by['int32-96'].usedPercent > 96 && by['int32-96'].usedPercent < 96.1);
  assert.equal(by['long-small'].storedType, 'long');
  assert.equal(by['long-small'].rangeKind, 'number', 'as numbers, a long ends at 2^53 - 1');
  assert.equal(by['long-small'].rangeEnd, Number.MAX_SAFE_INTEGER);
  assert.equal(by.double.storedType, 'double');
  assert.equal(by['limited-81'].rangeKind, 'limit');
  assert.equal(by['limited-81'].rangeEnd, 100);
  assert.equal(by['limited-81'].usedPercent, 81);
  const big = await seq.listSequences(env.db, { collection: 'capacity', bigint: true });
  const long = big.find((c) => c.name === 'long-small');
  assert.equal(long.rangeKind, 'int64');
  assert.equal(long.rangeEnd, 2n ** 63n - 1n);
  assert.equal(long.rangeKindAsNumber, 'number', 'what a reader of numbers has');
  assert.equal(long.rangeEndAsNumber, BigInt(Number.MAX_SAFE_INTEGER));
  const int32 = big.find((c) => c.name === 'int32-81');
  assert.equal(int32.usedPercentAsNumber, int32.usedPercent);
});

test('listSequences: a cycling counter shows how far it is through its cycle; numbers may end first', async () => {
  const on = { collection: 'capacity_cycle' };
  const full = seq.sequence(env.db, 'cycling-full', on);
  await full.init({ maxValue: 100, cycle: true });
  await full.set(100);
  const wide = seq.sequence(env.db, 'cycling-wide', on);
  await wide.init({ cycle: true }); // up to 2^63 - 1
  await wide.set(Number.MAX_SAFE_INTEGER - 1);
  const by = Object.fromEntries((await seq.listSequences(env.db, on)).map((c) => [c.name, c]));
  const pick = ({ cycle, rangeKind, usedPercent, rangeKindAsNumber }) => ({ cycle, rangeKind, usedPercent, rangeKindAsNumber });
  assert.deepEqual(pick(by['cycling-full']), { cycle: true, rangeKind: 'limit', usedPercent: 100, rangeKindAsNumber: 'limit' });
  assert.equal(await full.next(), 1, 'at 100 % of its cycle it starts over');
  // Read as numbers, the wide one ends at 2^53 - 1, long before it would cycle.
  assert.deepEqual(pick(by['cycling-wide']), { cycle: true, rangeKind: 'number', usedPercent: by['cycling-wide'].usedPercent, rangeKindAsNumber: 'number' });
  assert.ok(by['cycling-wide'].usedPercent > 99.99);
  assert.equal(await wide.next(), Number.MAX_SAFE_INTEGER);
  await assert.rejects(wide.next(), { code: 'SEQUENCE_OVERFLOW' });
  const big = (await seq.listSequences(env.db, { ...on, bigint: true })).find((c) => c.name === 'cycling-wide');
  assert.equal(big.rangeKind, 'limit', 'as BigInts it runs to its limit, and cycles there');
});

/** Random calls of a handle: `next`, `nextBatch` or `nextRange` of up to `maxCount` values, each
 * made together with the next one or awaited before it. */
const callsArb = (maxCount, maxLength) =>
  fc.array(
    fc.record({
      kind: fc.constantFrom('next', 'batch', 'range'),
      count: fc.integer({ min: 1, max: maxCount }),
      together: fc.boolean(),
    }),
    { minLength: 1, maxLength },
  );

/** Makes `calls` through `take`, awaiting each group of calls made together before the next;
 * resolves with what `take` resolved with, in call order. */
async function makeCalls(calls, take) {
  const results = [];
  let pending = [];
  for (const call of calls) {
    pending.push(take(call));
    if (!call.together) {
      results.push(...(await Promise.all(pending)));
      pending = [];
    }
  }
  results.push(...(await Promise.all(pending)));
  return results;
}

test('stats add up to the values handed out, in a randomized history', async () => {
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        mode: fc.constantFrom('direct', 'coalesce', 'cache'),
        cache: fc.integer({ min: 1, max: 12 }),
        calls: callsArb(15, 30),
      }),
      async ({ mode, cache, calls }) => {
        const options = mode === 'cache' ? { cache } : mode === 'coalesce' ? { coalesce: true } : { coalesce: false };
        options.upsert = true;
        const handle = seq.sequence(env.db, `stats-${round++}`, options);
        const before = seq.stats();
        const take = async ({ kind, count }) => {
          if (kind === 'next') return [await handle.next()].length;
          if (kind === 'batch') return (await handle.nextBatch(count)).length;
          return (await handle.nextRange(count)).count;
        };
        const handed = (await makeCalls(calls, take)).reduce((a, n) => a + n, 0);
        const mine = handle.stats();
        assert.equal(mine.calls, calls.length, 'one call each');
        assert.equal(mine.values, handed, 'values add up');
        assert.deepEqual(mine.errors, {});
        assert.ok(mine.cacheHits <= mine.calls);
        if (mode !== 'cache') assert.equal(mine.cacheHits, 0);
        assert.ok(mine.roundTrips >= 1);
        assert.ok(mine.latency.max >= mine.latency.p99 && mine.latency.p99 >= mine.latency.p50);
        assert.ok(mine.latency.max > 0);
        if (mode === 'direct') assert.equal(mine.callsPerRoundTrip, 1);
        const after = seq.stats();
        assert.equal(after.values - before.values, handed, 'the process counts them too');
        assert.equal(after.calls - before.calls, calls.length);
      },
    ),
    { numRuns: 25, seed: 21 },
  );
});

test('stats count errors by code', async () => {
  const handle = seq.sequence(env.db, 'absent', { upsert: false });
  await assert.rejects(handle.next(), { code: 'SEQUENCE_NOT_FOUND' });
  await assert.rejects(handle.next(), { code: 'SEQUENCE_NOT_FOUND' });
  const s = handle.stats();
  assert.equal(s.calls, 2);
  assert.equal(s.values, 0);
  assert.deepEqual(s.errors, { SEQUENCE_NOT_FOUND: 2 });
  assert.ok(seq.stats().errors.SEQUENCE_NOT_FOUND >= 2);
});

test('stats count what callers receive: a value a number cannot hold is an error, not a value', async () => {
  // Counters a few values below 2^53 - 1, read as numbers: calls past it reserve values
  // in MongoDB and reject with SEQUENCE_OVERFLOW. The oracle is what the calls saw.
  let round = 0;
  let overflows = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        mode: fc.constantFrom('direct', 'coalesce', 'cache'),
        cache: fc.integer({ min: 1, max: 6 }),
        below: fc.integer({ min: 0, max: 8 }),
        calls: callsArb(4, 12),
      }),
      async ({ mode, cache, below, calls }) => {
        const name = `overflow-${round++}`;
        const start = Number.MAX_SAFE_INTEGER - below;
        await env.db.collection('counters').insertOne({ _id: name, sequence_value: Long.fromNumber(start) });
        const options = mode === 'cache' ? { cache } : { coalesce: mode === 'coalesce' };
        const handle = seq.sequence(env.db, name, options);
        const before = seq.stats();
        const received = [];
        const codes = {};
        const take = async ({ kind, count }) => {
          try {
            if (kind === 'next') received.push(await handle.next());
            else if (kind === 'batch') received.push(...(await handle.nextBatch(count)));
            else {
              const r = await handle.nextRange(count);
              for (let v = r.first; v <= r.last; v += 1) received.push(v);
            }
          } catch (e) {
            codes[e.code] = (codes[e.code] ?? 0) + 1;
          }
        };
        await makeCalls(calls, take);
        overflows += codes.SEQUENCE_OVERFLOW ?? 0;
        assert.deepEqual(
          Object.keys(codes).filter((c) => c !== 'SEQUENCE_OVERFLOW'),
          [],
        );
        assert.ok(received.every((v) => v > start && v <= Number.MAX_SAFE_INTEGER));
        assert.equal(new Set(received).size, received.length, 'no value twice');
        const mine = handle.stats();
        assert.equal(mine.calls, calls.length, 'one call each');
        assert.equal(mine.values, received.length, 'values are the values callers received');
        assert.deepEqual(mine.errors, codes, 'each rejection counted under its code');
        const after = seq.stats();
        assert.equal(after.calls - before.calls, calls.length);
        assert.equal(after.values - before.values, received.length, 'the process counts the same');
        const overflowed = (s) => s.errors.SEQUENCE_OVERFLOW ?? 0;
        assert.equal(overflowed(after) - overflowed(before), codes.SEQUENCE_OVERFLOW ?? 0);
      },
    ),
    { numRuns: 20, seed: 53 },
  );
  assert.ok(overflows > 0, 'some calls went past 2^53 - 1');
});

test('stats count calls that fail before a round trip: a client that cannot open, a bad argument', async () => {
  // A host name that cannot resolve fails while the shared client opens (the SRV lookup),
  // before any request; an unreachable port fails on the request itself.
  const nowhere = new MongoClient('mongodb+srv://nowhere.invalid/?serverSelectionTimeoutMS=500');
  const closed = new MongoClient('mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=500');
  try {
    const before = seq.stats();
    const unresolved = seq.sequence(nowhere.db('x'), 'unresolved', { upsert: true });
    await assert.rejects(unresolved.next(), { code: 'CONNECTION' });
    await assert.rejects(unresolved.nextBatch(2), { code: 'CONNECTION' });
    await assert.rejects(seq.getNextSequenceValue(nowhere.db('x'), 'unresolved-fn'), { code: 'CONNECTION' });
    const unreachable = seq.sequence(closed.db('x'), 'unreachable', { upsert: true, cache: 5 });
    await assert.rejects(unreachable.next(), { code: 'CONNECTION' });
    const args = seq.sequence(env.db, 'bad-arguments', { upsert: true, format: 'A-{seq}' });
    await assert.rejects(args.nextBatch(0), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(args.nextRange(2), { code: 'INVALID_ARGUMENT' }, 'format does not apply to a range');
    await assert.rejects(seq.getNextSequenceBatch(env.db, 'bad-arguments', -1), { code: 'INVALID_ARGUMENT' });
    const after = seq.stats();
    const { calls, values, errors } = unresolved.stats();
    assert.deepEqual({ calls, values, errors }, { calls: 2, values: 0, errors: { CONNECTION: 2 } });
    assert.deepEqual(unreachable.stats().errors, { CONNECTION: 1 });
    assert.equal(unreachable.stats().calls, 1);
    assert.deepEqual(args.stats().errors, { INVALID_ARGUMENT: 2 });
    assert.equal(args.stats().calls, 2);
    const delta = (code) => (after.errors[code] ?? 0) - (before.errors[code] ?? 0);
    assert.equal(after.calls - before.calls, 7, 'every call made counts');
    assert.equal(delta('CONNECTION'), 4);
    assert.equal(delta('INVALID_ARGUMENT'), 3);
    assert.equal(after.values, before.values);
  } finally {
    await nowhere.close();
    await closed.close();
  }
});

test('a close that times out on a stalled server counts its tail as abandoned, never as given back', async () => {
  const proxy = await holdingProxy(env.address);
  const counters = env.db.collection('counters');
  try {
    const client = await seq.connect(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true&serverSelectionTimeoutMS=3000`);
    const handle = seq.sequence(client.db(env.dbName), 'stalled-close', { cache: 20, upsert: true });
    const first = [await handle.next(), await handle.next()];
    assert.deepEqual(first, [1, 2]);
    const reserved = Number((await counters.findOne({ _id: 'stalled-close' })).sequence_value);
    assert.ok(reserved > 2, `the cache holds values up to ${reserved}`);
    proxy.stall();
    const before = seq.stats();
    const started = Date.now();
    await client.close({ timeoutMS: 1500 });
    assert.ok(Date.now() - started < 6000, 'the close kept its time limit');
    const after = seq.stats();
    assert.ok(proxy.held() > 0, 'the give-back was sent and stalled');
    assert.equal(after.givenBack - before.givenBack, 0, 'nothing is claimed given back');
    assert.equal(after.discarded.close - before.discarded.close, reserved - 2, 'the whole cached tail is counted as abandoned');
    assert.equal(Number((await counters.findOne({ _id: 'stalled-close' })).sequence_value), reserved);
    // A restarted process continues after the tail; the stalled give-back, delivered
    // late, finds the counter moved on and changes nothing.
    const again = await seq.connect(env.uri);
    try {
      const restarted = seq.sequence(again.db(env.dbName), 'stalled-close', { cache: 20, upsert: true });
      const next = [await restarted.next(), await restarted.next()];
      assert.deepEqual(next, [reserved + 1, reserved + 2]);
      assert.ok(proxy.deliver() > 0, 'the stalled requests reach the server late');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const plain = await seq.getNextSequenceValue(env.db, 'stalled-close');
      assert.ok(plain > reserved + 2, `a third process gets ${plain}, after every value handed out`);
      assert.equal(await restarted.next(), reserved + 3);
    } finally {
      await again.close();
    }
  } finally {
    await proxy.close();
  }
});

test('release() gives the cached tail back: the next handle continues right after', async () => {
  const first = seq.sequence(env.db, 'released', { cache: 10, upsert: true });
  assert.deepEqual([await first.next(), await first.next(), await first.next()], [1, 2, 3]);
  const before = seq.stats().givenBack;
  const outcome = await first.release();
  assert.equal(outcome.abandoned, 0);
  assert.ok(outcome.returned >= 7, `returned ${outcome.returned}`);
  assert.equal(seq.stats().givenBack - before, outcome.returned);
  const plain = seq.sequence(env.db, 'released');
  assert.equal(await plain.current(), 3, 'the counter holds the last value handed out');
  assert.equal(await first.next(), 4, 'the handle stays usable and continues');
  assert.equal((await plain.next()) > 4, true);
  assert.deepEqual(await seq.sequence(env.db, 'nothing-cached').release(), { returned: 0, abandoned: 0 });
});

/** A client of the package that behaves as another process's (its settings differ). */
async function anotherProcess() {
  const uri = new URL(env.uri);
  uri.searchParams.set('appName', 'another-process');
  return seq.connect(uri.toString());
}

test('a number given by another process inside a cached tail is never given back', async () => {
  const mine = seq.sequence(env.db, 'given-inside', { cache: 10, upsert: true });
  assert.equal(await mine.next(), 1);
  const other = await anotherProcess();
  let reserved;
  try {
    const theirs = seq.sequence(other.db(env.dbName), 'given-inside');
    reserved = await theirs.current();
    assert.ok(reserved >= 6, `the cached block reaches past 5 (${reserved})`);
    assert.equal(await theirs.raiseTo(5), reserved, 'the counter is past 5: nothing moves');
    const outcome = await mine.release();
    assert.deepEqual(outcome, { returned: 0, abandoned: reserved - 1 }, 'the tail holds 5: abandoned');
    assert.equal(await theirs.next(), reserved + 1, 'so 5 is never handed out again');
    // A number given before the cache fetched leaves its give-back alone.
    await theirs.raiseTo(reserved);
    assert.equal(await mine.next(), reserved + 2);
    const again = await mine.release();
    assert.equal(again.abandoned, 0);
    assert.ok(again.returned > 0, `returned ${again.returned}`);
    assert.equal(await theirs.next(), reserved + 3);
  } finally {
    await other.close();
  }
  const doc = await env.db.collection('counters').findOne({ _id: 'given-inside' });
  const marks = doc._mseq_marks.sequence_value;
  assert.ok(marks.cached instanceof ObjectId, "flagged by the cache, with its last fetch's token");
  assert.equal(Number(marks.raised), reserved, 'the furthest number given');
  // A reset puts the counter anywhere: the numbers given and the fetches before it no
  // longer count.
  await seq.sequence(env.db, 'given-inside').reset();
  const after = await env.db.collection('counters').findOne({ _id: 'given-inside' });
  assert.equal(after._mseq_marks?.sequence_value, undefined);
});

test('the cache marks leave the counters beside them in one document alone', async () => {
  const coll = env.db.collection('marked');
  const on = (db, field, options = {}) => seq.sequence(db, 'neighbours', { collection: 'marked', field, ...options });
  // Counters whose fields are named as a cached counter's marks used to be.
  const flagNamed = on(env.db, 'seq_cached', { upsert: true });
  const raiseNamed = on(env.db, 'seq_raised', { upsert: true });
  assert.deepEqual(await flagNamed.nextBatch(3), [1, 2, 3]);
  assert.deepEqual(await raiseNamed.nextBatch(5), [1, 2, 3, 4, 5]);
  const unharmed = async (what) => {
    assert.equal(await flagNamed.current(), 3, `seq_cached ${what}`);
    assert.equal(await raiseNamed.current(), 5, `seq_raised ${what}`);
  };
  const cached = on(env.db, 'seq', { cache: 10, upsert: true });
  assert.equal(await cached.next(), 1);
  await unharmed('after a cached fetch');
  const fetched = await coll.findOne({ _id: 'neighbours' });
  assert.ok(fetched._mseq_marks.seq.cached instanceof ObjectId, 'the flag lives under the reserved field');
  const other = await anotherProcess();
  try {
    const theirs = on(other.db(env.dbName), 'seq');
    assert.equal(await theirs.raiseTo(7), 11, 'inside the cached block: nothing moves');
    await unharmed('after a raise');
    assert.equal((await coll.findOne({ _id: 'neighbours' }))._mseq_marks.seq.raised, 7);
    assert.deepEqual(await cached.release(), { returned: 0, abandoned: 10 }, 'the tail holds 7');
    await unharmed('after a give-back');
    await theirs.reset();
  } finally {
    await other.close();
  }
  await unharmed('after a reset');
  assert.equal((await coll.findOne({ _id: 'neighbours' }))._mseq_marks?.seq, undefined, 'a reset removes the marks');
  assert.equal(await cached.next(), 1);
  assert.deepEqual(await cached.release(), { returned: 10, abandoned: 0 });
  await unharmed('after a returned tail');
  assert.equal(await on(env.db, 'seq').current(), 1);
  assert.equal(await flagNamed.next(), 4);
  assert.equal(await raiseNamed.next(), 6);
  // The reserved field is no counter's, nor a locator's.
  for (const call of [
    () => seq.getNextSequenceValue(env.db, 'x', { field: '_mseq_marks', upsert: true }),
    () => seq.counterAt(env.db, { _mseq_marks: 'x' }, { collection: 'marked_located', upsert: true }).next(),
    () => seq.setCountersWhere(env.db, { _mseq_marks: 'x' }, 0, { collection: 'marked_located', field: 'seq' }),
  ]) {
    const e = await failure(call);
    assert.equal(e?.code, 'INVALID_ARGUMENT', e?.message);
    assert.match(e.message, /"_mseq_marks": that field is reserved for the marks of cached counters/);
  }
});

test('setCountersWhere removes the cache marks of the counters it sets', async () => {
  const coll = env.db.collection('marked_where');
  const on = { collection: 'marked_where', field: 'seq' };
  const located = seq.counterAt(env.db, { model: 'M' }, { ...on, cache: 10, upsert: true });
  assert.equal(await located.next(), 1);
  assert.ok((await coll.findOne({ model: 'M' }))._mseq_marks.seq.cached instanceof ObjectId);
  assert.equal(await seq.setCountersWhere(env.db, { model: 'M' }, 100, on), 1);
  const doc = await coll.findOne({ model: 'M' });
  assert.equal(doc.seq, 100);
  assert.equal(doc._mseq_marks?.seq, undefined, 'no give-back from before applies after it');
  assert.equal(await located.next(), 101);
});

test('a counter no cache numbers keeps its document as it was when raised', async () => {
  const plain = seq.sequence(env.db, 'raised-plain', { upsert: true });
  await plain.next();
  await plain.raiseTo(10);
  await plain.raiseTo(3);
  await seq.sequence(env.db, 'raised-missing').raiseTo(4);
  for (const [_id, value] of [
    ['raised-plain', 10],
    ['raised-missing', 4],
  ]) {
    const doc = await env.db.collection('counters').findOne({ _id });
    assert.deepEqual(Object.keys(doc).sort(), ['_id', 'sequence_value'], _id);
    assert.equal(Number(doc.sequence_value), value, _id);
  }
});

test('release() abandons the tail when another process moved the counter on', async () => {
  const mine = seq.sequence(env.db, 'moved', { cache: 10, upsert: true });
  assert.equal(await mine.next(), 1);
  await env.db.collection('counters').updateOne({ _id: 'moved' }, { $inc: { sequence_value: 5 } });
  const outcome = await mine.release();
  assert.equal(outcome.returned, 0);
  assert.ok(outcome.abandoned >= 9);
  const doc = await env.db.collection('counters').findOne({ _id: 'moved' });
  assert.ok(doc.sequence_value >= 15, 'never moved back under the other process');
});

test('a graceful close gives back; a restarted process continues where it stopped', async () => {
  for (let restart = 0; restart < 3; restart++) {
    const client = await seq.connect(env.uri);
    const handle = seq.sequence(client.db(env.dbName), 'restarts', { cache: 50, upsert: true });
    const got = [await handle.next(), await handle.next()];
    assert.deepEqual(got, [restart * 2 + 1, restart * 2 + 2]);
    await client.close();
  }
});

const WORKER = fileURLToPath(new URL('../fixtures/give-back-worker.cjs', import.meta.url));

const run = (vars) => runScript(WORKER, { URI: env.uri, DB: env.dbName, ...vars });

test('two processes racing closes: no value twice, every gap an abandoned tail', async () => {
  const runs = await Promise.all([1, 2].map((seed) => run({ NAME: 'raced', ROUNDS: '25', SEED: String(seed * 7919) })));
  const values = runs.flatMap((r) => r.values);
  assert.equal(new Set(values).size, values.length, 'no value handed out twice');
  const doc = await env.db.collection('counters').findOne({ _id: 'raced' });
  const last = Number(doc.sequence_value);
  const abandoned = runs.reduce((n, r) => n + r.stats.discarded.close + r.stats.discarded.dropped, 0);
  const givenBack = runs.reduce((n, r) => n + r.stats.givenBack, 0);
  assert.ok(
    values.every((v) => v <= last),
    'the counter is never behind a value handed out',
  );
  // Every value up to the counter was handed out once, or left in a tail another
  // process had already moved past (abandoned): none was lost otherwise.
  assert.equal(values.length + abandoned, last, `handed ${values.length}, abandoned ${abandoned}, counter ${last}`);
  assert.ok(givenBack > 0, 'closes gave values back');
});

test('round trips are published on the diagnostics channel only while subscribed', async () => {
  const channel = diagnostics.channel('mongodb-sequence:round-trip');
  const seen = [];
  const listener = (message) => seen.push(message);
  const handle = seq.sequence(env.db, 'traced', { upsert: true });
  await handle.next(); // no subscriber: nothing recorded
  diagnostics.subscribe('mongodb-sequence:round-trip', listener);
  try {
    await handle.next(); // notices the subscriber
    await handle.nextBatch(3);
    await handle.next();
  } finally {
    diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
  }
  assert.ok(channel.hasSubscribers === false);
  assert.ok(seen.length >= 2, `${seen.length} events`);
  const last = seen.at(-1);
  assert.equal(last.counter, 'traced');
  assert.equal(last.collection, 'counters');
  // What OpenTelemetry's db.namespace, db.operation.name, server.address and server.port take.
  assert.equal(last.database, env.dbName);
  assert.equal(last.operation, 'findAndModify');
  assert.equal(`${last.serverAddress}:${last.serverPort}`, env.address, 'the server that takes the writes');
  assert.equal(typeof last.serverPort, 'number');
  assert.deepEqual(
    Object.keys(last).sort(),
    ['calls', 'collection', 'counter', 'database', 'durationMs', 'operation', 'outcome', 'retries', 'serverAddress', 'serverPort', 'values'],
    'nothing else (never a URI or credentials)',
  );
  assert.equal(last.outcome, 'ok');
  assert.equal(last.values, 1);
  assert.equal(last.calls, 1);
  assert.ok(last.durationMs > 0);
  assert.ok(
    seen.some((e) => e.values === 3),
    'the batch',
  );
  const count = seen.length;
  await handle.next();
  await handle.next();
  assert.equal(seen.length, count, 'nothing after unsubscribing');
  const failing = seq.sequence(env.db, 'traced-missing', { upsert: false });
  diagnostics.subscribe('mongodb-sequence:round-trip', listener);
  try {
    await handle.next();
    await assert.rejects(failing.next(), { code: 'SEQUENCE_NOT_FOUND' });
    await handle.next();
  } finally {
    diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
  }
  assert.ok(seen.some((e) => e.outcome === 'error' && e.code === 'SEQUENCE_NOT_FOUND' && e.counter === 'traced-missing'));
});

test("a worker thread without subscribers does not silence the main thread's events", { timeout: 120_000 }, async () => {
  const { Worker } = await import('node:worker_threads');
  const addon = fileURLToPath(new URL('../../index.js', import.meta.url));
  // The worker draws values as fast as it can, with nobody subscribed in its thread.
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const { MongoClient } = require('mongodb');
     const seq = require(workerData.addon);
     (async () => {
       const client = new MongoClient(workerData.uri);
       const db = client.db(workerData.dbName);
       let stop = false;
       parentPort.on('message', () => { stop = true; });
       let calls = 0;
       while (!stop) {
         await seq.getNextSequenceValue(db, 'worker-busy', { upsert: true });
         calls += 1;
         if (calls === 20) parentPort.postMessage('busy');
       }
       await client.close();
       await seq.closeSharedClients();
       parentPort.postMessage({ calls });
       parentPort.close();
     })();`,
    { eval: true, workerData: { addon, uri: env.uri, dbName: env.dbName } },
  );
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  const messages = [];
  const next = () => new Promise((resolve) => worker.once('message', resolve));
  messages.push(await next()); // 'busy'
  const seen = [];
  const listener = (message) => {
    if (message.counter === 'traced-main') seen.push(message);
  };
  const handle = seq.sequence(env.db, 'traced-main', { upsert: true, coalesce: false });
  diagnostics.subscribe('mongodb-sequence:round-trip', listener);
  try {
    await handle.next(); // notices the subscriber
    for (let i = 0; i < 40; i += 1) await handle.next();
    await handle.next(); // publishes what the last call recorded
  } finally {
    diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
    worker.postMessage('stop');
  }
  const done = await next();
  assert.ok(done.calls >= 20, `the worker made ${done.calls} calls`);
  // Each of the 40 calls after the first was a round trip of its own, recorded while the
  // main thread listened, whatever the worker's threads saw.
  assert.ok(seen.length >= 40, `${seen.length} of 40 round trips of the main thread published`);
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 15_000))]);
  if (code === 'still running') await worker.terminate();
  assert.equal(code, 0, 'the worker ended by itself');
});
