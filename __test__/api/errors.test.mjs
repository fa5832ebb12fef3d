// Every error code, bad inputs refused before any I/O, and the number boundaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Long, Double, Int32 } from 'mongodb';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
let counters;
before(async () => {
  env = await setup('errors');
  counters = env.db.collection('counters');
  await counters.insertOne({ _id: 'good', sequence_value: 0 });
});
after(async () => {
  await env?.close();
});

async function unchanged(id, action) {
  const before = await counters.findOne({ _id: id });
  await action();
  assert.deepEqual(await counters.findOne({ _id: id }), before, `counter '${id}' unchanged`);
}

test('names that are not plain strings are refused with INVALID_ARGUMENT', async () => {
  const bad = [{ $gt: '' }, { $ne: null }, ['good'], 42, null, undefined, '', 'x'.repeat(10_000), 'a\0b', true, 10n];
  for (const name of bad) {
    await unchanged('good', () => rejectsWithCode(assert, seq.getNextSequenceValue(env.db, name), 'INVALID_ARGUMENT'));
  }
  // An operator object must never reach the server as a query: no counter matched or changed.
  assert.equal((await counters.findOne({ _id: 'good' })).sequence_value, 0);
  assert.equal(await seq.getNextSequenceValue(env.db, 'good'), 1, 'good calls still work');
});

test('counts must be whole numbers within bounds', async () => {
  const bad = [0, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53, 1e12, '10', null, 5n];
  for (const count of bad) {
    await unchanged('good', () => rejectsWithCode(assert, seq.getNextSequenceBatch(env.db, 'good', count), 'INVALID_ARGUMENT'));
  }
  await rejectsWithCode(assert, seq.getNextSequenceBatch(env.db, 'good', 1_000_001), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.getNextSequenceRange(env.db, 'good', 2 ** 31), 'INVALID_ARGUMENT');
});

test('options of the wrong type or unknown options are refused', async () => {
  const bad = [
    'counters',
    42,
    { collection: 5 },
    { field: {} },
    { upsert: 'yes' },
    { start: '1' },
    { start: 1.5 },
    { bigint: 1 },
    { colection: 'typo' },
    { field: '$inc' },
    { field: 'a.b' },
    { field: '_id' },
    { collection: '' },
    { collection: 'system.x' },
    { uri: 42 },
    { coalesce: 'no' },
    { cache: 0 },
    { cache: 1.5 },
    { cache: 1e7 },
    { writeConcern: 'majority' },
    { writeConcern: { w: 0 } },
    { writeConcern: { w: '' } },
    { writeConcern: { w: true } },
    { writeConcern: { journal: 'yes' } },
    { writeConcern: { wtimeoutMS: -1 } },
    { writeConcern: { wtimeout: 5 } },
  ];
  for (const options of bad) {
    await unchanged('good', () => rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'good', options), 'INVALID_ARGUMENT'));
  }
});

test('db arguments that are not a Db are refused', async () => {
  for (const db of [null, undefined, 'my_app_db', {}, { databaseName: 'x' }, []]) {
    await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'good'), 'INVALID_ARGUMENT');
  }
});

test('non-integer counters are refused with INVALID_COUNTER and left unchanged', async () => {
  const cases = {
    str: 'seven',
    nan: NaN,
    tooBig: -(2 ** 53),
    nul: null,
    nested: { n: 1 },
    arr: [1],
    bool: true,
  };
  for (const [id, value] of Object.entries(cases)) {
    await counters.insertOne({ _id: id, sequence_value: value });
    const e = await unchanged(id, () => rejectsWithCode(assert, seq.getNextSequenceValue(env.db, id), 'INVALID_COUNTER'));
    void e;
    const error = await seq.getNextSequenceValue(env.db, id).catch((err) => err);
    assert.match(error.message, new RegExp(`Sequence '${id}'`));
  }
  const error = await seq.getNextSequenceValue(env.db, 'str').catch((err) => err);
  assert.match(error.message, /a string/);
});

test('a fractional counter another plugin left is taken over: values go on past it, whatever the call', async () => {
  const doc = async (id) => (await counters.findOne({ _id: id })).sequence_value;
  await counters.insertMany([
    { _id: 'frac', sequence_value: 1.5 },
    { _id: 'fracRead', sequence_value: 2.5 },
    { _id: 'fracCached', sequence_value: 7.25 },
    { _id: 'fracBig', sequence_value: -0.5 },
    { _id: 'fracMany', sequence_value: 99.5 },
    { _id: 'fracBatch', sequence_value: 0.125 },
  ]);
  // 1.5 counted up is 2: the next value is 3, and the counter holds it whole.
  assert.equal(await seq.getNextSequenceValue(env.db, 'frac'), 3);
  assert.equal(await doc('frac'), 3);
  assert.equal(await seq.getNextSequenceValue(env.db, 'frac'), 4);
  // Read without writing: what the next call counts from.
  assert.equal(await seq.sequence(env.db, 'fracRead').current(), 3);
  assert.equal(await doc('fracRead'), 2.5);
  const cached = seq.sequence(env.db, 'fracCached', { cache: 5 });
  assert.deepEqual([await cached.next(), await cached.next()], [9, 10]);
  await cached.release();
  assert.equal(await seq.getNextSequenceValue(env.db, 'fracBig', { bigint: true }), 1n);
  // Calls racing on the fraction: one takeover, no value twice, none skipped after it.
  const many = await Promise.all(Array.from({ length: 30 }, () => seq.getNextSequenceValue(env.db, 'fracMany')));
  assert.deepEqual(
    many.sort((a, b) => a - b),
    Array.from({ length: 30 }, (_, i) => 101 + i),
  );
  assert.deepEqual(await seq.sequence(env.db, 'fracBatch').nextBatch(3), [2, 3, 4]);
  const listed = Object.fromEntries((await seq.listSequences(env.db)).map((s) => [s.name, s.value]));
  assert.equal(listed.fracRead, 3, 'listed as the whole number it stands for');
});

test('Int32 counter is promoted to Int64 past 2^31-1 and keeps counting', async () => {
  await counters.insertOne({ _id: 'i32', sequence_value: new Int32(2 ** 31 - 2) });
  assert.equal(await seq.getNextSequenceValue(env.db, 'i32'), 2 ** 31 - 1);
  assert.equal(await seq.getNextSequenceValue(env.db, 'i32'), 2 ** 31);
  assert.equal(await seq.getNextSequenceValue(env.db, 'i32'), 2 ** 31 + 1);
  const raw = await counters.findOne({ _id: 'i32' }, { promoteLongs: false });
  assert.ok(raw.sequence_value instanceof Long, 'stored as Int64 now');
});

test('integral doubles count; the 2^53 boundary needs bigint', async () => {
  await counters.insertOne({ _id: 'dbl', sequence_value: new Double(3_000_000_000) });
  assert.equal(await seq.getNextSequenceValue(env.db, 'dbl'), 3_000_000_001);

  const max = Number.MAX_SAFE_INTEGER; // 2^53 - 1
  await counters.insertOne({ _id: 'edge', sequence_value: Long.fromNumber(max - 2) });
  assert.equal(await seq.getNextSequenceValue(env.db, 'edge'), max - 1);
  assert.equal(await seq.getNextSequenceValue(env.db, 'edge'), max);
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'edge'), 'SEQUENCE_OVERFLOW', /bigint/);
  assert.equal(await seq.getNextSequenceValue(env.db, 'edge', { bigint: true }), 2n ** 53n + 1n);
  const batch = await seq.getNextSequenceBatch(env.db, 'edge', 2, { bigint: true });
  assert.deepEqual(batch, [2n ** 53n + 2n, 2n ** 53n + 3n]);

  await counters.insertOne({ _id: 'dblEdge', sequence_value: new Double(2 ** 53 - 1) });
  await unchanged('dblEdge', () => rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'dblEdge', { bigint: true }), 'SEQUENCE_OVERFLOW'));
});

test('Int64 max cannot advance: SEQUENCE_OVERFLOW, counter unchanged', async () => {
  await counters.insertOne({ _id: 'i64max', sequence_value: Long.MAX_VALUE });
  const e = await unchanged('i64max', () => rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'i64max', { bigint: true }), 'SEQUENCE_OVERFLOW'));
  void e;
  assert.equal(await seq.getNextSequenceValue(env.db, 'good'), 2, 'the process keeps serving');
});

test('bigint start and upsert create BigInt-sized counters', async () => {
  const start = 2n ** 60n;
  assert.equal(await seq.getNextSequenceValue(env.db, 'huge', { upsert: true, start, bigint: true }), start);
  assert.equal(await seq.getNextSequenceValue(env.db, 'huge', { bigint: true }), start + 1n);
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'huge'), 'SEQUENCE_OVERFLOW');
});

test('server errors keep the server code', async () => {
  // A document validator that refuses every insert makes the counter creation fail on the server.
  const name = 'locked_counters';
  await env.db.createCollection(name, { validator: { never: { $exists: true } } });
  const e = await seq.getNextSequenceValue(env.db, 'x', { collection: name, upsert: true }).catch((err) => err);
  assert.ok(e instanceof Error);
  assert.equal(e.code, 'SERVER', e.message);
  assert.equal(typeof e.serverCode, 'number');
});

test('unreachable server: CONNECTION within the selection timeout, password never shown', async () => {
  const client = await import('mongodb').then(({ MongoClient }) => new MongoClient('mongodb://alice:Sup3rS3cret@127.0.0.1:9/?directConnection=true&serverSelectionTimeoutMS=500'));
  const db = client.db('nowhere');
  const started = Date.now();
  const e = await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'x'), 'CONNECTION');
  assert.ok(Date.now() - started < 15_000, 'bounded');
  for (const text of [e.message, e.stack ?? '', String(e.cause ?? ''), JSON.stringify(e)]) {
    assert.ok(!text.includes('Sup3rS3cret'), text);
  }
  const c = await seq.connect('mongodb://alice:Sup3rS3cret@127.0.0.1:9/', { serverSelectionTimeoutMS: 500 }).catch((err) => err);
  assert.equal(c.code, 'CONNECTION');
  assert.ok(!`${c.message}${c.stack}`.includes('Sup3rS3cret'));
  const bad = await seq.connect('mongodb://alice:Sup3rS3cret@').catch((err) => err);
  assert.equal(bad.code, 'INVALID_ARGUMENT');
  assert.ok(!`${bad.message}${bad.stack}`.includes('Sup3rS3cret'), bad.message);
  await client.close();
});
