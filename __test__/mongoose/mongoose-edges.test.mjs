// mongodb-sequence/mongoose at the edges (issues 17 and 34): reference values cast with the
// schema on every path and keyed by their exact BSON value, two counters on one schema,
// explicit numbers kept by insertMany, bulkWrite and upserts (overwritten by save and
// create), getters and setters on inc_field, descending counters synced downwards,
// counterReset with start_seq 0, gapless create, parallel_hooks, the upserts refused
// (pipelines, replaces without a number, reference values by other operators, a
// discriminator's own counters through its base). On mongoose 9 and 8.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import { setup, seq, external, serverKind, needsTransactions as needsTransactionsOf } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const AutoIncrementFactory = require('../../mongoose.js');
const { syncCounterToMax, takeOverCounter } = AutoIncrementFactory;
// Against MONGODB_URI: only where that server takes transactions (not a standalone).
const needsTransactions = external
  ? await needsTransactionsOf()
  : serverKind === 'secantus'
    ? false
    : 'gapless needs a replica set: runs in the secantus pass';

let env;
before(async () => {
  env = await setup('plugin_edges');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

for (const [major, mongoose] of [
  [9, mongoose9],
  [8, mongoose8],
]) {
  describe(`mongoose ${major}`, { timeout: 180_000 }, () => {
    const connection = mongoose.createConnection();
    const AutoIncrement = AutoIncrementFactory(connection);
    const p = `e${major}_`;
    const { ObjectId } = mongoose.Types;
    const counters = () => connection.db.collection('counters');
    // Collections made before anything writes to them (SecantusDB 0.7.0b3 livelocks when a
    // collection is created while another connection inserts into it).
    const model = async (name, schema) => {
      const made = connection.model(name, schema);
      await made.init();
      return made;
    };
    const numbers = async (Model, field, filter = {}) => (await Model.find(filter).sort({ tag: 1 }).lean()).map((d) => [d.tag, field.split('.').reduce((v, k) => v?.[k], d)]);

    before(async () => {
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
      await connection.createCollection('counters');
    });
    after(async () => {
      await connection.dropDatabase();
      await connection.close();
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
      await M.create([{ tag: 'c', ...strings }, { tag: 'd', ...strings }]);
      await M.create({ tag: 'e', ...strings });
      await M.bulkWrite([{ insertOne: { document: { tag: 'f', ...strings } } }]);
      await M.updateOne({ tag: 'g', shop: String(shop) }, { $set: { year: '2025', at: at.toISOString() } }, { upsert: true });
      await M.findOneAndUpdate({ tag: 'h', year: { $eq: '2025' } }, { $set: { shop: String(shop) }, $setOnInsert: { at: at.toISOString() } }, { upsert: true });
      await M.updateMany({ tag: 'i', ...strings }, { $set: { x: 1 } }, { upsert: true });
      assert.deepEqual(await numbers(M, 'no'), ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((t, i) => [t, i + 1]));
      const stored = await counters().find({ id: `${p}cast` }).toArray();
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
      await Dated.insertMany([{ tag: 'c', at: new Date(1000) }, { tag: 'd', at: new Date(1500) }, { tag: 'e', at: new Date(1999) }]);
      assert.deepEqual(await numbers(Dated, 'no'), [['a', 1], ['b', 1], ['c', 2], ['d', 2], ['e', 1]]);

      const mixed = new mongoose.Schema({ tag: String, mix: mongoose.Schema.Types.Mixed, no: Number });
      mixed.plugin(AutoIncrement, { id: `${p}keys_mix`, inc_field: 'no', reference_fields: 'mix' });
      const Mixed = await model(`${p}KeysMix`, mixed);
      await new Mixed({ tag: 'a', mix: { k: 1 } }).save();
      await new Mixed({ tag: 'b', mix: { k: 2 } }).save();
      await Mixed.insertMany([{ tag: 'c', mix: { k: 1 } }, { tag: 'd', mix: { k: 2 } }, { tag: 'e', mix: '[object Object]' }]);
      await Mixed.create([{ tag: 'f', mix: { k: 2 } }, { tag: 'g', mix: { k: 1 } }]);
      assert.deepEqual(await numbers(Mixed, 'no'), [['a', 1], ['b', 1], ['c', 2], ['d', 2], ['e', 1], ['f', 3], ['g', 3]]);
      assert.equal(await counters().countDocuments({ id: `${p}keys_mix` }), 3);
    });

    test('two counters on one schema: each numbers every document once', async () => {
      const schema = new mongoose.Schema({ tag: String, a: Number, b: Number });
      schema.plugin(AutoIncrement, { id: `${p}two_a`, inc_field: 'a' });
      schema.plugin(AutoIncrement, { id: `${p}two_b`, inc_field: 'b', start_seq: 10 });
      const Two = await model(`${p}Two`, schema);
      await Two.create([{ tag: 'a' }, { tag: 'b' }, { tag: 'c' }]);
      await Two.create({ tag: 'd' }, { tag: 'e' });
      await new Two({ tag: 'f' }).save();
      await Two.insertMany([{ tag: 'g' }]);
      const docs = await Two.find().sort({ tag: 1 }).lean();
      assert.deepEqual(docs.map((d) => [d.tag, d.a, d.b]), [
        ['a', 1, 10], ['b', 2, 11], ['c', 3, 12], ['d', 4, 13], ['e', 5, 14], ['f', 6, 15], ['g', 7, 16],
      ]);
      assert.equal((await counters().findOne({ id: `${p}two_a` })).seq, 7);
      assert.equal((await counters().findOne({ id: `${p}two_b` })).seq, 16);
    });

    test('insertMany, bulkWrite and upserts keep a number the caller set; save and create number every new document', async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}explicit`, inc_field: 'no' });
      const M = await model(`${p}Explicit`, schema);
      await M.insertMany([{ tag: 'a', no: 500 }, { tag: 'b' }]);
      // create is save: it overwrites the caller's number, as mongoose-sequence 6 does.
      await M.create([{ tag: 'c' }, { tag: 'd', no: 501 }]);
      await M.create({ tag: 'e', no: 502 }, { tag: 'f' });
      await M.bulkWrite([{ insertOne: { document: { tag: 'g', no: 503 } } }, { insertOne: { document: { tag: 'h' } } }]);
      const saved = await new M({ tag: 'i', no: 504 }).save();
      assert.equal(saved.no, 7);
      await new M({ tag: 'j' }).save();
      await M.updateOne({ tag: 'k' }, { $set: { no: 505 } }, { upsert: true });
      // As the schema casts it: '506' is a number, '' is none.
      await M.insertMany([{ tag: 'l', no: '' }, { tag: 'm', no: '506' }]);
      await M.create({ tag: 'n', no: 507 });
      await M.create([{ tag: 'o', no: 508 }]);
      // A clone of a saved document is a new document: it never repeats the number.
      const old = await M.findOne({ tag: 'j' });
      const clone = await new M({ ...old.toObject(), _id: undefined, tag: 'p' }).save();
      assert.notEqual(String(clone._id), String(old._id));
      // A document saved (or created) once and inserted again as a new one takes a new
      // number: what it was given is its own only until its save succeeds.
      for (const [tag, again] of [['q', await new M({ tag: 'j2' }).save()], ['r', (await M.create([{ tag: 'j3' }, { tag: 'j4' }]))[0]], ['s', await M.create({ tag: 'j5', no: 509 })], ['t', (await M.insertMany([new M({ tag: 'j6' })]))[0]]]) {
        again.set({ _id: new ObjectId(), tag });
        again.isNew = true;
        await again.save();
      }
      assert.deepEqual(await numbers(M, 'no'), [
        ['a', 500], ['b', 1], ['c', 2], ['d', 3], ['e', 4], ['f', 5], ['g', 503], ['h', 6], ['i', 7], ['j', 8], ['j2', 13], ['j3', 14], ['j4', 15], ['j5', 16], ['j6', 17], ['k', 505], ['l', 9], ['m', 506],
        ['n', 10], ['o', 11], ['p', 12], ['q', 18], ['r', 19], ['s', 20], ['t', 21],
      ]);
      assert.equal((await counters().findOne({ id: `${p}explicit` })).seq, 21);
      // A default is not the caller's value.
      const defaulted = new mongoose.Schema({ tag: String, no: { type: Number, default: 0 } });
      defaulted.plugin(AutoIncrement, { id: `${p}explicit_default`, inc_field: 'no' });
      const D = await model(`${p}ExplicitDefault`, defaulted);
      await D.create([{ tag: 'a' }, { tag: 'b' }]);
      await new D({ tag: 'c' }).save();
      await D.insertMany([{ tag: 'd' }]);
      assert.deepEqual(await numbers(D, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 4]]);
    });

    test('a getter or a setter on inc_field: every path numbers once, from the raw value', async () => {
      // A display format (issue 34): the getter's "INV-undefined" is no number of the caller's.
      const schema = new mongoose.Schema({ tag: String, no: { type: Number, get: (n) => `INV-${n}` } });
      schema.plugin(AutoIncrement, { id: `${p}getter`, inc_field: 'no' });
      const M = await model(`${p}Getter`, schema);
      assert.equal((await M.create({ tag: 'a' })).no, 'INV-1');
      await M.create([{ tag: 'b' }, { tag: 'c' }]);
      await M.create({ tag: 'd' }, { tag: 'e' });
      await new M({ tag: 'f' }).save();
      await M.insertMany([{ tag: 'g' }, new M({ tag: 'h' })]);
      await M.bulkWrite([{ insertOne: { document: { tag: 'i' } } }]);
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 4], ['e', 5], ['f', 6], ['g', 7], ['h', 8], ['i', 9]]);
      // A setter that changes the value: each document is numbered once (no number spent twice).
      const scaled = new mongoose.Schema({ tag: String, no: { type: Number, set: (n) => (n == null ? n : n * 10) } });
      scaled.plugin(AutoIncrement, { id: `${p}setter`, inc_field: 'no' });
      const S = await model(`${p}Setter`, scaled);
      await S.create([{ tag: 'a' }, { tag: 'b' }]);
      await S.create({ tag: 'c' }, { tag: 'd' });
      await S.insertMany([new S({ tag: 'e' })]);
      assert.deepEqual(await numbers(S, 'no'), [['a', 10], ['b', 20], ['c', 30], ['d', 40], ['e', 50]]);
      assert.equal((await counters().findOne({ id: `${p}setter` })).seq, 5);
    });

    test('create numbers as save does, a number the caller set included: a copy of a record takes a new number', async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}create_copy`, inc_field: 'no' });
      const M = await model(`${p}CreateCopy`, schema);
      const first = await M.create({ tag: 'a' });
      const copy = first.toObject();
      delete copy._id;
      assert.equal((await M.create({ ...copy, tag: 'b' })).no, 2);
      await M.create([{ ...copy, tag: 'c' }, { tag: 'd', no: 500 }]);
      await M.create({ tag: 'e', no: 501 }, { ...copy, tag: 'f' });
      await M.create(new M({ tag: 'g', no: 502 }));
      // As mongoose-sequence 6.0.1, whose create is save.
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 4], ['e', 5], ['f', 6], ['g', 7]]);
      assert.equal((await counters().findOne({ id: `${p}create_copy` })).seq, 7);
    });

    test('gapless: create numbers a number the caller set too; insertMany keeps it', { skip: needsTransactions }, async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}gapless_copy`, inc_field: 'no', gapless: true });
      const G = await model(`${p}GaplessCopy`, schema);
      const first = await G.create({ tag: 'a' });
      const copy = first.toObject();
      delete copy._id;
      assert.equal((await G.create({ ...copy, tag: 'b' })).no, 2);
      await G.create([{ tag: 'c', no: 500 }, { tag: 'd' }]);
      await G.insertMany([{ tag: 'e', no: 600 }, { tag: 'f' }]);
      assert.deepEqual(await numbers(G, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 4], ['e', 600], ['f', 5]]);
    });

    test('a save that failed after numbering keeps its number, unless its reference value changed since', async () => {
      const schema = new mongoose.Schema({ tag: { type: String, unique: true }, shop: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}retry`, inc_field: 'no', reference_fields: 'shop' });
      const M = await model(`${p}Retry`, schema);
      assert.equal((await M.create({ tag: 'a', shop: 'x' })).no, 1);
      const again = new M({ tag: 'a', shop: 'x' });
      await assert.rejects(again.save(), (e) => e.code === 11000);
      assert.equal(again.no, 2);
      again.tag = 'b';
      await again.save();
      assert.equal((await M.findOne({ tag: 'b' })).no, 2, 'the same number, none spent');
      const moved = new M({ tag: 'a', shop: 'x' });
      await assert.rejects(moved.save(), (e) => e.code === 11000);
      assert.equal(moved.no, 3);
      moved.tag = 'c';
      moved.shop = 'y';
      await moved.save();
      assert.equal((await M.findOne({ tag: 'c' })).no, 1, 'numbered again from the counter of its new shop');
      // The same through insertMany of documents.
      const failed = new M({ tag: 'a', shop: 'x' });
      await assert.rejects(failed.save(), (e) => e.code === 11000);
      assert.equal(failed.no, 4);
      failed.tag = 'd';
      failed.shop = 'y';
      const kept = new M({ tag: 'b', shop: 'x' });
      await assert.rejects(kept.save(), (e) => e.code === 11000);
      kept.tag = 'e';
      await M.insertMany([failed, kept]);
      assert.deepEqual([(await M.findOne({ tag: 'd' })).no, (await M.findOne({ tag: 'e' })).no], [2, 5]);
      assert.deepEqual((await counters().find({ id: `${p}retry` }).sort({ 'reference_value.shop': 1 }).toArray()).map((c) => [c.reference_value.shop, c.seq]), [['x', 5], ['y', 2]]);
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
      await Shop.create([{ tag: 'a', shop: 'x' }, { tag: 'b', shop: 'x' }]);
      await Shop.collection.insertMany([{ tag: 'c', shop: 'x', no: -7 }, { tag: 'd', shop: 'y', no: -20 }, { tag: 'e', shop: 'y', no: 3 }]);
      const moved = await syncCounterToMax(Shop);
      assert.deepEqual(moved.map((r) => [r.reference_value.shop, r.value]).sort(), [['x', -7], ['y', -20]]);
      assert.equal((await Shop.create({ tag: 'f', shop: 'x' })).no, -12);
      assert.equal((await Shop.create({ tag: 'g', shop: 'y' })).no, -25);
      assert.equal(await counters().countDocuments({ id: `${p}down_shop` }), 2);

      // Racing syncs of counters never used, in a collection of their own: one counter
      // document per reference value, under the unique index.
      const fresh = new mongoose.Schema({ tag: String, shop: String, no: Number });
      fresh.plugin(AutoIncrement, { id: `${p}down_fresh`, inc_field: 'no', reference_fields: 'shop', inc_amount: -1, collection_name: `${p}fresh_counters` });
      const Fresh = await model(`${p}DownFresh`, fresh);
      await connection.createCollection(`${p}fresh_counters`);
      await Fresh.collection.insertMany([{ tag: 'a', shop: 'x', no: 5 }, { tag: 'b', shop: 'y', no: 9 }]);
      await Promise.all([syncCounterToMax(Fresh), syncCounterToMax(Fresh), syncCounterToMax(Fresh)]);
      const freshCounters = connection.db.collection(`${p}fresh_counters`);
      assert.deepEqual((await freshCounters.find().sort({ seq: 1 }).toArray()).map((c) => [c.reference_value.shop, c.seq]), [['x', 5], ['y', 9]]);
      assert.ok((await freshCounters.indexes()).some((i) => i.unique && i.key.id === 1 && i.key.reference_value === 1));
      assert.equal((await Fresh.create({ tag: 'c', shop: 'y' })).no, 8);
    });

    test('syncCounterToMax chooses each counter as save does: reference values through the schema\'s getters', async () => {
      const schema = new mongoose.Schema({ tag: String, shop: { type: String, get: (v) => (v == null ? v : `<${v}>`) }, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}sync_getter`, inc_field: 'no', reference_fields: 'shop' });
      const M = await model(`${p}SyncGetter`, schema);
      await M.create({ tag: 'a', shop: 'x' });
      await M.collection.insertOne({ tag: 'b', shop: 'x', no: 30 });
      assert.deepEqual(await syncCounterToMax(M), [{ reference_value: { shop: '<x>' }, value: 30 }]);
      assert.equal((await M.create({ tag: 'c', shop: 'x' })).no, 31);
      assert.deepEqual((await counters().find({ id: `${p}sync_getter` }).toArray()).map((c) => [c.reference_value, c.seq]), [[{ shop: '<x>' }, 31]]);
    });

    test('syncCounterToMax with a nested inc_field reads the dotted path', async () => {
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(AutoIncrement, { id: `${p}nested`, inc_field: 'meta.no' });
      const Nested = await model(`${p}Nested`, schema);
      await Nested.collection.insertMany([{ tag: 'a', meta: { no: 41 } }, { tag: 'b', meta: { no: 7 } }]);
      assert.deepEqual(await syncCounterToMax(Nested), [{ reference_value: null, value: 41 }]);
      assert.equal((await Nested.create({ tag: 'c' })).meta.no, 42);
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

    test('gapless: create(a, b) in the spread form inserts every document', { skip: needsTransactions }, async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}gapless_spread`, inc_field: 'no', gapless: true });
      const G = await model(`${p}GaplessSpread`, schema);
      const made = await G.create({ tag: 'a' }, { tag: 'b' }, { tag: 'c' });
      assert.deepEqual(made.map((d) => [d.tag, d.no]), [['a', 1], ['b', 2], ['c', 3]]);
      assert.equal((await G.create({ tag: 'd' })).no, 4);
      assert.deepEqual(await numbers(G, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 4]]);
    });

    test('one plain object given twice is numbered twice: the caller\'s objects are never written to', async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number, meta: { no: Number } });
      schema.plugin(AutoIncrement, { id: `${p}twice`, inc_field: 'no' });
      schema.plugin(AutoIncrement, { id: `${p}twice_meta`, inc_field: 'meta.no' });
      const M = await model(`${p}Twice`, schema);
      const o = { tag: 'a', meta: { other: 1 } };
      await M.insertMany([o, o]);
      assert.deepEqual(o, { tag: 'a', meta: { other: 1 } }, 'the caller\'s object is unchanged');
      const batch = [{ tag: 'b' }, { tag: 'c' }];
      await M.insertMany(batch);
      await M.insertMany(batch);
      const single = { tag: 'd' };
      await M.insertMany(single);
      await M.insertMany(single);
      const shared = { tag: 'e' };
      await M.bulkWrite([{ insertOne: { document: shared } }, { insertOne: { document: shared } }]);
      assert.deepEqual(shared, { tag: 'e' });
      const docs = await M.find().lean();
      for (const field of ['no', 'meta.no']) {
        const values = docs.map((d) => field.split('.').reduce((v, k) => v?.[k], d)).sort((x, y) => x - y);
        assert.deepEqual(values, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], `${field}: every insert its own number`);
      }
    });

    test('insertMany leaves the caller\'s array and objects as they were: inserted again, they take new numbers', async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}untouched`, inc_field: 'no' });
      const M = await model(`${p}Untouched`, schema);
      const a = { tag: 'a' };
      const b = { tag: 'b' };
      const docs = [a, b];
      await M.insertMany(docs);
      assert.ok(docs.length === 2 && docs[0] === a && docs[1] === b, 'the same array of the same objects');
      assert.deepEqual(docs, [{ tag: 'a' }, { tag: 'b' }]);
      await M.create(docs);
      await M.insertMany(docs);
      const c = { tag: 'c' };
      await M.insertMany(c);
      assert.deepEqual(c, { tag: 'c' });
      await M.create(c);
      const tagged = (await M.find().sort({ no: 1 }).lean()).map((d) => [d.tag, d.no]);
      assert.deepEqual(tagged, [['a', 1], ['b', 2], ['a', 3], ['b', 4], ['a', 5], ['b', 6], ['c', 7], ['c', 8]]);
    });

    test('setNext on a saved document whose inc_field cannot change fails with INVALID_ARGUMENT and spends nothing', async () => {
      const schema = new mongoose.Schema({ tag: String, locked: Boolean, no: { type: Number, immutable: (doc) => doc.locked !== false } });
      schema.plugin(AutoIncrement, { id: `${p}immutable`, inc_field: 'no' });
      const M = await model(`${p}Immutable`, schema);
      const saved = await M.create({ tag: 'a' });
      const error = await rejectsCode(saved.setNext(`${p}immutable`), 'INVALID_ARGUMENT');
      assert.match(error.message, /immutable/);
      const viaCallback = await new Promise((resolve) => saved.setNext(`${p}immutable`, resolve));
      assert.equal(viaCallback?.code, 'INVALID_ARGUMENT');
      assert.equal((await counters().findOne({ id: `${p}immutable` })).seq, 1, 'no number spent');
      // Before its first save an immutable field takes one; where it is not immutable, always.
      assert.equal((await new M({ tag: 'b' }).setNext(`${p}immutable`)).no, 2);
      const open = await M.create({ tag: 'c', locked: false });
      assert.equal((await open.setNext(`${p}immutable`)).no, 4);
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 2], ['c', 4]]);
      // A stored _id never changes.
      const byId = new mongoose.Schema({ _id: Number, tag: String });
      byId.plugin(AutoIncrement, { id: `${p}immutable_id` });
      const I = await model(`${p}ImmutableId`, byId);
      const doc = await I.create({ tag: 'a' });
      await rejectsCode(doc.setNext(`${p}immutable_id`), 'INVALID_ARGUMENT');
      assert.equal((await counters().findOne({ id: `${p}immutable_id` })).seq, 1, 'no number spent');
    });

    test('discriminators: the migration helpers and counterReset find the counters of the base schema and of the child\'s', async () => {
      const schema = new mongoose.Schema({ tag: String, year: Number, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}disc`, inc_field: 'no', reference_fields: ['year'] });
      const Base = await model(`${p}Disc`, schema);
      const Child = Base.discriminator(`${p}DiscChild`, new mongoose.Schema({ extra: String }));
      await Base.create({ tag: 'a', year: 2025 });
      await Child.create({ tag: 'b', year: 2025 });
      // The counter numbers every document of the collection: sync reads them all.
      await Base.collection.insertOne({ tag: 'imported', year: 2025, no: 40 });
      assert.deepEqual(await syncCounterToMax(Child), [{ reference_value: { year: 2025 }, value: 40 }]);
      assert.deepEqual(await syncCounterToMax(Child, `${p}disc`), [{ reference_value: { year: 2025 }, value: 40 }]);
      assert.equal((await Child.create({ tag: 'c', year: 2025 })).no, 41);
      // Reference values cast with the child's schema: '2025' is the Number 2025.
      assert.equal((await Child.counterReset(`${p}disc`, { year: '2025' })).matchedCount, 1);
      assert.equal((await Child.create({ tag: 'd', year: 2025 })).no, 1);
      // A counter of the child's own schema, beside the base's.
      const own = new mongoose.Schema({ cno: Number });
      own.plugin(AutoIncrement, { id: `${p}disc_own`, inc_field: 'cno', start_seq: 100 });
      const Other = Base.discriminator(`${p}DiscOther`, own);
      const e = await Other.create({ tag: 'e', year: 2025 });
      assert.deepEqual([e.no, e.cno], [2, 100]);
      await rejectsCode(syncCounterToMax(Other), 'INVALID_ARGUMENT');
      await Base.collection.insertOne({ tag: 'f', year: 2025, cno: 150, __t: `${p}DiscOther` });
      assert.deepEqual(await syncCounterToMax(Other, `${p}disc_own`), [{ reference_value: null, value: 150 }]);
      assert.equal((await Other.create({ tag: 'g', year: 2025 })).cno, 151);
      assert.equal((await Other.counterReset(`${p}disc_own`)).matchedCount, 1);
      assert.equal((await Other.create({ tag: 'h', year: 2025 })).cno, 100);
      await rejectsCode(syncCounterToMax(Child, `${p}disc_own`), 'INVALID_ARGUMENT');
    });

    test('a reference value holding undefined is keyed as the null the server stores', async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number, mix: mongoose.Schema.Types.Mixed });
      schema.plugin(AutoIncrement, { id: `${p}undef`, inc_field: 'no', reference_fields: ['mix'] });
      const M = await model(`${p}Undef`, schema);
      await new M({ tag: 'a', mix: { x: undefined } }).save();
      await new M({ tag: 'b', mix: {} }).save();
      await new M({ tag: 'c', mix: { x: null } }).save();
      await M.insertMany([{ tag: 'd', mix: {} }, { tag: 'e', mix: { x: undefined } }]);
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 1], ['c', 2], ['d', 2], ['e', 3]]);
      const stored = await counters().find({ id: `${p}undef` }).toArray();
      assert.deepEqual(stored.map((c) => [JSON.stringify(c.reference_value), c.seq]).sort(), [['{"mix":{"x":null}}', 3], ['{"mix":{}}', 2]]);
    });

    test('an upsert by its number inserts that number and takes none', async () => {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}upsert_no`, inc_field: 'no' });
      const M = await model(`${p}UpsertNo`, schema);
      await M.updateOne({ no: 500 }, { $set: { tag: 'a' } }, { upsert: true });
      await M.updateOne({ no: 500 }, { $set: { tag: 'b' } }, { upsert: true });
      await M.findOneAndUpdate({ no: { $eq: 501 } }, { tag: 'c' }, { upsert: true });
      await M.updateOne({ tag: 'd' }, { $set: { x: 1 } }, { upsert: true });
      assert.deepEqual(await numbers(M, 'no'), [['b', 500], ['c', 501], ['d', 1]]);
      const byId = new mongoose.Schema({ _id: Number, tag: String });
      byId.plugin(AutoIncrement, { id: `${p}upsert_id` });
      const I = await model(`${p}UpsertId`, byId);
      await I.updateOne({ _id: 77 }, { $set: { tag: 'a' } }, { upsert: true });
      await I.findOneAndUpdate({ _id: 77 }, { tag: 'b' }, { upsert: true });
      await I.updateOne({ tag: 'c' }, { $set: { x: 1 } }, { upsert: true });
      assert.deepEqual((await I.find().sort({ _id: 1 }).lean()).map((d) => [d._id, d.tag]), [[1, 'c'], [77, 'b']]);
    });

    test('every upsert that can insert a document numbers it, in bulkWrite too; a replace only by a number it is given', async () => {
      const schema = new mongoose.Schema({ tag: String, x: Number, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}upsert_all`, inc_field: 'no' });
      const M = await model(`${p}UpsertAll`, schema);
      await M.bulkWrite([
        { updateOne: { filter: { tag: 'a' }, update: { $set: { x: 1 } }, upsert: true } },
        { insertOne: { document: { tag: 'b' } } },
        { updateMany: { filter: { tag: 'c' }, update: { $set: { x: 1 } }, upsert: true } },
        { replaceOne: { filter: { tag: 'd' }, replacement: { tag: 'd', x: 1, no: 400 }, upsert: true } },
      ]);
      await M.findOneAndUpdate({ tag: 'e' }, { $setOnInsert: { x: 1 } }, { upsert: true });
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 400], ['e', 4]]);
      // Matching an existing document: an update keeps its number (a value spent: a gap).
      await M.bulkWrite([{ updateOne: { filter: { tag: 'a' }, update: { $set: { x: 5 } }, upsert: true } }]);
      await M.updateMany({ tag: { $in: ['b', 'c'] } }, { $set: { x: 6 } }, { upsert: true });
      // A replacement is stored as it is: accepted when it holds its number, or when the
      // filter gives it by equality (put into the replacement, which a match keeps).
      await M.replaceOne({ no: 500 }, { tag: 'j' }, { upsert: true });
      await M.findOneAndReplace({ no: 500 }, { tag: 'j', x: 1 }, { upsert: true });
      await M.bulkWrite([{ replaceOne: { filter: { tag: 'k' }, replacement: { tag: 'k', no: 501 }, upsert: true } }]);
      await M.replaceOne({ tag: 'a' }, { tag: 'a', x: 7, no: 1 }, { upsert: true });
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 2], ['c', 3], ['d', 400], ['e', 4], ['j', 500], ['k', 501]]);
      assert.equal((await counters().findOne({ id: `${p}upsert_all` })).seq, 6);

      // Reference values of an upsert: the filter's equalities, $set and $setOnInsert.
      const scoped = new mongoose.Schema({ tag: String, shop: String, no: Number });
      scoped.plugin(AutoIncrement, { id: `${p}upsert_scoped`, inc_field: 'no', reference_fields: 'shop' });
      const S = await model(`${p}UpsertScoped`, scoped);
      await S.updateOne({ tag: 'a', shop: 'x' }, { $set: { n: 1 } }, { upsert: true });
      await S.updateOne({ tag: 'b' }, { $setOnInsert: { shop: 'y' } }, { upsert: true });
      await S.bulkWrite([{ updateOne: { filter: { tag: 'c' }, update: { $set: { shop: 'x' } }, upsert: true } }]);
      assert.deepEqual((await S.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.shop, d.no]), [['a', 'x', 1], ['b', 'y', 1], ['c', 'x', 2]]);

      // Numbered by _id: the server inserts the filter's _id, or the replacement's.
      const byId = new mongoose.Schema({ _id: Number, tag: String });
      byId.plugin(AutoIncrement, { id: `${p}upsert_all_id` });
      const I = await model(`${p}UpsertAllId`, byId);
      await I.replaceOne({ _id: 70 }, { tag: 'a' }, { upsert: true });
      await I.bulkWrite([{ replaceOne: { filter: { tag: 'b' }, replacement: { _id: 71, tag: 'b' }, upsert: true } }]);
      await I.updateOne({ tag: 'c' }, { $set: { x: 1 } }, { upsert: true });
      await rejectsCode(I.replaceOne({ tag: 'd' }, { tag: 'd' }, { upsert: true }), 'INVALID_ARGUMENT');
      await rejectsCode(I.findOneAndReplace({ tag: 'd' }, { tag: 'd' }, { upsert: true }), 'INVALID_ARGUMENT');
      await rejectsCode(I.bulkWrite([{ replaceOne: { filter: { tag: 'd' }, replacement: { tag: 'd' }, upsert: true } }]), 'INVALID_ARGUMENT');
      assert.deepEqual((await I.find().sort({ _id: 1 }).lean()).map((d) => [d._id, d.tag]), [[1, 'c'], [70, 'a'], [71, 'b']]);
      assert.equal((await counters().findOne({ id: `${p}upsert_all_id` })).seq, 1);
    });

    test('a pipeline upsert is refused, alone or in bulkWrite (ordered or not), before anything is written', async () => {
      const schema = new mongoose.Schema({ tag: String, grp: String, x: Number, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}pipe`, inc_field: 'no' });
      const M = await model(`${p}Pipe`, schema);
      await M.create([{ tag: 'a', grp: 'G' }, { tag: 'b', grp: 'G' }]);
      // Documents written before the plugin, without a number.
      await M.collection.insertMany([{ tag: 'l1', grp: 'L' }, { tag: 'l2', grp: 'L' }]);
      const before = await M.find().sort({ tag: 1 }).lean();
      const options = { upsert: true, updatePipeline: true };
      const refusal = (e) => e.code === 'INVALID_ARGUMENT' && /pipeline cannot tell/.test(e.message) && /\$setOnInsert/.test(e.message);
      await assert.rejects(M.updateMany({ grp: 'L' }, [{ $set: { x: 1 } }], options), refusal);
      await assert.rejects(M.updateMany({ grp: 'G' }, [{ $replaceWith: { tag: '$tag', grp: '$grp' } }], options), refusal);
      await assert.rejects(M.updateOne({ tag: 'n' }, [{ $set: { x: 1 } }], options), refusal);
      await assert.rejects(M.findOneAndUpdate({ tag: 'n' }, [{ $set: { x: 1 } }], options), refusal);
      // Even with the number in the filter: every pipeline upsert.
      await assert.rejects(M.updateOne({ no: 502 }, [{ $set: { tag: 'n' } }], options), refusal);
      for (const ordered of [true, false]) {
        const ops = [
          { insertOne: { document: { tag: 'n' } } },
          { updateMany: { filter: { grp: 'L' }, update: [{ $set: { x: 2 } }], upsert: true } },
          { updateOne: { filter: { tag: 'o' }, update: [{ $set: { x: 2 } }], upsert: true } },
        ];
        await assert.rejects(M.bulkWrite(ops, { ordered, updatePipeline: true }), refusal);
      }
      // Nothing written, no number taken; without upsert a pipeline runs as mongoose runs it.
      assert.deepEqual(await M.find().sort({ tag: 1 }).lean(), before);
      assert.equal((await counters().findOne({ id: `${p}pipe` })).seq, 2);
      await M.updateMany({ grp: 'L' }, [{ $set: { x: 3 } }], { updatePipeline: true });
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['b', 2], ['l1', undefined], ['l2', undefined]]);
    });

    test('an upsert writing a reference field by another operator than $set or $setOnInsert is refused', async () => {
      const schema = new mongoose.Schema({ tag: String, year: Number, old: Number, meta: { y: Number }, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}ref_ops`, inc_field: 'no', reference_fields: ['year', 'meta.y'] });
      const M = await model(`${p}RefOps`, schema);
      await M.create({ tag: 'a', year: 2025, meta: { y: 1 } });
      const refusal = (operator) => (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`with ${operator}`);
      for (const [operator, update] of [
        ['$inc', { $inc: { year: 2025 } }],
        ['$max', { $max: { year: 2025 } }],
        ['$min', { $min: { year: 2025 } }],
        ['$mul', { $mul: { year: 1 } }],
        ['$unset', { $unset: { year: 1 } }],
        ['$rename', { $rename: { old: 'year' } }],
        ['$rename', { $rename: { year: 'old' } }],
        ['$inc', { $inc: { 'meta.y': 1 } }],
        ['$unset', { $unset: { meta: 1 } }],
      ]) {
        await assert.rejects(M.updateOne({ tag: 'b', year: 2025 }, update, { upsert: true }), refusal(operator));
        await assert.rejects(M.findOneAndUpdate({ tag: 'b' }, { $set: { year: 2025 }, ...update }, { upsert: true }), refusal(operator));
        await assert.rejects(M.updateMany({ tag: 'b' }, update, { upsert: true }), refusal(operator));
        await assert.rejects(M.bulkWrite([{ insertOne: { document: { tag: 'c', year: 2025 } } }, { updateOne: { filter: { tag: 'b' }, update, upsert: true } }], { ordered: false }), refusal(operator));
      }
      assert.deepEqual(await numbers(M, 'no'), [['a', 1]]);
      assert.deepEqual((await counters().find({ id: `${p}ref_ops` }).toArray()).map((c) => c.seq), [1]);
      // Other operators on other fields, or an upsert that takes no number, run.
      await M.updateOne({ tag: 'd', year: 2025, 'meta.y': 1 }, { $inc: { old: 1 } }, { upsert: true });
      await M.updateOne({ tag: 'e' }, { $inc: { year: 2025 }, $set: { no: 90 } }, { upsert: true });
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['d', 2], ['e', 90]]);
      // Refused by one counter of two: the other takes no number either.
      const two = new mongoose.Schema({ tag: String, year: Number, a: Number, b: Number });
      two.plugin(AutoIncrement, { id: `${p}ref_ops_a`, inc_field: 'a' });
      two.plugin(AutoIncrement, { id: `${p}ref_ops_b`, inc_field: 'b', reference_fields: ['year'] });
      const Two = await model(`${p}RefOpsTwo`, two);
      await Two.create({ tag: 'a', year: 1 });
      await assert.rejects(Two.updateOne({ tag: 'b' }, { $inc: { year: 1 } }, { upsert: true }), refusal('$inc'));
      await assert.rejects(Two.bulkWrite([{ updateOne: { filter: { tag: 'b' }, update: { $max: { year: 1 } }, upsert: true } }]), refusal('$max'));
      await assert.rejects(Two.replaceOne({ tag: 'a' }, { tag: 'a', a: 1 }, { upsert: true }), (e) => e.code === 'INVALID_ARGUMENT');
      assert.deepEqual((await counters().find({ id: { $in: [`${p}ref_ops_a`, `${p}ref_ops_b`] } }).sort({ id: 1 }).toArray()).map((c) => [c.id, c.seq]), [[`${p}ref_ops_a`, 1], [`${p}ref_ops_b`, 1]]);
    });

    test('a replace upsert without a number is refused: it would renumber a document it matches', async () => {
      const schema = new mongoose.Schema({ tag: String, x: Number, no: Number }, { timestamps: true });
      schema.plugin(AutoIncrement, { id: `${p}replace`, inc_field: 'no' });
      const M = await model(`${p}Replace`, schema);
      const a = await M.create({ tag: 'a' });
      const refusal = (e) => e.code === 'INVALID_ARGUMENT' && /would renumber a document it matches/.test(e.message);
      await assert.rejects(M.replaceOne({ _id: a._id }, { tag: 'a', x: 1 }, { upsert: true }), refusal);
      await assert.rejects(M.findOneAndReplace({ tag: 'a' }, { tag: 'a', x: 1 }, { upsert: true, new: true }), refusal);
      await assert.rejects(M.replaceOne({ tag: 'new' }, { tag: 'new' }, { upsert: true }), refusal);
      for (const ordered of [true, false]) {
        await assert.rejects(M.bulkWrite([{ insertOne: { document: { tag: 'b' } } }, { replaceOne: { filter: { tag: 'a' }, replacement: { tag: 'a' }, upsert: true } }], { ordered }), refusal);
      }
      assert.deepEqual(await numbers(M, 'no'), [['a', 1]]);
      assert.equal((await counters().findOne({ id: `${p}replace` })).seq, 1);
      // The number given in the filter or the replacement: kept by a match, inserted otherwise.
      await M.replaceOne({ tag: 'a', no: 1 }, { tag: 'a', x: 2 }, { upsert: true });
      await M.findOneAndReplace({ _id: a._id }, { tag: 'a', x: 3, no: 1 }, { upsert: true });
      await M.bulkWrite([{ replaceOne: { filter: { tag: 'c' }, replacement: { tag: 'c', no: 300 }, upsert: true } }]);
      assert.deepEqual((await M.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.no, d.x]), [['a', 1, 3], ['c', 300, undefined]]);
      // Without upsert, a replace is mongoose's own.
      await M.replaceOne({ tag: 'c' }, { tag: 'c', x: 4 });
      assert.deepEqual(await numbers(M, 'no'), [['a', 1], ['c', undefined]]);
      assert.equal((await counters().findOne({ id: `${p}replace` })).seq, 1);
    });

    test('a discriminator numbered by its own schema\'s counters is refused through the base model\'s batch writers', async () => {
      const base = new mongoose.Schema({ tag: String, no: Number }, { discriminatorKey: 'kind' });
      base.plugin(AutoIncrement, { id: `${p}dbase`, inc_field: 'no' });
      const Base = await model(`${p}DBase`, base);
      const own = new mongoose.Schema({ cno: Number });
      own.plugin(AutoIncrement, { id: `${p}dchild`, inc_field: 'cno' });
      const Child = Base.discriminator(`${p}DChild`, own);
      const Plain = Base.discriminator(`${p}DPlain`, new mongoose.Schema({ other: String }));
      const kind = Child.modelName;
      const refusal = (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`through the model ${kind}`) && e.message.includes(`'${p}dchild'`);
      await assert.rejects(Base.insertMany([{ tag: 'a', kind }]), refusal);
      await assert.rejects(Base.insertMany([new Child({ tag: 'a' })]), refusal);
      await assert.rejects(Base.bulkWrite([{ insertOne: { document: { tag: 'a', kind } } }], { ordered: false }), refusal);
      await assert.rejects(Base.updateOne({ tag: 'a', kind }, { $set: { x: 1 } }, { upsert: true }), refusal);
      await assert.rejects(Base.findOneAndUpdate({ tag: 'a' }, { $setOnInsert: { kind } }, { upsert: true }), refusal);
      await assert.rejects(Base.bulkWrite([{ updateOne: { filter: { tag: 'a', kind }, update: { $set: { x: 1 } }, upsert: true } }]), refusal);
      await assert.rejects(Base.replaceOne({ tag: 'a' }, { tag: 'a', kind, no: 5 }, { upsert: true }), refusal);
      assert.equal(await Base.countDocuments(), 0);
      assert.equal(await counters().countDocuments({ id: { $in: [`${p}dbase`, `${p}dchild`] } }), 0);
      // With the child's number given, through the child, or a child without counters of its own: numbered.
      await Base.insertMany([{ tag: 'b', kind, cno: 50 }, { tag: 'c', kind: Plain.modelName }]);
      await Base.create({ tag: 'd', kind });
      await Child.insertMany([{ tag: 'e' }]);
      await Child.updateOne({ tag: 'f' }, { $set: { x: 1 } }, { upsert: true });
      await Child.bulkWrite([{ insertOne: { document: { tag: 'g' } } }]);
      const docs = (await Base.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.no, d.cno]);
      assert.deepEqual(docs, [['b', 1, 50], ['c', 2, undefined], ['d', 3, 1], ['e', 4, 2], ['f', 5, 3], ['g', 6, 4]]);
    });

    test('a discriminator compiled from a clone of the base schema counts the base\'s counter once', async () => {
      const base = new mongoose.Schema({ tag: String, no: Number }, { discriminatorKey: 'kind' });
      base.plugin(AutoIncrement, { id: `${p}clone`, inc_field: 'no' });
      const Base = await model(`${p}CloneBase`, base);
      const Copy = Base.discriminator(`${p}CloneCopy`, base.clone());
      await Copy.create([{ tag: 'a' }, { tag: 'b' }]);
      await Base.collection.insertOne({ tag: 'c', no: 30, kind: Copy.modelName });
      assert.deepEqual(await syncCounterToMax(Copy), [{ reference_value: null, value: 30 }]);
      assert.equal((await Copy.create({ tag: 'd' })).no, 31);
      assert.equal((await Copy.counterReset(`${p}clone`)).matchedCount, 1);
      assert.equal((await Base.create({ tag: 'e' })).no, 1);
    });

    test('an upsert that writes the object above a nested inc_field, or the field itself, still runs', async () => {
      const schema = new mongoose.Schema({ tag: String, meta: { no: Number, x: Number } });
      schema.plugin(AutoIncrement, { id: `${p}upsert_nested`, inc_field: 'meta.no' });
      const M = await model(`${p}UpsertNested`, schema);
      await M.updateOne({ tag: 'a' }, { $setOnInsert: { meta: { x: 1 } } }, { upsert: true });
      await M.updateOne({ tag: 'b' }, { $set: { meta: { x: 2 } } }, { upsert: true });
      await M.updateOne({ tag: 'c' }, { $set: { meta: { no: 90 } } }, { upsert: true });
      await M.updateOne({ tag: 'd' }, { $inc: { 'meta.no': 5 } }, { upsert: true });
      await M.findOneAndUpdate({ tag: 'e' }, { $set: { 'meta.x': 3 } }, { upsert: true });
      await M.updateOne({ tag: 'f' }, { $setOnInsert: { meta: { no: 91 } } }, { upsert: true });
      const docs = (await M.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.meta]);
      // A $set of the whole object (b) replaces it on every update: it is left without a number.
      assert.deepEqual(docs, [['a', { x: 1, no: 1 }], ['b', { x: 2 }], ['c', { no: 90 }], ['d', { no: 5 }], ['e', { no: 2, x: 3 }], ['f', { no: 91 }]]);
    });

    test('setNext, counterReset and exclusive: \'reuse\' use the counter of the model\'s own connection', async () => {
      const other = mongoose.createConnection();
      await other.openUri(env.uri, { dbName: `${env.dbName}_${major}_other`, serverSelectionTimeoutMS: 10_000 });
      try {
        await other.createCollection('counters');
        const made = [];
        for (const exclusive of [false, 'reuse']) {
          const id = `${p}conn_${exclusive}`;
          const pair = [];
          for (const [conn, name] of [[connection, 'A'], [other, 'B']]) {
            const schema = new mongoose.Schema({ tag: String, no: Number });
            schema.plugin(AutoIncrementFactory(conn), { id, inc_field: 'no', exclusive });
            const M = conn.model(`${p}Conn${String(exclusive)}${name}`, schema);
            await M.init();
            pair.push(M);
          }
          const [A, B] = pair;
          await A.create({ tag: 'a1' });
          await A.create({ tag: 'a2' });
          await B.create({ tag: 'b1' });
          const b2 = new B({ tag: 'b2' });
          await b2.setNext(id);
          await B.counterReset(id);
          await A.create({ tag: 'a3' });
          made.push([exclusive, await numbers(A, 'no'), await numbers(B, 'no'), (await counters().findOne({ id })).seq, (await other.db.collection('counters').findOne({ id })).seq]);
        }
        assert.deepEqual(made, [
          [false, [['a1', 1], ['a2', 2], ['a3', 3]], [['b1', 1], ['b2', 2]], 3, 0],
          ['reuse', [['a1', 1], ['a2', 2], ['a3', 3]], [['b1', 1], ['b2', 2]], 3, 0],
        ]);
      } finally {
        await other.dropDatabase();
        await other.close();
      }
    });

    test('one factory, a schema on two connections: one counter, in the factory connection\'s database, reset through either', async () => {
      const other = mongoose.createConnection();
      await other.openUri(env.uri, { dbName: `${env.dbName}_${major}_tenant`, serverSelectionTimeoutMS: 10_000 });
      try {
        const schema = new mongoose.Schema({ tag: String, no: Number });
        schema.plugin(AutoIncrement, { id: `${p}tenants`, inc_field: 'no' });
        const A = await model(`${p}Tenant`, schema);
        const B = other.model(`${p}Tenant`, schema);
        await B.init();
        await A.create({ tag: 'a1' });
        await B.create({ tag: 'b1' });
        await A.create({ tag: 'a2' });
        assert.deepEqual([await numbers(A, 'no'), await numbers(B, 'no')], [[['a1', 1], ['a2', 3]], [['b1', 2]]]);
        assert.equal(await other.db.collection('counters').countDocuments(), 0, 'no counter in the other database');
        await B.counterReset(`${p}tenants`);
        assert.equal((await A.create({ tag: 'a3' })).no, 1, 'reset through B, for A too');
      } finally {
        await other.dropDatabase();
        await other.close();
      }
    });

    test('on a subdocument schema: new subdocuments are numbered when their parent is saved, not by its insertMany', async () => {
      const item = new mongoose.Schema({ name: String });
      item.plugin(AutoIncrement, { id: `${p}items`, inc_field: 'no' });
      const Order = await model(`${p}Order`, new mongoose.Schema({ tag: String, items: [item], main: item }));
      await new Order({ tag: 'a', items: [{ name: 'x' }, { name: 'y' }], main: { name: 'm' } }).save();
      await Order.create({ tag: 'b', items: [{ name: 'z' }] });
      const a = await Order.findOne({ tag: 'a' });
      a.items.push({ name: 'w' });
      await a.save();
      await Order.insertMany([{ tag: 'c', items: [{ name: 'v' }] }]);
      await Order.updateOne({ tag: 'd' }, { $set: { items: [{ name: 'u' }] } }, { upsert: true });
      const stored = (await Order.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.items.map((i) => i.no ?? null), d.main?.no ?? null]);
      assert.deepEqual(stored, [['a', [1, 2, 5], 3], ['b', [4], null], ['c', [null], null], ['d', [null], null]]);
    });

    test('a number refused by a unique index on inc_field is not kept for the retry', async () => {
      const schema = new mongoose.Schema({ tag: String, no: { type: Number, unique: true } });
      schema.plugin(AutoIncrement, { id: `${p}refused`, inc_field: 'no' });
      const M = await model(`${p}Refused`, schema);
      await M.collection.insertOne({ tag: 'imported', no: 1 });
      const doc = new M({ tag: 'a' });
      await assert.rejects(doc.save(), (e) => e.code === 11000);
      await doc.save();
      assert.equal(doc.no, 2);
      // The caller's own number given to insertMany is the caller's: kept, and refused.
      await assert.rejects(M.insertMany([{ tag: 'b', no: 1 }]), (e) => e.code === 11000);
      // Given to save or create, it is overwritten, as mongoose-sequence does.
      const overwritten = new M({ tag: 'c', no: 1 });
      await overwritten.save();
      assert.equal(overwritten.no, 3);
      assert.equal((await M.create(new M({ tag: 'd', no: 1 }))).no, 4);
      assert.deepEqual(await numbers(M, 'no'), [['a', 2], ['c', 3], ['d', 4], ['imported', 1]]);
    });

    test('a gapless counter refuses to share its schema; every refusal has a code and registers nothing', async () => {
      for (const [first, second] of [[true, false], [false, true], [true, true]]) {
        const schema = new mongoose.Schema({ tag: String, a: Number, b: Number });
        schema.plugin(AutoIncrement, { id: `${p}share_a_${first}${second}`, inc_field: 'a', gapless: first });
        assert.throws(() => schema.plugin(AutoIncrement, { id: `${p}share_b_${first}${second}`, inc_field: 'b', gapless: second }), (e) => e.code === 'INVALID_ARGUMENT');
        // Nothing was registered for the refused one: the id is free.
        new mongoose.Schema({ b: Number }).plugin(AutoIncrement, { id: `${p}share_b_${first}${second}`, inc_field: 'b' });
      }
      const typed = new mongoose.Schema({ no: String });
      assert.throws(() => typed.plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'no' }), (e) => e.code === 'INVALID_ARGUMENT' && /not of type "Number"/.test(e.message));
      new mongoose.Schema({ no: Number }).plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'no' });
      for (const options of [{ gapless: 'yes' }, { exclusive: 'maybe' }, { reference_fields: ['x'] }]) {
        assert.throws(() => new mongoose.Schema({}).plugin(AutoIncrement, { inc_field: 'n', ...options }), (e) => e.code === 'INVALID_ARGUMENT', JSON.stringify(options));
      }
      assert.throws(() => new mongoose.Schema({}).plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'no' }), (e) => e.code === 'INVALID_ARGUMENT' && /already defined/.test(e.message));
      assert.throws(() => AutoIncrementFactory(), (e) => e.code === 'INVALID_ARGUMENT');
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}codes`, inc_field: 'no' });
      const M = await model(`${p}Codes`, schema);
      await rejectsCode(new M({ tag: 'a' }).setNext(`${p}no_such_id`), 'INVALID_ARGUMENT');
      await rejectsCode(M.counterReset(`${p}no_such_id`), 'INVALID_ARGUMENT');
      await rejectsCode(syncCounterToMax(M, `${p}no_such_id`), 'INVALID_ARGUMENT');
      await rejectsCode(takeOverCounter(M, 'elsewhere'), 'INVALID_ARGUMENT');
      await rejectsCode(takeOverCounter(M, 'typegoose'), 'SEQUENCE_NOT_FOUND');
    });

    test('parallel_hooks: the next pre(save) hook sees the number only when mongoose runs hooks in series', async () => {
      const seen = {};
      for (const parallel of [true, false]) {
        const schema = new mongoose.Schema({ tag: String, no: Number });
        schema.plugin(AutoIncrement, { id: `${p}hooks_${parallel}`, inc_field: 'no', parallel_hooks: parallel });
        schema.pre('save', function seeNumber() {
          seen[parallel] = this.no;
        });
        const H = await model(`${p}Hooks${parallel}`, schema);
        assert.equal((await H.create({ tag: 'a' })).no, 1);
        assert.equal((await H.findOne({ tag: 'a' })).no, 1);
      }
      // mongoose 8 runs parallel pre hooks (as mongoose-sequence registers them by
      // default); mongoose 9 runs every pre hook in series.
      assert.equal(seen.true, major === 8 ? undefined : 1);
      assert.equal(seen.false, 1);
    });
  });
}

async function rejectsCode(promise, code) {
  let error;
  await assert.rejects(promise, (e) => {
    error = e;
    return e.code === code;
  });
  return error;
}
