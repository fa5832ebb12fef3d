// The @typegoose/auto-increment drop-in (`mongodb-sequence/mongoose/typegoose`), on
// mongoose 9 and 8: its options and semantics (startAt, incrementBy, overwriteModelName,
// the skip symbol, BigInt fields, AutoIncrementSimple), an existing typegoose counter
// document continued without renumbering, concurrency (parallel first saves, no number
// twice), insertMany / create([...]) / bulkWrite / upserts numbered, coded errors.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileDatabase, MONGOOSES } from './plugin-setup.mjs';

const require = createRequire(import.meta.url);
const { AutoIncrementID, AutoIncrementIDSkipSymbol, AutoIncrementSimple } = require('mongodb-sequence/mongoose/typegoose');

const env = fileDatabase('dropin_typegoose');

async function rejectsCode(promiseOrFn, code) {
  let error;
  await assert.rejects(promiseOrFn, (e) => {
    error = e;
    return e instanceof Error && e.code === code;
  });
  return error;
}

for (const [major, mongoose] of MONGOOSES) {
  describe(`mongoose ${major}`, { timeout: 180_000 }, () => {
    const connection = mongoose.createConnection();
    const p = `T${major}_`;
    const trackers = () => connection.db.collection('identitycounters');
    const tracker = async (modelName, field = '_id') => trackers().findOne({ modelName, field }, { projection: { _id: 0 }, promoteLongs: false });
    const model = async (name, schema) => {
      const made = connection.model(name, schema);
      await made.init();
      return made;
    };
    const ids = async (Model, field = '_id') =>
      (
        await Model.find()
          .sort({ [field]: 1 })
          .lean()
      ).map((d) => d[field]);

    before(async () => {
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
      await connection.createCollection('identitycounters');
    });
    after(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    test('defaults: _id from 0, one more each; the counter document as typegoose stores it', async () => {
      const schema = new mongoose.Schema({ _id: Number, name: String });
      schema.plugin(AutoIncrementID, {});
      const M = await model(`${p}Plain`, schema);
      const a = await M.create({ name: 'a' });
      const b = await new M({ name: 'b' }).save();
      assert.deepEqual([a._id, b._id], [0, 1]);
      const doc = await tracker(`${p}Plain`);
      assert.equal(Number(doc.count), 1);
      assert.deepEqual(Object.keys(doc).sort(), ['count', 'field', 'modelName']);
      // The unique index typegoose declares, { field: 1, modelName: 1 }.
      const indexes = await trackers().indexes();
      assert.ok(indexes.some((i) => i.unique && JSON.stringify(i.key) === JSON.stringify({ field: 1, modelName: 1 })));
    });

    test('startAt and incrementBy: the first document gets startAt; a named field', async () => {
      const schema = new mongoose.Schema({ no: Number });
      schema.plugin(AutoIncrementID, { field: 'no', startAt: 100, incrementBy: 5 });
      const M = await model(`${p}Stepped`, schema);
      const docs = [];
      for (let i = 0; i < 3; i++) docs.push(await M.create({}));
      assert.deepEqual(
        docs.map((d) => d.no),
        [100, 105, 110],
      );
      assert.equal(Number((await tracker(`${p}Stepped`, 'no')).count), 110);
    });

    test('an existing typegoose counter continues without renumbering; startAt is then ignored', async () => {
      // As typegoose writes it: count int64, the last number handed out.
      await trackers().insertOne({ modelName: `${p}Existing`, field: '_id', count: mongoose.mongo.Long.fromNumber(41) });
      const schema = new mongoose.Schema({ _id: Number });
      schema.plugin(AutoIncrementID, { startAt: 1000 });
      const M = await model(`${p}Existing`, schema);
      assert.equal((await M.create({}))._id, 42);
      assert.equal((await M.create({}))._id, 43);
      assert.equal(await trackers().countDocuments({ modelName: `${p}Existing` }), 1);
      // A new counter typegoose would create holds startAt - incrementBy before its first $inc.
      await trackers().insertOne({ modelName: `${p}Fresh`, field: '_id', count: mongoose.mongo.Long.fromNumber(7 - 2) });
      const fresh = new mongoose.Schema({ _id: Number });
      fresh.plugin(AutoIncrementID, { startAt: 7, incrementBy: 2 });
      const F = await model(`${p}Fresh`, fresh);
      assert.equal((await F.create({}))._id, 7);
    });

    test('race-free first use: parallel first saves, startAt kept, no number twice', async () => {
      const schema = new mongoose.Schema({ _id: Number });
      schema.plugin(AutoIncrementID, { startAt: 100 });
      const M = await model(`${p}Race`, schema);
      const saved = await Promise.all(Array.from({ length: 50 }, () => new M().save()));
      assert.deepEqual(
        saved.map((d) => d._id).sort((x, y) => x - y),
        Array.from({ length: 50 }, (_, i) => 100 + i),
      );
      assert.equal(await trackers().countDocuments({ modelName: `${p}Race` }), 1);
      // Then many parallel creates of every kind.
      const more = await Promise.all([...Array.from({ length: 30 }, () => M.create({})), M.create([{}, {}, {}]), M.insertMany([{}, {}])]);
      const all = await ids(M);
      assert.equal(all.length, 50 + 30 + 5);
      assert.equal(new Set(all).size, all.length);
      assert.deepEqual(
        all,
        Array.from({ length: all.length }, (_, i) => 100 + i),
      );
      assert.ok(more.length);
    });

    test('create([...]) on a fresh model, insertMany, bulkWrite and upserts are numbered', async () => {
      const schema = new mongoose.Schema({ _id: Number, tag: String });
      schema.plugin(AutoIncrementID, { startAt: 1 });
      const M = await model(`${p}Batch`, schema);
      const created = await M.create([{ tag: 'a' }, { tag: 'b' }, { tag: 'c' }]);
      assert.deepEqual(
        created.map((d) => d._id),
        [1, 2, 3],
      );
      const inserted = await M.insertMany([{ tag: 'd' }, { tag: 'e' }]);
      assert.deepEqual(
        inserted.map((d) => d._id),
        [4, 5],
      );
      // A value of the caller's own is kept by insertMany and bulkWrite.
      const kept = await M.insertMany([{ _id: 1000, tag: 'x' }]);
      assert.equal(kept[0]._id, 1000);
      await M.bulkWrite([{ insertOne: { document: { tag: 'f' } } }, { insertOne: { document: { tag: 'g' } } }]);
      await M.updateOne({ tag: 'h' }, { $set: { tag: 'h' } }, { upsert: true });
      // An upsert that matches keeps its document's number (and spends one, as the plugin's upserts do).
      await M.findOneAndUpdate({ tag: 'h' }, { $set: { tag: 'h' } }, { upsert: true });
      const byTag = Object.fromEntries((await M.find().lean()).map((d) => [d.tag, d._id]));
      assert.deepEqual(byTag, { a: 1, b: 2, c: 3, d: 4, e: 5, x: 1000, f: 6, g: 7, h: 8 });
    });

    test('save numbers a new document even when it has a value (as typegoose); updates take none', async () => {
      const schema = new mongoose.Schema({ _id: Number, n: Number });
      schema.plugin(AutoIncrementID, { startAt: 1 });
      const M = await model(`${p}Explicit`, schema);
      const doc = await new M({ _id: 77 }).save();
      assert.equal(doc._id, 1);
      doc.n = 5;
      await doc.save();
      assert.equal(doc._id, 1);
      assert.equal(Number((await tracker(`${p}Explicit`)).count), 1);
    });

    test('AutoIncrementIDSkipSymbol on a document or on the connection', async () => {
      const schema = new mongoose.Schema({ _id: Number });
      schema.plugin(AutoIncrementID, {});
      const M = await model(`${p}Skip`, schema);
      const skipped = new M({ _id: 500 });
      skipped[AutoIncrementIDSkipSymbol] = true;
      await skipped.save();
      assert.equal(skipped._id, 500);
      connection[AutoIncrementIDSkipSymbol] = true;
      try {
        assert.equal((await M.create({ _id: 501 }))._id, 501);
        assert.deepEqual(
          (await M.insertMany([{ _id: 502 }])).map((d) => d._id),
          [502],
        );
      } finally {
        delete connection[AutoIncrementIDSkipSymbol];
      }
      // No counter yet, but the collection holds numbers (the skipped documents' own): the
      // first number comes after them, where typegoose would give startAt (0) (guide, tenants).
      assert.equal((await M.create({}))._id, 503);
    });

    test('overwriteModelName: a string shares one counter between models; a function is asked per model', async () => {
      const shared = () => {
        const s = new mongoose.Schema({ _id: Number });
        s.plugin(AutoIncrementID, { overwriteModelName: `${p}Shared` });
        return s;
      };
      const A = await model(`${p}SharedA`, shared());
      const B = await model(`${p}SharedB`, shared());
      assert.deepEqual([(await A.create({}))._id, (await B.create({}))._id, (await A.create({}))._id], [0, 1, 2]);
      let asked = 0;
      const f = new mongoose.Schema({ _id: Number, n: Number });
      f.plugin(AutoIncrementID, { overwriteModelName: (name) => (asked++, `${name}_renamed`) });
      const F = await model(`${p}Fn`, f);
      const saved = await F.create({});
      assert.ok(await tracker(`${p}Fn_renamed`));
      // Asked as the number is taken, and on every save of a saved document, as typegoose asks it.
      saved.n = 1;
      await saved.save();
      assert.equal(asked, 2);
      const bad = new mongoose.Schema({ _id: Number });
      bad.plugin(AutoIncrementID, { overwriteModelName: () => '' });
      const Bad = await model(`${p}BadFn`, bad);
      await rejectsCode(Bad.create({}), 'INVALID_ARGUMENT');
    });

    test('a BigInt field gets BigInts; past 2^53 in a Number field is SEQUENCE_OVERFLOW', async () => {
      const schema = new mongoose.Schema({ _id: BigInt });
      schema.plugin(AutoIncrementID, { startAt: 2n ** 60n, incrementBy: 1n });
      const M = await model(`${p}Big`, schema);
      assert.equal((await M.create({}))._id, 2n ** 60n);
      assert.equal((await M.create({}))._id, 2n ** 60n + 1n);
      await trackers().insertOne({ modelName: `${p}Over`, field: '_id', count: mongoose.mongo.Long.fromBigInt(2n ** 53n) });
      const over = new mongoose.Schema({ _id: Number });
      over.plugin(AutoIncrementID, {});
      const O = await model(`${p}Over`, over);
      await rejectsCode(O.create({}), 'SEQUENCE_OVERFLOW');
    });

    test("typegoose's tracker model is registered on the connection and reads the counters", async () => {
      const schema = new mongoose.Schema({ _id: Number });
      schema.plugin(AutoIncrementID, { startAt: 3 });
      const M = await model(`${p}Tracked`, schema);
      await M.create({});
      const Tracker = connection.models.identitycounter;
      assert.equal(Object.getPrototypeOf(Tracker), mongoose.Model);
      assert.equal((await Tracker.findOne({ modelName: `${p}Tracked` }).orFail()).count, 3n);
    });

    test('a subdocument schema: new subdocuments numbered when their parent is saved', async () => {
      const sub = new mongoose.Schema({ _id: Number, name: String });
      sub.plugin(AutoIncrementID, { startAt: 1 });
      const Parent = await model(`${p}Parent`, new mongoose.Schema({ nested: sub, list: [sub] }));
      const a = await Parent.create({ nested: { name: 'x' }, list: [{ name: 'y' }, { name: 'z' }] });
      const numbers = [a.nested._id, ...a.list.map((d) => d._id)];
      assert.deepEqual([...numbers].sort(), [1, 2, 3]);
      await a.save();
      assert.deepEqual([a.nested._id, ...a.list.map((d) => d._id)], numbers);
      // typegoose's counter of a subdocument: its constructor has no model name.
      assert.equal(Number((await trackers().findOne({ modelName: null, field: '_id' })).count), 3);
    });

    test('one schema on two databases (a tenant each): a counter in each, numbered apart', async () => {
      const schema = new mongoose.Schema({ _id: Number });
      schema.plugin(AutoIncrementID, { startAt: 1 });
      const tenants = ['a', 'b'].map((t) => connection.useDb(`${env.dbName}_${major}_tenant_${t}`));
      const [A, B] = tenants.map((db) => db.model(`${p}Tenant`, schema));
      try {
        const got = [];
        for (const M of [A, B, A, A, B]) got.push((await M.create({}))._id);
        assert.deepEqual(got, [1, 1, 2, 3, 2]);
      } finally {
        for (const db of tenants) await db.dropDatabase();
      }
    });

    test('AutoIncrementSimple bumps fields on each save of a saved document', async () => {
      const schema = new mongoose.Schema({ rev: { type: Number, default: 0 }, big: { type: BigInt, default: 0n }, name: String });
      schema.plugin(AutoIncrementSimple, [{ field: 'rev' }, { field: 'big', incrementBy: 2 }]);
      const M = await model(`${p}Simple`, schema);
      const doc = await M.create({ name: 'a' });
      assert.equal(doc.rev, 0);
      doc.name = 'b';
      await doc.save();
      await doc.save();
      assert.equal(doc.rev, 2);
      assert.equal(doc.big, 4n);
    });

    test('startAt and incrementBy given as decimal digits in a string (as process.env gives them) count as those numbers', async () => {
      const schema = new mongoose.Schema({ _id: Number, name: String });
      // typegoose takes them through BigInt(), which reads such a string as its number.
      schema.plugin(AutoIncrementID, { startAt: '100', incrementBy: ' 2\n' });
      const M = await model(`${p}FromEnv`, schema);
      assert.deepEqual([(await M.create({}))._id, (await new M({}).save())._id], [100, 102]);
      assert.equal(Number((await tracker(`${p}FromEnv`)).count), 102);
      const big = new mongoose.Schema({ _id: BigInt });
      big.plugin(AutoIncrementID, { startAt: '-9007199254740993' });
      const B = await model(`${p}FromEnvBig`, big);
      assert.equal((await B.create({}))._id, -9007199254740993n);
    });

    test('a string that is not decimal digits is refused, quoted; a string incrementBy of AutoIncrementSimple too, saying why', () => {
      for (const startAt of ['abc', '1e3', '1.5', '0x10', '', ' ']) {
        assert.throws(
          () => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { startAt }),
          (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes('option startAt') && e.message.endsWith(`; got ${JSON.stringify(startAt)}`),
          JSON.stringify(startAt),
        );
      }
      assert.throws(
        () => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { incrementBy: '0' }),
        (e) => e.code === 'INVALID_ARGUMENT' && e.message.endsWith('; got "0"'),
      );
      // typegoose adds it with +: a string is joined to the value (5 + "2" is "52").
      assert.throws(
        () => new mongoose.Schema({ rev: Number }).plugin(AutoIncrementSimple, { field: 'rev', incrementBy: '2' }),
        (e) => e.code === 'INVALID_ARGUMENT' && /joins/.test(e.message) && e.message.endsWith('; got "2"'),
      );
      // Numbers are whole here: typegoose's simple version adds 1.5, its counter fails at the save.
      for (const [plugin, options] of [
        [AutoIncrementSimple, { field: 'rev', incrementBy: 1.5 }],
        [AutoIncrementID, { incrementBy: 1.5 }],
      ]) {
        assert.throws(
          () => new mongoose.Schema({ _id: Number, rev: Number }).plugin(plugin, options),
          (e) => e.code === 'INVALID_ARGUMENT' && /integer/.test(e.message) && e.message.endsWith('; got 1.5'),
        );
      }
    });

    test('coded errors for bad options and fields', () => {
      const cases = [
        [() => new mongoose.Schema({ name: String }).plugin(AutoIncrementID, {}), /"_id" is not a Number or BigInt/],
        [() => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { field: 'nope' }), /does not exists/],
        [() => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { incrementBy: 0 }), /incrementBy/],
        [() => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { startAt: 1.5 }), /startAt/],
        [() => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { trackerCollection: '' }), /trackerCollection/],
        [() => new mongoose.Schema({ _id: Number }).plugin(AutoIncrementID, { overwriteModelName: 3 }), /overwriteModelName/],
        [() => new mongoose.Schema({ n: Number }).plugin(AutoIncrementSimple, []), /at least one field/],
        [() => new mongoose.Schema({ n: String }).plugin(AutoIncrementSimple, { field: 'n' }), /not a Number or BigInt/],
      ];
      for (const [call, message] of cases) {
        assert.throws(call, (e) => e instanceof Error && e.code === 'INVALID_ARGUMENT' && message.test(e.message));
      }
    });
  });
}
