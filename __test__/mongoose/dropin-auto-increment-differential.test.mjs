// The mongoose-auto-increment drop-in against mongoose-auto-increment 5.0.1 itself, on
// mongoose 6 (the newest it runs on: from 7 on its `plugin` throws): random options and
// histories of saves, create([...]), numbers given on save, nextCount and resetCount,
// through theirs and through ours on mongoose 9 and 8, each on a database of its own:
// after every step the same results and the same counter document. And the upgrade: a
// database written by theirs, continued by ours from the next number of every counter,
// their counter documents kept in their shape (theirs can go on after ours). Switches: a
// random history of theirs, fractions given on save among it, continued by ours on the
// same database as the guide says. startAt and incrementBy drawn as numbers or digit
// strings. And a save refused for its number, retried: a difference the migration guide
// lists, both sides pinned.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import mongoose6 from 'mongoose-v6';
import { loadOn, openOn, viaCallback, untilUniqueIndex, within, differentialRun } from '../fixtures/old-autoinc.mjs';

const require = createRequire(import.meta.url);
const ours = require('mongodb-sequence/mongoose/auto-increment');
const theirs = loadOn('mongoose-auto-increment', 'mongoose-v6');

const run = differentialRun(
  'dropin_mai_diff',
  {
    theirs: { mongoose: mongoose6, plugin: theirs, suffix: '_t' },
    ours9: { mongoose: mongoose9, plugin: ours, suffix: '_o9' },
    ours8: { mongoose: mongoose8, plugin: ours, suffix: '_o8' },
  },
  // Theirs keeps the connection of its one `initialize` in module scope, for every model.
  (sides) => {
    theirs.initialize(sides.theirs.connection);
  },
);
const { sides } = run;

/** The counter document of `model`.`field` on `connection`, without `_id` and `__v`. */
async function counterOf(connection, model, field) {
  return connection.db.collection('identitycounters').findOne({ model, field }, { projection: { _id: 0, __v: 0 } });
}

/** A model of `side` numbered by its plugin with `options`. */
async function modelOf(side, name, options) {
  const { mongoose, plugin, connection } = side;
  const schema = new mongoose.Schema({ tag: Number });
  // Ours takes the connection of the last `initialize`: the one of this side.
  if (plugin === ours) ours.initialize(connection);
  schema.plugin(plugin.plugin, { ...options, model: name });
  const Model = connection.model(name, schema);
  await Model.init();
  // Both declare a unique index on the field: see untilUniqueIndex.
  if (options.field !== '_id') await untilUniqueIndex(Model, options.field);
  if (plugin === theirs) {
    // Theirs creates the counter at `plugin` time, without waiting; its saves poll until
    // it is written. Waited for here so that every step sees it (ours creates it at the
    // first number: see the docs, "What differs").
    for (let i = 0; i < 400 && !(await counterOf(connection, name, options.field)); i++) await new Promise((r) => setTimeout(r, 5));
  }
  return Model;
}

/** A step's outcome: E11000 as 'duplicate', any other failure by its message. */
async function outcome(work) {
  try {
    return await work();
  } catch (error) {
    return Number(error && error.code) === 11000 ? 'duplicate' : `error: ${error && error.message}`;
  }
}

/** Runs one step of a history on `Model`; resolves with what it gave. */
function step(Model, field, s, i) {
  switch (s.op) {
    case 'save':
      return outcome(async () => (await new Model({ tag: i }).save())[field]);
    case 'given':
      return outcome(async () => (await new Model({ tag: i, [field]: s.value }).save())[field]);
    case 'create':
      // Mongoose 6 saves the documents of create([...]) concurrently: theirs numbers them
      // in the order its round trips come back, ours in array order. Compared as a set.
      return outcome(async () => (await Model.create(Array.from({ length: s.n }, (_, k) => ({ tag: i * 10 + k })))).map((d) => d[field]).sort((a, b) => a - b));
    case 'next':
      return viaCallback((cb) => (s.method ? new Model().nextCount(cb) : Model.nextCount(cb)));
    case 'reset':
      return viaCallback((cb) => (s.method ? new Model().resetCount(cb) : Model.resetCount(cb)));
  }
}

const optionsArb = fc.record({
  field: fc.constantFrom('_id', 'no'),
  // Either as a number or as its digits in a string (as process.env gives it), which
  // theirs subtracts from (startAt - incrementBy): a number.
  startAt: fc.integer({ min: -5, max: 30 }).chain((n) => fc.constantFrom(n, String(n))),
  // The same for incrementBy: theirs subtracts it too, and its counter model casts it for
  // $inc; only its nextCount joins it to the count (see 'next' below).
  incrementBy: fc.constantFrom(1, 2, 3, -1, -2).chain((n) => fc.constantFrom(n, String(n))),
});
const stepArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ op: 'save' }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('given'), value: fc.integer({ min: -8, max: 60 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('create'), n: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('next'), method: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset'), method: fc.boolean() }) },
);
const historyArb = fc.array(stepArb, { minLength: 1, maxLength: 10 });

let made = 0;

/** Histories per run (DROPIN_DIFF_RUNS=n widens or narrows it). */
const RUNS = Number(process.env.DROPIN_DIFF_RUNS ?? 20);

test('random histories: ours on mongoose 9 and 8 gives what theirs gives on 6 and leaves the same counter', { timeout: 300_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(optionsArb, historyArb, async (options, rawHistory) => {
      // With a negative incrementBy a number given on save moves our counter down to it
      // (the way it counts) where theirs moves it up (docs, "What differs"): left out.
      const history = options.incrementBy < 0 ? rawHistory.filter((s) => s.op !== 'given') : rawHistory;
      const name = `Diff${made++}`;
      const traces = {};
      for (const [label, side] of Object.entries(sides)) {
        const Model = await modelOf(side, name, options);
        const trace = [];
        // No counter yet (ours before its first number) counts as the one theirs makes at
        // `plugin` time, `startAt − incrementBy`: both give startAt next.
        const counterNow = async () =>
          (await counterOf(side.connection, name, options.field)) ?? { model: name, field: options.field, count: options.startAt - options.incrementBy };
        let counter = await counterNow();
        for (const [i, s] of history.entries()) {
          let got = await within(label, s, step(Model, options.field, s, i));
          if (side.plugin === theirs && typeof got === 'string') {
            if (s.op === 'next' && typeof options.incrementBy === 'string') {
              // Theirs joins a string incrementBy to the count ("72" for 7 and "2"; docs,
              // "What differs"); ours adds it. Its counter exists from `plugin` on.
              assert.equal(got, `${counter.count}${options.incrementBy}`, `${label}: nextCount`);
              got = counter.count + Number(options.incrementBy);
            } else if (got === options.startAt) {
              // Theirs gives startAt back as it was given, a string too; ours gives its number.
              got = Number(got);
            }
          }
          counter = await counterNow();
          trace.push({ step: s, got, counter });
        }
        traces[label] = trace;
      }
      assert.deepEqual(traces.ours9, traces.theirs);
      assert.deepEqual(traces.ours8, traces.theirs);
    }),
    // A hang fails a step after 20 s: shrinking would repeat it past the test's timeout
    // and hide which side and step it was.
    { numRuns: RUNS, endOnFailure: true },
  );
});

test("upgrade: a database of theirs, continued by ours from each counter's next number, then by theirs again", { timeout: 120_000 }, async () => {
  const dbName = `${run.env.dbName}_up`;
  const old = await openOn(mongoose6, run.env.uri, dbName);
  const theirsAgain = loadOn('mongoose-auto-increment', 'mongoose-v6');
  theirsAgain.initialize(old);
  const specs = {
    Ticket: { model: 'Ticket', startAt: 1 },
    Invoice: { model: 'Invoice', field: 'no', startAt: 100, incrementBy: 5 },
    Order: { model: 'Order', field: 'ref', startAt: 10, incrementBy: 2 },
    Unused: { model: 'Unused', startAt: 7 },
    Down: { model: 'Down', field: 'no', startAt: 0, incrementBy: -1 },
  };
  const modelOn = async (mongoose, plugin, connection, name) => {
    const schema = new mongoose.Schema({ tag: Number });
    schema.plugin(plugin.plugin, specs[name]);
    const Model = connection.model(name, schema);
    await Model.init();
    return Model;
  };
  // As JSON: the documents read through mongoose 6 hold bson 4 ObjectIds, those through 9 bson 6.
  const plain = (value) => JSON.parse(JSON.stringify(value));
  const counters = async (connection) =>
    plain(
      await connection.db
        .collection('identitycounters')
        .find({}, { sort: { model: 1 } })
        .toArray(),
    );
  const T = {};
  const documents = async (connection) => {
    const all = {};
    for (const name of Object.keys(specs))
      all[name] = plain(
        await connection.db
          .collection(T[name].collection.collectionName)
          .find({}, { sort: { tag: 1 } })
          .toArray(),
      );
    return all;
  };

  let connection;
  try {
    // Theirs, on mongoose 6: a few documents in each model, a reset, a number given.
    for (const name of Object.keys(specs)) T[name] = await modelOn(mongoose6, theirsAgain, old, name);
    for (let i = 0; i < 50 && (await counters(old)).length < Object.keys(specs).length; i++) await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < 3; i++) await new T.Ticket({ tag: i }).save();
    await T.Invoice.create([{ tag: 0 }, { tag: 1 }]);
    await new T.Order({ tag: 0 }).save();
    await new T.Order({ tag: 1 }).save();
    await viaCallback((cb) => T.Order.resetCount(cb));
    await new T.Order({ tag: 2, ref: 500 }).save(); // given: the counter moves up to 500
    await new T.Down({ tag: 0 }).save();
    await new T.Down({ tag: 1 }).save();
    const next = {};
    for (const name of Object.keys(specs)) next[name] = await viaCallback((cb) => T[name].nextCount(cb));
    assert.deepEqual(next, { Ticket: 4, Invoice: 110, Order: 502, Unused: 7, Down: -2 });
    const countersBefore = await counters(old);
    const documentsBefore = await documents(old);

    // Ours, on mongoose 9, on the same database.
    // The models' own indexes are there, made by mongoose 6 with `background: true`, which
    // SecantusDB refuses as a conflicting index when mongoose 9 asks for them
    // again without it: not made again. Ours makes its counter index itself.
    connection = await openOn(mongoose9, run.env.uri, dbName, { autoIndex: false });
    ours.initialize(connection);
    const O = {};
    for (const name of Object.keys(specs)) O[name] = await modelOn(mongoose9, ours, connection, name);
    const field = (name) => specs[name].field ?? '_id';
    for (const name of Object.keys(specs)) assert.equal(await O[name].nextCount(), next[name], `${name}: nextCount`);
    const got = {};
    for (const name of Object.keys(specs))
      got[name] = [(await new O[name]({ tag: 10 }).save())[field(name)], ...(await O[name].insertMany([{ tag: 11 }, { tag: 12 }])).map((d) => d[field(name)])];
    const step = (name) => specs[name].incrementBy ?? 1;
    for (const name of Object.keys(specs)) {
      assert.deepEqual(
        got[name],
        [0, 1, 2].map((k) => next[name] + k * step(name)),
        name,
      );
    }
    // No renumbering: their documents as they were.
    const documentsAfter = await documents(connection);
    for (const name of Object.keys(specs)) assert.deepEqual(documentsAfter[name].slice(0, documentsBefore[name].length), documentsBefore[name], name);
    // Their counter documents, in place: the same _id, fields and __v, count moved on.
    const countersAfter = await counters(connection);
    assert.deepEqual(
      countersAfter.map(({ count, ...rest }) => rest),
      countersBefore.map(({ count, ...rest }) => rest),
    );
    for (const c of countersAfter) assert.equal(c.count, got[c.model][2], c.model);

    // And back: theirs, on mongoose 6, continues from where ours left off.
    for (const name of Object.keys(specs)) {
      assert.equal(await viaCallback((cb) => T[name].nextCount(cb)), got[name][2] + step(name), name);
      assert.equal((await new T[name]({ tag: 20 }).save())[field(name)], got[name][2] + step(name), name);
    }
  } finally {
    await connection?.close();
    await old.dropDatabase();
    await old.close();
  }
});

// A switch: theirs numbers a model, then ours takes the same database over. Theirs moves
// its counter to a number given on save when it is above, a fraction too (3.5, then 4.5,
// 5.5…); ours takes such a counter over at its first number (docs, "What differs"): an
// ascending one stands for the whole number above it (floor + 1), so ours continues at
// floor(fraction) + 1 + incrementBy, above every number theirs gave, none twice; a
// descending one is refused with INVALID_COUNTER, nothing written. Theirs draws no reset
// here (a reset hands its numbers out again, on both sides alike), and with a negative
// incrementBy gives fractions only: a whole number given above a descending counter makes
// theirs and ours alike count down into numbers given before.
const fraction = fc.constantFrom(0.25, 0.5, 0.75);
const switchOptionsArb = fc.record({
  field: fc.constantFrom('_id', 'no'),
  startAt: fc.integer({ min: -5, max: 30 }).chain((n) => fc.constantFrom(n, String(n))),
  incrementBy: fc.constantFrom(1, 2, 3, -1, -2).chain((n) => fc.constantFrom(n, String(n))),
});
const theirsStepArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ op: 'save' }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('given'), whole: fc.integer({ min: -8, max: 60 }), fraction: fc.constantFrom(0, 0.25, 0.5, 0.75) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('create'), n: fc.integer({ min: 1, max: 3 }) }) },
);
const oursStepArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ op: 'save' }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('create'), n: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('insertMany'), n: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('next'), method: fc.boolean() }) },
);

test('switch: a history of theirs, fractions given on save among it, continued by ours on the same database as documented', { timeout: 300_000 }, async (t) => {
  // Ours on mongoose 9 over the database of theirs (its indexes made by mongoose 6: not
  // asked for again, see the upgrade test).
  const connection = await openOn(mongoose9, run.env.uri, sides.theirs.connection.db.databaseName, { autoIndex: false });
  const seen = { fraction: 0, refused: 0 };
  try {
    await fc.assert(
      fc.asyncProperty(
        switchOptionsArb,
        fc.array(theirsStepArb, { maxLength: 8 }),
        fc.option(fraction, { nil: undefined, freq: 2 }),
        fc.array(oursStepArb, { minLength: 1, maxLength: 5 }),
        async (options, before, onTop, after) => {
          const { field } = options;
          const by = Number(options.incrementBy);
          const name = `Switch${made++}`;
          const T = await modelOf(sides.theirs, name, options);
          for (const [i, s] of before.entries()) {
            if (s.op === 'given' && by < 0 && s.fraction === 0) continue;
            const value = s.op === 'given' ? s.whole + s.fraction : undefined;
            await within('theirs', s, step(T, field, s.op === 'given' ? { op: 'given', value } : s, i));
          }
          // Half of the time a fraction given above the counter last, so that theirs leaves one.
          if (onTop !== undefined) {
            const { count } = await counterOf(sides.theirs.connection, name, field);
            await within('theirs', { op: 'on top' }, step(T, field, { op: 'given', value: Math.floor(count) + 1 + onTop }, before.length));
          }
          const left = (await counterOf(sides.theirs.connection, name, field)).count;
          const theirsGave = (await T.collection.find().toArray()).map((d) => d[field]);

          const O = await modelOf({ mongoose: mongoose9, plugin: ours, connection }, name, options);
          const got = [];
          for (const [k, s] of after.entries()) {
            const i = 100 + k;
            let result;
            try {
              if (s.op === 'insertMany') result = (await O.insertMany(Array.from({ length: s.n }, (_, j) => ({ tag: i * 10 + j })))).map((d) => d[field]);
              else if (s.op === 'create') result = (await O.create(Array.from({ length: s.n }, (_, j) => ({ tag: i * 10 + j })))).map((d) => d[field]);
              else if (s.op === 'next') result = await (s.method ? new O().nextCount() : O.nextCount());
              else result = (await new O({ tag: i }).save())[field];
            } catch (error) {
              result = `refused: ${error.code}`;
            }
            got.push(result);
          }

          // The oracle, from the docs.
          const whole = Number.isInteger(left);
          if (!whole) seen.fraction++;
          const expected = [];
          if (by < 0 && !whole) {
            seen.refused++;
            // Refused at every number; what nextCount says of such a counter is not documented.
            for (const [k, s] of after.entries()) expected.push(s.op === 'next' ? got[k] : 'refused: INVALID_COUNTER');
            assert.deepEqual(got, expected);
            assert.equal((await counterOf(sides.theirs.connection, name, field)).count, left, 'the counter as theirs left it');
            assert.equal(await T.countDocuments(), theirsGave.length, 'nothing written');
            return;
          }
          let count = whole ? left : Math.floor(left) + 1;
          const take = () => (count += by);
          for (const s of after) {
            if (s.op === 'next') expected.push(count + by);
            else if (s.op === 'save') expected.push(take());
            else expected.push(Array.from({ length: s.n }, take));
          }
          assert.deepEqual(got, expected);
          const oursGave = expected.filter((_, k) => after[k].op !== 'next').flat();
          if (by > 0)
            for (const n of oursGave)
              assert.ok(
                theirsGave.every((m) => n > m),
                `${n}: not above every number theirs gave (${theirsGave})`,
              );
          const stored = (await T.collection.find().toArray()).map((d) => d[field]);
          assert.equal(new Set(stored).size, stored.length, `a number twice: ${stored}`);
          assert.deepEqual(stored.length, theirsGave.length + oursGave.length);
          if (oursGave.length) assert.equal((await counterOf(sides.theirs.connection, name, field)).count, count);
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
    t.diagnostic(`counters theirs left fractional: ${seen.fraction} of ${RUNS}, descending ones refused: ${seen.refused}`);
  } finally {
    await connection.close();
  }
});

test('a save refused for its number (a document holds it): theirs fails on it at every retry, ours takes the next', { timeout: 60_000 }, async () => {
  const name = `Taken${made++}`;
  const got = {};
  for (const [label, side] of Object.entries(sides)) {
    const Model = await modelOf(side, name, { field: 'no', startAt: 1, incrementBy: 1 });
    // Imported past the counter: a document already holds its next number.
    await Model.collection.insertOne({ no: 1, tag: -1 });
    const doc = new Model({ tag: 0 });
    // Up to three saves of the same document, until one goes through.
    const tries = [];
    for (let i = 0; i < 3; i++) {
      const saved = await outcome(async () => (await doc.save()).no);
      tries.push(saved === 'duplicate' ? `duplicate (no: ${doc.no})` : saved);
      if (saved !== 'duplicate') break;
    }
    got[label] = { tries, counter: (await counterOf(side.connection, name, 'no')).count };
  }
  const expectedOfOurs = { tries: ['duplicate (no: undefined)', 2], counter: 2 };
  assert.deepEqual(got, { theirs: { tries: ['duplicate (no: 1)', 'duplicate (no: 1)', 'duplicate (no: 1)'], counter: 1 }, ours9: expectedOfOurs, ours8: expectedOfOurs });
});
