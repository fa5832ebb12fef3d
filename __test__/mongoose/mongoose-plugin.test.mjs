// mongodb-sequence/mongoose: the mongoose-sequence 6 surface (options, methods, messages,
// counter documents) on mongoose 8 and mongoose 9, plus insertMany, create([...]),
// bulkWrite and upsert numbering.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import { setup, seq, rejectsWithCode, external, serverKind, needsTransactions as needsTransactionsOf } from '../helpers.mjs';

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
  env = await setup('plugin');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test('the factory wants exactly one argument, as mongoose-sequence', () => {
  assert.throws(() => AutoIncrementFactory(), /Please, pass mongoose while requiring/);
  assert.throws(() => AutoIncrementFactory(mongoose9, {}), /Please, pass mongoose while requiring/);
  assert.equal(typeof AutoIncrementFactory(mongoose9), 'function');
});

test('ESM and CJS entries give the same factory', async () => {
  const esm = await import('mongodb-sequence/mongoose');
  assert.equal(esm.default, AutoIncrementFactory);
  assert.equal(require('mongodb-sequence/mongoose'), AutoIncrementFactory);
});

for (const [major, mongoose] of [
  [9, mongoose9],
  [8, mongoose8],
]) {
  describe(`mongoose ${major}`, { timeout: 180_000 }, () => {
    const connection = mongoose.createConnection();
    const AutoIncrement = AutoIncrementFactory(connection);
    const p = `m${major}_`;
    const counters = () => connection.db.collection('counters');
    // A model's collection made (mongoose's autoCreate) before anything writes to it: a
    // create racing the first insert into a new collection livelocks SecantusDB 0.7.0b3.
    const model = async (name, schema) => {
      const made = connection.model(name, schema);
      await made.init();
      return made;
    };

    before(async () => {
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
    });
    after(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    test('save numbers new documents 1, 2, 3 and stores mongoose-sequence counters', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(AutoIncrement, { id: `${p}plain`, inc_field: 'no' });
      const Item = await model(`${p}Item`, schema);
      for (const name of ['a', 'b', 'c']) await new Item({ name }).save();
      const docs = await Item.find().sort({ no: 1 }).lean();
      assert.deepEqual(docs.map((d) => [d.no, d.name]), [[1, 'a'], [2, 'b'], [3, 'c']]);
      const counter = await counters().findOne({ id: `${p}plain` });
      assert.equal(counter.seq, 3);
      assert.equal(counter.reference_value, null);
      assert.equal(counter._id.constructor.name, 'ObjectId');
      const indexes = await counters().indexes();
      const unique = indexes.find((i) => i.name === 'id_1_reference_value_1');
      assert.ok(unique?.unique, JSON.stringify(indexes));
      // Saving again (not new) keeps the number.
      const first = await Item.findOne({ no: 1 });
      first.name = 'A';
      await first.save();
      assert.equal((await Item.findOne({ name: 'A' })).no, 1);
    });

    test('200 concurrent saves on one counter get 1..200, no gap, no duplicate', async () => {
      const schema = new mongoose.Schema({ _id: Number, i: Number });
      schema.plugin(AutoIncrement, { id: `${p}busy` });
      const Busy = await model(`${p}Busy`, schema);
      const saved = await Promise.all(Array.from({ length: 200 }, (_, i) => new Busy({ i }).save()));
      const ids = saved.map((d) => d._id).sort((a, b) => a - b);
      assert.deepEqual(ids, Array.from({ length: 200 }, (_, i) => i + 1));
      assert.equal(await Busy.countDocuments(), 200);
    });

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
      for (const [shop, year] of [['a', 2025], ['a', 2025], ['b', 2025], ['a', 2026], ['b', 2025]]) {
        made.push((await Order.create({ shop, meta: { year } })).no);
      }
      assert.deepEqual(made, [1, 2, 1, 1, 2]);
      const stored = await counters().find({ id: `${p}per_shop` }).sort({ seq: 1 }).toArray();
      assert.deepEqual(Object.keys(stored[0].reference_value), ['meta.year', 'shop']);
      await Order.counterReset(`${p}per_shop`, { shop: 'a', meta: { year: 2025 } });
      assert.equal((await Order.create({ shop: 'a', meta: { year: 2025 } })).no, 1);
      assert.equal((await Order.create({ shop: 'b', meta: { year: 2025 } })).no, 3);
      const all = await Order.counterReset(`${p}per_shop`);
      assert.equal(all.matchedCount, 3);
      assert.equal((await Order.create({ shop: 'b', meta: { year: 2025 } })).no, 1);
      assert.throws(() => schema.plugin(AutoIncrement, { reference_fields: ['shop'] }), /Cannot use reference fields without specifying an id/);
    });

    test('insertMany, create([...]) and bulkWrite get contiguous numbers in array order', async () => {
      const schema = new mongoose.Schema({ _id: Number, label: String });
      schema.plugin(AutoIncrement, { id: `${p}bulk` });
      const Row = await model(`${p}Row`, schema);
      const inserted = await Row.insertMany(['a', 'b', 'c', 'd'].map((label) => ({ label })));
      assert.deepEqual(inserted.map((d) => [d._id, d.label]), [[1, 'a'], [2, 'b'], [3, 'c'], [4, 'd']]);
      const created = await Row.create([{ label: 'e' }, { label: 'f' }, { label: 'g' }]);
      assert.deepEqual(created.map((d) => [d._id, d.label]), [[5, 'e'], [6, 'f'], [7, 'g']]);
      await Row.bulkWrite([
        { insertOne: { document: { label: 'h' } } },
        { updateOne: { filter: { _id: 1 }, update: { $set: { label: 'A' } } } },
        { insertOne: { document: { label: 'i' } } },
      ]);
      const all = await Row.find().sort({ _id: 1 }).lean();
      assert.deepEqual(all.map((d) => d.label), ['A', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
      assert.deepEqual(all.map((d) => d._id), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
      assert.equal((await counters().findOne({ id: `${p}bulk` })).seq, 9);
    });

    test('upserts get a number when they insert ($setOnInsert); an update keeps its number', async () => {
      const schema = new mongoose.Schema({ email: String, no: Number, visits: Number });
      schema.plugin(AutoIncrement, { id: `${p}upsert`, inc_field: 'no' });
      const User = await model(`${p}User`, schema);
      const a = await User.findOneAndUpdate({ email: 'a@x' }, { $inc: { visits: 1 } }, { upsert: true, new: true });
      assert.equal(a.no, 1);
      await User.updateOne({ email: 'b@x' }, { $set: { visits: 1 } }, { upsert: true });
      assert.equal((await User.findOne({ email: 'b@x' })).no, 2);
      // An upsert that updates spends a value (documented) but keeps the stored number.
      const again = await User.findOneAndUpdate({ email: 'a@x' }, { $inc: { visits: 1 } }, { upsert: true, new: true });
      assert.deepEqual([again.no, again.visits], [1, 2]);
      assert.equal((await User.create({ email: 'c@x' })).no, 4);
      // Without upsert nothing is spent.
      await User.updateOne({ email: 'zzz' }, { $set: { visits: 1 } });
      assert.equal((await counters().findOne({ id: `${p}upsert` })).seq, 4);
    });

    test('setNext (promise and callback) and its error for an unknown id', async () => {
      const schema = new mongoose.Schema({ name: String, ticket: Number });
      schema.plugin(AutoIncrement, { id: `${p}ticket`, inc_field: 'ticket', disable_hooks: true });
      const Ticket = await model(`${p}Ticket`, schema);
      const t = await Ticket.create({ name: 'x' });
      assert.equal(t.ticket, undefined, 'disable_hooks: no number on save');
      const saved = await t.setNext(`${p}ticket`);
      assert.equal(saved.ticket, 1);
      assert.equal((await Ticket.findById(t._id)).ticket, 1);
      const viaCallback = await new Promise((resolve, reject) => t.setNext(`${p}ticket`, (e, d) => (e ? reject(e) : resolve(d))));
      assert.equal(viaCallback.ticket, 2);
      await assert.rejects(t.setNext('nope'), /Trying to increment a wrong sequence using the id nope/);
    });

    test('exclusive: true throws, false shares, "reuse" takes the same options again (hot reload)', async () => {
      const make = (options) => {
        const schema = new mongoose.Schema({ n: Number });
        schema.plugin(AutoIncrement, { id: `${p}hot`, inc_field: 'n', ...options });
        return schema;
      };
      const first = await model(`${p}Hot1`, make({}));
      assert.throws(() => make({}), new Error(`Counter already defined for field "${p}hot"`));
      assert.throws(() => make({ exclusive: 'reuse', start_seq: 7 }), /Counter already defined/);
      const reloaded = await model(`${p}Hot2`, make({ exclusive: 'reuse' }));
      const shared = await model(`${p}Hot3`, make({ exclusive: false }));
      const got = [(await first.create({})).n, (await reloaded.create({})).n, (await shared.create({})).n];
      assert.deepEqual(got, [1, 2, 3]);
      assert.throws(() => make({ exclusive: 'maybe' }), /exclusive must be true, false or 'reuse'/);
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
      await Shop.collection.insertMany([{ shop: 'a', no: 5 }, { shop: 'a', no: 9 }, { shop: 'b', no: 2 }]);
      const raised = await syncCounterToMax(Shop);
      assert.deepEqual(raised.map((r) => [r.reference_value.shop, r.value]).sort(), [['a', 9], ['b', 2]]);
      assert.equal((await Shop.create({ shop: 'a' })).no, 10);
      assert.equal((await Shop.create({ shop: 'b' })).no, 3);
      await assert.rejects(syncCounterToMax(Shop, 'nope'), /has no counter with id "nope"/);
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

    test('gapless: create and insertMany number and insert in one transaction; a failed insert gives its numbers back', { skip: needsTransactions }, async () => {
      const schema = new mongoose.Schema({ code: { type: String, unique: true }, shop: String, no: Number }, { timestamps: true });
      schema.plugin(AutoIncrement, { id: `${p}gapless`, inc_field: 'no', reference_fields: 'shop', start_seq: 100, inc_amount: 10, gapless: true });
      const Ledger = await model(`${p}Ledger`, schema);
      const one = await Ledger.create({ code: 'a', shop: 's' });
      assert.equal(one.no, 100);
      assert.equal(one.isNew, false);
      assert.ok(one.createdAt instanceof Date, 'timestamps applied');
      const many = await Ledger.insertMany([{ code: 'b', shop: 's' }, { code: 'c', shop: 't' }, { code: 'd', shop: 's' }]);
      assert.deepEqual(many.map((d) => [d.code, d.no]), [['b', 110], ['c', 100], ['d', 120]]);
      // A duplicate code fails the insert: the transaction gives the number back.
      await assert.rejects(Ledger.create({ code: 'a', shop: 's' }), (e) => e.serverCode === 11000 || e.code === 'SERVER');
      await assert.rejects(Ledger.insertMany([{ code: 'e', shop: 's' }, { code: 'b', shop: 's' }]), (e) => e.code === 'SERVER');
      assert.equal((await Ledger.create({ code: 'f', shop: 's' })).no, 130, 'no gap after the failures');
      const stored = await Ledger.find({ shop: 's' }).sort({ no: 1 }).lean();
      assert.deepEqual(stored.map((d) => d.no), [100, 110, 120, 130]);
      assert.equal(stored[0].__v, 0);
      // Validation fails before anything is spent.
      await assert.rejects(Ledger.create({ code: { nested: true }, shop: 's' }), /Cast to string failed|validation failed/i);
      assert.equal((await Ledger.create({ code: 'g', shop: 's' })).no, 140);
      // What cannot join the transaction is refused, not numbered with a gap.
      await assert.rejects(new Ledger({ code: 'h', shop: 's' }).save(), (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION');
      await assert.rejects(Ledger.bulkWrite([{ insertOne: { document: { code: 'i', shop: 's' } } }]), (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION');
      await assert.rejects(Ledger.updateOne({ code: 'j' }, { $set: { shop: 's' } }, { upsert: true }), (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION');
      await assert.rejects(Ledger.replaceOne({ code: 'j' }, { code: 'j', shop: 's' }, { upsert: true }), (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION');
      await assert.rejects(Ledger.updateOne({ code: 'j' }, [{ $set: { shop: 's' } }], { upsert: true, updatePipeline: true }), (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION');
      await assert.rejects(Ledger.bulkWrite([{ updateOne: { filter: { code: 'j' }, update: { $set: { shop: 's' } }, upsert: true } }]), (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION');
      assert.equal(await Ledger.countDocuments({ code: 'j' }), 0);
      assert.equal((await Ledger.create({ code: 'k', shop: 's' })).no, 150);
    });

    test('an inc_field of another type is refused as mongoose-sequence refuses it', () => {
      const schema = new mongoose.Schema({ code: String });
      assert.throws(() => schema.plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'code' }), /Auto increment field already present and not of type "Number"/);
    });
  });
}

test('helper-style counters next to the mongoose index: INDEX_CONFLICT names the index', async () => {
  const db = env.db;
  await db.collection('mixed').createIndex({ id: 1, reference_value: 1 }, { unique: true });
  assert.equal(await seq.getNextSequenceValue(db, 'first', { collection: 'mixed', upsert: true }), 1);
  const e = await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'second', { collection: 'mixed', upsert: true }), 'INDEX_CONFLICT');
  assert.match(e.message, /id_1_reference_value_1/);
  // And the other way round: two helper-style counters block the mongoose index.
  await db.collection('helpers').insertMany([{ _id: 'a', sequence_value: 1 }, { _id: 'b', sequence_value: 1 }]);
  const located = seq.counterAt(db, { id: 'x', reference_value: null }, { collection: 'helpers', field: 'seq', upsert: true });
  const e2 = await rejectsWithCode(assert, located.next(), 'INDEX_CONFLICT');
  assert.match(e2.message, /id_1_reference_value_1/);
});

test('counterAt: locators are checked before any I/O', async () => {
  for (const bad of [null, 'x', {}, { _id: 1 }, { $where: 1 }, { seq: 1 }]) {
    assert.throws(() => seq.counterAt(env.db, bad, { field: 'seq' }), (e) => e.code === 'INVALID_ARGUMENT');
  }
  assert.throws(() => seq.counterAt(env.db, { id: 'x' }, { step: 0 }), (e) => e.code === 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.setCountersWhere(env.db, { id: 'x' }, 1, { cache: 5 }), 'INVALID_ARGUMENT');
});

test('three processes (mongoose 8 and 9) saving on one new counter never get a number twice', { timeout: 180_000 }, async () => {
  const worker = fileURLToPath(new URL('../fixtures/plugin-worker.mjs', import.meta.url));
  const dbName = `${env.dbName}_procs`;
  // The collections exist first: SecantusDB 0.7.0b3 can livelock when a collection is
  // created while another connection inserts into it (the counter's first use still races).
  const { MongoClient } = await import('mongodb');
  const client = await new MongoClient(env.uri).connect();
  await client.db(dbName).createCollection('counters');
  await client.db(dbName).createCollection('shareds');
  const runs = await Promise.all(
    ['9', '8', '9'].map((major) => promisify(execFile)(process.execPath, [worker, env.uri, dbName, major, '60', '8'], { timeout: 120_000 })),
  );
  const numbers = runs.flatMap((r) => JSON.parse(r.stdout));
  assert.equal(new Set(numbers).size, numbers.length, 'no number twice');
  try {
    const db = client.db(dbName);
    const counter = await db.collection('counters').findOne({ id: 'shared_between_processes' });
    assert.ok(numbers.every((n) => Number.isInteger(n) && n >= 1 && n <= counter.seq), 'every number came from the counter');
    assert.equal(await db.collection('counters').countDocuments({ id: 'shared_between_processes' }), 1, 'one counter document');
    // Racing first use is retried on the counter's own index; some servers misreport a
    // racing upsert (SecantusDB answers null), which may cost a value, never a duplicate.
    assert.ok(counter.seq - numbers.length <= 3, `at most a few values lost: ${counter.seq} for ${numbers.length}`);
    await db.dropDatabase();
  } finally {
    await client.close();
  }
});
