// Features combined: coalescing, caches, limits, cycles and management writes, each case
// a regression test of a wrong result seen when they were only tested one at a time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq, rejectsWithCode, external, needsTransactions } from '../helpers.mjs';

// The test servers here take transactions; a MONGODB_URI standalone refuses them.
const noTransactions = external ? await needsTransactions() : false;

let env;
before(async () => {
  env = await setup('combos');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const settle = (promises) =>
  Promise.all(
    promises.map((p) =>
      p.then(
        (v) => v,
        (e) => e.code ?? `untyped: ${e}`,
      ),
    ),
  );

test('coalesced singles on a bounded counter: each call keeps its own semantics, in call order', async () => {
  const s = seq.sequence(env.db, 'L');
  await s.init({ maxValue: 3 });
  await s.current(); // the client is open: every call below is queued as it is made
  const got = await settle(Array.from({ length: 5 }, () => s.next()));
  assert.deepEqual(got, [1, 2, 3, 'SEQUENCE_EXHAUSTED', 'SEQUENCE_EXHAUSTED']);
  await rejectsWithCode(assert, s.next(), 'SEQUENCE_EXHAUSTED');
  assert.equal(await s.current(), 3);
});

test('coalesced singles on a cycling counter cycle one by one', async () => {
  const s = seq.sequence(env.db, 'C');
  await s.init({ minValue: 1, maxValue: 3, cycle: true });
  await s.current();
  assert.deepEqual(await settle(Array.from({ length: 5 }, () => s.next())), [1, 2, 3, 1, 2]);
  assert.deepEqual(await settle([s.next(), s.next(), s.next()]), [3, 1, 2]);
  // A batch merged with singles restarts whole; one larger than the cycle fails alone.
  assert.deepEqual(await settle([s.next(), s.nextBatch(2), s.nextBatch(4), s.next()]), [3, [1, 2], 'INVALID_ARGUMENT', 3]);
});

test('a cache larger than the cycle or the room left takes short blocks', async () => {
  const short = seq.sequence(env.db, 'cycle50', { cache: 100 });
  await short.init({ minValue: 1, maxValue: 50, cycle: true });
  const values = [];
  for (let i = 0; i < 120; i++) values.push(await short.next());
  assert.ok(
    values.every((v) => v >= 1 && v <= 50),
    'within the cycle',
  );
  assert.deepEqual(
    values.slice(0, 50),
    Array.from({ length: 50 }, (_, i) => i + 1),
  );

  const bounded = seq.sequence(env.db, 'max1000', { cache: 300 });
  await bounded.init({ maxValue: 1000 });
  const all = [];
  for (;;) {
    try {
      all.push(await bounded.next());
    } catch (e) {
      assert.equal(e.code, 'SEQUENCE_EXHAUSTED');
      break;
    }
  }
  assert.deepEqual(
    all,
    Array.from({ length: 1000 }, (_, i) => i + 1),
    'every value up to maxValue',
  );

  const tiny = seq.sequence(env.db, 'cycle20', { cache: 7, coalesce: false });
  await tiny.init({ minValue: 1, maxValue: 20, cycle: true });
  const many = await Promise.all(Array.from({ length: 300 }, () => tiny.next()));
  assert.ok(many.every((v) => v >= 1 && v <= 20));
});

test('set, reset, drop and init discard this process cache, from any handle or function', async () => {
  const opts = { cache: 100, upsert: true };
  const s = seq.sequence(env.db, 'c', opts);
  assert.equal(await s.next(), 1);
  await s.set(5000);
  assert.equal(await s.next(), 5001);
  assert.equal(await seq.getNextSequenceValue(env.db, 'c', opts), 5002, 'the function form shares the state');
  await seq.sequence(env.db, 'c').reset(); // another handle, without cache
  assert.equal(await s.next(), 1);
  assert.equal(await s.drop(), true);
  const plain = seq.sequence(env.db, 'c', { cache: 100 });
  await rejectsWithCode(assert, plain.next(), 'SEQUENCE_NOT_FOUND');
  assert.equal(await s.next(), 1, 'created again from its start');
});

test('set outside the limits is refused; huge steps never write past the range', async () => {
  const s = seq.sequence(env.db, 'bounded');
  await s.init({ minValue: 100, maxValue: 200 });
  assert.equal(await s.next(), 100);
  await rejectsWithCode(assert, s.set(0), 'INVALID_ARGUMENT', /minValue 100/);
  await rejectsWithCode(assert, s.set(201), 'INVALID_ARGUMENT');
  assert.equal(await s.next(), 101);

  const huge = seq.sequence(env.db, 'huge', { bigint: true });
  await huge.init({ minValue: -1000, step: 2n ** 40n });
  assert.equal(await huge.next(), -1000n);
  const before = await huge.current();
  await rejectsWithCode(assert, huge.nextRange(2 ** 24), 'SEQUENCE_EXHAUSTED');
  assert.equal(await huge.current(), before, 'a failed call writes nothing');
  assert.equal(await huge.next(), -1000n + 2n ** 40n);
});

test('syncToMax ignores non-finite and out-of-range values and respects maxValue', async () => {
  await env.db.collection('odd').insertMany([{ n: Infinity }, { n: 1e300 }, { n: 42 }, { n: -Infinity }, { n: NaN }]);
  assert.equal(await seq.syncToMax(env.db, 'odd', 'n', 'oddSeq'), 42);
  assert.equal(await seq.getNextSequenceValue(env.db, 'oddSeq'), 43);
  const capped = seq.sequence(env.db, 'capped');
  await capped.init({ maxValue: 10 });
  await rejectsWithCode(assert, seq.syncToMax(env.db, 'odd', 'n', 'capped'), 'INVALID_ARGUMENT', /maxValue 10/);
  assert.equal(await capped.current(), 0, 'unchanged');
});

test("a new client never inherits a closed client's cached blocks", async () => {
  const first = await seq.connect(env.uri);
  const a = seq.sequence(first.db(env.dbName), 'inherit', { cache: 100, upsert: true });
  assert.equal(await a.next(), 1);
  await first.close();
  const stored = await seq.sequence(env.db, 'inherit').current();
  const second = await seq.connect(env.uri);
  const b = seq.sequence(second.db(env.dbName), 'inherit', { cache: 100, upsert: true });
  assert.equal(await b.next(), stored + 1);
  await second.close();
});

test('gapless inserts: typed server errors, driver-shaped results, Map documents', { skip: noTransactions }, async () => {
  await env.db.collection('gl').createIndex({ code: 1 }, { unique: true });
  const opts = { gapless: true, field: 'no', sequence: 'gl' };
  const one = await seq.insertOne(env.db, 'gl', { code: 'a', tags: new Map([['x', 1]]) }, opts);
  assert.equal(one.acknowledged, true);
  assert.ok(one.insertedId, 'insertedId');
  const stored = await env.db.collection('gl').findOne({ code: 'a' });
  assert.deepEqual(stored.tags, { x: 1 }, 'a Map is stored with its entries');
  assert.equal(String(stored._id), String(one.insertedId));
  const e = await rejectsWithCode(assert, seq.insertOne(env.db, 'gl', { code: 'a' }, opts), 'SERVER');
  assert.equal(e.serverCode, 11000);
  const many = await seq.insertMany(env.db, 'gl', [{ code: 'b' }, { code: 'c' }], { ...opts, field: '_id', sequence: 'gl2' });
  assert.equal(many.insertedCount, 2);
  assert.deepEqual(many.insertedIds, { 0: 1, 1: 2 });
});

test('cycles under contention: 128 direct calls mixing next and nextRange never give up', async () => {
  const s = seq.sequence(env.db, 'busy', { coalesce: false });
  await s.init({ minValue: 1, maxValue: 25, cycle: true });
  const got = await settle(Array.from({ length: 128 }, (_, i) => (i % 2 ? s.nextRange(20) : s.next())));
  for (const r of got) {
    assert.notEqual(typeof r, 'string', `rejected: ${r}`);
    const [first, last] = typeof r === 'number' ? [r, r] : [r.first, r.last];
    assert.ok(first >= 1 && last <= 25 && first <= last);
  }
});

test('a warm handle keeps the JavaScript call order exactly', async () => {
  const s = seq.sequence(env.db, 'order', { upsert: true });
  await s.next();
  for (let round = 0; round < 5; round++) {
    const got = await Promise.all(Array.from({ length: 400 }, (_, i) => (i % 5 ? s.next() : s.nextBatch(3))));
    const firsts = got.map((v) => (Array.isArray(v) ? v[0] : v));
    for (let i = 1; i < firsts.length; i++) assert.ok(firsts[i] > firsts[i - 1], `call ${i} out of order`);
  }
});

test('connect refuses unknown options, like every other function', async () => {
  await rejectsWithCode(assert, seq.connect(env.uri, { serverSelectionTimeoutMs: 5 }), 'INVALID_ARGUMENT', /unknown connect option/);
});

test('the function form reuses a prepared counter only for equal arguments, across client changes', async () => {
  const counters = env.db.collection('counters');
  const get = (name, options) => seq.getNextSequenceValue(env.db, name, options);
  // Same name, options differing only in the field or collection: distinct counters.
  assert.equal(await get('fm', { upsert: true }), 1);
  assert.equal(await get('fm', { upsert: true, field: 'other' }), 1);
  assert.equal(await get('fm', { upsert: true, collection: 'counters2' }), 1);
  assert.equal(await get('fm', { upsert: true }), 2);
  assert.equal((await counters.findOne({ _id: 'fm' })).other, 1);
  // The same call with and without a cache, then a handle's set: every form sees it.
  assert.equal(await get('fm', { cache: 10 }), 3);
  await seq.sequence(env.db, 'fm').set(100);
  assert.equal(await get('fm', { cache: 10 }), 101);
  const direct = await get('fm');
  assert.ok(direct > 110, `${direct}: past the block 101..110 this process holds`);
  // Shared clients closed: the next call opens a new one and continues.
  await seq.closeSharedClients();
  assert.equal(await get('fm'), direct + 1);
  // A client of our own, closed: CLIENT_CLOSED; a new client's db works.
  const client = await seq.connect(env.uri);
  const db = client.db(env.dbName);
  assert.equal(await seq.getNextSequenceValue(db, 'fm'), direct + 2);
  await client.close();
  await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'fm'), 'CLIENT_CLOSED');
  const again = await seq.connect(env.uri);
  assert.equal(await seq.getNextSequenceValue(again.db(env.dbName), 'fm'), direct + 3);
  await again.close();
  // Options mutated between calls are read again: a key added later is honoured.
  const options = { upsert: true };
  assert.equal(await get('fm-mut', options), 1);
  options.field = 'mut';
  assert.equal(await get('fm-mut', options), 1);
  assert.equal(await get('fm-mut', options), 2);
  assert.deepEqual(await counters.findOne({ _id: 'fm-mut' }), { _id: 'fm-mut', sequence_value: 1, mut: 2 });
  options.typo = 1;
  await rejectsWithCode(assert, get('fm-mut', options), 'INVALID_ARGUMENT', /typo/);
});
