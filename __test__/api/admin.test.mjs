// Managing counters: init, current, set, reset, drop, listSequences, syncToMax.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
let counters;
before(async () => {
  env = await setup('admin');
  counters = env.db.collection('counters');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test('init creates once and never overwrites; current does not advance', async () => {
  const s = seq.sequence(env.db, 'invoice');
  assert.equal(await s.init({ start: 1000 }), true);
  assert.equal(await s.init({ start: 5 }), false, 'an existing counter is left alone');
  assert.equal(await s.current(), 999);
  assert.equal(await s.next(), 1000);
  assert.equal(await s.next(), 1001);
  assert.equal(await s.current(), 1001);
  assert.equal(await s.current(), 1001);
  assert.deepEqual(await counters.findOne({ _id: 'invoice' }), {
    _id: 'invoice',
    sequence_value: 1001,
    sequence_value_start: 1000,
  });
});

test('set makes the next value value + 1; reset goes back to the start', async () => {
  const s = seq.sequence(env.db, 'invoice');
  await s.set(5000);
  assert.equal(await s.next(), 5001);
  assert.equal(await s.reset(), 1000, 'the start given to init');
  assert.equal(await s.next(), 1000);
  const plain = seq.sequence(env.db, 'plain', { start: 10 });
  await rejectsWithCode(assert, plain.set(1), 'SEQUENCE_NOT_FOUND');
  await rejectsWithCode(assert, plain.reset(), 'SEQUENCE_NOT_FOUND');
  await rejectsWithCode(assert, plain.current(), 'SEQUENCE_NOT_FOUND');
  const upserting = seq.sequence(env.db, 'plain', { start: 10, upsert: true });
  await upserting.set(3);
  assert.equal(await upserting.next(), 4);
  assert.equal(await upserting.reset(), 10, 'no init: the handle start');
  assert.equal(await upserting.next(), 10);
});

test('drop deletes; later calls find no counter', async () => {
  const s = seq.sequence(env.db, 'temp', { upsert: true });
  assert.equal(await s.next(), 1);
  assert.equal(await s.drop(), true);
  assert.equal(await s.drop(), false);
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'temp'), 'SEQUENCE_NOT_FOUND');
});

test('listSequences lists names (strings and scopes) and values', async () => {
  await env.db.createCollection('list_counters');
  const opts = { collection: 'list_counters', upsert: true };
  await seq.getNextSequenceValue(env.db, 'b', opts);
  await seq.getNextSequenceBatch(env.db, 'a', 3, opts);
  await seq.getNextSequenceValue(env.db, { type: 'invoice', year: 2025 }, opts);
  await env.db.collection('list_counters').insertOne({ _id: 'broken', sequence_value: 'x' });
  const listed = await seq.listSequences(env.db, { collection: 'list_counters' });
  // Name and value here; the range and share used are checked in operations.test.mjs.
  const list = listed.map(({ name, value }) => ({ name, value }));
  assert.deepEqual(
    list.filter((e) => typeof e.name === 'string'),
    [
      { name: 'a', value: 3 },
      { name: 'b', value: 1 },
    ],
  );
  assert.deepEqual(list.filter((e) => typeof e.name === 'object'), [{ name: { type: 'invoice', year: 2025 }, value: 1 }]);
  const big = await seq.listSequences(env.db, { collection: 'list_counters', bigint: true });
  assert.equal(big.find((e) => e.name === 'a').value, 3n);
});

test('syncToMax raises the counter past imported data, never lowers it', async () => {
  await env.db.collection('imported').insertMany([{ _id: 12 }, { _id: 57 }, { _id: 3 }, { _id: 'not-a-number' }]);
  assert.equal(await seq.syncToMax(env.db, 'imported', '_id', 'importedId'), 57, 'created at the max');
  assert.equal(await seq.getNextSequenceValue(env.db, 'importedId'), 58);
  await counters.updateOne({ _id: 'importedId' }, { $set: { sequence_value: 100 } });
  assert.equal(await seq.syncToMax(env.db, 'imported', '_id', 'importedId'), 100, 'never lowered');
  await env.db.collection('orders_by_no').insertMany([{ no: 7 }, { no: 41 }]);
  assert.equal(await seq.syncToMax(env.db, 'orders_by_no', 'no', 'orderNo'), 41);
});

test('handles raise to a value or to imported data, never lowering, creating when absent', async () => {
  const h = seq.sequence(env.db, 'raised', { upsert: true });
  assert.equal(await h.raiseTo(50), 50, 'created at the value');
  assert.equal(await h.raiseTo(10), 50, 'never lowered');
  assert.equal(await h.next(), 51);
  await env.db.collection('raised_source').insertMany([{ n: 70 }, { n: 3 }, { n: 'x' }]);
  assert.equal(await h.syncToMax('raised_source', 'n'), 70);
  assert.equal(await h.next(), 71);
  const big = seq.sequence(env.db, 'raised_big', { bigint: true });
  assert.equal(await big.raiseTo(2n ** 60n), 2n ** 60n);
  await rejectsWithCode(assert, h.raiseTo('5'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, h.syncToMax('raised_source', '$n'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, h.syncToMax(5, 'n'), 'INVALID_ARGUMENT');
  assert.equal(await h.current(), 71, 'refused calls wrote nothing');
});

test('set racing next: every value is from before or after the set, none twice', async () => {
  const s = seq.sequence(env.db, 'race', { upsert: true });
  await s.set(0);
  const calls = Array.from({ length: 200 }, (_, i) =>
    i === 100 ? s.set(10_000).then(() => null) : seq.getNextSequenceValue(env.db, 'race', { upsert: true }),
  );
  const values = (await Promise.all(calls)).filter((v) => v !== null);
  assert.equal(new Set(values).size, values.length, 'no duplicate');
  for (const v of values) assert.ok(v <= 199 || v > 10_000, `value ${v} is from one side of the set`);
  const after = values.filter((v) => v > 10_000).length;
  assert.equal(await s.current(), 10_000 + after);
});

test('reset racing next: each value is from before or after the reset, none twice on a side', async () => {
  const s = seq.sequence(env.db, 'resetRace');
  await s.init({ start: 1 });
  await s.set(1000);
  const calls = Array.from({ length: 200 }, (_, i) =>
    i === 100 ? s.reset().then(() => null) : seq.getNextSequenceValue(env.db, 'resetRace'),
  );
  const values = (await Promise.all(calls)).filter((v) => v !== null);
  const before = values.filter((v) => v > 1000);
  const after = values.filter((v) => v <= 1000);
  assert.equal(new Set(before).size, before.length);
  assert.equal(new Set(after).size, after.length);
  assert.deepEqual(after.sort((a, b) => a - b), Array.from({ length: after.length }, (_, i) => i + 1), 'restarted at 1');
  assert.ok(before.every((v) => v <= 1000 + 199));
  assert.equal(await s.current(), after.length);
});

test('bad arguments of the management calls are refused before any I/O', async () => {
  const s = seq.sequence(env.db, 'invoice');
  for (const bad of ['x', 1.5, null, {}, 2 ** 53]) await rejectsWithCode(assert, s.set(bad), 'INVALID_ARGUMENT');
  for (const bad of [{ start: '1' }, { begin: 1 }, 5]) await rejectsWithCode(assert, s.init(bad), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.listSequences(env.db, { collection: '' }), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.listSequences({}), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.syncToMax(env.db, 42, '_id', 'x'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.syncToMax(env.db, 'imported', '$x', 'x'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.syncToMax(env.db, 'imported', '_id', { $gt: '' }), 'INVALID_ARGUMENT');
  // Options a call does not use are refused, naming the call, not silently ignored.
  for (const [call, options] of [
    [(o) => seq.listSequences(env.db, o), { cache: 10 }],
    [(o) => seq.listSequences(env.db, o), { upsert: true }],
    [(o) => seq.syncToMax(env.db, 'imported', '_id', 'x', o), { format: 'N{seq}' }],
    [(o) => seq.syncToMax(env.db, 'imported', '_id', 'x', o), { start: 5 }],
  ]) {
    const e = await rejectsWithCode(assert, call(options), 'INVALID_ARGUMENT');
    assert.match(e.message, /is not used by (listSequences|syncToMax); it takes collection, field, bigint, uri/);
    assert.ok(e.message.includes(`"${Object.keys(options)[0]}"`), e.message);
  }
  await rejectsWithCode(assert, seq.listSequences(env.db, { colection: 'x' }), 'INVALID_ARGUMENT');
  assert.equal(await s.current(), 1000, 'unchanged');
});

test('step, limits and cycle are stored with the counter and obeyed by every call', async () => {
  const s = seq.sequence(env.db, 'by10');
  assert.equal(await s.init({ start: 100, step: 10, maxValue: 150 }), true);
  assert.equal(await s.next(), 100);
  assert.deepEqual(await s.nextBatch(2), [110, 120]);
  assert.deepEqual(await s.nextRange(2), { first: 130, last: 140, count: 2, step: 10 });
  // Other calls (functions, coalesced, other options) obey the stored step and limits.
  assert.equal(await seq.getNextSequenceValue(env.db, 'by10'), 150);
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'by10'), 'SEQUENCE_EXHAUSTED');
  await rejectsWithCode(assert, s.next(), 'SEQUENCE_EXHAUSTED');
  assert.equal(await s.current(), 150, 'exhaustion writes nothing');
  assert.equal(await s.reset(), 100);
  assert.equal(await s.next(), 100);
});

test('descending sequences and cycling', async () => {
  const down = seq.sequence(env.db, 'countdown');
  await down.init({ step: -1, minValue: -3, maxValue: -1 });
  assert.deepEqual(await down.nextBatch(3), [-1, -2, -3]);
  await rejectsWithCode(assert, down.next(), 'SEQUENCE_EXHAUSTED');

  const ring = seq.sequence(env.db, 'ring');
  await ring.init({ minValue: 1, maxValue: 3, cycle: true });
  const values = [];
  for (let i = 0; i < 7; i++) values.push(await ring.next());
  assert.deepEqual(values, [1, 2, 3, 1, 2, 3, 1]);
  await rejectsWithCode(assert, ring.nextBatch(4), 'INVALID_ARGUMENT');
});

test('configured counters under concurrency: no duplicate within a cycle', async () => {
  const s = seq.sequence(env.db, 'by3');
  await s.init({ start: 3, step: 3 });
  const values = await Promise.all(Array.from({ length: 300 }, () => seq.getNextSequenceValue(env.db, 'by3')));
  assert.deepEqual(values.sort((a, b) => a - b), Array.from({ length: 300 }, (_, i) => 3 * (i + 1)));
});

test('bad configurations are refused', async () => {
  const s = seq.sequence(env.db, 'badcfg');
  for (const bad of [{ step: 0 }, { minValue: 5, maxValue: 5 }, { start: 0, minValue: 1 }, { step: 1.5 }, { cycle: 'yes' }, { maxValue: 'x' }]) {
    await rejectsWithCode(assert, s.init(bad), 'INVALID_ARGUMENT');
  }
  await rejectsWithCode(assert, s.current(), 'SEQUENCE_NOT_FOUND');
});
