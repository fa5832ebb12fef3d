// The typegoose drop-in against @typegoose/auto-increment 5.0.1 itself, on mongoose 9 (the
// one it runs on): random options and histories of single-document writes (the writes it
// numbers) through theirs and ours, numbers and counter documents compared; and upgrades
// and rollbacks: a history begun by one continued by the other on the same database, with
// the numbers of one plugin alone. And where the migration guide says they differ, both
// sides pinned: startAt per plugin call (theirs) or per counter (ours), a retried save;
// tenants (useDb) numbered by theirs from one counter, continued by ours per tenant.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import mongoose from 'mongoose';
import { setup, seq } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const ours = require('mongodb-sequence/mongoose/typegoose');
const theirs = require('@typegoose/auto-increment');

let env;
let connection;
before(async () => {
  env = await setup('dropin_typegoose_diff');
  connection = mongoose.createConnection();
  await connection.openUri(env.uri, { dbName: env.dbName, serverSelectionTimeoutMS: 10_000 });
  await connection.createCollection('identitycounters');
});
after(async () => {
  await connection?.close();
  await seq.closeSharedClients();
  await env?.close();
});

let made = 0;

/** A model numbered by `plugin` with `options`, under the model name `name`. */
async function modelWith(plugin, name, options) {
  const field = options.field ?? '_id';
  const schema = new mongoose.Schema(field === '_id' ? { _id: Number, tag: Number } : { tag: Number, [field]: Number });
  schema.plugin(plugin.AutoIncrementID, options);
  // One tracked model name, however many models: overwriteModelName names the counter.
  const Model = connection.model(`${name}_${made++}`, schema);
  await Model.init();
  return Model;
}

/** Runs one write of a history; resolves with the number it stored. */
async function write(Model, field, op, i) {
  if (op === 'save') return (await new Model({ tag: i }).save())[field];
  if (op === 'explicit') return (await new Model({ tag: i, [field]: 10_000 + i }).save())[field];
  return (await Model.create({ tag: i }))[field];
}

const options = fc.record(
  {
    // Either as a number or as its digits in a string (as process.env gives it), which
    // typegoose reads with BigInt().
    startAt: fc.integer({ min: -20, max: 1000 }).chain((n) => fc.constantFrom(n, String(n))),
    incrementBy: fc.constantFrom(1, 2, 5, -1, -3, '2', '-1'),
    field: fc.constantFrom('_id', 'no'),
  },
  { requiredKeys: ['field'] },
);
const history = fc.array(fc.constantFrom('save', 'create', 'explicit'), { minLength: 1, maxLength: 12 });

async function counterOf(name, field) {
  const doc = await connection.db.collection('identitycounters').findOne({ modelName: name, field }, { projection: { _id: 0 } });
  return doc && { modelName: doc.modelName, field: doc.field, count: Number(doc.count) };
}

test('random histories: ours gives the numbers theirs gives and leaves the same counter document', async () => {
  await fc.assert(
    fc.asyncProperty(options, history, async (opts, ops) => {
      const run = async (plugin, label) => {
        const name = `diff_${label}_${made}`;
        const Model = await modelWith(plugin, name, { ...opts, overwriteModelName: name });
        const numbers = [];
        for (const [i, op] of ops.entries()) numbers.push(await write(Model, opts.field, op, i));
        return { numbers, counter: { ...(await counterOf(name, opts.field)), modelName: null } };
      };
      const a = await run(theirs, 'theirs');
      const b = await run(ours, 'ours');
      assert.deepEqual(b, a);
    }),
    { numRuns: 25 },
  );
});

test("upgrade and rollback: one plugin continues the other's counter from the next number", async () => {
  await fc.assert(
    fc.asyncProperty(options, history, fc.nat(12), fc.boolean(), async (opts, ops, at, upgrade) => {
      const split = Math.min(at, ops.length);
      const [first, second] = upgrade ? [theirs, ours] : [ours, theirs];
      const alone = `alone_${made}`;
      const mixed = `mixed_${made}`;
      const Alone = await modelWith(theirs, alone, { ...opts, overwriteModelName: alone });
      const expected = [];
      for (const [i, op] of ops.entries()) expected.push(await write(Alone, opts.field, op, i));
      const Before = await modelWith(first, mixed, { ...opts, overwriteModelName: mixed });
      const After = await modelWith(second, mixed, { ...opts, overwriteModelName: mixed });
      const got = [];
      for (const [i, op] of ops.entries()) got.push(await write(i < split ? Before : After, opts.field, op, i));
      assert.deepEqual(got, expected);
      assert.deepEqual({ ...(await counterOf(mixed, opts.field)), modelName: null }, { ...(await counterOf(alone, opts.field)), modelName: null });
    }),
    { numRuns: 25 },
  );
});

test('where theirs fails, ours numbers: insertMany, and create([...]) on a fresh model', async () => {
  const name = `fresh_${made}`;
  const Theirs = await modelWith(theirs, `${name}_t`, { startAt: 100, overwriteModelName: `${name}_t` });
  const Ours = await modelWith(ours, `${name}_o`, { startAt: 100, overwriteModelName: `${name}_o` });
  // Theirs leaves insertMany's documents without a number (the driver gives them ObjectIds).
  await Theirs.insertMany([{ tag: 1 }, { tag: 2 }]);
  const stored = await Theirs.collection.find().toArray();
  assert.ok(
    stored.every((d) => typeof d._id !== 'number'),
    JSON.stringify(stored),
  );
  assert.deepEqual(
    (await Ours.insertMany([{ tag: 1 }, { tag: 2 }])).map((d) => d._id),
    [100, 101],
  );
  const created = await Ours.create([{ tag: 3 }, { tag: 4 }, { tag: 5 }]);
  assert.deepEqual(
    created.map((d) => d._id),
    [102, 103, 104],
  );
});

test('five concurrent first saves on a fresh model: ours all succeed from startAt', async (t) => {
  const name = `first_${made}`;
  const Theirs = await modelWith(theirs, `${name}_t`, { startAt: 100, overwriteModelName: `${name}_t` });
  const Ours = await modelWith(ours, `${name}_o`, { startAt: 100, overwriteModelName: `${name}_o` });
  // Theirs races its own counter creation (seen here: 1 to 5 instead of 100 to 104, at
  // times one save failing): shown, not asserted, as it depends on timing.
  const got = await Promise.allSettled(Array.from({ length: 5 }, () => new Theirs().save()));
  t.diagnostic(`theirs: ${JSON.stringify(got.map((r) => (r.status === 'fulfilled' ? r.value._id : r.reason.message)))}`);
  const saved = await Promise.all(Array.from({ length: 5 }, () => new Ours().save()));
  assert.deepEqual(
    saved.map((d) => d._id).sort((x, y) => x - y),
    [100, 101, 102, 103, 104],
  );
});

test('subdocuments: the same numbers and the same counter as theirs', async () => {
  const run = async (plugin, dbName) => {
    const db = connection.useDb(dbName);
    const sub = new mongoose.Schema({ _id: Number, name: String });
    sub.plugin(plugin.AutoIncrementID, { startAt: 1 });
    const Parent = db.model('Parent', new mongoose.Schema({ nested: sub }));
    await Parent.init();
    const numbers = [];
    for (let i = 0; i < 3; i++) numbers.push((await Parent.create({ nested: { name: `n${i}` } })).nested._id);
    const counters = await db.db
      .collection('identitycounters')
      .find({}, { projection: { _id: 0 } })
      .toArray();
    await db.dropDatabase();
    // Theirs leaves modelName out, ours stores null: one equality on null finds either.
    return { numbers, counters: counters.map((c) => ({ ...c, modelName: c.modelName ?? null, count: Number(c.count) })) };
  };
  const a = await run(theirs, `${env.dbName}_sub_t`);
  const b = await run(ours, `${env.dbName}_sub_o`);
  assert.deepEqual(b, a);
});

test('startAt: theirs applies it to the first counter of a plugin call only, ours to every counter', async () => {
  const got = {};
  for (const [label, plugin] of [
    ['theirs', theirs],
    ['ours', ours],
  ]) {
    // One schema, one plugin call, two models: a counter each.
    const schema = new mongoose.Schema({ _id: Number, tag: Number });
    schema.plugin(plugin.AutoIncrementID, { startAt: 100 });
    got[label] = [];
    for (const model of ['a', 'b']) {
      const Model = connection.model(`start_${label}_${model}_${made++}`, schema);
      await Model.init();
      got[label].push([(await Model.create({ tag: 1 }))._id, (await Model.create({ tag: 2 }))._id]);
    }
  }
  assert.deepEqual(got, {
    theirs: [
      [100, 101],
      [1, 2],
    ],
    ours: [
      [100, 101],
      [100, 101],
    ],
  });
});

test('a save retried after a failure: theirs takes a new number, ours keeps its own; after a duplicate key on the number both take the next', async () => {
  const got = {};
  for (const [label, plugin] of [
    ['theirs', theirs],
    ['ours', ours],
  ]) {
    const schema = new mongoose.Schema({ _id: Number, name: { type: String, unique: true } });
    schema.plugin(plugin.AutoIncrementID, { startAt: 1 });
    const Model = connection.model(`retry_${label}_${made++}`, schema);
    await Model.init();
    await Model.create({ name: 'taken' });
    // Refused for its name, after it took a number; saved again under another name.
    const doc = new Model({ name: 'taken' });
    const refused = await doc.save().then(
      () => 'saved',
      (e) => e.code,
    );
    const taken = doc._id;
    doc.name = 'free';
    const kept = (await doc.save())._id;
    // Refused for its number: a document already holds the counter's next one.
    const counter = Number((await counterOf(Model.modelName, '_id')).count);
    await Model.collection.insertOne({ _id: counter + 1, name: 'imported' });
    const next = new Model({ name: 'next' });
    const refusedAgain = await next.save().then(
      () => 'saved',
      (e) => e.code,
    );
    const retried = (await next.save())._id;
    got[label] = { refused, taken, kept, refusedAgain, retried: retried - counter };
  }
  assert.deepEqual(got, {
    theirs: { refused: 11000, taken: 2, kept: 3, refusedAgain: 11000, retried: 2 },
    ours: { refused: 11000, taken: 2, kept: 2, refusedAgain: 11000, retried: 2 },
  });
});

test('tenants (useDb): theirs numbers every tenant from one counter in the first; ours, taking over, continues each tenant after its own numbers', async () => {
  const step = fc.record({ op: fc.constantFrom('save', 'create', 'explicit'), tenant: fc.constantFrom('a', 'b', 'c') });
  await fc.assert(
    fc.asyncProperty(options, fc.array(step, { minLength: 1, maxLength: 12 }), fc.nat(12), async (opts, ops, at) => {
      const split = Math.min(at, ops.length);
      const field = opts.field;
      const names = ['a', 'b', 'c'].map((t) => [t, `${env.dbName}_tn${made++}`]);
      for (const [, name] of names) await connection.useDb(name).db.createCollection('identitycounters');
      const modelsOf = (plugin) => {
        const schema = new mongoose.Schema(field === '_id' ? { _id: Number, tag: Number } : { tag: Number, [field]: Number });
        schema.plugin(plugin.AutoIncrementID, { ...opts });
        return Object.fromEntries(names.map(([t, name]) => [t, connection.useDb(name).model('Item', schema)]));
      };
      const T = modelsOf(theirs);
      const O = modelsOf(ours);
      const got = [];
      for (const [i, s] of ops.entries()) got.push(await write((i < split ? T : O)[s.tenant], field, s.op, i));
      // The oracle. Theirs: one counter, bound to the first tenant a save numbers in (made
      // at startAt - incrementBy there), every new document numbered from it (a value of
      // its own overwritten). Ours: a counter per tenant; the first tenant's is theirs,
      // continued; another's, absent, starts after the furthest number its documents hold
      // (startAt when none, or all before startAt). Where ours differs from theirs: the
      // numbers of tenants other than the first, after the switch.
      const start = Number(opts.startAt ?? 0);
      const by = Number(opts.incrementBy ?? 1);
      const beforeStart = (n) => (by > 0 ? n < start - by : n > start - by);
      const stored = { a: [], b: [], c: [] };
      const expected = [];
      let home;
      let count;
      const counters = {};
      for (const [i, s] of ops.entries()) {
        if (i === split) {
          for (const t of ['a', 'b', 'c']) {
            if (t === home) counters[t] = count;
            else if (stored[t].length) {
              const furthest = by > 0 ? Math.max(...stored[t]) : Math.min(...stored[t]);
              if (!beforeStart(furthest)) counters[t] = furthest;
            }
          }
        }
        let n;
        if (i < split) {
          home ??= s.tenant;
          count = (count ?? start - by) + by;
          n = count;
        } else {
          n = counters[s.tenant] === undefined ? start : counters[s.tenant] + by;
          counters[s.tenant] = n;
        }
        stored[s.tenant].push(n);
        expected.push(n);
      }
      assert.deepEqual(got, expected);
      for (const t of ['a', 'b', 'c']) assert.equal(new Set(stored[t]).size, stored[t].length, `tenant ${t}: a number twice`);
      for (const [, name] of names) await connection.useDb(name).dropDatabase();
    }),
    { numRuns: 20 },
  );
});
