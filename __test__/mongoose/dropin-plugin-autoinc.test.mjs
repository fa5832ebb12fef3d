// The mongoose-plugin-autoinc drop-in (`mongodb-sequence/mongoose/plugin-autoinc`), on
// mongoose 9 and 8 (mongoose-plugin-autoinc itself does not run on 9): options,
// groupingField, outputFilter, migrate, numbering before validation, a given number kept,
// nextCount / resetCount, its counter documents and mongoose-auto-increment's (converted
// in place) continued, 500 parallel creates, batches, coded errors.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileDatabase, MONGOOSES } from './plugin-setup.mjs';

const require = createRequire(import.meta.url);
const { autoIncrement, plugin } = require('mongodb-sequence/mongoose/plugin-autoinc');
const { countersOf } = require('../../lib/mongoose/registry.js');

const env = fileDatabase('dropin_mpa');

test('the entry, imported and required: the plugin, with its names', async () => {
  const imported = await import('mongodb-sequence/mongoose/plugin-autoinc');
  assert.equal(imported.default, autoIncrement);
  assert.equal(imported.autoIncrement, autoIncrement);
  assert.equal(imported.plugin, plugin);
  assert.equal(require('mongodb-sequence/mongoose/plugin-autoinc'), autoIncrement);
  const typegoose = await import('mongodb-sequence/mongoose/typegoose');
  assert.equal(typeof typegoose.AutoIncrementID, 'function');
  assert.equal(typeof typegoose.AutoIncrementIDSkipSymbol, 'symbol');
  const mai = await import('mongodb-sequence/mongoose/auto-increment');
  assert.deepEqual([typeof mai.initialize, typeof mai.plugin], ['function', 'function']);
});

for (const [major, mongoose] of MONGOOSES) {
  describe(`mongoose ${major}`, { timeout: 180_000 }, () => {
    const connection = mongoose.createConnection();
    const p = `A${major}_`;
    const counters = () => connection.db.collection('identitycounters');
    const counterOf = async (model, groupingField = '', field = '_id') => counters().findOne({ model, field, groupingField }, { projection: { _id: 0, __v: 0 } });
    const model = async (name, schema) => {
      const made = connection.model(name, schema);
      await made.init();
      return made;
    };

    before(async () => {
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
      await connection.createCollection('identitycounters');
    });
    after(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    test('a model name: _id from 0; the counter document and unique index as it makes them', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement, `${p}User`);
      const User = await model(`${p}User`, schema);
      assert.deepEqual([(await User.create({}))._id, (await new User({}).save())._id], [0, 1]);
      assert.deepEqual(await counterOf(`${p}User`), { field: '_id', groupingField: '', model: `${p}User`, count: 1 });
      const indexes = await counters().indexes();
      assert.ok(indexes.some((i) => i.unique && JSON.stringify(i.key) === JSON.stringify({ field: 1, groupingField: 1, model: 1 })));
      // Its IdentityCounter model, registered at the first numbering, reads the counters.
      assert.equal((await connection.model('IdentityCounter').findOne({ model: `${p}User` })).count, 1);
    });

    test('groupingField: a counter per value; nextCount and resetCount per group', async () => {
      const schema = new mongoose.Schema({ shop: String, owner: mongoose.Schema.Types.ObjectId });
      schema.plugin(plugin, { model: `${p}Order`, field: 'no', groupingField: 'shop', startAt: 1 });
      const Order = await model(`${p}Order`, schema);
      const numbers = [];
      for (const shop of ['north', 'south', 'north', 'north', 'south']) numbers.push((await Order.create({ shop })).no);
      assert.deepEqual(numbers, [1, 1, 2, 3, 2]);
      assert.equal(await Order.nextCount('north'), 4);
      assert.equal(await Order.nextCount('east'), 1);
      assert.equal(await Order.resetCount('north'), 1);
      assert.equal(await new Order({}).nextCount('north'), 1);
      assert.equal(await Order.nextCount('south'), 3);
      assert.equal((await counterOf(`${p}Order`, 'south', 'no')).count, 2);
      // Batches group too, in array order.
      const batch = await Order.insertMany([{ shop: 'south' }, { shop: 'west' }, { shop: 'south' }]);
      assert.deepEqual(
        batch.map((d) => d.no),
        [3, 1, 4],
      );
      // An ObjectId groups by its hex string, as its String cast stores it.
      const owner = new mongoose.Types.ObjectId();
      const o = new mongoose.Schema({ owner: mongoose.Schema.Types.ObjectId });
      o.plugin(autoIncrement, { model: `${p}Owned`, field: 'no', groupingField: 'owner' });
      const Owned = await model(`${p}Owned`, o);
      await Owned.create({ owner });
      assert.equal((await counterOf(`${p}Owned`, owner.toHexString(), 'no')).count, 0);
    });

    test('outputFilter: what documents receive; the counter keeps counting', async () => {
      const schema = new mongoose.Schema({ no: Number });
      schema.plugin(autoIncrement, { model: `${p}Filtered`, field: 'no', startAt: 1, outputFilter: (n) => n * 100 });
      const M = await model(`${p}Filtered`, schema);
      assert.deepEqual([(await M.create({})).no, (await M.create({})).no], [100, 200]);
      assert.deepEqual(
        (await M.create([{}, {}])).map((d) => d.no),
        [300, 400],
      );
      assert.equal((await counterOf(`${p}Filtered`, '', 'no')).count, 4);
    });

    test('outputFilter: every upsert that takes a number stores it filtered, as saves and batches do', async () => {
      // Without a unique index, an unfiltered number would be stored beside a saved one.
      const schema = new mongoose.Schema({ tag: String, no: Number, by: String });
      schema.plugin(autoIncrement, { model: `${p}FilteredUpsert`, field: 'no', startAt: 1, unique: false, outputFilter: (c) => c * 2 });
      const M = await model(`${p}FilteredUpsert`, schema);
      for (const tag of ['a1', 'a2', 'a3']) await new M({ tag }).save();
      await M.updateOne({ tag: 'b1' }, { $set: { by: 'u' } }, { upsert: true });
      await M.updateMany({ tag: 'b2' }, { $setOnInsert: { by: 'm' } }, { upsert: true });
      await M.findOneAndUpdate({ tag: 'b3' }, { $set: { by: 'f' } }, { upsert: true });
      await M.bulkWrite([
        { updateOne: { filter: { tag: 'c1' }, update: { $set: { by: 'bu' } }, upsert: true } },
        { updateMany: { filter: { tag: 'c2' }, update: { $setOnInsert: { by: 'bm' } }, upsert: true } },
        { insertOne: { document: { tag: 'c3' } } },
      ]);
      assert.deepEqual(
        (await M.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.no]),
        [
          ['a1', 2],
          ['a2', 4],
          ['a3', 6],
          ['b1', 8],
          ['b2', 10],
          ['b3', 12],
          ['c1', 14],
          ['c2', 16],
          ['c3', 18],
        ],
      );
      assert.equal((await counterOf(`${p}FilteredUpsert`, '', 'no')).count, 9);
      // nextCount reads the counter, unfiltered, as mongoose-plugin-autoinc's does.
      assert.equal(await M.nextCount(), 10);
      // A number the caller gives (a replace upsert by its number) is stored as given.
      await M.replaceOne({ no: 100 }, { tag: 'd1' }, { upsert: true });
      assert.equal((await M.findOne({ tag: 'd1' })).no, 100);
    });

    test('outputFilter: a number an upsert places inside an object $setOnInsert gives is filtered too', async () => {
      const nested = new mongoose.Schema({ tag: String, meta: { no: Number, by: String } });
      nested.plugin(autoIncrement, { model: `${p}FilteredNested`, field: 'meta.no', startAt: 1, unique: false, outputFilter: (c) => c * 2 });
      const N = await model(`${p}FilteredNested`, nested);
      await N.create({ tag: 'a' });
      await N.updateOne({ tag: 'b' }, { $setOnInsert: { meta: { by: 'x' } } }, { upsert: true });
      assert.deepEqual(
        (await N.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.meta.no]),
        [
          ['a', 2],
          ['b', 4],
        ],
      );
    });

    test('numbered before validation: a required field, validate() on a new document', async () => {
      const schema = new mongoose.Schema({ no: { type: Number, required: true } });
      schema.plugin(autoIncrement, { model: `${p}Required`, field: 'no', startAt: 1 });
      const M = await model(`${p}Required`, schema);
      const doc = new M({});
      await doc.validate();
      assert.equal(doc.no, 1);
      await doc.save();
      assert.equal(doc.no, 1);
      assert.equal((await M.create({})).no, 2);
    });

    test('a given number is kept and moves the counter up; migrate numbers saved documents', async () => {
      const schema = new mongoose.Schema({ no: Number, name: String });
      schema.plugin(autoIncrement, { model: `${p}Given`, field: 'no', unique: false });
      const M = await model(`${p}Given`, schema);
      assert.equal((await M.create({})).no, 0);
      assert.equal((await M.create({ no: 10 })).no, 10);
      assert.equal((await M.create({})).no, 11);
      // Documents stored without a number (before the plugin), numbered by a migration process.
      await M.collection.insertMany([{ name: 'old1' }, { name: 'old2' }]);
      const migrating = new mongoose.Schema({ no: Number, name: String });
      migrating.plugin(autoIncrement, { model: `${p}Given`, field: 'no', unique: false, migrate: true });
      const Migrating = connection.model(`${p}GivenMigrating`, migrating, M.collection.collectionName);
      for (const doc of await Migrating.find({ no: { $exists: false } }).sort({ name: 1 })) await doc.save();
      assert.deepEqual(
        (await M.find({ name: /old/ }).sort({ name: 1 }).lean()).map((d) => d.no),
        [12, 13],
      );
    });

    test("a number given in insertMany, bulkWrite or an upsert moves its group's counter up to it, as save does", async () => {
      const schema = new mongoose.Schema({ shop: String, tag: String });
      schema.plugin(autoIncrement, { model: `${p}GivenBatch`, field: 'no', groupingField: 'shop', startAt: 1 });
      const M = await model(`${p}GivenBatch`, schema);
      assert.equal((await M.create({ shop: 'n' })).no, 1);
      assert.deepEqual(
        (await M.insertMany([{ shop: 'n' }, { shop: 'n', no: 3 }, { shop: 's', no: 7 }])).map((d) => d.no),
        [4, 3, 7],
      );
      assert.deepEqual([(await M.create({ shop: 'n' })).no, (await M.create({ shop: 's' })).no], [5, 8]);
      await M.bulkWrite([{ insertOne: { document: { shop: 'n', no: 10 } } }, { updateOne: { filter: { shop: 's', no: 20 }, update: { $set: { tag: 'x' } }, upsert: true } }]);
      assert.deepEqual([(await M.create({ shop: 'n' })).no, (await M.create({ shop: 's' })).no], [11, 21]);
      await M.updateOne({ shop: 'n', tag: 'y' }, { $setOnInsert: { no: 30 } }, { upsert: true });
      await M.findOneAndReplace({ tag: 'z' }, { shop: 's', tag: 'z', no: 40 }, { upsert: true });
      assert.deepEqual([(await M.create({ shop: 'n' })).no, (await M.create({ shop: 's' })).no], [31, 41]);
    });

    test('a number given below startAt on a new counter: the counter starts at startAt all the same', async () => {
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(autoIncrement, { model: `${p}GivenLow`, field: 'no', startAt: 100 });
      const M = await model(`${p}GivenLow`, schema);
      assert.equal((await new M({ tag: 'given', no: 5 }).save()).no, 5);
      assert.deepEqual(await counterOf(`${p}GivenLow`, '', 'no'), { field: 'no', groupingField: '', model: `${p}GivenLow`, count: 99 });
      assert.equal((await M.create({ tag: 'next' })).no, 100);
    });

    test('groupingField holding a populated document: grouped by its _id', async () => {
      const Company = await model(`${p}Company`, new mongoose.Schema({ name: String }));
      const schema = new mongoose.Schema({ company: { type: mongoose.Schema.Types.ObjectId, ref: `${p}Company` } });
      schema.plugin(autoIncrement, { model: `${p}Invoice`, field: 'no', groupingField: 'company', startAt: 1 });
      const Invoice = await model(`${p}Invoice`, schema);
      const acme = await Company.create({ name: 'Acme' });
      const numbers = [(await Invoice.create({ company: acme._id })).no, (await Invoice.create({ company: acme })).no];
      acme.name = 'Acme Ltd';
      numbers.push((await new Invoice({ company: acme }).save()).no);
      assert.deepEqual(numbers, [1, 2, 3]);
      assert.deepEqual(
        (
          await counters()
            .find({ model: `${p}Invoice` })
            .toArray()
        ).map((c) => c.groupingField),
        [acme._id.toHexString()],
      );
      assert.equal(await Invoice.nextCount(acme), 4);
      assert.equal(await Invoice.resetCount(acme), 1);
      assert.equal(await Invoice.nextCount(acme._id), 1);
    });

    test('an upsert writing groupingField with another operator than $set / $setOnInsert: INVALID_ARGUMENT, no number taken', async () => {
      const schema = new mongoose.Schema({ t: String, g: String });
      schema.plugin(autoIncrement, { model: `${p}GroupOp`, field: 'no', groupingField: 'g', startAt: 1 });
      const M = await model(`${p}GroupOp`, schema);
      await M.create([
        { t: 'b1', g: 'B' },
        { t: 'e', g: '' },
      ]);
      for (const update of [{ $max: { g: 'B' } }, { $rename: { h: 'g' } }]) {
        await assert.rejects(
          M.updateOne({ t: 'x', h: 'B' }, update, { upsert: true, strict: false }),
          (e) => e instanceof Error && e.code === 'INVALID_ARGUMENT' && /groupingField|reference field 'g'/.test(e.message),
        );
      }
      assert.equal(await M.countDocuments({ t: 'x' }), 0);
      assert.deepEqual([await M.nextCount(''), await M.nextCount('B')], [2, 2]);
      // $set and $setOnInsert choose the group.
      await M.updateOne({ t: 'y' }, { $setOnInsert: { g: 'B' } }, { upsert: true });
      assert.equal((await M.findOne({ t: 'y' })).no, 2);
    });

    test('group values that print alike share one counter (its string key): 1, "1", 1n and Long(1); 0, null and ""', async () => {
      // mongoose-plugin-autoinc keys a group by String(value); documents continue in
      // place only if ours does the same, and the numbers of one key never repeat.
      const schema = new mongoose.Schema({ g: mongoose.Schema.Types.Mixed });
      schema.plugin(autoIncrement, { model: `${p}Alike`, field: 'no', groupingField: 'g', startAt: 1 });
      const M = await model(`${p}Alike`, schema);
      const { Long } = mongoose.mongo;
      const ones = await Promise.all([1, '1', 1n, Long.fromNumber(1), 1].map((g) => M.create({ g })));
      assert.deepEqual(
        ones.map((d) => d.no).sort((a, b) => a - b),
        [1, 2, 3, 4, 5],
      );
      const empties = await Promise.all([0, null, ''].map((g) => M.create({ g })));
      assert.deepEqual(
        empties.map((d) => d.no).sort((a, b) => a - b),
        [1, 2, 3],
      );
      const groups = (
        await counters()
          .find({ model: `${p}Alike` })
          .toArray()
      ).map((c) => [c.groupingField, c.count]);
      assert.deepEqual(groups.sort(), [
        ['', 3],
        ['1', 5],
      ]);
    });

    test('many groups: only the counter of the empty group is kept as prepared (converted)', async () => {
      const schema = new mongoose.Schema({ g: String });
      schema.plugin(autoIncrement, { model: `${p}ManyGroups`, field: 'no', groupingField: 'g' });
      const M = await model(`${p}ManyGroups`, schema);
      await Promise.all(Array.from({ length: 50 }, (_, i) => M.nextCount(`user-${i}`)));
      await M.nextCount('');
      const [counter] = countersOf(M);
      assert.deepEqual([...counter.prepared.get(connection.db).keys()].length, 1);
    });

    test("existing counters: its own, and mongoose-auto-increment's converted in place", async () => {
      await counters().insertOne({ model: `${p}Own`, field: '_id', groupingField: '', count: 41, __v: 0 });
      const own = new mongoose.Schema({ name: String });
      own.plugin(autoIncrement, { model: `${p}Own`, startAt: 1000 });
      const Own = await model(`${p}Own`, own);
      assert.equal((await Own.create({}))._id, 42);
      // As mongoose-auto-increment wrote it: no groupingField.
      await counters().insertOne({ model: `${p}Mai`, field: '_id', count: 7, __v: 0 });
      const mai = new mongoose.Schema({ name: String });
      mai.plugin(autoIncrement, `${p}Mai`);
      const Mai = await model(`${p}Mai`, mai);
      assert.equal(await Mai.nextCount(), 8);
      assert.equal((await Mai.create({}))._id, 8);
      assert.deepEqual(
        await counters()
          .find({ model: `${p}Mai` }, { projection: { _id: 0, __v: 0 } })
          .toArray(),
        [{ model: `${p}Mai`, field: '_id', count: 8, groupingField: '' }],
      );
    });

    test('a fractional counter it left (a document saved with 3.5) is taken over: every way of numbering goes on past it', async () => {
      // plugin-autoinc moves its counter to a fractional number given on save and counts on from
      // it (4.5, 5.5…). Taken over here: the whole number above it (4), then on as usual.
      for (const [suffix, incrementBy, stored, expected] of [
        ['Up', 1, 3.5, [5, 6, 7, 8, 9]],
        ['Step', 5, -7.25, [-2, 3, 8, 13, 18]],
      ]) {
        const name = `${p}Fraction${suffix}`;
        await counters().insertOne({ model: name, field: '_id', groupingField: '', count: stored, __v: 0 });
        const schema = new mongoose.Schema({ name: String });
        schema.plugin(autoIncrement, { model: name, incrementBy });
        const M = await model(name, schema);
        assert.equal(await M.nextCount(), expected[0], `${name}: nextCount reads the fraction as the counter does`);
        const numbers = [(await new M({}).save())._id, (await M.create({}))._id];
        numbers.push(...(await M.insertMany([{}, {}])).map((d) => d._id));
        await M.bulkWrite([{ insertOne: { document: { name: 'bulk' } } }]);
        numbers.push((await M.findOne({ name: 'bulk' }))._id);
        assert.deepEqual(numbers, expected, name);
        assert.equal(await M.nextCount(), expected[4] + incrementBy);
        assert.equal((await counters().findOne({ model: name })).count, expected[4], 'the counter holds a whole number');
      }
      // Counting down, it moves the counter up to a number given on save too, behind
      // numbers it gave: refused, unchanged, the guide says how to go on.
      const down = `${p}FractionDown`;
      await counters().insertOne({ model: down, field: '_id', groupingField: '', count: 3.5, __v: 0 });
      const downSchema = new mongoose.Schema({ name: String });
      downSchema.plugin(autoIncrement, { model: down, incrementBy: -1 });
      const Down = await model(down, downSchema);
      await assert.rejects(Down.create({}), (e) => e.code === 'INVALID_COUNTER' && /descending/.test(e.message));
      assert.equal((await counters().findOne({ model: down })).count, 3.5);
      // Racing first saves on a fraction: one takeover, no number twice.
      const name = `${p}FractionRace`;
      await counters().insertOne({ model: name, field: '_id', groupingField: '', count: 10.5, __v: 0 });
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement, name);
      const M = await model(name, schema);
      const saved = await Promise.all(Array.from({ length: 20 }, () => new M().save()));
      assert.deepEqual(
        saved.map((d) => d._id).sort((x, y) => x - y),
        Array.from({ length: 20 }, (_, i) => 12 + i),
      );
    });

    test('500 parallel creates on a new counter: no number twice, one counter document', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement, `${p}Parallel`);
      const M = await model(`${p}Parallel`, schema);
      const docs = await Promise.all(Array.from({ length: 500 }, (_, i) => M.create({ name: `p${i}` })));
      const ids = docs.map((d) => d._id).sort((x, y) => x - y);
      assert.deepEqual(
        ids,
        Array.from({ length: 500 }, (_, i) => i),
      );
      assert.equal(await counters().countDocuments({ model: `${p}Parallel` }), 1);
      await M.bulkWrite([{ insertOne: { document: { name: 'bulk' } } }]);
      assert.equal((await M.findOne({ name: 'bulk' }))._id, 500);
    });

    test('startAt and incrementBy given as decimal digits in a string (as process.env gives them) count as those numbers', async () => {
      const schema = new mongoose.Schema({ shop: String });
      // mongoose-plugin-autoinc computes startAt - incrementBy and mongoose casts its $inc: numbers.
      schema.plugin(autoIncrement, { model: `${p}FromEnv`, field: 'no', groupingField: 'shop', unique: false, startAt: '100', incrementBy: ' 2\n' });
      const M = await model(`${p}FromEnv`, schema);
      // Numbers, where mongoose-plugin-autoinc gave startAt back as it was given.
      assert.equal(await M.nextCount('north'), 100);
      assert.deepEqual([(await new M({ shop: 'north' }).save()).no, (await M.create({ shop: 'north' })).no, (await M.create({ shop: 'south' })).no], [100, 102, 100]);
      assert.equal(await M.nextCount('north'), 104);
      assert.equal(await M.resetCount('north'), 100);
      assert.equal((await new M({ shop: 'north' }).save()).no, 100);
    });

    test('refusals quote a string given; a fractional incrementBy is refused, saying why', () => {
      for (const [options, message] of [
        [{ startAt: 'abc' }, /option startAt .*; got "abc"$/],
        [{ startAt: '1.5' }, /option startAt .*; got "1.5"$/],
        [{ incrementBy: '0' }, /option incrementBy .*; got "0"$/],
        [{ incrementBy: 1.5 }, /option incrementBy .*integers.*; got 1\.5$/],
      ]) {
        assert.throws(
          () => new mongoose.Schema({ shop: String }).plugin(autoIncrement, { model: 'X', ...options }),
          (e) => e.code === 'INVALID_ARGUMENT' && message.test(e.message),
          message.source,
        );
      }
    });

    test('coded errors for bad options', () => {
      const cases = [
        [undefined, /model must be set/],
        [{ field: 'n' }, /model must be set/],
        [{ model: 'X', groupingField: 'shop' }, /Cannot use a grouping field with _id/],
        [{ model: 'X', incrementBy: 0 }, /incrementBy/],
        [{ model: 'X', outputFilter: 3 }, /outputFilter/],
      ];
      for (const [options, message] of cases) {
        assert.throws(
          () => new mongoose.Schema({ shop: String }).plugin(autoIncrement, options),
          (e) => e instanceof Error && e.code === 'INVALID_ARGUMENT' && message.test(e.message),
        );
      }
    });
  });
}
