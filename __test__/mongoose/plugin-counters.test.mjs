// The mongoose plugin's counter documents, on mongoose 9 and 8: start_seq and inc_amount,
// reference_fields (values cast with the schema, keyed by their exact BSON value),
// counterReset, an existing mongoose-sequence counter, the migration helpers
// (syncCounterToMax, takeOverCounter), and the counters collection shared with
// helper-style counters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seq, rejectsWithCode } from '../helpers.mjs';
import { AutoIncrementFactory, eachMongoose, fileDatabase, rejectsCode } from './plugin-setup.mjs';

const { syncCounterToMax, takeOverCounter } = AutoIncrementFactory;

const env = fileDatabase('plugin_counters');

eachMongoose('n', env, ({ mongoose, connection, AutoIncrement, p, ObjectId, model, counters, numbers }) => {
  test('start_seq and inc_amount; counterReset makes the next value start_seq - 1 + inc_amount', async () => {
    const schema = new mongoose.Schema({ n: Number });
    schema.plugin(AutoIncrement, { id: `${p}stepped`, inc_field: 'n', start_seq: 10, inc_amount: 5 });
    const Stepped = await model(`${p}Stepped`, schema);
    const a = await Stepped.create({});
    const b = await Stepped.create({});
    assert.deepEqual([a.n, b.n], [10, 15]);
    const reset = await Stepped.counterReset(`${p}stepped`);
    assert.equal(reset.matchedCount, 1);
    assert.equal((await Stepped.create({})).n, 14);
    // Callback style.
    await new Promise((resolve, reject) => Stepped.counterReset(`${p}stepped`, (e) => (e ? reject(e) : resolve())));
    assert.equal((await Stepped.create({})).n, 14);
  });

  test('reference_fields: one counter per combination (sorted, dot paths), reset one or all', async () => {
    const schema = new mongoose.Schema({ shop: String, meta: { year: Number }, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}per_shop`, inc_field: 'no', reference_fields: ['shop', 'meta.year'] });
    const Order = await model(`${p}Order`, schema);
    const made = [];
    for (const [shop, year] of [
      ['a', 2025],
      ['a', 2025],
      ['b', 2025],
      ['a', 2026],
      ['b', 2025],
    ]) {
      made.push((await Order.create({ shop, meta: { year } })).no);
    }
    assert.deepEqual(made, [1, 2, 1, 1, 2]);
    const stored = await counters()
      .find({ id: `${p}per_shop` })
      .sort({ seq: 1 })
      .toArray();
    assert.deepEqual(Object.keys(stored[0].reference_value), ['meta.year', 'shop']);
    await Order.counterReset(`${p}per_shop`, { shop: 'a', meta: { year: 2025 } });
    assert.equal((await Order.create({ shop: 'a', meta: { year: 2025 } })).no, 1);
    assert.equal((await Order.create({ shop: 'b', meta: { year: 2025 } })).no, 3);
    const all = await Order.counterReset(`${p}per_shop`);
    assert.equal(all.matchedCount, 3);
    assert.equal((await Order.create({ shop: 'b', meta: { year: 2025 } })).no, 1);
    assert.throws(() => schema.plugin(AutoIncrement, { reference_fields: ['shop'] }), /Cannot use reference fields without specifying an id/);
  });

  test('reference values are cast with the schema on every path before the counter is chosen', async () => {
    const schema = new mongoose.Schema({ tag: String, shop: mongoose.Schema.Types.ObjectId, year: Number, at: Date, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}cast`, inc_field: 'no', reference_fields: ['shop', 'year', 'at'] });
    const M = await model(`${p}Cast`, schema);
    const shop = new ObjectId();
    const at = new Date('2025-03-04T05:06:07.089Z');
    const typed = { shop, year: 2025, at };
    const strings = { shop: String(shop), year: '2025', at: at.toISOString() };
    await new M({ tag: 'a', ...typed }).save();
    await M.insertMany([{ tag: 'b', ...strings }]);
    await M.create([
      { tag: 'c', ...strings },
      { tag: 'd', ...strings },
    ]);
    await M.create({ tag: 'e', ...strings });
    await M.bulkWrite([{ insertOne: { document: { tag: 'f', ...strings } } }]);
    await M.updateOne({ tag: 'g', shop: String(shop) }, { $set: { year: '2025', at: at.toISOString() } }, { upsert: true });
    await M.findOneAndUpdate({ tag: 'h', year: { $eq: '2025' } }, { $set: { shop: String(shop) }, $setOnInsert: { at: at.toISOString() } }, { upsert: true });
    await M.updateMany({ tag: 'i', ...strings }, { $set: { x: 1 } }, { upsert: true });
    assert.deepEqual(
      await numbers(M, 'no'),
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((t, i) => [t, i + 1]),
    );
    const stored = await counters()
      .find({ id: `${p}cast` })
      .toArray();
    assert.equal(stored.length, 1, `one counter: ${JSON.stringify(stored)}`);
    assert.equal(stored[0].seq, 9);
    assert.ok(stored[0].reference_value.shop instanceof ObjectId || stored[0].reference_value.shop?._bsontype === 'ObjectId');
    assert.ok(stored[0].reference_value.at instanceof Date);
    // counterReset with reference values that need casting finds that counter too.
    assert.equal((await M.counterReset(`${p}cast`, strings)).matchedCount, 1);
    assert.equal((await M.create({ tag: 'j', ...strings })).no, 1);
  });

  test('reference keys are exact BSON values: dates to the millisecond, objects by their fields', async () => {
    const schema = new mongoose.Schema({ tag: String, at: Date, mix: mongoose.Schema.Types.Mixed, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}keys_at`, inc_field: 'no', reference_fields: 'at' });
    const Dated = await model(`${p}KeysAt`, schema);
    await new Dated({ tag: 'a', at: new Date(1000) }).save();
    await new Dated({ tag: 'b', at: new Date(1500) }).save();
    await Dated.insertMany([
      { tag: 'c', at: new Date(1000) },
      { tag: 'd', at: new Date(1500) },
      { tag: 'e', at: new Date(1999) },
    ]);
    assert.deepEqual(await numbers(Dated, 'no'), [
      ['a', 1],
      ['b', 1],
      ['c', 2],
      ['d', 2],
      ['e', 1],
    ]);

    const mixed = new mongoose.Schema({ tag: String, mix: mongoose.Schema.Types.Mixed, no: Number });
    mixed.plugin(AutoIncrement, { id: `${p}keys_mix`, inc_field: 'no', reference_fields: 'mix' });
    const Mixed = await model(`${p}KeysMix`, mixed);
    await new Mixed({ tag: 'a', mix: { k: 1 } }).save();
    await new Mixed({ tag: 'b', mix: { k: 2 } }).save();
    await Mixed.insertMany([
      { tag: 'c', mix: { k: 1 } },
      { tag: 'd', mix: { k: 2 } },
      { tag: 'e', mix: '[object Object]' },
    ]);
    await Mixed.create([
      { tag: 'f', mix: { k: 2 } },
      { tag: 'g', mix: { k: 1 } },
    ]);
    assert.deepEqual(await numbers(Mixed, 'no'), [
      ['a', 1],
      ['b', 1],
      ['c', 2],
      ['d', 2],
      ['e', 1],
      ['f', 3],
      ['g', 3],
    ]);
    assert.equal(await counters().countDocuments({ id: `${p}keys_mix` }), 3);
  });

  test('a reference value holding undefined is keyed as the null the server stores', async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number, mix: mongoose.Schema.Types.Mixed });
    schema.plugin(AutoIncrement, { id: `${p}undef`, inc_field: 'no', reference_fields: ['mix'] });
    const M = await model(`${p}Undef`, schema);
    await new M({ tag: 'a', mix: { x: undefined } }).save();
    await new M({ tag: 'b', mix: {} }).save();
    await new M({ tag: 'c', mix: { x: null } }).save();
    await M.insertMany([
      { tag: 'd', mix: {} },
      { tag: 'e', mix: { x: undefined } },
    ]);
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 1],
      ['c', 2],
      ['d', 2],
      ['e', 3],
    ]);
    const stored = await counters()
      .find({ id: `${p}undef` })
      .toArray();
    assert.deepEqual(stored.map((c) => [JSON.stringify(c.reference_value), c.seq]).sort(), [
      ['{"mix":{"x":null}}', 3],
      ['{"mix":{}}', 2],
    ]);
  });

  test('counterReset with start_seq 0 stores 0, as mongoose-sequence: the next number is inc_amount', async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}zero`, inc_field: 'no', start_seq: 0 });
    const Zero = await model(`${p}Zero`, schema);
    assert.equal((await Zero.create({ tag: 'a' })).no, 0);
    assert.equal((await Zero.create({ tag: 'b' })).no, 1);
    await Zero.counterReset(`${p}zero`);
    assert.equal((await counters().findOne({ id: `${p}zero` })).seq, 0);
    assert.equal((await Zero.create({ tag: 'c' })).no, 1);
  });

  test('an existing mongoose-sequence counter continues where it is', async () => {
    await counters().insertOne({ id: `${p}legacy`, reference_value: null, seq: 41 });
    const schema = new mongoose.Schema({ _id: Number });
    schema.plugin(AutoIncrement, { id: `${p}legacy` });
    const Legacy = await model(`${p}Legacy`, schema);
    assert.equal((await Legacy.create({}))._id, 42);
    assert.equal(await counters().countDocuments({ id: `${p}legacy` }), 1);
  });

  test('syncCounterToMax continues after imported documents, per reference value too', async () => {
    const schema = new mongoose.Schema({ _id: Number, n: Number });
    schema.plugin(AutoIncrement, { id: `${p}imported` });
    const Imported = await model(`${p}Imported`, schema);
    await Imported.collection.insertMany([{ _id: 7 }, { _id: 120 }, { _id: 33 }]);
    assert.deepEqual(await syncCounterToMax(Imported), [{ reference_value: null, value: 120 }]);
    assert.equal((await Imported.create({}))._id, 121);
    assert.deepEqual(await syncCounterToMax(Imported), [{ reference_value: null, value: 121 }], 'never lowered');

    const scoped = new mongoose.Schema({ shop: String, no: Number });
    scoped.plugin(AutoIncrement, { id: `${p}imported_shop`, inc_field: 'no', reference_fields: 'shop' });
    const Shop = await model(`${p}ImportedShop`, scoped);
    await Shop.collection.insertMany([
      { shop: 'a', no: 5 },
      { shop: 'a', no: 9 },
      { shop: 'b', no: 2 },
    ]);
    const raised = await syncCounterToMax(Shop);
    assert.deepEqual(raised.map((r) => [r.reference_value.shop, r.value]).sort(), [
      ['a', 9],
      ['b', 2],
    ]);
    assert.equal((await Shop.create({ shop: 'a' })).no, 10);
    assert.equal((await Shop.create({ shop: 'b' })).no, 3);
    await assert.rejects(syncCounterToMax(Shop, 'nope'), /has no counter with id "nope"/);
  });

  test('syncCounterToMax passes over NaN, ±Infinity and numbers past 2^63 among the numbers stored', async () => {
    const up = new mongoose.Schema({ tag: Number, no: Number });
    up.plugin(AutoIncrement, { id: `${p}odd_up`, inc_field: 'no' });
    const Up = await model(`${p}OddUp`, up);
    await Up.collection.insertMany([5, NaN, Infinity, -Infinity, 1e300].map((no, tag) => ({ tag, no })));
    assert.deepEqual(await syncCounterToMax(Up), [{ reference_value: null, value: 5 }]);
    assert.equal((await Up.create({ tag: 9 })).no, 6);

    const down = new mongoose.Schema({ tag: Number, no: Number });
    down.plugin(AutoIncrement, { id: `${p}odd_down`, inc_field: 'no', start_seq: 0, inc_amount: -1 });
    const Down = await model(`${p}OddDown`, down);
    await Down.collection.insertMany([-3, NaN, -Infinity, Infinity, -1e300].map((no, tag) => ({ tag, no })));
    assert.deepEqual(await syncCounterToMax(Down), [{ reference_value: null, value: -3 }]);
    assert.equal((await Down.create({ tag: 9 })).no, -4);
  });

  test('syncCounterToMax on a descending counter moves it down to the smallest number, never back', async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}down`, inc_field: 'no', start_seq: 100, inc_amount: -1 });
    const Down = await model(`${p}Down`, schema);
    for (const tag of ['a', 'b', 'c']) await new Down({ tag }).save();
    assert.deepEqual(await syncCounterToMax(Down), [{ reference_value: null, value: 98 }]);
    assert.equal((await new Down({ tag: 'd' }).save()).no, 97);
    await Down.collection.insertOne({ tag: 'e', no: 40 });
    assert.deepEqual(await syncCounterToMax(Down), [{ reference_value: null, value: 40 }]);
    assert.equal((await Down.create({ tag: 'f' })).no, 39);
    await rejectsCode(takeOverCounter(Down, 'typegoose'), 'INVALID_ARGUMENT');

    // Per reference value, with a step, and a counter that does not exist yet.
    const scoped = new mongoose.Schema({ tag: String, shop: String, no: Number });
    scoped.plugin(AutoIncrement, { id: `${p}down_shop`, inc_field: 'no', reference_fields: 'shop', start_seq: 0, inc_amount: -5 });
    const Shop = await model(`${p}DownShop`, scoped);
    await Shop.create([
      { tag: 'a', shop: 'x' },
      { tag: 'b', shop: 'x' },
    ]);
    await Shop.collection.insertMany([
      { tag: 'c', shop: 'x', no: -7 },
      { tag: 'd', shop: 'y', no: -20 },
      { tag: 'e', shop: 'y', no: 3 },
    ]);
    const moved = await syncCounterToMax(Shop);
    assert.deepEqual(moved.map((r) => [r.reference_value.shop, r.value]).sort(), [
      ['x', -7],
      ['y', -20],
    ]);
    assert.equal((await Shop.create({ tag: 'f', shop: 'x' })).no, -12);
    assert.equal((await Shop.create({ tag: 'g', shop: 'y' })).no, -25);
    assert.equal(await counters().countDocuments({ id: `${p}down_shop` }), 2);

    // Racing syncs of counters never used, in a collection of their own: one counter
    // document per reference value, under the unique index.
    const fresh = new mongoose.Schema({ tag: String, shop: String, no: Number });
    fresh.plugin(AutoIncrement, { id: `${p}down_fresh`, inc_field: 'no', reference_fields: 'shop', inc_amount: -1, collection_name: `${p}fresh_counters` });
    const Fresh = await model(`${p}DownFresh`, fresh);
    await connection.createCollection(`${p}fresh_counters`);
    await Fresh.collection.insertMany([
      { tag: 'a', shop: 'x', no: 5 },
      { tag: 'b', shop: 'y', no: 9 },
    ]);
    await Promise.all([syncCounterToMax(Fresh), syncCounterToMax(Fresh), syncCounterToMax(Fresh)]);
    const freshCounters = connection.db.collection(`${p}fresh_counters`);
    assert.deepEqual(
      (await freshCounters.find().sort({ seq: 1 }).toArray()).map((c) => [c.reference_value.shop, c.seq]),
      [
        ['x', 5],
        ['y', 9],
      ],
    );
    assert.ok((await freshCounters.indexes()).some((i) => i.unique && i.key.id === 1 && i.key.reference_value === 1));
    assert.equal((await Fresh.create({ tag: 'c', shop: 'y' })).no, 8);
  });

  test("syncCounterToMax chooses each counter as save does: reference values through the schema's getters", async () => {
    const schema = new mongoose.Schema({ tag: String, shop: { type: String, get: (v) => (v == null ? v : `<${v}>`) }, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}sync_getter`, inc_field: 'no', reference_fields: 'shop' });
    const M = await model(`${p}SyncGetter`, schema);
    await M.create({ tag: 'a', shop: 'x' });
    await M.collection.insertOne({ tag: 'b', shop: 'x', no: 30 });
    assert.deepEqual(await syncCounterToMax(M), [{ reference_value: { shop: '<x>' }, value: 30 }]);
    assert.equal((await M.create({ tag: 'c', shop: 'x' })).no, 31);
    assert.deepEqual(
      (
        await counters()
          .find({ id: `${p}sync_getter` })
          .toArray()
      ).map((c) => [c.reference_value, c.seq]),
      [[{ shop: '<x>' }, 31]],
    );
  });

  test('syncCounterToMax with a nested inc_field reads the dotted path', async () => {
    const schema = new mongoose.Schema({ tag: String });
    schema.plugin(AutoIncrement, { id: `${p}nested`, inc_field: 'meta.no' });
    const Nested = await model(`${p}Nested`, schema);
    await Nested.collection.insertMany([
      { tag: 'a', meta: { no: 41 } },
      { tag: 'b', meta: { no: 7 } },
    ]);
    assert.deepEqual(await syncCounterToMax(Nested), [{ reference_value: null, value: 41 }]);
    assert.equal((await Nested.create({ tag: 'c' })).meta.no, 42);
  });

  test('takeOverCounter continues after @typegoose/auto-increment and mongoose-auto-increment', async () => {
    const db = connection.db;
    await db.collection('identitycounters').insertMany([
      { field: '_id', modelName: `${p}FromTypegoose`, count: 57 },
      { model: `${p}FromMai`, field: 'no', count: 12 },
    ]);
    const a = new mongoose.Schema({ _id: Number });
    a.plugin(AutoIncrement, { id: `${p}from_typegoose` });
    const FromTypegoose = await model(`${p}FromTypegoose`, a);
    assert.equal(await takeOverCounter(FromTypegoose, 'typegoose'), 57);
    assert.equal((await FromTypegoose.create({}))._id, 58);
    const b = new mongoose.Schema({ no: Number });
    b.plugin(AutoIncrement, { id: `${p}from_mai`, inc_field: 'no' });
    const FromMai = await model(`${p}FromMai`, b);
    assert.equal(await takeOverCounter(FromMai, 'mongoose-auto-increment'), 12);
    assert.equal((await FromMai.create({})).no, 13);
    await assert.rejects(takeOverCounter(FromMai, 'typegoose'), /no typegoose counter/);
    await assert.rejects(takeOverCounter(FromMai, 'other'), /from must be one of typegoose, mongoose-auto-increment/);
  });
});

test('helper-style counters next to the mongoose index: INDEX_CONFLICT names the index', async () => {
  const db = env.db;
  await db.collection('mixed').createIndex({ id: 1, reference_value: 1 }, { unique: true });
  assert.equal(await seq.getNextSequenceValue(db, 'first', { collection: 'mixed', upsert: true }), 1);
  const e = await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'second', { collection: 'mixed', upsert: true }), 'INDEX_CONFLICT');
  assert.match(e.message, /id_1_reference_value_1/);
  // And the other way round: two helper-style counters block the mongoose index.
  await db.collection('helpers').insertMany([
    { _id: 'a', sequence_value: 1 },
    { _id: 'b', sequence_value: 1 },
  ]);
  const located = seq.counterAt(db, { id: 'x', reference_value: null }, { collection: 'helpers', field: 'seq', upsert: true });
  const e2 = await rejectsWithCode(assert, located.next(), 'INDEX_CONFLICT');
  assert.match(e2.message, /id_1_reference_value_1/);
});

test('counterAt: locators are checked before any I/O', async () => {
  for (const bad of [null, 'x', {}, { _id: 1 }, { $where: 1 }, { seq: 1 }]) {
    assert.throws(
      () => seq.counterAt(env.db, bad, { field: 'seq' }),
      (e) => e.code === 'INVALID_ARGUMENT',
    );
  }
  assert.throws(
    () => seq.counterAt(env.db, { id: 'x' }, { step: 0 }),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  await rejectsWithCode(assert, seq.setCountersWhere(env.db, { id: 'x' }, 1, { cache: 5 }), 'INVALID_ARGUMENT');
});
