// The mongoose plugin numbering batches, on mongoose 9 and 8: insertMany, create([...]) and
// bulkWrite inserts in array order, numbers the caller set (kept by the batch writers,
// overwritten by save and create), two counters on one schema, the caller's arrays and
// objects never written to, and gapless create / insertMany in one transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { external, serverKind, needsTransactions as needsTransactionsOf } from '../helpers.mjs';
import { eachMongoose, fileDatabase } from './plugin-setup.mjs';

// Against MONGODB_URI: only where that server takes transactions (not a standalone).
const needsTransactions = external ? await needsTransactionsOf() : serverKind === 'secantus' ? false : 'gapless needs a replica set: runs in the secantus pass';

const env = fileDatabase('plugin_batches');

eachMongoose('b', env, ({ mongoose, AutoIncrement, p, ObjectId, model, counters, numbers }) => {
  test('insertMany, create([...]) and bulkWrite get contiguous numbers in array order', async () => {
    const schema = new mongoose.Schema({ _id: Number, label: String });
    schema.plugin(AutoIncrement, { id: `${p}bulk` });
    const Row = await model(`${p}Row`, schema);
    const inserted = await Row.insertMany(['a', 'b', 'c', 'd'].map((label) => ({ label })));
    assert.deepEqual(
      inserted.map((d) => [d._id, d.label]),
      [
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
        [4, 'd'],
      ],
    );
    const created = await Row.create([{ label: 'e' }, { label: 'f' }, { label: 'g' }]);
    assert.deepEqual(
      created.map((d) => [d._id, d.label]),
      [
        [5, 'e'],
        [6, 'f'],
        [7, 'g'],
      ],
    );
    await Row.bulkWrite([
      { insertOne: { document: { label: 'h' } } },
      { updateOne: { filter: { _id: 1 }, update: { $set: { label: 'A' } } } },
      { insertOne: { document: { label: 'i' } } },
    ]);
    const all = await Row.find().sort({ _id: 1 }).lean();
    assert.deepEqual(
      all.map((d) => d.label),
      ['A', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'],
    );
    assert.deepEqual(
      all.map((d) => d._id),
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    assert.equal((await counters().findOne({ id: `${p}bulk` })).seq, 9);
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
    await M.insertMany([
      { tag: 'l', no: '' },
      { tag: 'm', no: '506' },
    ]);
    await M.create({ tag: 'n', no: 507 });
    await M.create([{ tag: 'o', no: 508 }]);
    // A clone of a saved document is a new document: it never repeats the number.
    const old = await M.findOne({ tag: 'j' });
    const clone = await new M({ ...old.toObject(), _id: undefined, tag: 'p' }).save();
    assert.notEqual(String(clone._id), String(old._id));
    // A document saved (or created) once and inserted again as a new one takes a new
    // number: what it was given is its own only until its save succeeds.
    for (const [tag, again] of [
      ['q', await new M({ tag: 'j2' }).save()],
      ['r', (await M.create([{ tag: 'j3' }, { tag: 'j4' }]))[0]],
      ['s', await M.create({ tag: 'j5', no: 509 })],
      ['t', (await M.insertMany([new M({ tag: 'j6' })]))[0]],
    ]) {
      again.set({ _id: new ObjectId(), tag });
      again.isNew = true;
      await again.save();
    }
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 500],
      ['b', 1],
      ['c', 2],
      ['d', 3],
      ['e', 4],
      ['f', 5],
      ['g', 503],
      ['h', 6],
      ['i', 7],
      ['j', 8],
      ['j2', 13],
      ['j3', 14],
      ['j4', 15],
      ['j5', 16],
      ['j6', 17],
      ['k', 505],
      ['l', 9],
      ['m', 506],
      ['n', 10],
      ['o', 11],
      ['p', 12],
      ['q', 18],
      ['r', 19],
      ['s', 20],
      ['t', 21],
    ]);
    assert.equal((await counters().findOne({ id: `${p}explicit` })).seq, 21);
    // A default is not the caller's value.
    const defaulted = new mongoose.Schema({ tag: String, no: { type: Number, default: 0 } });
    defaulted.plugin(AutoIncrement, { id: `${p}explicit_default`, inc_field: 'no' });
    const D = await model(`${p}ExplicitDefault`, defaulted);
    await D.create([{ tag: 'a' }, { tag: 'b' }]);
    await new D({ tag: 'c' }).save();
    await D.insertMany([{ tag: 'd' }]);
    assert.deepEqual(await numbers(D, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
    ]);
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
    assert.deepEqual(
      docs.map((d) => [d.tag, d.a, d.b]),
      [
        ['a', 1, 10],
        ['b', 2, 11],
        ['c', 3, 12],
        ['d', 4, 13],
        ['e', 5, 14],
        ['f', 6, 15],
        ['g', 7, 16],
      ],
    );
    assert.equal((await counters().findOne({ id: `${p}two_a` })).seq, 7);
    assert.equal((await counters().findOne({ id: `${p}two_b` })).seq, 16);
  });

  test("one plain object given twice is numbered twice: the caller's objects are never written to", async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number, meta: { no: Number } });
    schema.plugin(AutoIncrement, { id: `${p}twice`, inc_field: 'no' });
    schema.plugin(AutoIncrement, { id: `${p}twice_meta`, inc_field: 'meta.no' });
    const M = await model(`${p}Twice`, schema);
    const o = { tag: 'a', meta: { other: 1 } };
    await M.insertMany([o, o]);
    assert.deepEqual(o, { tag: 'a', meta: { other: 1 } }, "the caller's object is unchanged");
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

  test("insertMany leaves the caller's array and objects as they were: inserted again, they take new numbers", async () => {
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
    assert.deepEqual(tagged, [
      ['a', 1],
      ['b', 2],
      ['a', 3],
      ['b', 4],
      ['a', 5],
      ['b', 6],
      ['c', 7],
      ['c', 8],
    ]);
  });

  test('gapless: create and insertMany number and insert in one transaction; a failed insert gives its numbers back', { skip: needsTransactions }, async () => {
    const schema = new mongoose.Schema({ code: { type: String, unique: true }, shop: String, no: Number }, { timestamps: true });
    schema.plugin(AutoIncrement, { id: `${p}gapless`, inc_field: 'no', reference_fields: 'shop', start_seq: 100, inc_amount: 10, gapless: true });
    const Ledger = await model(`${p}Ledger`, schema);
    const one = await Ledger.create({ code: 'a', shop: 's' });
    assert.equal(one.no, 100);
    assert.equal(one.isNew, false);
    assert.ok(one.createdAt instanceof Date, 'timestamps applied');
    const many = await Ledger.insertMany([
      { code: 'b', shop: 's' },
      { code: 'c', shop: 't' },
      { code: 'd', shop: 's' },
    ]);
    assert.deepEqual(
      many.map((d) => [d.code, d.no]),
      [
        ['b', 110],
        ['c', 100],
        ['d', 120],
      ],
    );
    // A duplicate code fails the insert: the transaction gives the number back.
    await assert.rejects(Ledger.create({ code: 'a', shop: 's' }), (e) => e.serverCode === 11000 || e.code === 'SERVER');
    await assert.rejects(
      Ledger.insertMany([
        { code: 'e', shop: 's' },
        { code: 'b', shop: 's' },
      ]),
      (e) => e.code === 'SERVER',
    );
    assert.equal((await Ledger.create({ code: 'f', shop: 's' })).no, 130, 'no gap after the failures');
    const stored = await Ledger.find({ shop: 's' }).sort({ no: 1 }).lean();
    assert.deepEqual(
      stored.map((d) => d.no),
      [100, 110, 120, 130],
    );
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
    await assert.rejects(
      Ledger.bulkWrite([{ updateOne: { filter: { code: 'j' }, update: { $set: { shop: 's' } }, upsert: true } }]),
      (e) => e.code === 'GAPLESS_UNSUPPORTED_OPERATION',
    );
    assert.equal(await Ledger.countDocuments({ code: 'j' }), 0);
    assert.equal((await Ledger.create({ code: 'k', shop: 's' })).no, 150);
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
    assert.deepEqual(await numbers(G, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
      ['e', 600],
      ['f', 5],
    ]);
  });

  test('gapless: create(a, b) in the spread form inserts every document', { skip: needsTransactions }, async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}gapless_spread`, inc_field: 'no', gapless: true });
    const G = await model(`${p}GaplessSpread`, schema);
    const made = await G.create({ tag: 'a' }, { tag: 'b' }, { tag: 'c' });
    assert.deepEqual(
      made.map((d) => [d.tag, d.no]),
      [
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ],
    );
    assert.equal((await G.create({ tag: 'd' })).no, 4);
    assert.deepEqual(await numbers(G, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
    ]);
  });
});
