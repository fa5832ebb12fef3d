// The mongoose plugin against an oracle (fast-check): random schemas and random histories
// of operations, run through mongodb-sequence/mongoose (on mongoose 8 and on mongoose 9) and
// through mongoose-sequence 6.0.1 on mongoose 8, each in its own database; after every
// operation the numbers stored in the documents and the counter documents must agree.
//
// Schemas: reference fields of every kind, `inc_field` `_id`, another or nested, one or two
// plugins, and optionally a display getter, a setter and `immutable` on `inc_field`, a
// getter and a setter on the String reference field, the plugins on the base of a
// discriminator (operations then go through the base or the child), or on a subdocument
// schema (`items: [item]`, the parent without a plugin of its own).
//
// What mongoose-sequence supports (save, create, counterReset, setNext) runs through it as
// the same calls; what it does not (insertMany, bulkWrite inserts and upserts, every upsert
// and replace, a spread create) runs as the same documents saved one by one in array
// order. `save` and `create` (which is save) number every new document as
// mongoose-sequence does, a number the caller set included: there the same call is the
// oracle. The rules of this plugin that mongoose-sequence lacks are applied to the oracle
// side by hand:
// - a document whose number the caller set, given to insertMany, bulkWrite or an upsert,
//   is inserted as it is (no number taken);
// - syncCounterToMax moves each counter to the largest (ascending) or smallest
//   (descending) number of its documents with an atomic $max / $min on the counter
//   document, the counter chosen as save chooses it (reference values through getters);
// - counterReset casts reference values with the model's schema (mongoose-sequence is
//   given them as the counter stores them);
// - setNext on a saved document whose inc_field cannot change (`_id`, immutable) takes
//   nothing (mongoose-sequence spends a number there): this plugin must reject it with
//   INVALID_ARGUMENT and change nothing, as it must every aggregation-pipeline upsert, a
//   replace upsert that does not give its number, and an upsert writing a reference field
//   with an operator other than $set / $setOnInsert ($max, $min);
// - an upsert that MATCHES existing documents (updateOne, findOneAndUpdate, updateMany over
//   every document) spends one number of each counter without writing it (reserved before
//   the server decides): the oracle runs the same update, then saves and deletes a
//   document with no reference values (one number spent per counter); a replace that
//   matches, with the document's own numbers given, runs as the same call on both sides;
// - on a subdocument schema, the parent's insertMany, bulkWrite and upserts number no
//   subdocument: the oracle inserts those documents with insertMany, which
//   mongoose-sequence does not number either.
import Module, { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import fc from 'fast-check';

const require = createRequire(import.meta.url);
const mongoose9 = require('mongoose');
const mongoose8 = require('mongoose-v8');
const AutoIncrementFactory = require('../../mongoose.js');

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
/** Upserts through a query, by the model static that runs them ('pipeline': updateOne with an aggregation pipeline). */
const UPSERTS = ['updateOne', 'findOneAndUpdate', 'updateMany', 'replaceOne', 'findOneAndReplace', 'pipeline'];
/** The writes of a bulkWrite. */
const BULK_WRITES = ['insertOne', 'insertOne', 'updateOne', 'updateMany', 'replaceOne', 'pipeline'];

const instance = fc.record({
  refs: fc.subarray(KINDS, { maxLength: 2 }),
  start: fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: -5, max: 20 })),
  // 0 is refused by this plugin (checked, then the history is skipped).
  step: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 24, arbitrary: fc.constantFrom(1, 1, 2, 5, -1, -3) }),
});
const schemaArb = fc.record({
  incField: fc.constantFrom('_id', 'no', 'c.no'),
  first: instance,
  second: fc.option(instance, { nil: null, freq: 2 }),
  shape: fc.constantFrom('plain', 'plain', 'discriminator', 'embedded'),
  // On inc_field (not `_id`): a display getter, a setter that changes the value, immutable.
  getter: fc.boolean(),
  setter: fc.boolean(),
  immutable: fc.boolean(),
  // A getter and a setter on the String reference field.
  refAccessors: fc.boolean(),
});
const valuesArb = fc.array(fc.constantFrom(0, 1, 1, 0, null), { minLength: KINDS.length, maxLength: KINDS.length });
const docArb = fc.record({ values: valuesArb, cast: fc.boolean(), explicit: fc.integer({ min: 0, max: 9 }).map((x) => x === 0), items: fc.nat(2) });
const docsArb = (min, max) => fc.array(docArb, { minLength: min, maxLength: max });
const placesArb = fc.array(fc.constantFrom('filter', 'eq', 'set', 'setOnInsert'), { minLength: KINDS.length, maxLength: KINDS.length });
const onChild = fc.boolean();
const opArb = fc.oneof(
  { weight: 3, arbitrary: fc.record({ docs: docsArb(1, 1), onChild }).map((r) => ({ op: 'save', ...r })) },
  { weight: 2, arbitrary: fc.record({ docs: docsArb(1, 1), onChild }).map((r) => ({ op: 'createOne', ...r })) },
  { weight: 2, arbitrary: fc.record({ docs: docsArb(1, 4), onChild }).map((r) => ({ op: 'createArray', ...r })) },
  { weight: 1, arbitrary: fc.record({ docs: docsArb(2, 3), onChild }).map((r) => ({ op: 'createSpread', ...r })) },
  { weight: 2, arbitrary: fc.record({ docs: docsArb(1, 4), onChild }).map((r) => ({ op: 'insertMany', ...r })) },
  {
    weight: 2,
    arbitrary: fc
      .record({ writes: fc.array(fc.record({ doc: docArb, kind: fc.constantFrom(...BULK_WRITES), places: placesArb }), { minLength: 1, maxLength: 3 }), onChild })
      .map(({ writes, onChild: child }) => ({
        op: 'bulkWrite',
        docs: writes.map((w) => w.doc),
        kinds: writes.map((w) => w.kind),
        places: writes.map((w) => w.places),
        onChild: child,
      })),
  },
  {
    weight: 3,
    arbitrary: fc
      .record({ doc: docArb, how: fc.constantFrom(...UPSERTS), places: placesArb, onChild })
      .map(({ doc, how, places, onChild: child }) => ({ op: 'upsert', docs: [doc], how, places, onChild: child })),
  },
  // An upsert or replace whose filter matches existing documents (updateMany: all of them).
  { weight: 2, arbitrary: fc.record({ how: fc.constantFrom(...UPSERTS), explicit: fc.boolean(), pick: fc.nat(1000), onChild }).map((r) => ({ op: 'match', ...r })) },
  // An upsert writing a reference value with another operator than $set / $setOnInsert.
  { weight: 1, arbitrary: fc.record({ doc: docArb, operator: fc.constantFrom('$max', '$min'), ref: fc.nat(KINDS.length - 1), onChild }).map((r) => ({ op: 'refop', ...r })) },
  { weight: 1, arbitrary: fc.record({ inst: fc.nat(1), values: fc.option(valuesArb, { nil: null }), onChild }).map((r) => ({ op: 'reset', ...r })) },
  { weight: 1, arbitrary: fc.record({ inst: fc.nat(1), pick: fc.nat(1000) }).map((r) => ({ op: 'setNext', ...r })) },
  { weight: 1, arbitrary: fc.record({ inst: fc.nat(1), onChild }).map((r) => ({ op: 'sync', ...r })) },
);
/** A schema and a history of operations on it. */
export const historyArb = fc.record({ schema: schemaArb, ops: fc.array(opArb, { minLength: 1, maxLength: 14 }) });

/**
 * The plugin instances of a schema spec: `[{ field, refs, start, step }]`. On a
 * subdocument schema, one numbering `no`, scoped by the item's String field only (with
 * two, mongoose 9 runs each item's hooks in series and the items in parallel: which item
 * the second counter serves first is a race between them, as between concurrent saves).
 */
function instancesOf(spec) {
  if (spec.shape === 'embedded') return [{ ...spec.first, field: 'no', refs: spec.first.refs.filter((k) => k === 's') }];
  // A unique _id cannot take numbers from one counter per reference value.
  const list = [{ ...spec.first, field: spec.incField, refs: spec.incField === '_id' ? [] : spec.first.refs }];
  if (spec.second) list.push({ ...spec.second, field: INC_FIELDS[spec.incField === 'no' ? 1 : 0] });
  return list;
}

/** Whether the accessors and `immutable` of the schema spec apply to `field`. */
const decorated = (spec, field) => field !== '_id' && (spec.shape === 'embedded' ? field === 'no' : field === spec.incField);

/**
 * The concrete operations of a history for one mongoose (its ObjectId class): documents as
 * plain objects with a unique `tag`, explicit numbers where the history sets them.
 */
function materialise(history, mongoose) {
  const spec = history.schema;
  const instances = instancesOf(spec);
  const embedded = spec.shape === 'embedded';
  const kinds = embedded ? ['s'] : [...new Set(instances.flatMap((i) => i.refs))];
  let tag = 0;
  let explicitCount = 0;
  const plain = (doc, typed = false) => {
    const object = { tag: tag++ };
    const values = {};
    kinds.forEach((kind) => {
      const index = doc.values[KINDS.indexOf(kind)];
      if (index === null) return;
      const value = REFS[kind][doc.cast && !typed ? 'cast' : 'typed'](mongoose)[index];
      values[kind] = value;
      if (kind === 'y') object.meta = { y: value };
      else object[kind] = value;
    });
    const explicit = doc.explicit ? ++explicitCount : 0;
    // Far from anything the counters reach in one history, one per document; given as a
    // string where the document's values need casting.
    const number = (inst, k = 0) => {
      const value = Math.sign(inst.step || 1) * (10_000 * explicit + k);
      return doc.cast && !typed ? String(value) : value;
    };
    if (embedded) {
      object.items = Array.from({ length: doc.items }, (_, k) => {
        const item = { k };
        if (values.s !== undefined) item.s = values.s;
        if (explicit) for (const inst of instances) item[inst.field] = number(inst, k);
        return item;
      });
    } else if (explicit) {
      for (const inst of instances) setPath(object, inst.field, number(inst));
    }
    return object;
  };
  // A pipeline's constants as the schema's setters store them (mongoose applies none there).
  const asStored = (key, value) => {
    if (key === 'items') return value.map((item) => Object.fromEntries(Object.entries(item).map(([k, v]) => [k, asStored(k, v)])));
    if (key === 's' && spec.refAccessors && typeof value === 'string') return value.toUpperCase();
    if (spec.setter && decorated(spec, key) && typeof value === 'number') return value * 10;
    return value;
  };
  const write = (doc, how, places) => {
    const replace = how === 'replaceOne' || how === 'findOneAndReplace';
    // mongoose casts no aggregation pipeline: its values are given typed.
    const object = plain(doc, how === 'pipeline');
    // This plugin refuses a replace that does not give its number (it would renumber a
    // document it matches), and every pipeline upsert; the parent of a subdocument schema
    // has no hooks of it.
    const refused = !embedded && ((replace && !doc.explicit) || how === 'pipeline');
    if (replace) return { how, filter: { tag: object.tag }, update: object, doc: object, refused };
    const filter = { tag: object.tag };
    const $set = {};
    const $setOnInsert = {};
    const flat = { ...object };
    for (const parent of ['meta', 'c']) {
      if (!flat[parent]) continue;
      for (const [key, value] of Object.entries(flat[parent])) flat[`${parent}.${key}`] = value;
      delete flat[parent];
    }
    for (const [key, value] of Object.entries(flat)) {
      if (key === 'tag') continue;
      if (instances.some((i) => i.field === key)) {
        // A pipeline's number by the filter's equality (mongoose casts no pipeline); an
        // update's by $set.
        if (how === 'pipeline') filter[key] = value;
        else $set[key] = value;
        continue;
      }
      const place = key === 'items' ? 'set' : places[KINDS.indexOf(key === 'meta.y' ? 'y' : key)];
      if (place === 'filter') filter[key] = value;
      else if (place === 'eq') filter[key] = { $eq: value };
      else if (how === 'pipeline') $set[key] = asStored(key, value);
      else if (place === 'set') $set[key] = value;
      else $setOnInsert[key] = value;
    }
    if (how === 'pipeline') return { how, filter, update: [{ $set: { touched: true, ...$set } }], doc: object, refused };
    const update = {};
    if (Object.keys($set).length) update.$set = $set;
    if (Object.keys($setOnInsert).length) update.$setOnInsert = $setOnInsert;
    if (!Object.keys(update).length) update.$set = { touched: true };
    return { how, filter, update, doc: object, refused };
  };
  return history.ops.map((op) => {
    const index = Math.min(op.inst ?? 0, instances.length - 1);
    const inst = instances[index];
    const child = spec.shape === 'discriminator' && Boolean(op.onChild);
    switch (op.op) {
      case 'reset': {
        if (op.values === null) return { op: 'reset', index, child };
        const reference = {};
        inst.refs.forEach((kind) => {
          const at = op.values[KINDS.indexOf(kind)];
          const value = at === null ? null : REFS[kind].typed(mongoose)[at];
          if (kind === 'y') reference.meta = { y: value };
          else reference[kind] = value;
        });
        return { op: 'reset', index, reference, child };
      }
      case 'setNext':
      case 'sync':
        return { op: op.op, index, pick: op.pick, child };
      case 'match': {
        // A replacement always gives a saved _id (it cannot change); an update never sets it.
        const replace = op.how === 'replaceOne' || op.how === 'findOneAndReplace';
        const explicit = op.explicit && (replace || !instances.some((i) => i.field === '_id'));
        const unnumbered = !explicit && instances.some((i) => i.field !== '_id');
        return { op: 'match', how: op.how, explicit, pick: op.pick, child, refused: !embedded && (op.how === 'pipeline' || (replace && unnumbered)) };
      }
      case 'refop': {
        const kind = kinds[op.ref % Math.max(kinds.length, 1)];
        // Without a reference field (or on a subdocument schema): nothing to refuse.
        if (embedded || kind === undefined) return { op: 'noop' };
        const object = plain({ ...op.doc, explicit: false });
        const path = REFS[kind].path;
        const value = resolvePath(path, object) ?? REFS[kind].typed(mongoose)[0];
        return { op: 'refop', filter: { tag: object.tag }, update: { [op.operator]: { [path]: value }, $set: { touched: true } }, child };
      }
      case 'upsert': {
        const w = write(op.docs[0], op.how, op.places);
        return { op: 'upsert', writes: [w], child, refused: w.refused };
      }
      case 'bulkWrite': {
        const writes = op.docs.map((doc, i) => (op.kinds[i] === 'insertOne' ? { how: 'insertOne', doc: plain(doc) } : write(doc, op.kinds[i], op.places[i])));
        return { op: 'bulkWrite', writes, child, refused: writes.some((w) => w.refused) };
      }
      default:
        return { op: op.op, docs: op.docs.map((d) => plain(d)), child };
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

const resolvePath = (path, object) => path.split('.').reduce((v, k) => (v == null ? undefined : v[k]), object);

/** Whether `doc` carries the caller's own numbers (`explicit` in the history). */
function isExplicit(doc, instances) {
  return instances.some((i) => resolvePath(i.field, doc) !== undefined || (doc.items ?? []).some((item) => item[i.field] !== undefined));
}

/** The path options of a number field: the spec's accessors and `immutable` where they apply. */
function numberPath(spec, field) {
  if (!decorated(spec, field)) return Number;
  const options = { type: Number };
  if (spec.getter) options.get = (n) => (n == null ? n : `INV-${n}`);
  if (spec.setter) options.set = (n) => (n == null || n === '' ? n : Number(n) * 10);
  if (spec.immutable) options.immutable = true;
  return options;
}

/**
 * The schemas of a spec: `{ root, numbered, child }`. `numbered` is the one the plugins go
 * on: the root, or the item schema of `items` (embedded); `child` the discriminator's.
 */
function schemasOf(mongoose, spec) {
  const { Mixed, ObjectId } = mongoose.Schema.Types;
  const s = spec.refAccessors ? { type: String, get: (v) => (v == null ? v : `<${v}>`), set: (v) => (typeof v === 'string' ? v.toUpperCase() : v) } : String;
  if (spec.shape === 'embedded') {
    const item = new mongoose.Schema({ k: Number, s, no: numberPath(spec, 'no'), no2: Number });
    return { root: new mongoose.Schema({ tag: Number, s: String, touched: Boolean, items: [item] }), numbered: item, child: null };
  }
  const definition = { tag: Number, s, n: Number, o: ObjectId, d: Date, x: Mixed, meta: { y: Number }, touched: Boolean, no: numberPath(spec, 'no'), no2: Number };
  if (spec.incField === '_id') definition._id = Number;
  // A nested inc_field ('c.no') is added by the plugin, as a missing inc_field is, unless decorated.
  if (spec.incField === 'c.no' && (spec.getter || spec.setter || spec.immutable)) definition.c = { no: numberPath(spec, 'c.no') };
  const root = new mongoose.Schema(definition);
  return { root, numbered: root, child: spec.shape === 'discriminator' ? new mongoose.Schema({ extra: String }) : null };
}

function pluginOptions(inst, id) {
  const options = { id, inc_field: inst.field, start_seq: inst.start, inc_amount: inst.step };
  if (inst.refs.length) options.reference_fields = inst.refs.map((k) => REFS[k].path);
  return options;
}

/** `work`, which this plugin must refuse with `INVALID_ARGUMENT` (nothing done). */
async function refusal(work) {
  try {
    await work;
  } catch (error) {
    if (error && error.code === 'INVALID_ARGUMENT') return;
    throw error;
  }
  throw new Error('expected a refusal with INVALID_ARGUMENT');
}

/** The bulkWrite operation (or query) of a materialised write. */
function bulkOp(w) {
  if (w.how === 'insertOne') return { insertOne: { document: w.doc } };
  if (w.how === 'replaceOne') return { replaceOne: { filter: w.filter, replacement: w.update, upsert: true } };
  return { [w.how === 'pipeline' ? 'updateOne' : w.how]: { filter: w.filter, update: w.update, upsert: true } };
}

/**
 * An upsert or replace through `Model` whose filter matches existing documents: `{ tag }`
 * of one picked by `op.pick` (updateMany: every document). A replacement gives the
 * document's own numbers with `op.explicit`; an update sets `touched`, or with
 * `op.explicit` the numbers the document has. `null` when there is no document yet.
 */
async function matchingWrite(Model, run, op) {
  // Through a discriminator, its own documents (mongoose adds its key to the filter).
  const docs = await Model.find({}).sort({ tag: 1 }).lean();
  if (!docs.length) return null;
  const doc = docs[op.pick % docs.length];
  const filter = op.how === 'updateMany' ? { tag: { $gte: 0 } } : { tag: doc.tag };
  const numbers = {};
  if (op.explicit) for (const inst of run.instances) if (resolvePath(inst.field, doc) !== undefined) setPath(numbers, inst.field, resolvePath(inst.field, doc));
  if (op.how === 'replaceOne' || op.how === 'findOneAndReplace') {
    const replacement = { tag: doc.tag, touched: true, ...numbers };
    if (run.instances.some((i) => i.field === '_id')) replacement._id = doc._id;
    return { filter, update: replacement };
  }
  if (op.how === 'pipeline') return { filter, update: [{ $set: { touched: true } }] };
  const $set = { touched: true };
  if (op.explicit) for (const inst of run.instances) if (resolvePath(inst.field, doc) !== undefined) $set[inst.field] = resolvePath(inst.field, doc);
  return { filter, update: { $set } };
}

/** Runs one concrete operation on a side (`ours` or mongoose-sequence). */
async function apply(side, run, op) {
  const { Base, instances, spec } = run;
  const Model = op.child ? run.Child : Base;
  const embedded = spec.shape === 'embedded';
  const explicitInsert = (doc) => Model.insertMany([doc]);
  // One document of a batch writer, on the oracle side: the caller's number kept; on a
  // subdocument schema, not numbered at all (as by the parent's insertMany).
  const saveOne = (doc) => (embedded || isExplicit(doc, instances) ? explicitInsert(doc) : new Model(doc).save());
  if (side.oracle && embedded && ['save', 'createOne', 'createArray', 'createSpread'].includes(op.op)) {
    // mongoose 8 runs the save hooks of a document's subdocuments in parallel, and
    // mongoose-sequence's first use of a counter is a race (two of them take its first
    // number on SecantusDB): the items are added and saved one at a time, in order.
    for (const doc of op.docs) {
      const parent = new Model({ ...doc, items: doc.items.slice(0, 1) });
      await parent.save();
      for (const item of doc.items.slice(1)) {
        parent.items.push(item);
        await parent.save();
      }
    }
    return undefined;
  }
  switch (op.op) {
    case 'save':
      // Both sides number it, explicit numbers overwritten: the same call on both.
      return new Model(op.docs[0]).save();
    case 'createOne':
      return Model.create(op.docs[0]);
    case 'createArray':
      // The parent of a subdocument schema has mongoose's own create, which saves an
      // unordered array (and a spread) in parallel: ordered there.
      return side.oracle || embedded ? Model.create(op.docs, { ordered: true }) : Model.create(op.docs);
    case 'createSpread':
      if (embedded) return Model.create(op.docs, { ordered: true });
      if (!side.oracle) return Model.create(...op.docs);
      // mongoose 8 saves a spread create's documents in parallel: one by one here.
      for (const doc of op.docs) await new Model(doc).save();
      return undefined;
    case 'insertMany':
      if (!side.oracle) return Model.insertMany(op.docs);
      for (const doc of op.docs) await saveOne(doc);
      return undefined;
    case 'upsert':
    case 'bulkWrite': {
      if (side.oracle) {
        if (op.refused) return undefined;
        for (const w of op.writes) await saveOne(w.doc);
        return undefined;
      }
      const [w] = op.writes;
      let work;
      if (op.op === 'bulkWrite') work = Model.bulkWrite(op.writes.map(bulkOp));
      else if (w.how === 'pipeline') work = Model.updateOne(w.filter, w.update, { upsert: true, updatePipeline: true });
      else work = Model[w.how](w.filter, w.update, { upsert: true });
      return op.refused ? refusal(work) : work;
    }
    case 'noop':
      return undefined;
    case 'refop':
      if (side.oracle) return undefined;
      return refusal(Model.updateOne(op.filter, op.update, { upsert: true }));
    case 'match': {
      const w = await matchingWrite(Model, run, op);
      if (w === null) return undefined;
      const how = op.how === 'pipeline' ? 'updateOne' : op.how;
      const options = op.how === 'pipeline' ? { updatePipeline: true } : {};
      if (op.refused) return side.oracle ? undefined : refusal(Model[how](w.filter, w.update, { ...options, upsert: true }));
      if (!side.oracle) return Model[how](w.filter, w.update, { ...options, upsert: true });
      await Model[how](w.filter, w.update, options);
      // This plugin reserved a number of each counter for the insert that did not happen.
      const replace = how === 'replaceOne' || how === 'findOneAndReplace';
      if (!embedded && !replace && !op.explicit) {
        const spent = await new Model({ tag: -1 }).save();
        await Model.deleteOne({ _id: spent._id });
      }
      return undefined;
    }
    case 'reset': {
      if (embedded) return undefined; // the parent has no counterReset of the items' counter
      const id = run.ids[op.index];
      if (side.oracle) {
        // Given as the counter stores them (cast, read through the getters: this plugin's rule),
        // nested, as mongoose-sequence resolves dotted paths in them.
        let reference;
        if (op.reference) {
          reference = {};
          for (const [path, value] of Object.entries(storedReference(instances[op.index], new Model(op.reference)) ?? {})) setPath(reference, path, value);
        }
        await new Promise((resolve, reject) => {
          const done = (error) => (error ? reject(error) : resolve());
          if (reference) Model.counterReset(id, reference, done);
          else Model.counterReset(id, done);
        });
      } else if (op.reference) {
        await Model.counterReset(id, op.reference);
      } else {
        await Model.counterReset(id);
      }
      // The numbers come again after a reset: a unique _id needs its documents gone.
      if (instances[0].field === '_id') await Base.deleteMany({});
      return undefined;
    }
    case 'setNext': {
      if (embedded) return undefined; // setNext of an item saves the item alone
      const inst = instances[op.index];
      const id = run.ids[op.index];
      const tags = (await Base.find({}, { tag: 1 }).sort({ tag: 1 }).lean()).map((d) => d.tag);
      if (!tags.length) return undefined;
      const doc = await Base.findOne({ tag: tags[op.pick % tags.length] });
      // A saved _id or an immutable inc_field cannot change: refused, nothing spent.
      if (inst.field === '_id' || (spec.immutable && decorated(spec, inst.field))) return side.oracle ? undefined : refusal(doc.setNext(id));
      if (side.oracle) return new Promise((resolve, reject) => doc.setNext(id, (error, saved) => (error ? reject(error) : resolve(saved))));
      return doc.setNext(id);
    }
    case 'sync': {
      if (embedded) return undefined; // the parent model has no counter
      const id = run.ids[op.index];
      if (!side.oracle) return side.factory.syncCounterToMax(Model, id);
      return oracleSync(side, Base, id, instances[op.index]);
    }
    default:
      throw new Error(`unknown operation ${op.op}`);
  }
}

/**
 * The `reference_value` of the document `doc` for `inst`, as a counter stores it: read
 * through the schema's getters, by sorted path (a dotted one as one key, `'meta.y'`).
 */
function storedReference(inst, doc) {
  if (!inst.refs.length) return null;
  return Object.fromEntries(
    inst.refs
      .map((k) => REFS[k].path)
      .sort()
      .map((path) => [path, doc.get(path) ?? null]),
  );
}

/**
 * syncCounterToMax by hand on the oracle side: per reference value (as save keys it), the
 * largest (or, descending, smallest) number among the documents, applied to the counter
 * document with $max / $min (an upsert when the counter does not exist yet).
 */
async function oracleSync(side, Base, id, inst) {
  const docs = await Base.find({}).lean();
  const extremes = new Map();
  for (const doc of docs) {
    const value = resolvePath(inst.field, doc);
    if (typeof value !== 'number') continue;
    const reference = storedReference(inst, Base.hydrate(doc));
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

/** What must agree: every document's numbers (by tag; an item's, in order), every counter of the history. */
async function snapshot(side, run) {
  const { Base, ids, instances } = run;
  const numbersOf = (d) => instances.map((i) => resolvePath(i.field, d) ?? null);
  const docs = (await Base.find({}).sort({ tag: 1 }).lean()).map((d) => [d.tag, ...(d.items ? d.items.flatMap(numbersOf) : numbersOf(d))]);
  const counters = (
    await side.connection.db
      .collection('counters')
      .find({ id: { $in: ids } })
      .toArray()
  )
    .map((c) => [ids.indexOf(c.id), side.EJSON.stringify(c.reference_value, { relaxed: true }), Number(c.seq)])
    .sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return { docs, counters };
}

/**
 * A runner over three connections (this plugin on mongoose 8 and 9, mongoose-sequence on
 * mongoose 8) to `uri`, in databases `${dbName}_ours8`, `_ours9`, `_ms8`. With
 * `reference`, another build of this plugin's factory (an older mongoose.js), that build
 * on mongoose 8 and 9 is the oracle instead (`_old8`, `_old9`): every history runs the
 * same calls on all four sides (scripts/plugin-old-new.mjs).
 * `run(history)` checks one history; `close()` drops the databases.
 */
export async function differentialRunner({ uri, dbName, reference }) {
  const MongooseSequence = reference ? null : loadMongooseSequenceOn8();
  const sides = [];
  const kinds = reference
    ? [
        ['old8', mongoose8, false, reference],
        ['old9', mongoose9, false, reference],
        ['ours8', mongoose8, false],
        ['ours9', mongoose9, false],
      ]
    : [
        ['ms8', mongoose8, true],
        ['ours8', mongoose8, false],
        ['ours9', mongoose9, false],
      ];
  for (const [name, mongoose, oracle, factory = AutoIncrementFactory] of kinds) {
    const connection = mongoose.createConnection();
    await connection.openUri(uri, { dbName: `${dbName}_${name}`, serverSelectionTimeoutMS: 10_000 });
    // Made before anything writes to it (SecantusDB 0.7.0b3 can livelock when a
    // collection is created while another connection inserts into it).
    await connection.createCollection('counters');
    const plugin = oracle ? MongooseSequence(connection) : factory(connection);
    sides.push({ name, mongoose, oracle, factory, connection, plugin, EJSON: mongoose.mongo.BSON.EJSON });
  }
  let runs = 0;
  let skipped = 0;

  async function run(history) {
    runs += 1;
    const spec = history.schema;
    const instances = instancesOf(spec);
    if (instances.some((i) => i.step === 0)) {
      // mongoose-sequence accepts inc_amount 0 (every document the same number); this
      // plugin refuses it when the plugin is registered.
      const { numbered } = schemasOf(mongoose9, spec);
      let error;
      try {
        numbered.plugin(sides[1].plugin, pluginOptions({ ...instances.find((i) => i.step === 0) }, `zero_${runs}`));
      } catch (e) {
        error = e;
      }
      if (!error || error.code !== 'INVALID_ARGUMENT') throw new Error(`inc_amount 0 was not refused: ${error}`);
      skipped += 1;
      return;
    }
    const runsOfSides = [];
    try {
      for (const side of sides) {
        const ids = instances.map((_, i) => `${side.name}_${runs}_${i}`);
        const { root, numbered, child } = schemasOf(side.mongoose, spec);
        instances.forEach((inst, i) => numbered.plugin(side.plugin, pluginOptions(inst, ids[i])));
        const Base = side.connection.model(`Diff${runs}`, root);
        await Base.init();
        const Child = child ? Base.discriminator(`Diff${runs}Child`, child) : null;
        runsOfSides.push({ side, Base, Child, ids, instances, spec, ops: materialise(history, side.mongoose) });
      }
      const [oracle, ...ours] = runsOfSides;
      for (let step = 0; step < history.ops.length; step += 1) {
        for (const r of runsOfSides) {
          try {
            await apply(r.side, r, r.ops[step]);
          } catch (error) {
            error.message = `${r.side.name}, operation ${step} (${history.ops[step].op}): ${error.message}`;
            throw error;
          }
        }
        const expected = await snapshot(oracle.side, oracle);
        for (const r of ours) {
          const got = await snapshot(r.side, r);
          if (JSON.stringify(got) !== JSON.stringify(expected)) {
            throw new Error(
              `${r.side.name} differs from ${oracle.side.name} after operation ${step} (${history.ops[step].op}):\n` +
                `instances ${JSON.stringify(instances)}\nexpected ${JSON.stringify(expected)}\ngot      ${JSON.stringify(got)}`,
            );
          }
        }
      }
    } finally {
      for (const { side, Base, Child, ids } of runsOfSides) {
        await Base.collection.drop().catch(() => {});
        await side.connection.db.collection('counters').deleteMany({ id: { $in: ids } });
        if (Child) side.connection.deleteModel(Child.modelName);
        side.connection.deleteModel(Base.modelName);
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
export async function checkPluginDifferential({ uri, dbName, seeds, numRuns, shrink = false, log = () => {}, reference }) {
  const runner = await differentialRunner({ uri, dbName, reference });
  try {
    for (const seed of seeds) {
      const started = Date.now();
      await fc.assert(
        fc.asyncProperty(historyArb, (h) => runner.run(h)),
        { seed, numRuns, endOnFailure: !shrink },
      );
      log(`plugin differential seed ${seed}: ${numRuns} histories in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
    return runner.stats();
  } finally {
    await runner.close();
  }
}
