// The mongoose plugin against an oracle (fast-check): random schemas and random histories
// of operations, run through mongodb-sequence/mongoose (on mongoose 8 and on mongoose 9) and
// through mongoose-sequence 6.0.1 on mongoose 8, each in its own database; after every
// operation the numbers stored in the documents and the counter documents must agree.
//
// What mongoose-sequence supports (save, create, counterReset, setNext) runs through it as
// the same calls; what it does not (insertMany, bulkWrite, upserts, a spread create) runs
// as the same documents saved one by one in array order. `save` and `create` (which is
// save) number every new document as mongoose-sequence does, a number the caller set
// included: there the same call is the oracle. Two rules of this plugin that
// mongoose-sequence lacks are applied to the oracle side by hand: a document whose number
// the caller set, given to insertMany, bulkWrite or an upsert, is inserted as it is (no
// number taken), and syncCounterToMax moves each counter to the largest (ascending) or
// smallest (descending) number of its documents with an atomic $max / $min on the counter
// document.
import Module, { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import fc from 'fast-check';

const require = createRequire(import.meta.url);
const mongoose9 = require('mongoose');
const mongoose8 = require('mongoose-v8');
const AutoIncrementFactory = require('../../mongoose.js');

const { syncCounterToMax } = AutoIncrementFactory;

/**
 * mongoose-sequence loaded on mongoose 8: its `require('mongoose')` (for its counter
 * schema) is answered with the `mongoose-v8` alias, so its counter model belongs to the
 * same mongoose as the connection it is given. It does not run on mongoose 9.
 */
export function loadMongooseSequenceOn8() {
  const directory = dirname(require.resolve('mongoose-sequence/package.json')) + sep;
  const original = Module._resolveFilename;
  Module._resolveFilename = function resolveForMongooseSequence(request, parent, ...rest) {
    if (request === 'mongoose' && parent && typeof parent.filename === 'string' && parent.filename.startsWith(directory)) {
      return original.call(this, 'mongoose-v8', parent, ...rest);
    }
    return original.call(this, request, parent, ...rest);
  };
  try {
    const factory = require('mongoose-sequence');
    const mongooseOfIt = require.cache[require.resolve('mongoose-sequence/lib/sequence.js')].children.find((m) => m.exports === mongoose8);
    if (!mongooseOfIt) throw new Error('mongoose-sequence was loaded before, on another mongoose');
    return factory;
  } finally {
    Module._resolveFilename = original;
  }
}

// Reference fields, by kind, and the two values each can take: typed, and as a value
// mongoose must cast (a string for an ObjectId, a Number, a Date).
const OIDS = ['64b7f0aa00000000000000a1', '64b7f0aa00000000000000b2'];
const REFS = {
  s: { path: 's', typed: () => ['a', 'b'], cast: () => ['a', 'b'] },
  n: { path: 'n', typed: () => [1, 2], cast: () => ['1', '2'] },
  o: { path: 'o', typed: (m) => OIDS.map((h) => new m.Types.ObjectId(h)), cast: () => [...OIDS] },
  // Two dates within one second: distinct counters.
  d: { path: 'd', typed: () => [new Date(1000), new Date(1500)], cast: () => [new Date(1000).toISOString(), new Date(1500).toISOString()] },
  x: { path: 'x', typed: () => [{ k: 1 }, { k: 2 }], cast: () => [{ k: 1 }, { k: 2 }] },
  y: { path: 'meta.y', typed: () => [2025, 2026], cast: () => ['2025', '2026'] },
};
const KINDS = Object.keys(REFS);
const INC_FIELDS = ['no', 'no2'];

const instance = fc.record({
  refs: fc.subarray(KINDS, { maxLength: 2 }),
  start: fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: -5, max: 20 })),
  // 0 is refused by this plugin (checked, then the history is skipped).
  step: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 24, arbitrary: fc.constantFrom(1, 1, 2, 5, -1, -3) }),
});
const schemaArb = fc.record({ incField: fc.constantFrom('_id', 'no', 'c.no'), first: instance, second: fc.option(instance, { nil: null, freq: 2 }) });
const valuesArb = fc.array(fc.constantFrom(0, 1, 1, 0, null), { minLength: KINDS.length, maxLength: KINDS.length });
const docArb = fc.record({ values: valuesArb, cast: fc.boolean(), explicit: fc.integer({ min: 0, max: 9 }).map((x) => x === 0) });
const docsArb = (min, max) => fc.array(docArb, { minLength: min, maxLength: max });
const opArb = fc.oneof(
  { weight: 3, arbitrary: docArb.map((d) => ({ op: 'save', docs: [d] })) },
  { weight: 2, arbitrary: docArb.map((d) => ({ op: 'createOne', docs: [d] })) },
  { weight: 2, arbitrary: docsArb(1, 4).map((docs) => ({ op: 'createArray', docs })) },
  { weight: 1, arbitrary: docsArb(2, 3).map((docs) => ({ op: 'createSpread', docs })) },
  { weight: 2, arbitrary: docsArb(1, 4).map((docs) => ({ op: 'insertMany', docs })) },
  { weight: 2, arbitrary: docsArb(1, 3).map((docs) => ({ op: 'bulkWrite', docs })) },
  {
    weight: 2,
    arbitrary: fc
      .record({
        doc: docArb,
        how: fc.constantFrom('updateOne', 'findOneAndUpdate', 'updateMany'),
        places: fc.array(fc.constantFrom('filter', 'eq', 'set', 'setOnInsert'), { minLength: KINDS.length, maxLength: KINDS.length }),
      })
      .map(({ doc, how, places }) => ({ op: 'upsert', docs: [doc], how, places })),
  },
  { weight: 1, arbitrary: fc.record({ inst: fc.nat(1), values: fc.option(valuesArb, { nil: null }) }).map((r) => ({ op: 'reset', ...r })) },
  { weight: 1, arbitrary: fc.record({ inst: fc.nat(1), pick: fc.nat(1000) }).map((r) => ({ op: 'setNext', ...r })) },
  { weight: 1, arbitrary: fc.record({ inst: fc.nat(1) }).map((r) => ({ op: 'sync', ...r })) },
);
/** A schema and a history of operations on it. */
export const historyArb = fc.record({ schema: schemaArb, ops: fc.array(opArb, { minLength: 1, maxLength: 14 }) });

/** The plugin instances of a schema spec: `[{ field, refs, start, step }]`. */
function instancesOf(spec) {
  // A unique _id cannot take numbers from one counter per reference value.
  const list = [{ ...spec.first, field: spec.incField, refs: spec.incField === '_id' ? [] : spec.first.refs }];
  if (spec.second) list.push({ ...spec.second, field: INC_FIELDS[spec.incField === 'no' ? 1 : 0] });
  return list;
}

/**
 * The concrete operations of a history for one mongoose (its ObjectId class): documents as
 * plain objects with a unique `tag`, explicit numbers where the history sets them.
 */
function materialise(history, mongoose) {
  const instances = instancesOf(history.schema);
  const kinds = [...new Set(instances.flatMap((i) => i.refs))];
  let tag = 0;
  let explicitCount = 0;
  const plain = (doc) => {
    const object = { tag: tag++ };
    kinds.forEach((kind) => {
      const index = doc.values[KINDS.indexOf(kind)];
      if (index === null) return;
      const value = REFS[kind][doc.cast ? 'cast' : 'typed'](mongoose)[index];
      if (kind === 'y') object.meta = { y: value };
      else object[kind] = value;
    });
    if (doc.explicit) {
      explicitCount += 1;
      // Far from anything the counters reach in one history, one per document.
      // Given as a string where the document's values need casting.
      for (const inst of instances) {
        const number = Math.sign(inst.step || 1) * 10_000 * explicitCount;
        setPath(object, inst.field, doc.cast ? String(number) : number);
      }
    }
    return object;
  };
  return history.ops.map((op) => {
    const index = Math.min(op.inst ?? 0, instances.length - 1);
    const inst = instances[index];
    switch (op.op) {
      case 'reset': {
        if (op.values === null) return { op: 'reset', index };
        const reference = {};
        inst.refs.forEach((kind) => {
          const index = op.values[KINDS.indexOf(kind)];
          const value = index === null ? null : REFS[kind].typed(mongoose)[index];
          if (kind === 'y') reference.meta = { y: value };
          else reference[kind] = value;
        });
        return { op: 'reset', index, reference };
      }
      case 'setNext':
      case 'sync':
        return { op: op.op, index, pick: op.pick };
      case 'upsert': {
        const doc = plain(op.docs[0]);
        const filter = { tag: doc.tag };
        const $set = {};
        const $setOnInsert = {};
        const flat = { ...doc };
        for (const parent of ['meta', 'c']) {
          if (!flat[parent]) continue;
          for (const [key, value] of Object.entries(flat[parent])) flat[`${parent}.${key}`] = value;
          delete flat[parent];
        }
        for (const [key, value] of Object.entries(flat)) {
          if (key === 'tag') continue;
          if (instances.some((i) => i.field === key)) {
            $set[key] = value;
            continue;
          }
          const place = op.places[KINDS.indexOf(key === 'meta.y' ? 'y' : key)];
          if (place === 'filter') filter[key] = value;
          else if (place === 'eq') filter[key] = { $eq: value };
          else if (place === 'set') $set[key] = value;
          else $setOnInsert[key] = value;
        }
        const update = {};
        if (Object.keys($set).length) update.$set = $set;
        if (Object.keys($setOnInsert).length) update.$setOnInsert = $setOnInsert;
        if (!Object.keys(update).length) update.$set = { touched: true };
        return { op: 'upsert', how: op.how, filter, update, docs: [doc] };
      }
      default:
        return { op: op.op, docs: op.docs.map(plain) };
    }
  });
}

/** Sets `path` (dotted) of a plain object. */
function setPath(object, path, value) {
  const keys = path.split('.');
  let target = object;
  for (const key of keys.slice(0, -1)) target = target[key] ??= {};
  target[keys.at(-1)] = value;
}

/** Whether `doc` carries the caller's own numbers (`explicit` in the history). */
function isExplicit(doc, instances) {
  return instances.some((i) => resolvePath(i.field, doc) !== undefined);
}

/** The fields of the differential schema (every reference kind, the number fields). */
function schemaOf(mongoose, spec) {
  const { Mixed, ObjectId } = mongoose.Schema.Types;
  // A nested inc_field ('c.no') is added by the plugin, as a missing inc_field is.
  const definition = { tag: Number, s: String, n: Number, o: ObjectId, d: Date, x: Mixed, meta: { y: Number }, touched: Boolean, no: Number, no2: Number };
  if (spec.incField === '_id') definition._id = Number;
  return new mongoose.Schema(definition);
}

function pluginOptions(inst, id) {
  const options = { id, inc_field: inst.field, start_seq: inst.start, inc_amount: inst.step };
  if (inst.refs.length) options.reference_fields = inst.refs.map((k) => REFS[k].path);
  return options;
}

/** Runs one concrete operation on a side (`ours` or mongoose-sequence). */
async function apply(side, Model, ids, instances, op) {
  const explicitInsert = (doc) => Model.insertMany([doc]);
  // One document of a batch writer, on the oracle side: the caller's number kept.
  const saveOne = (doc) => (isExplicit(doc, instances) && side.oracle ? explicitInsert(doc) : new Model(doc).save());
  switch (op.op) {
    case 'save':
      // Both sides number it, explicit numbers overwritten: the same call on both.
      return new Model(op.docs[0]).save();
    case 'createOne':
      return Model.create(op.docs[0]);
    case 'createArray':
      return side.oracle ? Model.create(op.docs, { ordered: true }) : Model.create(op.docs);
    case 'createSpread':
      if (!side.oracle) return Model.create(...op.docs);
      // mongoose 8 saves a spread create's documents in parallel: one by one here.
      for (const doc of op.docs) await new Model(doc).save();
      return undefined;
    case 'insertMany':
    case 'bulkWrite':
      if (side.oracle) {
        for (const doc of op.docs) await saveOne(doc);
        return undefined;
      }
      if (op.op === 'insertMany') return Model.insertMany(op.docs);
      return Model.bulkWrite(op.docs.map((document) => ({ insertOne: { document } })));
    case 'upsert':
      if (side.oracle) return saveOne(op.docs[0]);
      return Model[op.how](op.filter, op.update, { upsert: true });
    case 'reset': {
      const id = ids[op.index];
      if (side.oracle) {
        await new Promise((resolve, reject) => {
          const done = (error) => (error ? reject(error) : resolve());
          if (op.reference) Model.counterReset(id, op.reference, done);
          else Model.counterReset(id, done);
        });
      } else if (op.reference) {
        await Model.counterReset(id, op.reference);
      } else {
        await Model.counterReset(id);
      }
      // The numbers come again after a reset: a unique _id needs its documents gone.
      if (instances[0].field === '_id') await Model.deleteMany({});
      return undefined;
    }
    case 'setNext': {
      if (instances[op.index].field === '_id') return undefined; // an _id cannot change
      const id = ids[op.index];
      const tags = (await Model.find({}, { tag: 1 }).sort({ tag: 1 }).lean()).map((d) => d.tag);
      if (!tags.length) return undefined;
      const doc = await Model.findOne({ tag: tags[op.pick % tags.length] });
      if (side.oracle) return new Promise((resolve, reject) => doc.setNext(id, (error, saved) => (error ? reject(error) : resolve(saved))));
      return doc.setNext(id);
    }
    case 'sync': {
      const id = ids[op.index];
      if (!side.oracle) return syncCounterToMax(Model, id);
      return oracleSync(side, Model, id, instances[op.index]);
    }
    default:
      throw new Error(`unknown operation ${op.op}`);
  }
}

const resolvePath = (path, object) => path.split('.').reduce((v, k) => (v == null ? undefined : v[k]), object);

/**
 * syncCounterToMax by hand on the oracle side: per reference value, the largest (or,
 * descending, smallest) number among the documents, applied to the counter document with
 * $max / $min (an upsert when the counter does not exist yet).
 */
async function oracleSync(side, Model, id, inst) {
  const docs = await Model.find({}).lean();
  const extremes = new Map();
  for (const doc of docs) {
    const value = resolvePath(inst.field, doc);
    if (typeof value !== 'number') continue;
    let reference = null;
    if (inst.refs.length) {
      reference = {};
      for (const path of inst.refs.map((k) => REFS[k].path).sort()) reference[path] = resolvePath(path, doc) ?? null;
    }
    const key = side.EJSON.stringify(reference, { relaxed: false });
    const kept = extremes.get(key);
    const better = !kept || (inst.step > 0 ? value > kept.value : value < kept.value);
    if (better) extremes.set(key, { reference, value });
  }
  const counters = side.connection.db.collection('counters');
  for (const { reference, value } of extremes.values()) {
    await counters.updateOne({ id, reference_value: reference }, { [inst.step > 0 ? '$max' : '$min']: { seq: value } }, { upsert: true });
  }
}

/** What must agree: every document's numbers (by tag), every counter of the history. */
async function snapshot(side, Model, ids, instances) {
  const docs = (await Model.find({}).sort({ tag: 1 }).lean()).map((d) => [d.tag, ...instances.map((i) => resolvePath(i.field, d) ?? null)]);
  const counters = (await side.connection.db.collection('counters').find({ id: { $in: ids } }).toArray())
    .map((c) => [ids.indexOf(c.id), side.EJSON.stringify(c.reference_value, { relaxed: true }), Number(c.seq)])
    .sort((a, b) => (a[0] - b[0]) || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return { docs, counters };
}

/**
 * A runner over three connections (this plugin on mongoose 8 and 9, mongoose-sequence on
 * mongoose 8) to `uri`, in databases `${dbName}_ours8`, `_ours9`, `_ms8`.
 * `run(history)` checks one history; `close()` drops the databases.
 */
export async function differentialRunner({ uri, dbName }) {
  const MongooseSequence = loadMongooseSequenceOn8();
  const sides = [];
  for (const [name, mongoose, oracle] of [
    ['ms8', mongoose8, true],
    ['ours8', mongoose8, false],
    ['ours9', mongoose9, false],
  ]) {
    const connection = mongoose.createConnection();
    await connection.openUri(uri, { dbName: `${dbName}_${name}`, serverSelectionTimeoutMS: 10_000 });
    // Made before anything writes to it (SecantusDB 0.7.0b3 can livelock when a
    // collection is created while another connection inserts into it).
    await connection.createCollection('counters');
    const plugin = oracle ? MongooseSequence(connection) : AutoIncrementFactory(connection);
    sides.push({ name, mongoose, oracle, connection, plugin, EJSON: mongoose.mongo.BSON.EJSON });
  }
  let runs = 0;
  let skipped = 0;

  async function run(history) {
    runs += 1;
    const instances = instancesOf(history.schema);
    if (instances.some((i) => i.step === 0)) {
      // mongoose-sequence accepts inc_amount 0 (every document the same number); this
      // plugin refuses it when the plugin is registered.
      const schema = schemaOf(mongoose9, history.schema);
      let error;
      try {
        schema.plugin(sides[1].plugin, pluginOptions({ ...instances.find((i) => i.step === 0) }, `zero_${runs}`));
      } catch (e) {
        error = e;
      }
      if (!error || error.code !== 'INVALID_ARGUMENT') throw new Error(`inc_amount 0 was not refused: ${error}`);
      skipped += 1;
      return;
    }
    const models = [];
    try {
      for (const side of sides) {
        const ids = instances.map((_, i) => `${side.name}_${runs}_${i}`);
        const schema = schemaOf(side.mongoose, history.schema);
        instances.forEach((inst, i) => schema.plugin(side.plugin, pluginOptions(inst, ids[i])));
        const Model = side.connection.model(`Diff${runs}`, schema);
        await Model.init();
        models.push({ side, Model, ids, ops: materialise(history, side.mongoose) });
      }
      const [oracle, ...ours] = models;
      for (let step = 0; step < history.ops.length; step += 1) {
        for (const m of models) await apply(m.side, m.Model, m.ids, instances, m.ops[step]);
        const expected = await snapshot(oracle.side, oracle.Model, oracle.ids, instances);
        for (const m of ours) {
          const got = await snapshot(m.side, m.Model, m.ids, instances);
          if (JSON.stringify(got) !== JSON.stringify(expected)) {
            throw new Error(
              `${m.side.name} differs from mongoose-sequence after operation ${step} (${history.ops[step].op}):\n` +
                `instances ${JSON.stringify(instances)}\nexpected ${JSON.stringify(expected)}\ngot      ${JSON.stringify(got)}`,
            );
          }
        }
      }
    } finally {
      for (const { side, Model, ids } of models) {
        await Model.collection.drop().catch(() => {});
        await side.connection.db.collection('counters').deleteMany({ id: { $in: ids } });
        side.connection.deleteModel(Model.modelName);
        for (const id of ids) if (side.oracle && side.connection.models[`Counter_${id}`]) side.connection.deleteModel(`Counter_${id}`);
      }
    }
  }

  return {
    run,
    stats: () => ({ runs, skipped }),
    async close() {
      for (const side of sides) {
        await side.connection.dropDatabase().catch(() => {});
        await side.connection.close();
      }
    },
  };
}

/**
 * Checks `numRuns` histories per seed of `seeds` against the oracle; rejects with
 * fast-check's report (seed, path, counterexample) on the first difference.
 */
export async function checkPluginDifferential({ uri, dbName, seeds, numRuns, shrink = false, log = () => {} }) {
  const runner = await differentialRunner({ uri, dbName });
  try {
    for (const seed of seeds) {
      const started = Date.now();
      await fc.assert(fc.asyncProperty(historyArb, (h) => runner.run(h)), { seed, numRuns, endOnFailure: !shrink });
      log(`plugin differential seed ${seed}: ${numRuns} histories in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    return runner.stats();
  } finally {
    await runner.close();
  }
}
