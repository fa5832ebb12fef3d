// The plugin in everyday mongoose connection setups, on mongoose 9 and 8: documents saved
// before the connection opens (mongoose buffers them: the plugin waits as mongoose does, up
// to bufferTimeoutMS, honouring bufferCommands: false), Atlas's serverApi options, a
// connection setting the core cannot carry (the plugin's `uri` option), the bounds of what
// a counter keeps, and counters on several connections (the model's own connection for
// setNext, counterReset and exclusive: 'reuse'; one factory's schema on two connections).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import { rejectsWithCode } from '../helpers.mjs';
import { AutoIncrementFactory, fileDatabase } from './plugin-setup.mjs';

const require = createRequire(import.meta.url);
const { BoundedCache } = require('../../lib/bounded-cache.js');
const { countersOf } = require('../../lib/mongoose/registry.js');

const env = fileDatabase('plugin_conn');

/** The numbers `Model`'s documents have in `field`, sorted. */
async function stored(Model, field) {
  return (await Model.find().lean()).map((d) => d[field]).sort((a, b) => a - b);
}

for (const [major, mongoose] of [
  [9, mongoose9],
  [8, mongoose8],
]) {
  describe(`mongoose ${major}`, { timeout: 120_000 }, () => {
    const p = `c${major}_`;
    const dbName = () => `${env.dbName}_${major}`;
    const opened = [];
    /** A connection not opened yet (closed after the suite). */
    const unopened = (options) => {
      const connection = mongoose.createConnection();
      if (options) Object.assign(connection.config, options);
      opened.push(connection);
      return connection;
    };
    after(async () => {
      for (const connection of opened) await connection.close().catch(() => {});
    });
    // One connection opened for the whole suite, with the plugin on it, for the tests that
    // compare it with another connection.
    const connection = mongoose.createConnection();
    const AutoIncrement = AutoIncrementFactory(connection);
    const counters = () => connection.db.collection('counters');
    const model = async (name, schema) => {
      const made = connection.model(name, schema);
      await made.init();
      return made;
    };
    const numbers = async (Model, field, filter = {}) => (await Model.find(filter).sort({ tag: 1 }).lean()).map((d) => [d.tag, field.split('.').reduce((v, k) => v?.[k], d)]);
    before(async () => {
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}_shared`, serverSelectionTimeoutMS: 10_000 });
      await connection.createCollection('counters');
    });
    after(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    test('save, insertMany and create made before the connection opens are numbered once it opens', async () => {
      const connection = unopened();
      const schema = new mongoose.Schema({ tag: String }, { autoCreate: false, autoIndex: false });
      schema.plugin(AutoIncrementFactory(connection), { id: `${p}early`, inc_field: 'no' });
      const Early = connection.model(`${p}Early`, schema);
      const saved = new Early({ tag: 'a' }).save();
      const many = Early.insertMany([{ tag: 'b' }, { tag: 'c' }]);
      const created = Early.create([{ tag: 'd' }, { tag: 'e' }]);
      await sleep(300);
      await connection.openUri(env.uri, { dbName: dbName(), serverSelectionTimeoutMS: 10_000 });
      const [doc, inserted, made] = await Promise.all([saved, many, created]);
      assert.equal(typeof doc.no, 'number');
      assert.equal(inserted.length, 2);
      assert.equal(made.length, 2);
      assert.deepEqual(await stored(Early, 'no'), [1, 2, 3, 4, 5]);
      assert.equal((await connection.db.collection('counters').findOne({ id: `${p}early` })).seq, 5);
    });

    test('the factory given mongoose itself: a save before mongoose.connect() is numbered once it connects', async () => {
      const instance = new mongoose.Mongoose();
      const schema = new instance.Schema({ tag: String }, { autoCreate: false, autoIndex: false });
      schema.plugin(AutoIncrementFactory(instance), { id: `${p}default_conn`, inc_field: 'no' });
      const Default = instance.model(`${p}DefaultConn`, schema);
      const saving = new Default({ tag: 'a' }).save();
      await sleep(200);
      await instance.connect(env.uri, { dbName: dbName(), serverSelectionTimeoutMS: 10_000 });
      try {
        assert.equal((await saving).no, 1);
        assert.equal((await new Default({ tag: 'b' }).save()).no, 2);
      } finally {
        await instance.disconnect();
      }
    });

    test('never connected: save, insertMany and create fail with CONNECTION after bufferTimeoutMS', async () => {
      const connection = unopened();
      const schema = new mongoose.Schema({ tag: String }, { bufferTimeoutMS: 300, autoCreate: false, autoIndex: false });
      schema.plugin(AutoIncrementFactory(connection), { id: `${p}never`, inc_field: 'no' });
      const Never = connection.model(`${p}Never`, schema);
      for (const attempt of [() => new Never({ tag: 'a' }).save(), () => Never.insertMany([{ tag: 'b' }]), () => Never.create([{ tag: 'c' }, { tag: 'd' }])]) {
        const started = Date.now();
        await rejectsWithCode(assert, attempt(), 'CONNECTION', /did not open within bufferTimeoutMS \(300 ms\)/);
        const took = Date.now() - started;
        assert.ok(took >= 250 && took < 5000, `failed after ${took} ms`);
      }
      // The connection-wide setting applies where the schema sets none.
      const wide = unopened({ bufferTimeoutMS: 200 });
      const plain = new mongoose.Schema({ tag: String }, { autoCreate: false, autoIndex: false });
      plain.plugin(AutoIncrementFactory(wide), { id: `${p}never_wide`, inc_field: 'no' });
      await rejectsWithCode(assert, new (wide.model(`${p}NeverWide`, plain))({ tag: 'a' }).save(), 'CONNECTION', /\(200 ms\)/);
    });

    test('bufferCommands: false fails at once with CONNECTION, as mongoose does', async () => {
      const connection = unopened();
      const schema = new mongoose.Schema({ tag: String }, { bufferCommands: false, autoCreate: false, autoIndex: false });
      schema.plugin(AutoIncrementFactory(connection), { id: `${p}nobuffer`, inc_field: 'no' });
      const NoBuffer = connection.model(`${p}NoBuffer`, schema);
      const started = Date.now();
      await rejectsWithCode(assert, new NoBuffer({ tag: 'a' }).save(), 'CONNECTION', /bufferCommands is false/);
      assert.ok(Date.now() - started < 1000);
    });

    test("Atlas's serverApi options (version 1, strict, deprecationErrors): save, insertMany and upserts are numbered", async () => {
      const connection = mongoose.createConnection();
      opened.push(connection);
      await connection.openUri(env.uri, {
        dbName: dbName(),
        serverSelectionTimeoutMS: 10_000,
        serverApi: { version: '1', strict: true, deprecationErrors: true },
      });
      const schema = new mongoose.Schema({ tag: String });
      schema.plugin(AutoIncrementFactory(connection), { id: `${p}atlas`, inc_field: 'no' });
      const Atlas = connection.model(`${p}Atlas`, schema);
      await Atlas.init();
      await new Atlas({ tag: 'a' }).save();
      await new Atlas({ tag: 'b' }).save();
      await Atlas.insertMany([{ tag: 'c' }, { tag: 'd' }]);
      await Atlas.updateOne({ tag: 'e' }, { $set: { tag: 'e' } }, { upsert: true });
      assert.deepEqual(await stored(Atlas, 'no'), [1, 2, 3, 4, 5]);
      await Atlas.counterReset(`${p}atlas`);
      assert.equal((await new Atlas({ tag: 'f' }).save()).no, 1);
    });

    test('a connection setting the core cannot carry: UNSUPPORTED_CLIENT names the plugin option uri, which then works', async () => {
      const connection = mongoose.createConnection();
      opened.push(connection);
      // `family` (the address family of the sockets) is not carried over to the core's client.
      await connection.openUri(env.uri, { dbName: dbName(), serverSelectionTimeoutMS: 10_000, family: 4 });
      const refused = new mongoose.Schema({ tag: String });
      refused.plugin(AutoIncrementFactory(connection), { id: `${p}family`, inc_field: 'no' });
      const Refused = connection.model(`${p}Family`, refused);
      await Refused.init();
      const e = await rejectsWithCode(assert, new Refused({ tag: 'a' }).save(), 'UNSUPPORTED_CLIENT', /'family'/);
      assert.match(e.message, /the plugin's uri option: schema\.plugin\(AutoIncrement, \{ uri:/);
      assert.equal(e.cause?.code, 'UNSUPPORTED_CLIENT');

      const given = new mongoose.Schema({ tag: String });
      given.plugin(AutoIncrementFactory(connection), { id: `${p}family_uri`, inc_field: 'no', uri: env.uri });
      const Given = connection.model(`${p}FamilyUri`, given);
      await Given.init();
      await new Given({ tag: 'a' }).save();
      await Given.insertMany([{ tag: 'b' }]);
      await Given.create([{ tag: 'c' }, { tag: 'd' }]);
      assert.deepEqual(await stored(Given, 'no'), [1, 2, 3, 4]);
      // The counter lives in the connection's database, where mongoose-sequence keeps it.
      assert.equal((await connection.db.collection('counters').findOne({ id: `${p}family_uri` })).seq, 4);
      assert.equal((await Given.counterReset(`${p}family_uri`)).matchedCount, 1);
      assert.throws(
        () => given.plugin(AutoIncrementFactory(connection), { id: `${p}bad_uri`, inc_field: 'x', uri: 42 }),
        (err) => err.code === 'INVALID_ARGUMENT',
      );
    });

    test("a counter's options hold the plugin's options only, and the caller's object is not written to", async () => {
      const connection = unopened();
      const options = Object.freeze({ id: `${p}opts`, inc_field: 'no', reference_fields: ['b', 'a'] });
      const schema = new mongoose.Schema({ a: String, b: String });
      schema.plugin(AutoIncrementFactory(connection), options);
      const Opts = connection.model(`${p}Opts`, schema);
      const [counter] = countersOf(Opts);
      const known = [
        'id',
        'inc_field',
        'start_seq',
        'inc_amount',
        'reference_fields',
        'disable_hooks',
        'collection_name',
        'parallel_hooks',
        'exclusive',
        'gapless',
        'uri',
        'cache',
      ];
      for (const key of Object.keys(counter.options)) assert.ok(known.includes(key), `unexpected key ${key} among the counter's options`);
      assert.deepEqual(counter.options.reference_fields, ['a', 'b']);
      assert.deepEqual(options, { id: `${p}opts`, inc_field: 'no', reference_fields: ['b', 'a'] });
    });

    test('a counter keeps a bounded number of native handles; one dropped is made again', async () => {
      const connection = mongoose.createConnection();
      opened.push(connection);
      await connection.openUri(env.uri, { dbName: dbName(), serverSelectionTimeoutMS: 10_000 });
      const schema = new mongoose.Schema({ shop: Number, tag: String });
      schema.plugin(AutoIncrementFactory(connection), { id: `${p}many_refs`, inc_field: 'no', reference_fields: ['shop'] });
      const Shop = connection.model(`${p}ManyRefs`, schema);
      await Shop.init();
      const [counter] = countersOf(Shop);
      // One handle per reference value, at most 1024 (BoundedCache's bound is tested below);
      // a smaller cache of the same kind here, so that a few shops overflow it.
      assert.ok(counter.handles instanceof BoundedCache);
      assert.equal(counter.handles.capacity, 1024);
      counter.handles = new BoundedCache(3);
      const shops = 10;
      await Shop.insertMany(Array.from({ length: shops }, (_, shop) => ({ shop, tag: 'first' })));
      assert.equal(counter.handles.size, 3);
      // Shop 0's handle was dropped (least recently used): numbering goes on from its counter.
      assert.ok(!counter.handles.keys().includes(counter.keyOf(counter.referenceOf({ shop: 0 }))));
      const again = await new Shop({ shop: 0, tag: 'second' }).save();
      assert.equal(again.no, 2);
      const firsts = await Shop.find({ tag: 'first' }).lean();
      assert.equal(firsts.length, shops);
      assert.ok(firsts.every((d) => d.no === 1));
    });

    test("setNext, counterReset and exclusive: 'reuse' use the counter of the model's own connection", async () => {
      const other = mongoose.createConnection();
      await other.openUri(env.uri, { dbName: `${env.dbName}_${major}_other`, serverSelectionTimeoutMS: 10_000 });
      try {
        await other.createCollection('counters');
        const made = [];
        for (const exclusive of [false, 'reuse']) {
          const id = `${p}conn_${exclusive}`;
          const pair = [];
          for (const [conn, name] of [
            [connection, 'A'],
            [other, 'B'],
          ]) {
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
          made.push([
            exclusive,
            await numbers(A, 'no'),
            await numbers(B, 'no'),
            (await counters().findOne({ id })).seq,
            (await other.db.collection('counters').findOne({ id })).seq,
          ]);
        }
        assert.deepEqual(made, [
          [
            false,
            [
              ['a1', 1],
              ['a2', 2],
              ['a3', 3],
            ],
            [
              ['b1', 1],
              ['b2', 2],
            ],
            3,
            0,
          ],
          [
            'reuse',
            [
              ['a1', 1],
              ['a2', 2],
              ['a3', 3],
            ],
            [
              ['b1', 1],
              ['b2', 2],
            ],
            3,
            0,
          ],
        ]);
      } finally {
        await other.dropDatabase();
        await other.close();
      }
    });

    test("one factory, a schema on two connections: one counter, in the factory connection's database, reset through either", async () => {
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
        assert.deepEqual(
          [await numbers(A, 'no'), await numbers(B, 'no')],
          [
            [
              ['a1', 1],
              ['a2', 3],
            ],
            [['b1', 2]],
          ],
        );
        assert.equal(await other.db.collection('counters').countDocuments(), 0, 'no counter in the other database');
        await B.counterReset(`${p}tenants`);
        assert.equal((await A.create({ tag: 'a3' })).no, 1, 'reset through B, for A too');
      } finally {
        await other.dropDatabase();
        await other.close();
      }
    });
  });
}

test('BoundedCache behaves as a least-recently-used map of its capacity', () => {
  const op = fc.oneof(fc.tuple(fc.constant('get'), fc.integer({ min: 0, max: 9 })), fc.tuple(fc.constant('set'), fc.integer({ min: 0, max: 9 }), fc.integer()));
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 60 }), (capacity, ops) => {
      const cache = new BoundedCache(capacity);
      // The model: entries in order of use, most recent last.
      let model = [];
      for (const [kind, key, value] of ops) {
        if (kind === 'get') {
          const found = model.find(([k]) => k === key);
          assert.equal(cache.get(key), found?.[1]);
          if (found) model = [...model.filter(([k]) => k !== key), found];
        } else {
          cache.set(key, value);
          model = [...model.filter(([k]) => k !== key), [key, value]].slice(-capacity);
        }
        assert.ok(cache.size <= capacity);
        assert.deepEqual(
          cache.keys(),
          model.map(([k]) => k),
        );
      }
    }),
    { numRuns: 500 },
  );
  assert.throws(() => new BoundedCache(0), RangeError);
});
