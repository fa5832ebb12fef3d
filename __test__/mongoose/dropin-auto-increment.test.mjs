// The mongoose-auto-increment drop-in (`mongodb-sequence/mongoose/auto-increment`), on
// mongoose 9 and 8 (mongoose-auto-increment itself runs on neither): initialize and
// plugin, startAt, incrementBy, a number given on save (kept, the counter moved up to it),
// nextCount / resetCount as statics and methods with callbacks and promises, an existing
// counter document continued without renumbering, concurrency, batches, coded errors.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose9 from 'mongoose';
import { fileDatabase, MONGOOSES } from './plugin-setup.mjs';

const require = createRequire(import.meta.url);
const autoIncrement = require('mongodb-sequence/mongoose/auto-increment');

const env = fileDatabase('dropin_mai');

const callback = (fn) => new Promise((resolve, reject) => fn((error, value) => (error ? reject(error) : resolve(value))));

test('plugin before initialize, and bad options, throw INVALID_ARGUMENT', () => {
  assert.throws(
    () => new mongoose9.Schema({}).plugin(autoIncrement.plugin, 'User'),
    (e) => e.code === 'INVALID_ARGUMENT' && e.message === 'mongoose-auto-increment has not been initialized',
  );
  assert.throws(
    () => autoIncrement.initialize(undefined),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
});

for (const [major, mongoose] of MONGOOSES) {
  describe(`mongoose ${major}`, { timeout: 180_000 }, () => {
    const connection = mongoose.createConnection();
    const p = `M${major}_`;
    const counters = () => connection.db.collection('identitycounters');
    const counterOf = async (model, field = '_id') => counters().findOne({ model, field }, { projection: { _id: 0, __v: 0 } });
    const model = async (name, schema) => {
      const made = connection.model(name, schema);
      await made.init();
      return made;
    };

    before(async () => {
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
      await connection.createCollection('identitycounters');
      autoIncrement.initialize(connection);
    });
    after(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    test('a model name: _id from 0, one more each; the counter document as it stores it', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement.plugin, `${p}User`);
      const User = await model(`${p}User`, schema);
      const a = await new User({ name: 'Charlie' }).save();
      const b = await new User({ name: 'Charlene' }).save();
      assert.deepEqual([a._id, b._id], [0, 1]);
      assert.deepEqual(await counterOf(`${p}User`), { field: '_id', model: `${p}User`, count: 1 });
      // Its IdentityCounter model, registered by initialize, reads it.
      assert.equal((await connection.model('IdentityCounter').findOne({ model: `${p}User` })).count, 1);
      const indexes = await counters().indexes();
      assert.ok(indexes.some((i) => i.unique && JSON.stringify(i.key) === JSON.stringify({ field: 1, model: 1 })));
    });

    test('options: field (unique), startAt, incrementBy', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}Stepped`, field: 'userId', startAt: 3, incrementBy: 5 });
      const M = await model(`${p}Stepped`, schema);
      const a = await new M({}).save();
      const b = await M.create({});
      assert.deepEqual([a.userId, b.userId], [3, 8]);
      assert.ok((await M.collection.indexes()).some((i) => i.unique && i.key.userId === 1));
    });

    test('an existing counter document is continued, whatever startAt says', async () => {
      // As mongoose-auto-increment writes it: a mongoose document with __v, count a Number.
      await counters().insertOne({ model: `${p}Old`, field: '_id', count: 41, __v: 0 });
      // A new counter it created at plugin time and never used: startAt - incrementBy.
      await counters().insertOne({ model: `${p}Unused`, field: '_id', count: 10 - 2, __v: 0 });
      const old = new mongoose.Schema({ name: String });
      old.plugin(autoIncrement.plugin, { model: `${p}Old`, startAt: 1000 });
      const Old = await model(`${p}Old`, old);
      assert.equal((await Old.create({}))._id, 42);
      const unused = new mongoose.Schema({ name: String });
      unused.plugin(autoIncrement.plugin, { model: `${p}Unused`, startAt: 10, incrementBy: 2 });
      const Unused = await model(`${p}Unused`, unused);
      assert.equal((await Unused.create({}))._id, 10);
      assert.equal(await counters().countDocuments({ model: { $in: [`${p}Old`, `${p}Unused`] } }), 2);
    });

    test('a number given on save is kept and moves the counter up to it, never down', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement.plugin, `${p}Given`);
      const M = await model(`${p}Given`, schema);
      assert.equal((await M.create({}))._id, 0);
      assert.equal((await new M({ _id: 100 }).save())._id, 100);
      assert.equal((await M.create({}))._id, 101);
      assert.equal((await new M({ _id: 50 }).save())._id, 50);
      assert.equal((await M.create({}))._id, 102);
    });

    test('nextCount and resetCount: statics and methods, callbacks and promises', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}Helpers`, field: 'no', unique: false, startAt: 1 });
      const M = await model(`${p}Helpers`, schema);
      const doc = new M({ name: 'a' });
      assert.equal(await callback((cb) => doc.nextCount(cb)), 1);
      assert.equal(await M.nextCount(), 1);
      await doc.save();
      assert.equal(await callback((cb) => M.nextCount(cb)), 2);
      assert.equal(await doc.nextCount(), 2);
      assert.equal(await callback((cb) => doc.resetCount(cb)), 1);
      assert.equal(await M.nextCount(), 1);
      assert.equal((await M.create({})).no, 1);
      assert.equal(await M.resetCount(), 1);
      assert.equal(await counters().countDocuments({ model: `${p}Helpers` }), 1);
    });

    test('a fractional counter it left (a document saved with 3.5) is taken over: every way of numbering goes on past it', async () => {
      // MAI moves its counter to a fractional number given on save and counts on from
      // it (4.5, 5.5…). Taken over here: the whole number above it (4), then on as usual.
      for (const [suffix, incrementBy, stored, expected] of [
        ['Up', 1, 3.5, [5, 6, 7, 8, 9]],
        ['Step', 5, -7.25, [-2, 3, 8, 13, 18]],
      ]) {
        const name = `${p}Fraction${suffix}`;
        await counters().insertOne({ model: name, field: '_id', count: stored, __v: 0 });
        const schema = new mongoose.Schema({ name: String });
        schema.plugin(autoIncrement.plugin, { model: name, incrementBy });
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
      await counters().insertOne({ model: down, field: '_id', count: 3.5, __v: 0 });
      const downSchema = new mongoose.Schema({ name: String });
      downSchema.plugin(autoIncrement.plugin, { model: down, incrementBy: -1 });
      const Down = await model(down, downSchema);
      await assert.rejects(Down.create({}), (e) => e.code === 'INVALID_COUNTER' && /descending/.test(e.message));
      assert.equal((await counters().findOne({ model: down })).count, 3.5);
      // Racing first saves on a fraction: one takeover, no number twice.
      const name = `${p}FractionRace`;
      await counters().insertOne({ model: name, field: '_id', count: 10.5, __v: 0 });
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement.plugin, name);
      const M = await model(name, schema);
      const saved = await Promise.all(Array.from({ length: 20 }, () => new M().save()));
      assert.deepEqual(
        saved.map((d) => d._id).sort((x, y) => x - y),
        Array.from({ length: 20 }, (_, i) => 12 + i),
      );
    });

    test('race-free first use: parallel first saves, startAt kept, no number twice', async () => {
      const schema = new mongoose.Schema({ name: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}Race`, startAt: 100 });
      const M = await model(`${p}Race`, schema);
      const saved = await Promise.all(Array.from({ length: 50 }, () => new M().save()));
      assert.deepEqual(
        saved.map((d) => d._id).sort((x, y) => x - y),
        Array.from({ length: 50 }, (_, i) => 100 + i),
      );
      assert.equal(await counters().countDocuments({ model: `${p}Race` }), 1);
    });

    test('create([...]), insertMany and bulkWrite are numbered; their given numbers kept, the counter moved up', async () => {
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}Batch`, startAt: 1 });
      const M = await model(`${p}Batch`, schema);
      assert.deepEqual(
        (await M.create([{ tag: 'a' }, { tag: 'b' }])).map((d) => d._id),
        [1, 2],
      );
      assert.deepEqual(
        (await M.insertMany([{ tag: 'c' }, { _id: 500, tag: 'x' }, { tag: 'd' }])).map((d) => d._id),
        // The given number moves the counter up to it first, as on save.
        [501, 500, 502],
      );
      await M.bulkWrite([{ insertOne: { document: { tag: 'e' } } }]);
      assert.equal((await M.findOne({ tag: 'e' }))._id, 503);
    });

    test('a number given in insertMany, bulkWrite or an upsert moves the counter up to it, as save does', async () => {
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}GivenBatch`, field: 'no', startAt: 1 });
      const M = await model(`${p}GivenBatch`, schema);
      assert.equal((await M.create({ tag: 'a' })).no, 1);
      // Given below the counter's next number in the same batch: no number twice in it.
      assert.deepEqual(
        (await M.insertMany([{ tag: 'b' }, { tag: 'c', no: 3 }])).map((d) => d.no),
        [4, 3],
      );
      assert.equal((await M.create({ tag: 'd' })).no, 5);
      await M.bulkWrite([{ insertOne: { document: { tag: 'e', no: 10 } } }, { insertOne: { document: { tag: 'f', no: 8 } } }]);
      assert.equal((await M.create({ tag: 'g' })).no, 11);
      await M.updateOne({ no: 20 }, { $set: { tag: 'h' } }, { upsert: true });
      assert.equal((await M.create({ tag: 'i' })).no, 21);
      await M.findOneAndUpdate({ tag: 'j' }, { $setOnInsert: { no: 30 } }, { upsert: true });
      await M.replaceOne({ tag: 'k' }, { tag: 'k', no: 40 }, { upsert: true });
      await M.bulkWrite([{ updateOne: { filter: { no: '50' }, update: { $set: { tag: 'l' } }, upsert: true } }]);
      assert.equal((await M.create({ tag: 'm' })).no, 51);
      const nos = (await M.find().lean()).map((d) => d.no);
      assert.equal(new Set(nos).size, nos.length);
    });

    test('a number given below startAt on a new counter: the counter starts at startAt all the same', async () => {
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}GivenLow`, field: 'no', startAt: 100, incrementBy: 2 });
      const M = await model(`${p}GivenLow`, schema);
      assert.equal((await new M({ tag: 'given', no: 5 }).save()).no, 5);
      assert.deepEqual(await counterOf(`${p}GivenLow`, 'no'), { field: 'no', model: `${p}GivenLow`, count: 98 });
      assert.equal((await M.create({ tag: 'next' })).no, 100);
      const batch = new mongoose.Schema({ tag: String });
      batch.plugin(autoIncrement.plugin, { model: `${p}GivenLowBatch`, field: 'no', startAt: 100 });
      const B = await model(`${p}GivenLowBatch`, batch);
      await B.insertMany([{ tag: 'given', no: 5 }]);
      assert.equal((await B.create({ tag: 'next' })).no, 100);
    });

    test('duplicate counter documents (it made no unique index): one of them continues, as with it', async () => {
      // Its index options are invalid on MongoDB ≥ 3.4, so two processes starting at once
      // could each create the counter. An existing counter is advanced by one atomic write
      // on the document the server finds, as mongoose-auto-increment advances it; the
      // unique index is made sure of only when a counter is created.
      const dups = connection.useDb(`${env.dbName}_${major}_dups`);
      await dups.createCollection('identitycounters');
      await dups.db.collection('identitycounters').insertMany([
        { model: 'Dup', field: '_id', count: 4 },
        { model: 'Dup', field: '_id', count: 7 },
      ]);
      autoIncrement.initialize(dups);
      try {
        const schema = new mongoose.Schema({ name: String });
        schema.plugin(autoIncrement.plugin, 'Dup');
        const Dup = dups.model('Dup', schema);
        await Dup.init();
        const first = (await Dup.create({}))._id;
        const second = (await Dup.create({}))._id;
        assert.ok([5, 8].includes(first), String(first));
        assert.equal(second, first + 1);
        const counts = (await dups.db.collection('identitycounters').find({ model: 'Dup' }).toArray()).map((c) => c.count).sort((x, y) => x - y);
        assert.deepEqual(counts, first === 5 ? [6, 7] : [4, 9]);
      } finally {
        autoIncrement.initialize(connection);
        await dups.dropDatabase();
      }
    });

    test('a counter twice blocks the unique index: INDEX_CONFLICT names them; fixed by deleting the smaller', async () => {
      const dups = connection.useDb(`${env.dbName}_${major}_dupindex`);
      await dups.createCollection('identitycounters');
      const stored = dups.db.collection('identitycounters');
      await stored.insertMany([
        { model: 'Twice', field: '_id', count: 10 },
        { model: 'Twice', field: '_id', count: 7 },
      ]);
      autoIncrement.initialize(dups);
      try {
        const schema = new mongoose.Schema({ name: String });
        schema.plugin(autoIncrement.plugin, 'Fresh');
        const Fresh = dups.model('Fresh', schema);
        await Fresh.init();
        // A new counter of the collection needs the index, which the duplicates refuse.
        await assert.rejects(
          Fresh.create({}),
          (e) =>
            e instanceof Error &&
            e.code === 'INDEX_CONFLICT' &&
            e.message.includes(`'identitycounters'`) &&
            e.message.includes(`model 'Twice', field '_id'`) &&
            /largest count/.test(e.message) &&
            e.cause?.code === 'INDEX_CONFLICT',
        );
        // Fixed as the guide says: keep the largest count of each, delete the others.
        await stored.insertOne({ model: 'Twice', field: '_id', count: 3 });
        assert.deepEqual(await autoIncrement.removeDuplicateCounters(), [{ model: 'Twice', field: '_id', kept: 10, removed: [7, 3] }]);
        assert.deepEqual(await autoIncrement.removeDuplicateCounters(dups), []);
        assert.deepEqual(
          (await stored.find({ model: 'Twice' }).toArray()).map((c) => c.count),
          [10],
        );
        assert.equal((await Fresh.create({}))._id, 0);
        assert.ok((await stored.indexes()).some((i) => i.unique && JSON.stringify(i.key) === JSON.stringify({ field: 1, model: 1 })));
      } finally {
        autoIncrement.initialize(connection);
        await dups.dropDatabase();
      }
    });

    test("removeDuplicateCounters picks the copy to keep from the primary's latest, whatever the connection reads from and how", async () => {
      // A secondary, or a majority read, may show an older count as the largest: keeping
      // it would hand out numbers again.
      const reading = mongoose.createConnection();
      await reading.openUri(env.uri, {
        dbName: `${env.dbName}_${major}_dupread`,
        serverSelectionTimeoutMS: 10_000,
        readPreference: 'secondaryPreferred',
        readConcernLevel: 'majority',
        monitorCommands: true,
      });
      try {
        await reading.db.collection('identitycounters').insertMany([
          { model: 'Twice', field: '_id', count: 4 },
          { model: 'Twice', field: '_id', count: 9 },
        ]);
        const sent = [];
        reading.getClient().on('commandStarted', (event) => event.commandName === 'aggregate' && sent.push(event.command));
        assert.deepEqual(await autoIncrement.removeDuplicateCounters(reading), [{ model: 'Twice', field: '_id', kept: 9, removed: [4] }]);
        assert.equal(sent.length, 1);
        assert.equal(sent[0].readConcern?.level, 'local', JSON.stringify(sent[0]));
        assert.notEqual(sent[0].$readPreference?.mode, 'secondaryPreferred', JSON.stringify(sent[0]));
      } finally {
        await reading.dropDatabase();
        await reading.close();
      }
    });

    test('initialize(mongoose): the counters on its default connection', async () => {
      const dbName = `${env.dbName}_${major}_default`;
      await mongoose.connect(env.uri, { dbName, serverSelectionTimeoutMS: 10_000 });
      autoIncrement.initialize(mongoose);
      try {
        const schema = new mongoose.Schema({ name: String });
        schema.plugin(autoIncrement.plugin, `${p}OnDefault`);
        const M = mongoose.model(`${p}OnDefault`, schema);
        await M.init();
        assert.deepEqual([(await M.create({}))._id, (await M.create({}))._id], [0, 1]);
        assert.equal((await mongoose.connection.db.collection('identitycounters').findOne({ model: `${p}OnDefault` })).count, 1);
      } finally {
        autoIncrement.initialize(connection);
        await mongoose.connection.dropDatabase();
        await mongoose.connection.close();
      }
    });

    test('startAt and incrementBy given as decimal digits in a string (as process.env gives them) count as those numbers', async () => {
      const schema = new mongoose.Schema({ name: String });
      // mongoose-auto-increment computes startAt - incrementBy and mongoose casts its $inc: numbers.
      schema.plugin(autoIncrement.plugin, { model: `${p}FromEnv`, field: 'no', unique: false, startAt: '100', incrementBy: ' 2\n' });
      const M = await model(`${p}FromEnv`, schema);
      assert.equal(await M.nextCount(), 100);
      assert.deepEqual([(await new M({}).save()).no, (await M.create({})).no], [100, 102]);
      assert.equal(await M.nextCount(), 104);
      // A number, where mongoose-auto-increment gave startAt back as it was given.
      assert.equal(await M.resetCount(), 100);
      assert.equal((await new M({}).save()).no, 100);
    });

    test('a field declared other than Number becomes a Number, as mongoose-auto-increment makes it', async () => {
      const schema = new mongoose.Schema({ name: String, no: String });
      schema.plugin(autoIncrement.plugin, { model: `${p}StringField`, field: 'no', startAt: 1 });
      assert.equal(schema.path('no').instance, 'Number');
      const M = await model(`${p}StringField`, schema);
      const a = await new M({}).save();
      const b = await new M({ no: '77' }).save();
      const c = await M.create({});
      assert.deepEqual([a.no, b.no, c.no], [1, 77, 78]);
      assert.deepEqual(
        (await M.collection.find({}, { sort: { no: 1 } }).toArray()).map((d) => d.no),
        [1, 77, 78],
      );
      assert.ok((await M.collection.indexes()).some((i) => i.unique && i.key.no === 1));
    });

    test('refusals quote a string given; a fractional incrementBy is refused, saying why', () => {
      for (const [options, message] of [
        [{ startAt: 'abc' }, /option startAt .*; got "abc"$/],
        [{ startAt: '1.5' }, /option startAt .*; got "1.5"$/],
        [{ startAt: '1e3' }, /option startAt .*; got "1e3"$/],
        [{ incrementBy: '0' }, /option incrementBy .*; got "0"$/],
        [{ incrementBy: 1.5 }, /option incrementBy .*integers.*; got 1\.5$/],
      ]) {
        assert.throws(
          () => new mongoose.Schema({ name: String }).plugin(autoIncrement.plugin, { model: 'X', ...options }),
          (e) => e.code === 'INVALID_ARGUMENT' && message.test(e.message),
          message.source,
        );
      }
    });

    test('coded errors for bad options', () => {
      const cases = [
        [undefined, /model must be set/],
        [{ field: 'n' }, /model must be set/],
        [{ model: 'X', incrementBy: 0 }, /incrementBy/],
        [{ model: 'X', startAt: 0.5 }, /startAt/],
        [{ model: 'X', unique: 'yes' }, /unique/],
      ];
      for (const [options, message] of cases) {
        assert.throws(
          () => new mongoose.Schema({ name: String }).plugin(autoIncrement.plugin, options),
          (e) => e instanceof Error && e.code === 'INVALID_ARGUMENT' && message.test(e.message),
        );
      }
    });
  });
}
