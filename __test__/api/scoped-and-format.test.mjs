// Scoped counters (a plain object as the name) and business numbers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('scoped');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test('scoped counters: one counter per scope, composite _id in a stable field order', async () => {
  const a = await seq.getNextSequenceValue(env.db, { type: 'invoice', year: 2025 }, { upsert: true });
  const b = await seq.getNextSequenceValue(env.db, { year: 2025, type: 'invoice' }, { upsert: true });
  const c = await seq.getNextSequenceValue(env.db, { type: 'invoice', year: 2026 }, { upsert: true });
  assert.deepEqual([a, b, c], [1, 2, 1], 'field order does not matter; scopes are separate');
  const docs = await env.db.collection('counters').find({ '_id.type': 'invoice' }).sort({ '_id.year': 1 }).toArray();
  assert.deepEqual(docs, [
    { _id: { type: 'invoice', year: 2025 }, sequence_value: 2 },
    { _id: { type: 'invoice', year: 2026 }, sequence_value: 1 },
  ]);
  assert.deepEqual(Object.keys(docs[0]._id), ['type', 'year'], 'stored in sorted order');
  const e = await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, { type: 'invoice', year: 1999 }), 'SEQUENCE_NOT_FOUND');
  assert.equal(e.message, `Sequence '{"type":"invoice","year":1999}' not found. Please initialize it.`);
});

test('scoped names: concurrent first use gives distinct values per scope', async () => {
  const scopes = Array.from({ length: 20 }, (_, i) => ({ tenant: `t${i}`, kind: 'order' }));
  const results = await Promise.all(
    scopes.flatMap((scope) => Array.from({ length: 5 }, () => seq.getNextSequenceValue(env.db, scope, { upsert: true }).then((v) => [scope.tenant, v]))),
  );
  const byTenant = new Map();
  for (const [t, v] of results) byTenant.set(t, [...(byTenant.get(t) ?? []), v]);
  for (const [t, values] of byTenant)
    assert.deepEqual(
      values.sort((x, y) => x - y),
      [1, 2, 3, 4, 5],
      t,
    );
});

test('scoped names refuse operators, dotted keys and non-scalar values', async () => {
  for (const name of [{ $gt: '' }, { 'a.b': 1 }, { a: { b: 1 } }, { a: null }, { a: [1] }, {}, { a: '' }, { a: NaN }]) {
    await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, name, { upsert: true }), 'INVALID_ARGUMENT');
  }
  assert.equal(await env.db.collection('counters').countDocuments({ '_id.a': { $exists: true } }), 0, 'nothing written');
});

test('formatSequence: prefix, date parts, zero padding never truncating', () => {
  const march = new Date(Date.UTC(2025, 2, 7, 12));
  assert.equal(seq.formatSequence(123, 'ORD{YYYY}{seq:6}', march), 'ORD2025000123');
  assert.equal(seq.formatSequence(12345678, 'ORD{YYYY}{seq:6}', march), 'ORD202512345678');
  assert.equal(seq.formatSequence(7n, 'INV-{YY}{MM}{DD}-{seq}', march.getTime()), 'INV-250307-7');
  assert.equal(seq.formatSequence(5, '{{{seq:3}}}'), '{005}');
  assert.match(seq.formatSequence(1, '{YYYY}-{seq}'), new RegExp(`^${new Date().getUTCFullYear()}-1$`));
  for (const [value, pattern, date] of [
    [1, 'no token'],
    [1, '{seq:0}'],
    [1, '{year}{seq}'],
    [1, '{seq'],
    [1.5, '{seq}'],
    ['1', '{seq}'],
    [1, 42],
    [1, '{seq}', 'today'],
    [1, '{seq}', new Date(NaN)],
  ]) {
    assert.throws(
      () => seq.formatSequence(value, pattern, date),
      (e) => e.code === 'INVALID_ARGUMENT',
      `${value} ${pattern}`,
    );
  }
});

test('format option: business numbers from the functions and the handle', async () => {
  const year = new Date().getUTCFullYear();
  const options = { upsert: true, format: 'ORD{YYYY}{seq:6}' };
  assert.equal(await seq.getNextSequenceValue(env.db, 'orders', options), `ORD${year}000001`);
  assert.deepEqual(await seq.getNextSequenceBatch(env.db, 'orders', 2, options), [`ORD${year}000002`, `ORD${year}000003`]);
  const s = seq.sequence(env.db, 'orders', options);
  assert.equal(await s.next(), `ORD${year}000004`);
  await rejectsWithCode(assert, seq.getNextSequenceRange(env.db, 'orders', 2, options), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, s.nextRange(2), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'orders', { format: 'ORD' }), 'INVALID_ARGUMENT');
  assert.equal((await env.db.collection('counters').findOne({ _id: 'orders' })).sequence_value, 4, 'refusals wrote nothing');
});
