// The mongoose-plugin-autoinc drop-in against mongoose-plugin-autoinc 1.1.9 itself, on
// mongoose 8 and 6 (from 9 on its hook calls a `next` mongoose no longer passes): random
// options (field, a groupingField of String, Number or ObjectId, startAt, incrementBy,
// outputFilter; startAt and incrementBy as numbers or digit strings) and histories of
// saves, create([...]), numbers given on save, upserts, nextCount and resetCount per
// group, through theirs and through ours on mongoose 9 and 8, each on a database of its
// own: after every step the same results and the same counter documents. Switches: a
// random history of theirs, fractions given on save among it, continued by ours on the
// same database as the guide says. And the upgrade: a database written by mongoose-auto-increment and then by
// theirs, continued by ours from the next number of every counter, their counter
// documents kept in their shape (theirs can go on after ours). And where the migration
// guide says they differ, both sides pinned: a group changed after validate(), the module;
// tenants (useDb) numbered by theirs from the counters of the first, continued by ours.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import mongoose6 from 'mongoose-v6';
import { loadOn, openOn, untilUniqueIndex, within, differentialRun, withCountersCollection } from '../fixtures/old-autoinc.mjs';

const require = createRequire(import.meta.url);
const ours = require('mongodb-sequence/mongoose/plugin-autoinc');
const theirsOn6 = loadOn('mongoose-plugin-autoinc', 'mongoose-v6');
const theirsOn8 = loadOn('mongoose-plugin-autoinc', 'mongoose-v8');

/** Histories per run (DROPIN_DIFF_RUNS=n widens or narrows it). */
const RUNS = Number(process.env.DROPIN_DIFF_RUNS ?? 25);

const run = differentialRun(
  'dropin_mpa_diff',
  {
    theirs6: { mongoose: mongoose6, plugin: theirsOn6, suffix: '_t6' },
    theirs8: { mongoose: mongoose8, plugin: theirsOn8, suffix: '_t8' },
    ours9: { mongoose: mongoose9, plugin: ours, suffix: '_o9' },
    ours8: { mongoose: mongoose8, plugin: ours, suffix: '_o8' },
  },
  // Theirs makes its counter index when its counter model is first used, without waiting:
  // made first here, as in a database it has run on, so that concurrent first saves of a
  // group (create([...])) do not create its counter twice (ours makes sure of the index
  // before it creates a counter).
  async (sides) => {
    for (const side of [sides.theirs6, sides.theirs8]) {
      await side.connection.db.collection('identitycounters').createIndex({ field: 1, groupingField: 1, model: 1 }, { unique: true });
    }
  },
);
const { sides } = run;

// Groups by label: '' a document without the grouping field, 'z' one with a falsy value
// (in the '' group too, for both), 'a' and 'b' two values of the grouping field's type.
const GROUPS = ['', 'a', 'b', 'z'];
const OIDS = ['64b7f0aa00000000000000a1', '64b7f0aa00000000000000b2'];
const GROUP_VALUES = {
  String: { a: () => 'a', b: () => 'b', z: () => '' },
  Number: { a: () => 7, b: () => -2, z: () => 0 },
  ObjectId: { a: (mongoose) => new mongoose.Types.ObjectId(OIDS[0]), b: (mongoose) => new mongoose.Types.ObjectId(OIDS[1]), z: () => null },
};
/** The value of group `label` for a grouping field of `type`, made with `mongoose`'s types; undefined for ''. */
const groupValue = (type, label, mongoose) => (label === '' ? undefined : GROUP_VALUES[type][label](mongoose));
const tenfold = (count) => count * 10;

/** A model of `side` numbered by its plugin with `options`. */
async function modelOf(side, name, options) {
  const { mongoose, plugin, connection } = side;
  const schema = new mongoose.Schema({ tag: Number, key: String, by: String, g: options.groupType === 'ObjectId' ? mongoose.Schema.Types.ObjectId : options.groupType });
  schema.plugin(plugin.autoIncrement, { ...options, model: name, outputFilter: options.outputFilter ? tenfold : undefined });
  const Model = connection.model(name, schema);
  await Model.init();
  // Both declare a unique index on the field: see untilUniqueIndex.
  if (options.field !== '_id') await untilUniqueIndex(Model, options.field);
  return Model;
}

/** The counts of `model`'s counters by group (null: none), the shapes of its documents, any stray one. */
async function countersOf(connection, model, options) {
  const found = await connection.db
    .collection('identitycounters')
    .find({ model }, { projection: { _id: 0, __v: 0 } })
    .toArray();
  // Both create a group's counter at its first save, a reset of a group without one
  // creates none: the same documents exist on both sides.
  const counts = Object.fromEntries(found.map((c) => [c.groupingField, c.count]).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
  const shapes = [...new Set(found.map((c) => Object.keys(c).sort().join(',')))];
  return { counts, shapes, stray: found.filter((c) => c.field !== options.field) };
}

/** A step's outcome: E11000 as 'duplicate', any other failure by its message. */
async function outcome(work) {
  try {
    return await work();
  } catch (error) {
    return Number(error && error.code) === 11000 ? 'duplicate' : `error: ${error && error.message}`;
  }
}

const valuesOf = (options, group, mongoose) => (options.groupingField && group ? { g: groupValue(options.groupType, group, mongoose) } : {});

/** The key of group `label`'s counter (its `groupingField`): '' for no value or a falsy one. */
const counterKey = (options, label, mongoose) => (options.groupingField && label ? String(groupValue(options.groupType, label, mongoose) || '') : '');

/**
 * An upsert of the document `{ key, g }` by `how` (`updateOne`, `findOneAndUpdate`, or
 * `bulkWrite`'s updateOne), inserting it or updating the ones there; resolves with the
 * numbers of the documents it matches. Theirs numbers in its validate hook only, which an
 * upsert does not run: it would store the new document without a number (under field
 * `no`'s unique index, the second such one refused), so that is left out, and theirs is
 * given what compares with ours' upsert. A document new to the collection: the save of
 * the same document, which theirs numbers (through outputFilter) from the group's counter
 * as ours numbers the upsert. One there: the same update, without upsert, and a number of
 * the group spent (a document saved and deleted), as ours' upsert takes its number before
 * the server says it updated (docs, "What differs"). A number given in the upsert is not
 * drawn: theirs would leave its counter where it is, ours moves it up.
 */
async function upsert(Model, options, s, i, isOurs) {
  const mongoose = Model.base;
  const filter = { key: s.key, ...valuesOf(options, s.group, mongoose) };
  const update = { $set: { by: `${s.how}${i}` }, $setOnInsert: { tag: i } };
  if (isOurs) {
    if (s.how === 'updateOne') await Model.updateOne(filter, update, { upsert: true });
    else if (s.how === 'findOneAndUpdate') await Model.findOneAndUpdate(filter, update, { upsert: true });
    else await Model.bulkWrite([{ updateOne: { filter, update, upsert: true } }]);
  } else if (await Model.exists(filter)) {
    await Model.updateMany(filter, { $set: update.$set });
    // The number is taken before the insert: spent too when a document holds it (after a
    // reset), which refuses the insert.
    const spent = await new Model({ tag: -1, ...valuesOf(options, s.group, mongoose) }).save().catch((error) => {
      if (Number(error && error.code) !== 11000) throw error;
    });
    if (spent) await Model.deleteOne({ _id: spent._id });
  } else {
    await new Model({ ...filter, by: update.$set.by, tag: i }).save();
  }
  return (await Model.find(filter).sort({ tag: 1 }).lean()).map((d) => d[options.field]);
}

/** Runs one step of a history on `Model`; resolves with what it gave. */
function step(Model, options, s, i, isOurs) {
  const { field } = options;
  const mongoose = Model.base;
  const group = s.group && options.groupingField ? groupValue(options.groupType, s.group, mongoose) : undefined;
  switch (s.op) {
    case 'save':
      return outcome(async () => (await new Model({ tag: i, ...valuesOf(options, s.group, mongoose) }).save())[field]);
    case 'given':
      return outcome(async () => (await new Model({ tag: i, ...valuesOf(options, s.group, mongoose), [field]: s.value }).save())[field]);
    case 'create':
      // Mongoose 6 and 8 save the documents of create([...]) concurrently: theirs numbers
      // them in the order its round trips come back, ours in array order. Compared as sets
      // of (counter, number): 0, '' and null are in the '' group, as no value is.
      return outcome(async () =>
        (await Model.create(s.groups.map((group, k) => ({ tag: i * 10 + k, ...valuesOf(options, group, mongoose) })))).map((d) => `${d.g || ''}:${d[field]}`).sort(),
      );
    case 'next':
      return outcome(() => (s.method ? new Model().nextCount(group) : Model.nextCount(group)));
    case 'reset':
      return outcome(() => (s.method ? new Model().resetCount(group) : Model.resetCount(group)));
    case 'upsert':
      return outcome(() => upsert(Model, options, s, i, isOurs));
  }
}

// Grouped half of the time: groups are where theirs and ours have the most to agree on.
const optionsArb = fc
  .oneof(
    { weight: 1, arbitrary: fc.record({ field: fc.constant('_id'), groupingField: fc.constant('') }) },
    { weight: 1, arbitrary: fc.record({ field: fc.constant('no'), groupingField: fc.constant('') }) },
    { weight: 2, arbitrary: fc.record({ field: fc.constant('no'), groupingField: fc.constant('g') }) },
  )
  .chain((where) =>
    fc.record({
      field: fc.constant(where.field),
      groupingField: fc.constant(where.groupingField),
      // Either as a number or as its digits in a string (as process.env gives it), which
      // theirs subtracts from (startAt - incrementBy): a number.
      startAt: fc.integer({ min: -5, max: 30 }).chain((n) => fc.constantFrom(n, String(n))),
      // The same for incrementBy: theirs subtracts it too, and its counter model casts it
      // for $inc; only its nextCount joins it to the count (see 'next' below).
      incrementBy: fc.constantFrom(1, 2, 3, -1, -2).chain((n) => fc.constantFrom(n, String(n))),
      outputFilter: fc.boolean(),
      groupType: fc.constantFrom('String', 'Number', 'ObjectId'),
    }),
  );
const group = fc.constantFrom(...GROUPS);
const stepArb = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('save'), group }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('given'), group, value: fc.integer({ min: -8, max: 60 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('create'), groups: fc.array(group, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('next'), group, method: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset'), group, method: fc.boolean() }) },
  // Upserts of a few keys, so that some insert and some update: in groups '', 'a', 'b'
  // (the group of a new document is the filter's; 'z', a falsy grouping value in the
  // filter, is left to saves).
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('upsert'),
      how: fc.constantFrom('updateOne', 'findOneAndUpdate', 'bulkWrite'),
      group: fc.constantFrom('', 'a', 'b'),
      key: fc.constantFrom('k1', 'k2', 'k3'),
    }),
  },
);
const historyArb = fc.array(stepArb, { minLength: 1, maxLength: 10 });

let made = 0;

test('random histories: ours on mongoose 9 and 8 gives what theirs gives on 8 and 6 and leaves the same counters', { timeout: 300_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(optionsArb, historyArb, async (options, rawHistory) => {
      // Without a groupingField every document is in the '' group.
      let history = options.groupingField ? rawHistory : rawHistory.map((s) => (s.group === undefined ? s : { ...s, group: '' }));
      // With a negative incrementBy a number given on save moves our counter down to it
      // (the way it counts) where theirs moves it up (docs, "What differs"): left out.
      if (options.incrementBy < 0) history = history.filter((s) => s.op !== 'given');
      // One create([...]) with a 'z' and a '' document: both take numbers of the '' counter
      // but are stored with another grouping value (a unique index over the field and the
      // grouping field tells them apart), so which one gets which number decides whether a
      // number handed out again collides; theirs gives them in the order its concurrent
      // round trips come back. Made one group there ('z' as ''), so both orders store the
      // same documents.
      history = history.map((s) => (s.op === 'create' && s.groups.includes('') ? { ...s, groups: s.groups.map((g) => (g === 'z' ? '' : g)) } : s));
      const name = `Diff${made++}`;
      const traces = {};
      for (const [label, side] of Object.entries(sides)) {
        const Model = await within(label, { op: 'model' }, modelOf(side, name, options));
        const trace = [];
        let counters = { counts: {} };
        for (const [i, s] of history.entries()) {
          let got = await within(label, s, step(Model, options, s, i, side.plugin === ours));
          const count = counters.counts[counterKey(options, s.group, Model.base)];
          if (side.plugin !== ours && typeof got === 'string') {
            if (s.op === 'next' && typeof options.incrementBy === 'string' && count !== undefined) {
              // Theirs joins a string incrementBy to the count ("72" for 7 and "2"; docs,
              // "What differs"); ours adds it.
              assert.equal(got, `${count}${options.incrementBy}`, `${label}: nextCount`);
              got = count + Number(options.incrementBy);
            } else if (got === options.startAt) {
              // Theirs gives startAt back as it was given, a string too; ours gives its number.
              got = Number(got);
            }
          }
          counters = await within(label, { op: 'counters', after: s }, countersOf(side.connection, name, options));
          trace.push({ step: s, got, counters });
        }
        traces[label] = trace;
      }
      assert.deepEqual(traces.theirs8, traces.theirs6);
      assert.deepEqual(traces.ours9, traces.theirs6);
      assert.deepEqual(traces.ours8, traces.theirs6);
    }),
    // A hang fails a step after 20 s: shrinking would repeat it past the test's timeout
    // and hide which side and step it was.
    { numRuns: RUNS, endOnFailure: true },
  );
});

test("upgrade: a database of mongoose-auto-increment and theirs, continued by ours from each counter's next number, then by theirs again", { timeout: 120_000 }, async () => {
  const dbName = `${run.env.dbName}_up`;
  // As JSON: documents read through mongoose 6 and 8 hold ObjectIds of other bson versions.
  const plain = (value) => JSON.parse(JSON.stringify(value));
  const counters = async (connection) =>
    plain(
      await connection.db
        .collection('identitycounters')
        .find({}, { sort: { model: 1, groupingField: 1 } })
        .toArray(),
    );
  const specs = {
    Ticket: { model: 'Ticket', startAt: 1 },
    Receipt: { model: 'Receipt', field: 'no', groupingField: 'shop', startAt: 1 },
    Invoice: { model: 'Invoice', field: 'no', startAt: 100, incrementBy: 5, outputFilter: (count) => count * 2 },
    // Counters of mongoose-auto-increment: Legacy continued by theirs (which converts it),
    // Dormant never touched by theirs (ours converts it).
    Legacy: { model: 'Legacy', field: 'no', startAt: 10 },
    Dormant: { model: 'Dormant', startAt: 50, incrementBy: 2 },
  };
  const schemaOf = (mongoose) => new mongoose.Schema({ tag: Number, shop: String });
  const modelOn = async (connection, plugin, name, spec = specs[name]) => {
    const schema = schemaOf(connection.base);
    schema.plugin(plugin, spec);
    const Model = connection.model(name, schema);
    await Model.init();
    return Model;
  };

  // 1. mongoose-auto-increment, on mongoose 6: the first documents of Legacy and Dormant.
  const maiConnection = await openOn(mongoose6, run.env.uri, dbName);
  const mai = loadOn('mongoose-auto-increment', 'mongoose-v6');
  mai.initialize(maiConnection);
  const MAI = {};
  for (const name of ['Legacy', 'Dormant']) MAI[name] = await modelOn(maiConnection, mai.plugin, name, { ...specs[name] });
  for (let i = 0; i < 3; i++) await new MAI.Legacy({ tag: i }).save();
  for (let i = 0; i < 2; i++) await new MAI.Dormant({ tag: i }).save();
  // Its unique index { field: 1, model: 1 } is declared with options MongoDB refuses since
  // 3.4 (`required`, `index`), so its databases have none; the test servers accept them.
  // Left out, as in those databases (with it, theirs could not make a second group either).
  const made = await maiConnection.db.collection('identitycounters').indexes();
  for (const index of made) if (index.name !== '_id_') await maiConnection.db.collection('identitycounters').dropIndex(index.name);
  await maiConnection.close();

  // 2. Theirs, on mongoose 8: a few documents of each model but Dormant, per shop, a reset.
  const old = await openOn(mongoose8, run.env.uri, dbName);
  let connection;
  try {
    const theirs = loadOn('mongoose-plugin-autoinc', 'mongoose-v8');
    const T = {};
    for (const name of Object.keys(specs)) T[name] = await modelOn(old, theirs.autoIncrement, name);
    for (let i = 0; i < 3; i++) await new T.Ticket({ tag: i }).save();
    for (const [i, shop] of ['north', 'south', 'north', 'south', 'east'].entries()) await new T.Receipt({ tag: i, shop }).save();
    // A shop's receipts deleted and its numbering started again.
    await T.Receipt.deleteMany({ shop: 'east' });
    await T.Receipt.resetCount('east');
    await new T.Invoice({ tag: 0 }).save();
    await new T.Invoice({ tag: 1 }).save();
    await new T.Legacy({ tag: 10 }).save();
    const next = {
      Ticket: await T.Ticket.nextCount(),
      north: await T.Receipt.nextCount('north'),
      south: await T.Receipt.nextCount('south'),
      east: await T.Receipt.nextCount('east'),
      Invoice: await T.Invoice.nextCount(),
      Legacy: await T.Legacy.nextCount(),
    };
    assert.deepEqual(next, { Ticket: 4, north: 3, south: 3, east: 1, Invoice: 110, Legacy: 14 });
    const before = await counters(old);
    // Dormant's counter is still mongoose-auto-increment's: no groupingField.
    assert.deepEqual(
      before.filter((c) => c.groupingField === undefined).map((c) => [c.model, c.count]),
      [['Dormant', 52]],
    );
    const documentsBefore = plain(
      await old.db
        .collection(T.Receipt.collection.collectionName)
        .find({}, { sort: { tag: 1 } })
        .toArray(),
    );

    // 3. Ours, on mongoose 9, on the same database. (The models' own indexes are there,
    // made by mongoose 8; not asked for again: see the mongoose-auto-increment test.)
    connection = await openOn(mongoose9, run.env.uri, dbName, { autoIndex: false });
    const O = {};
    for (const name of Object.keys(specs)) O[name] = await modelOn(connection, ours.autoIncrement, name);
    assert.equal(await O.Dormant.nextCount(), 54);
    assert.equal(await O.Receipt.nextCount('east'), 1);
    const got = {
      Ticket: [(await new O.Ticket({ tag: 10 }).save())._id, ...(await O.Ticket.insertMany([{ tag: 11 }, { tag: 12 }])).map((d) => d._id)],
      Receipt: (
        await O.Receipt.create([
          { tag: 10, shop: 'north' },
          { tag: 11, shop: 'south' },
          { tag: 12, shop: 'east' },
          { tag: 13, shop: 'west' },
          { tag: 14, shop: 'north' },
        ])
      ).map((d) => d.no),
      Invoice: [(await new O.Invoice({ tag: 10 }).save()).no],
      Legacy: [(await new O.Legacy({ tag: 11 }).save()).no],
      Dormant: [(await new O.Dormant({ tag: 10 }).save())._id, (await new O.Dormant({ tag: 11 }).save())._id],
    };
    assert.deepEqual(got, {
      Ticket: [4, 5, 6],
      Receipt: [3, 3, 1, 1, 4],
      Invoice: [220], // outputFilter(110)
      Legacy: [14],
      Dormant: [54, 56],
    });
    // No renumbering: their documents as they were.
    const documentsAfter = plain(
      await connection.db
        .collection(O.Receipt.collection.collectionName)
        .find({}, { sort: { tag: 1 } })
        .toArray(),
    );
    assert.deepEqual(documentsAfter.slice(0, documentsBefore.length), documentsBefore);
    // Their counter documents in place: the same _id and fields (and __v), count moved on;
    // Dormant's converted as theirs converts (groupingField ''); one new, for shop west.
    const after = await counters(connection);
    const key = (c) => `${c.model}/${c.groupingField ?? ''}`;
    const byKey = new Map(after.map((c) => [key(c), c]));
    for (const c of before) {
      const now = byKey.get(key(c));
      assert.ok(now, key(c));
      assert.deepEqual({ ...now, count: null }, { ...c, groupingField: c.groupingField ?? '', count: null }, key(c));
    }
    assert.deepEqual(
      after.map((c) => [key(c), c.count]),
      [
        ['Dormant/', 56],
        ['Invoice/', 110],
        ['Legacy/', 14],
        ['Receipt/east', 1],
        ['Receipt/north', 4],
        ['Receipt/south', 3],
        ['Receipt/west', 1],
        ['Ticket/', 6],
      ],
    );

    // 4. And back: theirs, on mongoose 8, continues from where ours left off.
    assert.equal((await new T.Ticket({ tag: 20 }).save())._id, 7);
    assert.equal((await new T.Receipt({ tag: 20, shop: 'west' }).save()).no, 2);
    assert.equal((await new T.Receipt({ tag: 21, shop: 'north' }).save()).no, 5);
    assert.equal((await new T.Invoice({ tag: 20 }).save()).no, 230);
    assert.equal((await new T.Dormant({ tag: 20 }).save())._id, 58);
  } finally {
    await connection?.close();
    await old.dropDatabase();
    await old.close();
  }
});

// A switch: theirs numbers a model, then ours takes the same database over. Theirs moves
// a group's counter to a number given on save when it is above, a fraction too (3.5, then
// 4.5, 5.5…); ours takes such a counter over at its first number (docs, "What differs"):
// an ascending one stands for the whole number above it (floor + 1), so ours continues at
// floor(fraction) + 1 + incrementBy, above every number theirs gave in the group, none
// twice; a descending one is refused with INVALID_COUNTER, nothing written, and the other
// groups go on. Theirs draws no reset here (a reset hands its numbers out again, on both
// sides alike), and with a negative incrementBy gives fractions only: a whole number given
// above a descending counter makes theirs and ours alike count down into numbers given
// before. Without outputFilter: the numbers compared are the counts.
const fraction = fc.constantFrom(0.25, 0.5, 0.75);
const switchOptionsArb = optionsArb.map((options) => ({ ...options, outputFilter: false }));
const theirsStepArb = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('save'), group }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('given'), group, whole: fc.integer({ min: -8, max: 60 }), fraction: fc.constantFrom(0, 0.25, 0.5, 0.75) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('create'), groups: fc.array(group, { minLength: 1, maxLength: 3 }) }) },
);
const oursStepArb = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('save'), group }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('create'), groups: fc.array(group, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('next'), group, method: fc.boolean() }) },
);

test('switch: a history of theirs, fractions given on save among it, continued by ours on the same database as documented', { timeout: 300_000 }, async (t) => {
  // Ours on mongoose 9 over the database of theirs on mongoose 8 (its indexes made by
  // mongoose 8: not asked for again, see the upgrade test).
  const connection = await openOn(mongoose9, run.env.uri, sides.theirs8.connection.db.databaseName, { autoIndex: false });
  const seen = { fraction: 0, refused: 0 };
  try {
    await fc.assert(
      fc.asyncProperty(
        switchOptionsArb,
        fc.array(theirsStepArb, { maxLength: 8 }),
        fc.option(fc.record({ group, fraction }), { nil: undefined, freq: 2 }),
        fc.array(oursStepArb, { minLength: 1, maxLength: 5 }),
        async (options, rawBefore, onTop, rawAfter) => {
          const { field } = options;
          const by = Number(options.incrementBy);
          const ungroup = (s) => (options.groupingField ? s : { ...s, group: s.group === undefined ? undefined : '', groups: s.groups?.map(() => '') });
          const before = rawBefore.map(ungroup).filter((s) => !(s.op === 'given' && by < 0 && s.fraction === 0));
          // A create([...]) of several groups with one refused: not drawn for a descending counter.
          const after = rawAfter.map(ungroup).filter((s) => !(s.op === 'create' && by < 0));
          const name = `Switch${made++}`;
          const T = await modelOf(sides.theirs8, name, options);
          const keyOf = (label) => counterKey(options, label, mongoose8);
          const countsOf = async () => (await countersOf(sides.theirs8.connection, name, options)).counts;
          for (const [i, s] of before.entries()) await within('theirs', s, step(T, options, s.op === 'given' ? { ...s, value: s.whole + s.fraction } : s, i, false));
          // Half of the time a fraction given above a group's counter last, so that theirs leaves one.
          if (onTop !== undefined) {
            const label = options.groupingField ? onTop.group : '';
            const count = (await countsOf())[keyOf(label)] ?? Number(options.startAt) - by;
            await within('theirs', { op: 'on top' }, step(T, options, { op: 'given', group: label, value: Math.floor(count) + 1 + onTop.fraction }, before.length, false));
          }
          const left = await countsOf();
          const theirsGave = {};
          for (const d of await T.collection.find().toArray()) (theirsGave[options.groupingField ? String(d.g || '') : ''] ??= []).push(d[field]);

          const O = await modelOf({ mongoose: mongoose9, plugin: ours, connection }, name, options);
          const got = [];
          for (const [k, s] of after.entries()) {
            const i = 100 + k;
            const groupOf = (label) => (options.groupingField && label ? groupValue(options.groupType, label, mongoose9) : undefined);
            let result;
            try {
              if (s.op === 'create') result = (await O.create(s.groups.map((label, j) => ({ tag: i * 10 + j, ...valuesOf(options, label, mongoose9) })))).map((d) => d[field]);
              else if (s.op === 'next') result = await (s.method ? new O().nextCount(groupOf(s.group)) : O.nextCount(groupOf(s.group)));
              else result = (await new O({ tag: i, ...valuesOf(options, s.group, mongoose9) }).save())[field];
            } catch (error) {
              result = `refused: ${error.code}`;
            }
            got.push(result);
          }

          // The oracle, from the docs, per group counter.
          const fractional = Object.keys(left).filter((key) => !Number.isInteger(left[key]));
          if (fractional.length) seen.fraction++;
          const refused = (key) => by < 0 && fractional.includes(key);
          const counts = {};
          for (const [key, c] of Object.entries(left)) counts[key] = Number.isInteger(c) ? c : Math.floor(c) + 1;
          const countOf = (key) => counts[key] ?? Number(options.startAt) - by;
          const take = (key) => (counts[key] = countOf(key) + by);
          const expected = [];
          const gave = {};
          for (const [k, s] of after.entries()) {
            const keys = s.op === 'create' ? s.groups.map(keyOf) : [keyOf(s.group)];
            if (s.op === 'next') expected.push(refused(keys[0]) ? got[k] : countOf(keys[0]) + by);
            else if (refused(keys[0])) {
              seen.refused++;
              expected.push('refused: INVALID_COUNTER');
            } else {
              const numbers = keys.map((key) => {
                const n = take(key);
                (gave[key] ??= []).push(n);
                return n;
              });
              expected.push(s.op === 'create' ? numbers : numbers[0]);
            }
          }
          assert.deepEqual(got, expected);
          for (const [key, numbers] of Object.entries(gave)) {
            const before = theirsGave[key] ?? [];
            if (by > 0)
              for (const n of numbers)
                assert.ok(
                  before.every((m) => n > m),
                  `${key}: ${n} not above every number theirs gave (${before})`,
                );
            assert.equal(new Set(numbers).size, numbers.length, `${key}: a number twice`);
            assert.ok(!numbers.some((n) => before.includes(n)), `${key}: a number of theirs again`);
          }
          // Counters as taken: a refused one as theirs left it.
          const now = await countsOf();
          for (const key of fractional) if (refused(key)) assert.equal(now[key], left[key], `${key}: the counter as theirs left it`);
          for (const key of Object.keys(gave)) assert.equal(now[key], counts[key], `${key}: the counter`);
          const stored = await T.collection.countDocuments();
          assert.equal(stored, Object.values(theirsGave).flat().length + Object.values(gave).flat().length, 'only the numbered documents written');
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
    t.diagnostic(`histories leaving a fractional counter: ${seen.fraction} of ${RUNS}, numberings refused on a descending one: ${seen.refused}`);
  } finally {
    await connection.close();
  }
});

test(
  "a group changed after validate(): theirs keeps the old group's number, which the new group hands out again; ours numbers it in the new group",
  { timeout: 60_000 },
  async () => {
    const options = { field: 'no', groupingField: 'g', startAt: 1, incrementBy: 1, outputFilter: false, groupType: 'String' };
    const name = `Regroup${made++}`;
    const got = {};
    for (const [label, side] of Object.entries(sides)) {
      const Model = await modelOf(side, name, options);
      const trace = [(await new Model({ tag: 0, g: 'north' }).save()).no];
      const doc = new Model({ tag: 1, g: 'north' });
      await doc.validate();
      trace.push(doc.no);
      doc.g = 'south';
      trace.push((await doc.save()).no);
      // The next documents of the new group.
      for (const tag of [2, 3]) trace.push(await outcome(async () => (await new Model({ tag, g: 'south' }).save()).no));
      got[label] = trace;
    }
    const expectedOfTheirs = [1, 2, 2, 1, 'duplicate'];
    const expectedOfOurs = [1, 2, 1, 2, 3];
    assert.deepEqual(got, { theirs6: expectedOfTheirs, theirs8: expectedOfTheirs, ours9: expectedOfOurs, ours8: expectedOfOurs });
  },
);

test(
  'tenants (useDb): theirs numbers every tenant from the counters of the first; ours, taking over, continues each tenant and group after its own numbers',
  { timeout: 120_000 },
  async () => {
    const tenantStep = fc.record({ tenant: fc.constantFrom('a', 'b'), shop: fc.constantFrom('', 'n', 's') });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1, 2, -1),
        fc.integer({ min: -3, max: 10 }),
        fc.array(tenantStep, { minLength: 1, maxLength: 10 }),
        fc.nat(10),
        async (by, start, ops, at) => {
          const split = Math.min(at, ops.length);
          const names = ['a', 'b'].map((t) => [t, `${run.env.dbName}_tn${made++}`]);
          const modelsOf = (connection, plugin) => {
            const schema = new connection.base.Schema({ tag: Number, shop: String });
            schema.plugin(plugin, { model: 'Receipt', field: 'no', groupingField: 'shop', startAt: start, incrementBy: by, unique: false });
            return Object.fromEntries(names.map(([t, name]) => [t, connection.useDb(name).model('Receipt', schema)]));
          };
          for (const [, name] of names) await withCountersCollection(sides.ours9.connection.useDb(name));
          const T = modelsOf(sides.theirs8.connection, theirsOn8.autoIncrement);
          const O = modelsOf(sides.ours9.connection, ours);
          const got = [];
          for (const [i, s] of ops.entries()) got.push((await new (i < split ? T : O)[s.tenant]({ tag: i, shop: s.shop }).save()).no);
          // The oracle. Theirs: one counter per group, all on the first tenant a document is
          // saved in. Ours: counters per tenant; the first tenant's are theirs, continued;
          // another's, absent, start after the furthest number of the group its documents
          // hold (startAt when none, or all before startAt): where ours differs from theirs.
          const beforeStart = (n) => (by > 0 ? n < start - by : n > start - by);
          const stored = { a: {}, b: {} };
          const shared = {};
          const counters = { a: {}, b: {} };
          const expected = [];
          let home;
          for (const [i, s] of ops.entries()) {
            if (i === split) {
              for (const t of ['a', 'b']) {
                if (t === home) Object.assign(counters[t], shared);
                else {
                  for (const [shop, numbers] of Object.entries(stored[t])) {
                    const furthest = by > 0 ? Math.max(...numbers) : Math.min(...numbers);
                    if (!beforeStart(furthest)) counters[t][shop] = furthest;
                  }
                }
              }
            }
            const counter = i < split ? shared : counters[s.tenant];
            if (i < split) home ??= s.tenant;
            const n = counter[s.shop] === undefined ? start : counter[s.shop] + by;
            counter[s.shop] = n;
            (stored[s.tenant][s.shop] ??= []).push(n);
            expected.push(n);
          }
          assert.deepEqual(got, expected);
          for (const t of ['a', 'b']) for (const [shop, numbers] of Object.entries(stored[t])) assert.equal(new Set(numbers).size, numbers.length, `${t}/${shop}: a number twice`);
          for (const [, name] of names) await sides.ours9.connection.useDb(name).dropDatabase();
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
  },
);

test('the module: ours is the plugin itself, with its names; theirs is a plain object of them', async () => {
  assert.equal(typeof ours, 'function');
  assert.deepEqual([ours.autoIncrement, ours.default], [ours, ours]);
  assert.deepEqual([typeof ours.plugin, typeof ours.initialize], ['function', 'function']);
  assert.equal(typeof theirsOn8, 'object');
  assert.equal(theirsOn8.__esModule, true);
  assert.deepEqual(Object.keys(theirsOn8).sort(), ['autoIncrement', 'default', 'initialize', 'plugin']);
  assert.equal(theirsOn8.default, theirsOn8.autoIncrement);
  // A default import in Node's ES modules: the module's exports, whatever __esModule says.
  assert.equal((await import('mongodb-sequence/mongoose/plugin-autoinc')).default, ours);
  assert.equal(typeof (await import('mongoose-plugin-autoinc')).default, 'object');
});
