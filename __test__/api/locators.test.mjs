// Counters found by fields (counterAt, setCountersWhere, the counterLocator insert option):
// locators compare by equality only, whatever their values hold and at any depth; an
// existing unique index over the locator's keys is used as it is; messages show the
// locator as JSON.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Int32, Long } from 'mongodb';
import { setup, seq, rejectsWithCode, failure } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('locators');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const opts = { collection: 'counters', field: 'seq', upsert: true };

/** Every document of `name`, without `_id`, in a stable order. */
async function snapshot(name = 'counters') {
  const docs = await env.db
    .collection(name)
    .find({}, { projection: { _id: 0 } })
    .toArray();
  return docs.map((d) => JSON.stringify(d)).sort();
}

test('operator objects in a locator, at any depth, are refused before any write', async () => {
  for (const tenant of ['A', 'B']) {
    assert.equal(await seq.counterAt(env.db, { id: 'invoice', reference_value: { tenant } }, opts).next(), 1);
  }
  assert.equal(await seq.counterAt(env.db, { id: 'other', reference_value: null }, opts).next(), 1);
  const before = await snapshot();
  const refused = [
    { id: { $gt: '' }, reference_value: null },
    { id: { $ne: 'x' } },
    { id: 'invoice', reference_value: { $ne: null } },
    { id: 'invoice', reference_value: { $ne: { tenant: 'A' } } },
    { id: 'invoice', reference_value: { tenant: { $in: ['A', 'B'] } } },
    { id: 'invoice', reference_value: { list: [{ deep: { $exists: true } }] } },
    { id: { $regex: '.' } },
    { id: /.*/ },
    { id: ['invoice', 'other'] },
  ];
  for (const locator of refused) {
    const what = JSON.stringify(locator, (k, v) => (v instanceof RegExp ? String(v) : v));
    const calls = [
      () => seq.counterAt(env.db, locator, opts).next(),
      () => seq.counterAt(env.db, locator, opts).set(0),
      () => seq.setCountersWhere(env.db, locator, 0, { collection: 'counters', field: 'seq' }),
      () => seq.insertOne(env.db, 'numbered', {}, { counters: 'counters', counterField: 'seq', counterLocator: locator, upsert: true }),
    ];
    for (const call of calls) {
      const e = await failure(call);
      assert.ok(e instanceof Error, what);
      assert.equal(e.code, 'INVALID_ARGUMENT', `${what}: ${e.message}`);
    }
  }
  assert.deepEqual(await snapshot(), before, 'nothing written');
  assert.equal(await env.db.collection('numbered').countDocuments(), 0);
  assert.equal(await seq.counterAt(env.db, { id: 'invoice', reference_value: { tenant: 'A' } }, opts).next(), 2);
  assert.equal(await seq.counterAt(env.db, { id: 'invoice', reference_value: { tenant: 'B' } }, opts).current(), 1);
});

test('random locators with a $ key somewhere are refused and change nothing', async () => {
  await seq.counterAt(env.db, { id: 'fuzz', reference_value: null }, opts).next();
  const before = await snapshot();
  const plain = fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean(), fc.constant(null));
  const key = fc.string({ minLength: 1, maxLength: 4 }).filter((k) => !k.startsWith('$') && !k.includes('.') && !k.includes('\0'));
  const operator = fc.constantFrom('$ne', '$gt', '$in', '$exists', '$eq', '$', '$where', '$nin', '$type');
  // A value with an operator key inserted at a random depth, under documents and arrays.
  const poisoned = fc.letrec((tie) => ({
    value: fc.oneof(
      fc.record({ op: operator, inner: plain }).map(({ op, inner }) => ({ [op]: inner })),
      fc.tuple(key, tie('value')).map(([k, v]) => ({ [k]: v })),
      fc.tuple(key, plain, tie('value')).map(([k, p, v]) => ({ z: p, [k]: v })),
      fc.tuple(plain, tie('value')).map(([p, v]) => ({ list: [p, v] })),
    ),
  })).value;
  await fc.assert(
    fc.asyncProperty(poisoned, fc.boolean(), async (value, atTop) => {
      const locator = atTop ? { id: value } : { id: 'fuzz', reference_value: value };
      for (const call of [() => seq.counterAt(env.db, locator, opts).next(), () => seq.setCountersWhere(env.db, locator, 0, { collection: 'counters', field: 'seq' })]) {
        const e = await failure(call);
        assert.equal(e?.code, 'INVALID_ARGUMENT', JSON.stringify(locator));
      }
    }),
    { seed: 17, numRuns: 60 },
  );
  assert.deepEqual(await snapshot(), before, 'nothing written');
});

test('embedded documents compare exactly, field order included, as MongoDB compares them', async () => {
  const ab = seq.counterAt(env.db, { id: 'order', reference_value: { a: 1, b: 2 } }, opts);
  const ba = seq.counterAt(env.db, { id: 'order', reference_value: { b: 2, a: 1 } }, opts);
  assert.equal(await ab.next(), 1);
  assert.equal(await ba.next(), 1, 'another counter');
  assert.equal(await ab.next(), 2);
  const stored = await env.db.collection('counters').find({ id: 'order' }).toArray();
  assert.equal(stored.length, 2);
});

test('messages show the locator as JSON, its values quoted', async () => {
  const db = env.db;
  await db.collection('helpers').insertMany([
    { _id: 'a', sequence_value: 1 },
    { _id: 'b', sequence_value: 1 },
  ]);
  const located = seq.counterAt(db, { id: 'x"y', reference_value: null }, { collection: 'helpers', field: 'seq', upsert: true });
  const e = await rejectsWithCode(assert, located.next(), 'INDEX_CONFLICT');
  assert.ok(e.message.includes(`'{"id":"x\\"y","reference_value":null}'`), e.message);
  assert.ok(!e.message.includes('\\x'), e.message);
});

test('a number given to a counter stored twice is refused, also while a cache numbers one of them', async () => {
  // mongoose-auto-increment leaves such duplicates: a raise must not pick the one no
  // process numbers from (the number would come again from the other).
  const coll = env.db.collection('twice');
  await coll.insertMany([
    { model: 'Dup', field: '_id', count: 4 },
    { model: 'Dup', field: '_id', count: 7 },
  ]);
  const locator = { field: '_id', model: 'Dup' };
  const cached = seq.counterAt(env.db, locator, { collection: 'twice', field: 'count', cache: 10 });
  assert.equal(await cached.next(), 5, 'the cache numbers from the first of them');
  assert.equal((await coll.findOne({ '_mseq_marks.count.cached': { $exists: true } })).count, 15, 'and flags it');
  const plain = seq.counterAt(env.db, locator, { collection: 'twice', field: 'count' });
  await rejectsWithCode(assert, plain.raiseTo(30), 'INDEX_CONFLICT');
  const counts = (await coll.find({}).toArray()).map((d) => d.count);
  assert.ok(!counts.includes(30), `no document raised: ${counts}`);
});

test('an existing unique index made with background: true (mongoose-sequence) is the index needed', async () => {
  const db = env.db;
  await db.collection('legacy').createIndex({ id: 1, reference_value: 1 }, { unique: true, background: true });
  await db.collection('legacy').insertOne({ id: 'old', reference_value: null, seq: 41 });
  const old = seq.counterAt(db, { id: 'old', reference_value: null }, { collection: 'legacy', field: 'seq' });
  assert.equal(await old.next(), 42);
  const fresh = seq.counterAt(db, { id: 'new', reference_value: { shop: 1 } }, { collection: 'legacy', field: 'seq', upsert: true });
  assert.deepEqual([await fresh.next(), await fresh.next()], [1, 2]);
  await db.collection('legacy2').createIndex({ id: 1, reference_value: 1 }, { unique: true, background: true, name: 'my_own_name' });
  const renamed = seq.counterAt(db, { id: 'n', reference_value: null }, { collection: 'legacy2', field: 'seq', upsert: true });
  assert.equal(await renamed.next(), 1);
  const indexes = await db.collection('legacy2').indexes();
  assert.equal(indexes.length, 2, 'no second index over the same keys');
});

test('a non-unique index over the locator keys is not enough: the counter is not created', async () => {
  const db = env.db;
  await db.collection('loose').createIndex({ id: 1, reference_value: 1 });
  const e = await failure(() => seq.counterAt(db, { id: 'l', reference_value: null }, { collection: 'loose', field: 'seq', upsert: true }).next());
  assert.ok(e instanceof Error);
  assert.equal(typeof e.code, 'string', e.message);
  assert.equal(await db.collection('loose').countDocuments(), 0);
});

test('locator values, set fields and scoped names take real BSON wrappers only, never a look-alike', async () => {
  const located = seq.counterAt(env.db, { id: 'wrapped', reference_value: new Int32(7), big: Long.fromString('9007199254740993') }, opts);
  assert.equal(await located.next(), 1);
  const stored = await env.db.collection('counters').findOne({ id: 'wrapped' }, { promoteValues: false });
  assert.deepEqual([stored.reference_value._bsontype, stored.reference_value.value, stored.big.toString()], ['Int32', 7, '9007199254740993']);
  const before = await snapshot();
  const overwritten = new Int32(1);
  overwritten.value = 123456789012;
  const lookAlikes = [
    JSON.parse('{"_bsontype":"Int32","value":123456789012}'),
    JSON.parse('{"_bsontype":"Int32","value":7}'),
    { _bsontype: 'Long', toString: () => '9007199254740993' },
    overwritten,
  ];
  for (const value of lookAlikes) {
    const shown = JSON.stringify(value);
    const e = await failure(() => seq.counterAt(env.db, { id: 'wrapped', reference_value: value }, opts));
    assert.equal(e?.code, 'INVALID_ARGUMENT', `counterAt with ${shown}: ${e?.message}`);
    assert.match(e.message, /reference_value/);
    await rejectsWithCode(assert, seq.setCountersWhere(env.db, { id: 'wrapped', reference_value: { deep: [value] } }, 5, opts), 'INVALID_ARGUMENT');
    await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, value), 'INVALID_ARGUMENT');
    await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, { tenant: 'a', n: value }), 'INVALID_ARGUMENT');
  }
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, new Int32(7)), 'INVALID_ARGUMENT', /BSON/);
  assert.deepEqual(await snapshot(), before, 'nothing was written');
});

test('one document under two locators: a management write through either discards what the other cached', async () => {
  // The plugin-autoinc drop-in finds a counter by { model, field, groupingField }, the
  // auto-increment one by { model, field }: on a converted counter both find one document.
  const collection = 'locator_twins';
  await env.db.collection(collection).insertOne({ model: 'm', field: 'no', groupingField: '', count: 0 });
  const o = { collection, field: 'count' };
  const cached = seq.counterAt(env.db, { model: 'm', field: 'no' }, { ...o, cache: 10 });
  const other = seq.counterAt(env.db, { model: 'm', field: 'no', groupingField: '' }, o);
  assert.equal(await cached.next(), 1);
  // 4 is in the cached block: after the raise (the counter is past it already) no value of
  // that block is handed out, the next comes from the stored value.
  const stored = await other.raiseTo(4);
  assert.ok(stored >= 10, `the block was reserved (${stored})`);
  assert.equal(await cached.next(), stored + 1);
  await other.set(100);
  assert.equal(await cached.next(), 101);
  await other.reset();
  const after = await cached.next();
  assert.ok(after <= 2, `the block cached before the reset is gone (got ${after})`);
});

test('a management write through a locator leaves the blocks of counters it cannot find alone', async () => {
  const collection = 'locator_neighbours';
  await env.db.collection(collection).insertMany([
    { model: 'a', field: 'no', count: 0 },
    { model: 'b', field: 'no', count: 0 },
  ]);
  const o = { collection, field: 'count' };
  const a = seq.counterAt(env.db, { model: 'a', field: 'no' }, o);
  const b = seq.counterAt(env.db, { model: 'b', field: 'no' }, { ...o, cache: 10 });
  assert.equal(await b.next(), 1);
  await a.raiseTo(50);
  await a.set(7);
  // Another model's counter: its cached block is still served, without a gap.
  assert.equal(await b.next(), 2);
});
