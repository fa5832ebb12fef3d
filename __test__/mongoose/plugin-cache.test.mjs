// `cache: n` in every plugin form (mongodb-sequence/mongoose and the three drop-ins), on
// mongoose 9 and 8: the option checked; documents numbered from blocks reserved per
// client by save, create, insertMany, bulkWrite and upserts; two clients on one counter
// (as two processes) in random concurrent histories never giving a number twice; the
// management calls under a cache (counterReset, resetCount, nextCount, setNext, a number
// given by the caller, also inside another client's block, which that client's close then
// does not give back); three processes with a cache.
import { test, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { AutoIncrementFactory, MONGOOSES, fileDatabase } from './plugin-setup.mjs';
import { seq } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const typegoose = require('mongodb-sequence/mongoose/typegoose');
const mai = require('mongodb-sequence/mongoose/auto-increment');
const autoinc = require('mongodb-sequence/mongoose/plugin-autoinc');

const env = fileDatabase('plugin_cache');

const BAD_CACHES = [0, -1, 1.5, '10', 1_000_001, true, Number.NaN, 10n];

const refused = (fn, pattern = /option cache must be a whole number from 1 to 1000000/) => assert.throws(fn, (e) => e.code === 'INVALID_ARGUMENT' && pattern.test(e.message));

test('cache is checked by every plugin form: a whole number from 1 to 1,000,000; null and undefined are no cache', () => {
  const [, mongoose] = MONGOOSES[0];
  const connection = mongoose.createConnection();
  const AutoIncrement = AutoIncrementFactory(connection);
  mai.initialize(connection);
  let made = 0;
  const schema = () => new mongoose.Schema({ no: Number });
  for (const cache of BAD_CACHES) {
    refused(() => schema().plugin(AutoIncrement, { id: `bad_cache_${made++}`, inc_field: 'no', cache }));
    refused(() => schema().plugin(typegoose.AutoIncrementID, { field: 'no', cache }));
    refused(() => schema().plugin(mai.plugin, { model: `Bad${made++}`, field: 'no', cache }));
    refused(() => schema().plugin(autoinc, { model: `Bad${made++}`, field: 'no', cache }));
  }
  for (const cache of [1, 1_000_000, null, undefined]) {
    schema().plugin(AutoIncrement, { id: `good_cache_${made++}`, inc_field: 'no', cache });
    schema().plugin(typegoose.AutoIncrementID, { field: 'no', cache });
    schema().plugin(mai.plugin, { model: `Good${made++}`, field: 'no', cache });
    schema().plugin(autoinc, { model: `Good${made++}`, field: 'no', cache });
  }
  // gapless numbers and inserts in one transaction so that no number is lost: a cache
  // reserves numbers ahead and loses them on restart.
  refused(() => schema().plugin(AutoIncrement, { id: 'gapless_cache', inc_field: 'no', gapless: true, cache: 10 }), /gapless and cache cannot be combined/);
  // A registration reuses a counter only with the same cache.
  schema().plugin(AutoIncrement, { id: 'reuse_cache', inc_field: 'no', cache: 10, exclusive: 'reuse' });
  schema().plugin(AutoIncrement, { id: 'reuse_cache', inc_field: 'no', cache: 10, exclusive: 'reuse' });
  assert.throws(
    () => schema().plugin(AutoIncrement, { id: 'reuse_cache', inc_field: 'no', cache: 20, exclusive: 'reuse' }),
    (e) => e.code === 'INVALID_ARGUMENT' && /Counter already defined/.test(e.message),
  );
  assert.throws(
    () => schema().plugin(AutoIncrement, { id: 'reuse_cache', inc_field: 'no', exclusive: 'reuse' }),
    (e) => e.code === 'INVALID_ARGUMENT' && /Counter already defined/.test(e.message),
  );
});

/**
 * The plugin forms, each registering `field` 'no' on a schema of `connection`
 * (`name`: the counter's name, `cache`: the option). The counters of one name on two
 * connections are one counter document.
 */
const FORMS = {
  ours: (connection, schema, name, cache) => schema.plugin(AutoIncrementFactory(connection), { id: name, inc_field: 'no', cache, exclusive: false }),
  typegoose: (connection, schema, name, cache) => schema.plugin(typegoose.AutoIncrementID, { field: 'no', overwriteModelName: name, cache }),
  'auto-increment': (connection, schema, name, cache) => {
    mai.initialize(connection);
    schema.plugin(mai.plugin, { model: name, field: 'no', unique: false, cache });
  },
  'plugin-autoinc': (connection, schema, name, cache) => schema.plugin(autoinc, { model: name, field: 'no', unique: false, cache }),
};

/** The writes of a history: each inserts `n` documents tagged `tag…` (an upsert one). */
async function write(Model, { kind, n }, tag) {
  const docs = Array.from({ length: n }, (_, i) => ({ tag: `${tag}_${i}` }));
  switch (kind) {
    case 'save':
      await new Model(docs[0]).save();
      return 1;
    case 'create':
      await Model.create(docs);
      return n;
    case 'insertMany':
      await Model.insertMany(docs);
      return n;
    case 'bulkWrite':
      await Model.bulkWrite(docs.map((document) => ({ insertOne: { document } })));
      return n;
    case 'upsert':
      await Model.updateOne({ tag: docs[0].tag }, { $set: { x: 1 } }, { upsert: true });
      return 1;
    default:
      throw new Error(kind);
  }
}

const op = fc.record({
  side: fc.integer({ min: 0, max: 1 }),
  kind: fc.constantFrom('save', 'save', 'save', 'create', 'insertMany', 'bulkWrite', 'upsert'),
  n: fc.integer({ min: 1, max: 9 }),
  // A wave of concurrent writes ends after this one; `close` then closes the shared
  // clients (a restart: the unused tails given back, or lost).
  endsWave: fc.boolean(),
  close: fc.integer({ min: 0, max: 9 }).map((k) => k === 0),
});

for (const [major, mongoose] of MONGOOSES) {
  describe(`mongoose ${major}`, { timeout: 300_000 }, () => {
    // Two connections to one database (a database per test), as two processes: the core
    // derives a client of its own for each (they differ in appName), so each keeps its
    // own cached blocks.
    let sides;
    let runs = 0;
    const openSides = async (label) => {
      sides = ['A', 'B'].map(() => mongoose.createConnection());
      await Promise.all(sides.map((c, i) => c.openUri(env.uri, { dbName: `${env.dbName}_${major}_${label}`, appName: `cache_${'AB'[i]}`, serverSelectionTimeoutMS: 10_000 })));
      await sides[0].createCollection('counters');
      await sides[0].createCollection('identitycounters');
    };
    const closeSides = async () => {
      await sides[0].dropDatabase();
      await Promise.all(sides.map((c) => c.close()));
    };
    afterEach(async () => {
      if (sides) await closeSides();
      sides = undefined;
    });
    // The collection is made by the first side's model only (two concurrent creations
    // are refused by some servers).
    const model = async (connection, name, schema) => {
      if (connection !== sides[0]) schema.set('autoCreate', false);
      const made = connection.model(name, schema, name.toLowerCase());
      await made.init();
      return made;
    };

    for (const [form, register] of Object.entries(FORMS)) {
      test(`${form}: two clients with cache: 4 in random concurrent histories never give a number twice`, async () => {
        await openSides(form);
        const hits = seq.stats().cacheHits;
        const clients = new Set();
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 24 }), async (history) => {
            runs += 1;
            const name = `K${major}_${form.replace('-', '')}_${runs}`;
            const models = [];
            for (const connection of sides) {
              const schema = new mongoose.Schema({ tag: String, no: Number, x: Number });
              register(connection, schema, name, 4);
              models.push(await model(connection, name, schema));
            }
            let inserted = 0;
            let wave = [];
            for (const [at, step] of history.entries()) {
              wave.push(write(models[step.side], step, `${at}`));
              if (step.endsWave || at === history.length - 1) {
                inserted += (await Promise.all(wave)).reduce((a, b) => a + b, 0);
                wave = [];
                // Before a close: how many clients the sides' numbering had open.
                clients.add(seq.sharedClientCount());
                if (step.close) await seq.closeSharedClients();
              }
            }
            const numbers = (await models[0].find({}, { no: 1 }).lean()).map((d) => d.no);
            assert.equal(numbers.length, inserted);
            assert.ok(
              numbers.every((n) => Number.isSafeInteger(n)),
              `every document numbered: ${numbers}`,
            );
            assert.equal(new Set(numbers).size, numbers.length, `no number twice: ${numbers.sort((a, b) => a - b)}`);
          }),
          { numRuns: 4 },
        );
        // The numbers came from the cache, in two clients (one per side) at least once.
        assert.ok(seq.stats().cacheHits > hits, 'served from the cache');
        assert.ok(Math.max(...clients) >= 2, `two clients: ${[...clients]}`);
      });
    }

    test('ours: counterReset under a cache: the next saves start over, not from the old block; setNext takes from the block', async () => {
      await openSides('ours_m');
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrementFactory(sides[0]), { id: `R${major}_reset`, inc_field: 'no', cache: 10 });
      const Model = await model(sides[0], `R${major}_reset`, schema);
      const saved = async (k) => {
        const got = [];
        for (let i = 0; i < k; i++) got.push((await new Model({ tag: 't' }).save()).no);
        return got;
      };
      assert.deepEqual(await saved(3), [1, 2, 3]);
      // The stored counter is ahead of the numbers used: a block was reserved.
      const stored = await sides[0].db.collection('counters').findOne({ id: `R${major}_reset` });
      assert.ok(stored.seq > 3, `reserved ahead: ${stored.seq}`);
      await Model.counterReset(`R${major}_reset`);
      assert.deepEqual(await saved(2), [1, 2]);
      const doc = await new Model({ tag: 'n' }).save();
      assert.equal(doc.no, 3);
      await doc.setNext(`R${major}_reset`);
      assert.equal(doc.no, 4);
      assert.deepEqual(await saved(1), [5]);
    });

    test('auto-increment: nextCount is the next save’s number under a cache; resetCount starts over; a given number is never handed out again', async () => {
      await openSides('autoincrement_m');
      mai.initialize(sides[0]);
      const name = `M${major}_cache`;
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(mai.plugin, { model: name, cache: 10, startAt: 100, incrementBy: 2 });
      const Model = await model(sides[0], name, schema);
      const counter = () => sides[0].db.collection('identitycounters').findOne({ model: name, field: '_id' });
      assert.equal(await Model.nextCount(), 100);
      const a = await new Model({ tag: 'a' }).save();
      const b = await new Model({ tag: 'b' }).save();
      assert.deepEqual([a._id, b._id], [100, 102]);
      assert.ok((await counter()).count > 102, 'a block reserved ahead');
      // nextCount gives this client's unused numbers back (the counter is where the saves are) …
      assert.equal(await Model.nextCount(), 104);
      assert.equal((await counter()).count, 102);
      assert.equal(await b.nextCount(), 104);
      // … and the next save takes exactly that number.
      assert.equal((await new Model({ tag: 'c' }).save())._id, 104);
      // A number given inside the block this client reserved: the block is dropped, so no
      // later save gets it (the counter is not moved back: the next number is past the block).
      assert.ok((await counter()).count > 106);
      const given = await new Model({ _id: 106, tag: 'given' }).save();
      assert.equal(given._id, 106);
      const after = [];
      for (let i = 0; i < 5; i++) after.push((await new Model({ tag: `d${i}` }).save())._id);
      assert.ok(
        after.every((n) => n > 106 && n % 2 === 0),
        `after the given number: ${after}`,
      );
      assert.equal(new Set(after).size, 5);
      // A number given past the counter moves it up to it, as without a cache.
      const stored = (await counter()).count;
      await new Model({ _id: stored + 20, tag: 'far' }).save();
      assert.equal((await new Model({ tag: 'e' }).save())._id, stored + 22);
      // resetCount: the next saves start over at startAt, not from the cached block.
      assert.equal(await Model.resetCount(), 100);
      await Model.deleteMany({});
      assert.deepEqual([(await new Model({ tag: 'f' }).save())._id, (await Model.create({ tag: 'g' }))._id], [100, 102]);
      // insertMany with a number given in it: past the given one.
      await Model.deleteMany({ _id: { $gte: 104 } });
      const batch = await Model.insertMany([{ tag: 'h' }, { _id: 130, tag: 'i' }, { tag: 'j' }]);
      assert.equal(batch[1]._id, 130);
      assert.ok(batch[0]._id > 130 && batch[2]._id > 130, `${batch.map((d) => d._id)}`);
    });

    for (const form of ['auto-increment', 'plugin-autoinc']) {
      test(`${form}: a number given inside another client's block: that client's close gives the block back to no one`, async () => {
        await openSides(`${form.replace('-', '')}_g`);
        const name = `G${major}_${form.replace('-', '')}`;
        const models = [];
        for (const connection of sides) {
          const schema = new mongoose.Schema({ tag: String, no: Number });
          if (form === 'auto-increment') {
            mai.initialize(connection);
            schema.plugin(mai.plugin, { model: name, field: 'no', startAt: 1, cache: 10 });
          } else schema.plugin(autoinc, { model: name, field: 'no', startAt: 1, cache: 10 });
          models.push(await model(connection, name, schema));
        }
        const [A, B] = models;
        const counter = async () => (await sides[0].db.collection('identitycounters').findOne({ model: name, field: 'no' })).count;
        // B takes 1 and holds 2 … 11; A stores 5 as its own: the counter, past it, stays.
        assert.equal((await new B({ tag: 'b' }).save()).no, 1);
        assert.equal((await new A({ tag: 'a', no: 5 }).save()).no, 5);
        assert.equal(await counter(), 11);
        // B's graceful close: the number given marks the block, which is not given back.
        await seq.closeSharedClients();
        assert.equal(await counter(), 11);
        assert.equal((await new A({ tag: 'c' }).save()).no, 12);
      });
    }

    test('plugin-autoinc: nextCount on a model of a new useDb (a handle that has not reached its counter yet) is the next save’s number', async () => {
      await openSides('autoinc_u');
      const name = `U${major}_cache`;
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(autoinc, { model: name, field: 'no', cache: 10 });
      // A model per request on a tenant's database: a new Db object each time.
      const request = () => sides[0].useDb(`${sides[0].name}_tenant`).model(name, schema);
      // Its collection made first, as model() does for the other tests: mongoose's
      // background init creating it while the first save's counter is inserted can
      // livelock SecantusDB (a 300 s hang in one clean-clone run).
      await request().init();
      assert.deepEqual([(await new (request())({ tag: 'a' }).save()).no, (await new (request())({ tag: 'b' }).save()).no], [0, 1]);
      const M = request();
      const said = await M.nextCount();
      assert.equal((await new M({ tag: 'c' }).save()).no, said);
      await sides[0].useDb(`${sides[0].name}_tenant`).dropDatabase();
    });

    test('plugin-autoinc: nextCount(group) and resetCount(group) under a cache, per group', async () => {
      await openSides('pluginautoinc_m');
      const name = `P${major}_cache`;
      const schema = new mongoose.Schema({ shop: String, no: Number });
      schema.plugin(autoinc, { model: name, field: 'no', groupingField: 'shop', startAt: 1, cache: 5 });
      const Model = await model(sides[0], name, schema);
      const save = async (shop) => (await new Model({ shop }).save()).no;
      assert.deepEqual([await save('a'), await save('a'), await save('b')], [1, 2, 1]);
      assert.equal(await Model.nextCount('a'), 3);
      assert.equal(await Model.nextCount('b'), 2);
      assert.deepEqual([await save('a'), await save('b')], [3, 2]);
      assert.equal(await Model.resetCount('a'), 1);
      await Model.deleteMany({ shop: 'a' });
      const [a1, b3, a2] = [await save('a'), await save('b'), await save('a')];
      assert.deepEqual([a1, a2], [1, 2]);
      // The reset (setCountersWhere on the collection) drops the numbers this client had
      // reserved for the other groups too: a gap in group b, never a number twice.
      assert.ok(b3 > 2, `group b after the reset of a: ${b3}`);
      // A number given to a new document: never handed out again.
      await new Model({ shop: 'b', no: 5 }).save();
      const next = [await save('b'), await save('b')];
      assert.ok(
        next.every((n) => n > 5),
        `${next}`,
      );
    });

    test('typegoose: a BigInt field with a cache, save and create numbered in order within one client', async () => {
      await openSides('typegoose_m');
      const name = `T${major}_cache`;
      const schema = new mongoose.Schema({ _id: BigInt, tag: String });
      schema.plugin(typegoose.AutoIncrementID, { startAt: 10n, cache: 3 });
      const Model = await model(sides[0], name, schema);
      const got = [];
      for (let i = 0; i < 4; i++) got.push((await new Model({ tag: `${i}` }).save())._id);
      const created = await Model.create([{ tag: 'x' }, { tag: 'y' }]);
      assert.deepEqual(got, [10n, 11n, 12n, 13n]);
      assert.equal(new Set([...got, ...created.map((d) => d._id)].map(String)).size, 6);
    });
  });
}

test('three processes with cache: 10 saving on one new counter never get a number twice', { timeout: 180_000 }, async () => {
  const worker = fileURLToPath(new URL('../fixtures/plugin-worker.mjs', import.meta.url));
  const dbName = `${env.dbName}_procs`;
  const { MongoClient } = await import('mongodb');
  const client = await new MongoClient(env.uri).connect();
  try {
    await client.db(dbName).createCollection('counters');
    await client.db(dbName).createCollection('shareds');
    const runs = await Promise.all(['9', '8', '9'].map((major) => promisify(execFile)(process.execPath, [worker, env.uri, dbName, major, '60', '8', '10'], { timeout: 120_000 })));
    const numbers = runs.flatMap((r) => JSON.parse(r.stdout));
    assert.equal(new Set(numbers).size, numbers.length, 'no number twice');
    const counter = await client.db(dbName).collection('counters').findOne({ id: 'shared_between_processes' });
    assert.ok(
      numbers.every((n) => Number.isInteger(n) && n >= 1 && n <= counter.seq),
      'every number came from the counter',
    );
    await client.db(dbName).dropDatabase();
  } finally {
    await client.close();
  }
});
