'use strict';
// mongoose plugin: a drop-in for mongoose-sequence 6 (same options, methods, messages and
// counter documents) that also numbers insertMany, Model.create([...]), bulkWrite
// insertOne operations and upserts. The hooks only gather documents and set fields: the
// counters are advanced by the native core (counterAt / setCountersWhere), with one
// round trip per call, merged across concurrent saves.

const core = require('./index.js');
const { BoundedCache } = require('./lib/bounded-cache.js');
const { codedError } = require('./lib/coded-error.js');
const { registry, countersOf, addToSchema, registered, numbersFor } = require('./lib/mongoose-counters.js');
const { syncCounterToMax, takeOverCounter } = require('./lib/mongoose-migration.js');

const COUNTER_FIELD = 'seq';
const PLUGIN = 'mongodb-sequence/mongoose';
const REQUIRE_HELP = 'Please, pass mongoose while requiring mongodb-sequence/mongoose: require(\'mongodb-sequence/mongoose\')(mongoose)';
/**
 * Native handles a counter keeps, at most (one per reference value, least recently used
 * dropped first; a dropped one is made again when needed).
 */
const HANDLES_KEPT = 1024;
/** mongoose's own default of `bufferTimeoutMS`. */
const MONGOOSE_BUFFER_TIMEOUT_MS = 10_000;

const DEFAULTS = {
  id: null,
  inc_field: '_id',
  start_seq: 1,
  inc_amount: 1,
  reference_fields: null,
  disable_hooks: false,
  collection_name: 'counters',
  parallel_hooks: true,
  exclusive: true,
  gapless: false,
  uri: undefined,
};

function resolvePath(path, source) {
  return path.split('.').reduce((value, key) => (value == null ? null : value[key]), source);
}

/**
 * The value at `path` of a document or a plain object: through the schema's getters, as
 * mongoose-sequence reads reference values, or with `raw` as it is stored (`inc_field`:
 * a getter's display form, `INV-12`, is no number).
 */
function readField(doc, path, raw = false) {
  if (isDocument(doc)) return raw ? doc.get(path, null, { getters: false }) : doc.get(path);
  if (doc && Object.hasOwn(doc, path)) return doc[path];
  return resolvePath(path, doc);
}

/** Whether `value` is a mongoose document (or subdocument). */
function isDocument(value) {
  return Boolean(value) && typeof value.get === 'function' && value.$__ !== undefined;
}

/**
 * A reference value as it is written to the counter document: mongoose wrappers
 * (subdocuments, arrays, buffers) as their BSON form, `undefined` as `null`.
 */
function plainValue(value) {
  if (value === undefined) return null;
  if (value && typeof value === 'object' && !value._bsontype && !(value instanceof Date) && typeof value.toBSON === 'function') return value.toBSON();
  return value;
}

/**
 * A canonical key for a value, for when BSON cannot serialise it: tagged by type, dates
 * by their milliseconds, BSON types by their own JSON form, objects with their key order.
 */
function canonicalKey(value) {
  if (value === null || value === undefined) return 'null';
  if (value instanceof Date) return `date:${value.getTime()}`;
  if (Array.isArray(value)) return `[${value.map(canonicalKey).join(',')}]`;
  if (typeof value === 'object') {
    if (value._bsontype) {
      const shown = typeof value.toJSON === 'function' ? value.toJSON() : String(value);
      return `${value._bsontype}:${value.sub_type ?? ''}:${JSON.stringify(shown)}`;
    }
    if (value instanceof RegExp) return `regexp:${String(value)}`;
    if (value instanceof Map) return `map:${canonicalKey(Object.fromEntries(value))}`;
    if (ArrayBuffer.isView(value)) return `bytes:${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')}`;
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${canonicalKey(v)}`).join(',')}}`;
  }
  return `${typeof value}:${typeof value === 'number' && Object.is(value, -0) ? '-0' : String(value)}`;
}

/**
 * The key of a counter's reference value: its exact BSON encoding (with `bson`, the BSON
 * library of the mongoose in use), so two values share a counter exactly when the server
 * stores them as the same `reference_value` (dates to the millisecond, objects by their
 * fields, an ObjectId apart from its hex string). Falls back to a canonical form when
 * that library is not at hand or refuses a value.
 */
function referenceKey(reference, bson) {
  if (reference === null) return '';
  if (bson && typeof bson.serialize === 'function') {
    try {
      // `undefined` as null, as the driver and the core store it (js-bson's own default drops it).
      return `b:${Buffer.from(bson.serialize({ r: reference }, { ignoreUndefined: false })).toString('base64')}`;
    } catch {
      // a value of another BSON major version, for instance: the canonical form below
    }
  }
  return `c:${canonicalKey(reference)}`;
}

/**
 * A copy of the plain object `source` with `value` at `path` (the objects along a dotted
 * path copied too): the caller's object is never written to, so one object given twice
 * (`insertMany([o, o])`, or again in a later call) is numbered once per insert.
 */
function withField(source, path, value) {
  const copy = { ...source };
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) {
    const level = target[key];
    target[key] = level && typeof level === 'object' && !Array.isArray(level) ? { ...level } : {};
    target = target[key];
  }
  target[keys.at(-1)] = value;
  return copy;
}

function writeField(doc, path, value) {
  if (isDocument(doc)) {
    doc.set(path, value);
    return;
  }
  const keys = path.split('.');
  let target = doc;
  for (const key of keys.slice(0, -1)) {
    if (target[key] == null || typeof target[key] !== 'object') target[key] = {};
    target = target[key];
  }
  target[keys.at(-1)] = value;
}

/** An option that must be a safe integer, refused with `INVALID_ARGUMENT` otherwise. */
function checkNumber(name, value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw codedError('INVALID_ARGUMENT', `option ${name} must be a safe integer; got ${String(value)}`, { type: TypeError });
  }
}

/**
 * The options with their defaults, checked like mongoose-sequence checks them: a new
 * object holding the plugin's options only (the caller's object is not written to).
 * `reference_fields` is sorted, or `null` when the counter has none.
 */
function normalise(options) {
  const merged = { ...DEFAULTS, ...options };
  const scoped = merged.reference_fields !== null && merged.reference_fields !== undefined;
  if (scoped && (merged.id === null || merged.id === undefined)) {
    throw codedError('INVALID_ARGUMENT', 'Cannot use reference fields without specifying an id');
  }
  const id = merged.id || merged.inc_field;
  checkNumber('start_seq', merged.start_seq);
  checkNumber('inc_amount', merged.inc_amount);
  if (merged.inc_amount === 0) checkNumber('inc_amount (not 0)', Number.NaN);
  if (typeof merged.gapless !== 'boolean') {
    throw codedError('INVALID_ARGUMENT', `option gapless must be a boolean; got ${String(merged.gapless)}`, { type: TypeError });
  }
  if (![true, false, 'reuse'].includes(merged.exclusive)) {
    throw codedError('INVALID_ARGUMENT', `option exclusive must be true, false or 'reuse'; got ${String(merged.exclusive)}`, { type: TypeError });
  }
  if (merged.uri !== undefined && (typeof merged.uri !== 'string' || merged.uri === '')) {
    throw codedError('INVALID_ARGUMENT', `option uri must be a MongoDB connection string; got ${typeof merged.uri}`, { type: TypeError });
  }
  return { ...merged, id: String(id), reference_fields: scoped ? [].concat(merged.reference_fields).sort() : null };
}

/** What must agree for a second registration to reuse a counter (`exclusive: 'reuse'`). */
function signature(options) {
  const { id, inc_field, start_seq, inc_amount, reference_fields, collection_name, gapless, uri } = options;
  return JSON.stringify({ id, inc_field, start_seq, inc_amount, reference_fields, collection_name, gapless, uri });
}

/** Settles `promise` through `callback` when one is given, else returns it. */
function settle(promise, callback) {
  if (typeof callback !== 'function') return promise;
  promise.then((value) => callback(null, value), (error) => callback(error));
  return undefined;
}

/**
 * `source` (a plain object: a document to insert, an upsert's values, reference values) as
 * a document of `Model`, so its values are cast, set and defaulted by the schema exactly as
 * `save` would store them. Keys starting with `$` are left out. Documents are returned as
 * they are; without a model (or when the schema refuses the object outright) the object
 * itself is read.
 */
function asCast(Model, source) {
  if (isDocument(source) || !source || typeof source !== 'object' || typeof Model !== 'function') return source;
  const plain = {};
  for (const [key, value] of Object.entries(source)) if (!key.startsWith('$')) plain[key] = value;
  try {
    return new (discriminatorOf(Model, plain))(plain);
  } catch {
    return source;
  }
}

/** The discriminator of `Model` that `plain` names (by the discriminator key), as mongoose picks it; else `Model`. */
function discriminatorOf(Model, plain) {
  const key = Model.schema && Model.schema.options && Model.schema.options.discriminatorKey;
  const name = key ? plain[key] : undefined;
  if (name === undefined || name === null || !Model.discriminators) return Model;
  return Model.discriminators[name] || Object.values(Model.discriminators).find((d) => d.discriminatorMapping && d.discriminatorMapping.value === name) || Model;
}

/**
 * Refuses a write through `Model` (a base model) of a document that is, or names by the
 * discriminator key, a discriminator with counters of its own schema: `Model`'s hooks
 * are its own schema's, so those counters would give it no number. `takes(counter,
 * Child)` says whether the write would take a number of that counter.
 */
function checkDiscriminator(Model, source, takes) {
  if (!source || typeof source !== 'object') return;
  const Child = isDocument(source) ? source.constructor : discriminatorOf(Model, source);
  if (typeof Child !== 'function' || Child === Model) return;
  const inherited = countersOf(Model);
  const missing = countersOf(Child).find((c) => !inherited.includes(c) && !c.options.disable_hooks && takes(c, Child));
  if (missing) {
    throw codedError('INVALID_ARGUMENT', `${PLUGIN}: a ${Child.modelName} document is numbered by counter '${missing.options.id}' of its own schema, which a write through ${Model.modelName} does not run: write it through the model ${Child.modelName} (no number was taken)`);
  }
}

/** The values of the document an upsert would insert, as far as they name its discriminator. */
function upsertValues(filter, update, replace) {
  const equalities = filterEqualities(filter);
  if (replace) return { ...equalities, ...(isDocument(update) ? update.toObject() : update) };
  if (!update || typeof update !== 'object' || Array.isArray(update)) return equalities;
  const plainFields = Object.fromEntries(Object.entries(update).filter(([key]) => !key.startsWith('$')));
  return { ...equalities, ...(update.$setOnInsert || {}), ...(update.$set || {}), ...plainFields };
}

/**
 * Refuses an upsert through `Model` that any of its counters refuses, or that would
 * insert a discriminator numbered by its own counters (see checkDiscriminator). Each
 * counter's hook runs it before taking a number, so that a refusal by one counter leaves
 * no number of another spent.
 */
function checkUpsert(Model, filter, update, replace) {
  checkDiscriminator(Model, upsertValues(filter, update, replace), (counter, Child) => {
    try {
      return upsertPlan(counter, Child, filter, update, replace) !== null;
    } catch {
      return true;
    }
  });
  for (const counter of countersOf(Model)) if (!counter.options.disable_hooks) upsertPlan(counter, Model, filter, update, replace);
}

/** Whether a filter's condition on one path is an operator object (`{ $gt: … }`). */
function isOperatorObject(value) {
  return Boolean(value) && typeof value === 'object' && !Array.isArray(value) && !value._bsontype && !(value instanceof Date) && Object.keys(value).some((k) => k.startsWith('$'));
}

/**
 * The values an upsert's filter gives the document it inserts: equality conditions
 * (`path: value`, `{ $eq: value }`, a one-element `$in`), also inside a top-level `$and`.
 */
function filterEqualities(filter, into = {}) {
  for (const [key, value] of Object.entries(filter || {})) {
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value) filterEqualities(part, into);
    } else if (key.startsWith('$')) {
      continue;
    } else if (!isOperatorObject(value)) {
      into[key] = value;
    } else if (Object.hasOwn(value, '$eq')) {
      into[key] = value.$eq;
    } else if (Array.isArray(value.$in) && value.$in.length === 1 && !(value.$in[0] instanceof RegExp)) {
      into[key] = value.$in[0];
    }
  }
  return into;
}

/**
 * Whether the current mongoose runs parallel pre hooks (`schema.pre(name, true, fn)`,
 * mongoose ≤ 8); mongoose 9 runs every pre hook in series.
 */
function parallelPreHooks(schema) {
  const Hooks = schema && schema.s && schema.s.hooks && schema.s.hooks.constructor;
  if (typeof Hooks !== 'function') return false;
  try {
    const probe = new Hooks();
    probe.pre('probe', true, () => {});
    const pres = probe._pres && probe._pres.get('probe');
    return Boolean(pres && pres.numAsync === 1);
  } catch {
    return false;
  }
}

class Counter {
  constructor(connection, options, bson) {
    this.connection = connection;
    this.options = options;
    this.bson = bson;
    /** Native handles by reference key: `{ db, handle }`, a bounded number of them. */
    this.handles = new BoundedCache(HANDLES_KEPT);
    /** Documents this counter numbered: doc → { key, value } (the reference key and the number). */
    this.numbered = new WeakMap();
  }

  /**
   * Whether `doc` keeps its `inc_field` in a batch writer (insertMany, bulkWrite): a
   * number this counter gave it for `reference` (the reference value it has now), or a
   * number the caller set.
   */
  keeps(doc, reference) {
    const mine = this.ownNumber(doc);
    if (mine) return mine.key === this.keyOf(reference);
    return this.isExplicit(doc);
  }

  /**
   * What this counter recorded when it numbered `doc` (`{ key, value }`), while `doc`
   * still carries that number; `undefined` otherwise.
   */
  ownNumber(doc) {
    const mine = this.numbered.get(doc);
    return mine && readField(doc, this.options.inc_field, true) === mine.value ? mine : undefined;
  }

  /**
   * Whether `doc` keeps its `inc_field` on save (and create, which is save): only a number
   * this counter gave it for `reference` (create([...]), a save retried after it failed,
   * setNext); a number the caller set is overwritten, as mongoose-sequence does, so a
   * document copied from a saved one never repeats its number.
   */
  keepsOnSave(doc, reference) {
    const mine = this.ownNumber(doc);
    return Boolean(mine) && mine.key === this.keyOf(reference);
  }

  /**
   * Whether the duplicate-key `error` of saving `doc` is about the number this counter
   * gave it (the index includes inc_field).
   */
  refused(doc, error) {
    const field = this.options.inc_field;
    if (!this.ownNumber(doc)) return false;
    const named = (part) => Boolean(part) && typeof part === 'object' && Object.hasOwn(part, field);
    if (error.keyPattern || error.keyValue) return named(error.keyPattern) || named(error.keyValue);
    // Servers that name only the index: `index: <field>_1 …`.
    return typeof error.message === 'string' && error.message.includes(`index: ${field}_`);
  }

  /** Forgets the number this counter gave `doc`: the next save numbers it again. */
  forget(doc) {
    this.numbered.delete(doc);
    writeField(doc, this.options.inc_field, undefined);
  }

  /** Forgets the number this counter gave `doc` once it is saved. */
  settled(doc) {
    if (doc && typeof doc === 'object') this.numbered.delete(doc);
  }

  /** Sets `value` on `doc` and records that this counter gave it for `reference` (as stored: after setters). */
  give(doc, reference, value) {
    writeField(doc, this.options.inc_field, value);
    if (isDocument(doc)) this.numbered.set(doc, { key: this.keyOf(reference), value: readField(doc, this.options.inc_field, true) });
  }

  /**
   * Numbers a new document on save, as mongoose-sequence does, unless it keeps its
   * number: one this counter gave it for the reference value it still has (create([...]),
   * setNext, or a save that failed after numbering). A document numbered for another
   * reference value than it has now is numbered again, from the counter of that value.
   */
  async numberOnSave(doc) {
    const reference = this.referenceOf(doc);
    if (this.keepsOnSave(doc, reference)) return;
    const value = await this.call((await this.handle(reference, doc.constructor)).next());
    this.give(doc, reference, value);
  }

  /** Whether the counter has reference_fields (one counter document per combination of their values). */
  get scoped() {
    return this.options.reference_fields !== null;
  }

  /**
   * The Node driver `Db` of the connection, once it is open. Before it opens, waits for
   * it as mongoose buffers `Model`'s operations: up to its `bufferTimeoutMS`, or not at
   * all with `bufferCommands: false`; then rejects with `CONNECTION`.
   */
  async db(Model) {
    const connection = this.connection;
    if (connection.db) return connection.db;
    const { buffer, timeoutMS } = bufferSettings(connection, Model);
    if (!buffer) {
      throw codedError('CONNECTION', `${PLUGIN}: the connection is not open and bufferCommands is false, so the counter cannot wait for it: open it first (await mongoose.connect(uri))`);
    }
    await opened(connection, timeoutMS);
    if (!connection.db) {
      throw codedError('CONNECTION', `${PLUGIN}: the connection did not open within bufferTimeoutMS (${timeoutMS} ms), so no number was taken: call mongoose.connect(uri) (or connection.openUri(uri))`);
    }
    return connection.db;
  }

  /**
   * Settles with what the native `promise` settles with; an `UNSUPPORTED_CLIENT` refusal
   * (a connection setting the core cannot carry over) says how to give the plugin its
   * own connection string.
   */
  async call(promise) {
    try {
      return await promise;
    } catch (error) {
      throw this.explained(error);
    }
  }

  /** `error`, or for an `UNSUPPORTED_CLIENT` refusal without the plugin's `uri`, one that says how to give it. */
  explained(error) {
    if (!error || error.code !== 'UNSUPPORTED_CLIENT' || this.options.uri !== undefined) return error;
    return codedError(
      'UNSUPPORTED_CLIENT',
      `${PLUGIN}: ${error.message}. With the mongoose plugin, give the counters their connection string as the plugin's uri option: schema.plugin(AutoIncrement, { uri: process.env.MONGODB_URI, ... })`,
      { cause: error },
    );
  }

  /** The options of the native calls on this counter's documents (and the plugin's `uri`). */
  nativeOptions(more) {
    const options = { collection: this.options.collection_name, field: COUNTER_FIELD, ...more };
    if (this.options.uri !== undefined) options.uri = this.options.uri;
    return options;
  }

  /**
   * `reference_value` of `source`: a document, or a plain object (a document to insert,
   * an upsert's values, reference values) first cast with `Model`'s schema, so that a
   * hex string and an ObjectId, '2025' and 2025, an ISO string and a Date choose the
   * same counter as `save` does.
   */
  referenceOf(source, Model) {
    if (!this.scoped) return null;
    const doc = asCast(Model, source);
    const reference = {};
    for (const field of this.options.reference_fields) reference[field] = plainValue(readField(doc, field));
    return reference;
  }

  /** The key of `reference` (its exact BSON value). */
  keyOf(reference) {
    return referenceKey(reference, this.bson);
  }

  /**
   * Whether the caller set `inc_field` of `doc` (a value that is neither null nor the
   * schema's default, and for a plain object one that `Model`'s schema casts to a value):
   * such a value is kept and no number is taken for it.
   */
  isExplicit(doc, Model) {
    const field = this.options.inc_field;
    const value = readField(doc, field, true);
    if (value === undefined || value === null) return false;
    if (isDocument(doc)) return !(typeof doc.$isDefault === 'function' && doc.$isDefault(field));
    const cast = asCast(Model, doc);
    if (cast === doc) return true;
    const stored = readField(cast, field, true);
    return stored !== undefined && stored !== null;
  }

  /**
   * The native handle on the counter document `{ id, reference_value }`, once the
   * connection is open (waiting for it as mongoose waits for `Model`'s operations).
   */
  async handle(reference, Model) {
    const db = await this.db(Model);
    const key = this.keyOf(reference);
    const kept = this.handles.get(key);
    if (kept && kept.db === db) return kept.handle;
    let handle;
    try {
      handle = core.counterAt(
        db,
        { id: this.options.id, reference_value: reference },
        this.nativeOptions({ upsert: true, start: this.options.start_seq, step: this.options.inc_amount }),
      );
    } catch (error) {
      throw this.explained(error);
    }
    this.handles.set(key, { db, handle });
    return handle;
  }

  /** `docs` grouped by reference value, in order of first appearance: `[{ reference, members: [{ doc, index }] }]`. */
  groupByReference(docs, Model) {
    const groups = new Map();
    docs.forEach((doc, index) => {
      const reference = this.referenceOf(doc, Model);
      const key = this.keyOf(reference);
      if (!groups.has(key)) groups.set(key, { reference, members: [] });
      groups.get(key).members.push({ doc, index });
    });
    return [...groups.values()];
  }

  /**
   * Numbers for `sources` (documents, or plain objects cast with `Model`), in array order:
   * one block per reference value, reserved in one round trip. Resolves with
   * `[{ reference, value }]`, one per source.
   */
  async reserve(sources, Model) {
    const numbers = new Array(sources.length);
    await Promise.all(
      this.groupByReference(sources, Model).map(async ({ reference, members }) => {
        const values = await this.call((await this.handle(reference, Model)).nextBatch(members.length));
        members.forEach(({ index }, i) => {
          numbers[index] = { reference, value: values[i] };
        });
      }),
    );
    return numbers;
  }

  /**
   * Whether `doc` (a document or a plain object of `Model`) takes a number in a batch: not
   * when the caller set its `inc_field` — unless `asSave` (create, which is save: only what
   * this counter gave it is kept) — nor when this counter numbered it for the reference
   * value it still has.
   */
  needsNumber(doc, Model, asSave = false) {
    if (!doc || typeof doc !== 'object') return false;
    if (asSave) return !this.keepsOnSave(doc, this.referenceOf(doc));
    if (isDocument(doc) && this.numbered.has(doc)) return !this.keeps(doc, this.referenceOf(doc));
    return !this.isExplicit(doc, Model);
  }

  /** `doc` with `value`, given for `reference`: a document numbered in place, a plain object as a numbered copy. */
  withNumber(doc, { reference, value }) {
    if (!isDocument(doc)) return withField(doc, this.options.inc_field, value);
    this.give(doc, reference, value);
    return doc;
  }

  /**
   * Numbers the `docs` that need it (see `needsNumber`), in array order, one round trip
   * per reference value. Documents are numbered in place; a plain object is never written
   * to: resolves with `docs` where each numbered plain object is replaced by a numbered copy.
   */
  async numberAll(docs, Model, asSave = false) {
    const pending = [];
    docs.forEach((doc, at) => {
      if (this.needsNumber(doc, Model, asSave)) pending.push(at);
    });
    const numbers = await this.reserve(pending.map((at) => docs[at]), Model);
    const result = [...docs];
    pending.forEach((at, i) => {
      result[at] = this.withNumber(docs[at], numbers[i]);
    });
    return result;
  }

  /**
   * Gapless mode: validates `docs` (documents of `Model`), then numbers and inserts them
   * in one transaction per reference value (the native insertMany with `gapless`), so a
   * failed insert gives its numbers back. Documents whose `inc_field` the caller set are
   * inserted as they are (they take no number), unless `asSave` (create, which numbers
   * them as save does). Resolves with the inserted documents, hydrated, in the order given.
   */
  async insertGapless(Model, docs, asSave = false) {
    // What Model.insertMany does for its documents: timestamps, validation (save
    // middleware does not run, as for insertMany).
    for (const doc of docs) if (typeof doc.initializeTimestamps === 'function') doc.initializeTimestamps();
    await Promise.all(docs.map((doc) => doc.validate()));
    const versionKey = Model.schema.options.versionKey;
    const db = await this.db(Model);
    const inserted = new Array(docs.length);
    const toObject = (doc, numbered) => {
      const object = doc.toBSON();
      if (versionKey && object[versionKey] === undefined) object[versionKey] = 0;
      // The gapless insert sets the field itself (and refuses a document that has one).
      if (numbered) {
        const path = this.options.inc_field.split('.');
        const parent = path.length === 1 ? object : resolvePath(path.slice(0, -1).join('.'), object);
        if (parent && typeof parent === 'object') delete parent[path.at(-1)];
      }
      return object;
    };
    const explicit = [];
    const numbered = [];
    docs.forEach((doc, index) => (!asSave && this.isExplicit(doc) ? explicit : numbered).push({ doc, index }));
    for (const { reference, members } of this.groupByReference(numbered.map(({ doc }) => doc), Model)) {
      const objects = members.map(({ doc }) => toObject(doc, true));
      const options = {
        gapless: true,
        field: this.options.inc_field,
        sequence: this.options.id,
        counters: this.options.collection_name,
        counterField: COUNTER_FIELD,
        counterLocator: { id: this.options.id, reference_value: reference },
        start: this.options.start_seq,
        step: this.options.inc_amount,
      };
      if (this.options.uri !== undefined) options.uri = this.options.uri;
      await this.call(core.insertMany(db, Model.collection.collectionName, objects, options));
      members.forEach(({ index }, i) => {
        inserted[numbered[index].index] = Model.hydrate(objects[i]);
      });
    }
    if (explicit.length) {
      const objects = explicit.map(({ doc }) => toObject(doc));
      await Model.collection.insertMany(objects);
      explicit.forEach(({ index }, i) => {
        inserted[index] = Model.hydrate(objects[i]);
      });
    }
    return inserted;
  }

  /**
   * Sets the counters of `id` (one reference value, or all) so the next value is
   * start_seq - 1 + inc_amount; with start_seq 0 the counter is set to 0 (next value
   * inc_amount), as mongoose-sequence stores it.
   */
  async reset(referenceSource, Model, caller) {
    const fields = { id: this.options.id };
    if (referenceSource !== undefined) fields.reference_value = this.referenceOf(referenceSource, Model);
    const start = this.options.start_seq;
    const db = await this.db(caller);
    const matched = await this.call(core.setCountersWhere(db, fields, start === 0 ? 0 : start - 1, this.nativeOptions()));
    return { acknowledged: true, matchedCount: matched, modifiedCount: matched };
  }
}

function arrayArgument(args) {
  return args.find((a) => Array.isArray(a));
}

/** The refusal, in gapless mode, of `what` (which cannot join the numbering transaction). */
function gaplessRefusal(what) {
  return codedError(
    'GAPLESS_UNSUPPORTED_OPERATION',
    `${PLUGIN}: with gapless: true, new documents are numbered and inserted in one transaction by Model.create() and Model.insertMany(); ${what} cannot join that transaction`,
  );
}

/**
 * Whether mongoose buffers `Model`'s operations while `connection` is not open, and for
 * how long (`bufferCommands` and `bufferTimeoutMS` of the schema, the connection or
 * mongoose, as mongoose reads them).
 */
function bufferSettings(connection, Model) {
  const collection = Model && Model.db === connection ? Model.collection : null;
  const source = collection && typeof collection._shouldBufferCommands === 'function' ? collection : connection;
  const buffer = typeof source._shouldBufferCommands === 'function' ? source._shouldBufferCommands() : true;
  const timeoutMS = typeof source._getBufferTimeoutMS === 'function' ? source._getBufferTimeoutMS() : MONGOOSE_BUFFER_TIMEOUT_MS;
  return { buffer: buffer !== false, timeoutMS: Number.isFinite(timeoutMS) && timeoutMS >= 0 ? timeoutMS : MONGOOSE_BUFFER_TIMEOUT_MS };
}

/** Per connection not yet open: a promise of its `open` event (one listener, however many wait). */
const opening = new WeakMap();

/** Resolves once `connection` has opened, or after `timeoutMS`, whichever comes first. */
async function opened(connection, timeoutMS) {
  if (typeof connection.once !== 'function') return;
  let open = opening.get(connection);
  if (!open) {
    open = new Promise((resolve) => connection.once('open', resolve));
    opening.set(connection, open);
    open.then(() => opening.delete(connection));
  }
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, timeoutMS);
  });
  try {
    await Promise.race([open, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Adds the hooks that number new documents, batches and upserts. */
function addHooks(schema, counter) {
  const numberOnSave = async (doc) => {
    if (!doc.isNew) return;
    if (counter.options.gapless) throw gaplessRefusal('doc.save() of a new document');
    await counter.numberOnSave(doc);
  };
  if (counter.options.parallel_hooks && parallelPreHooks(schema)) {
    // mongoose 8 runs parallel pre hooks, as mongoose-sequence registers its own by
    // default: the next pre('save') hooks start before the number is set; the insert
    // waits for it.
    schema.pre('save', true, function numberNewDocumentInParallel(next, done) {
      next();
      numberOnSave(this).then(() => done(), (error) => done(error));
    });
  } else {
    schema.pre('save', async function numberNewDocument() {
      await numberOnSave(this);
    });
  }

  // A number refused by a unique index on inc_field (numbers imported past the counter,
  // say) is not kept for a retry of the save: the retry takes the next number, as with
  // mongoose-sequence, instead of failing on the same one forever.
  schema.post('save', function forgetRefusedNumber(error, doc, next) {
    if (error && error.code === 11000 && this && this.isNew && counter.refused(this, error)) counter.forget(this);
    next(error);
  });

  // Once saved, a number is the stored document's, not this object's: the same object
  // inserted again as a new document (isNew set back, a new _id) is numbered again.
  schema.post('save', function forgetSavedDocument(doc) {
    counter.settled(doc);
  });
  schema.post('insertMany', function forgetInsertedDocuments(docs) {
    if (Array.isArray(docs)) for (const doc of docs) if (isDocument(doc)) counter.settled(doc);
  });

  // Declared parameters: mongoose 8 passes (next, docs, options) to hooks that declare
  // any (none otherwise), mongoose 9 (docs, options); either way the promise settles it.
  // Plain objects are numbered as copies, never written to (one object given twice must
  // take two numbers): mongoose 9 takes the copies as the hook's new arguments; mongoose
  // 8 cannot, so there they replace the objects in the array, which is the insertMany
  // static's own copy of the caller's (see addCreate).
  schema.pre('insertMany', async function numberInsertMany(first, second, third) {
    if (counter.options.gapless) return undefined; // numbered by the insertMany static itself
    const given = [first, second, third].slice(0, arguments.length);
    const overwrite = this.base && typeof this.base.overwriteMiddlewareArguments === 'function' ? this.base.overwriteMiddlewareArguments : null;
    const docs = arrayArgument(given);
    if (!docs) return undefined;
    for (const doc of docs) checkDiscriminator(this, doc, (c, Child) => c.needsNumber(doc, Child));
    const numbered = await counter.numberAll(docs, this);
    if (numbered.every((d, i) => d === docs[i])) return undefined;
    if (overwrite && given[0] === docs) return overwrite(numbered, ...given.slice(1));
    numbered.forEach((d, i) => {
      if (d !== docs[i]) docs[i] = d;
    });
    return undefined;
  });

  schema.pre('bulkWrite', async function numberBulkWrite(first, second, third) {
    const ops = arrayArgument([first, second, third]);
    if (!ops) return;
    // What takes a number, in operation order: insertOne documents and upserts. mongoose
    // replaces each operation's document or update by its cast copy; ours (a numbered
    // copy) takes the caller's object's place there first.
    const work = [];
    for (const op of ops) {
      if (!op || typeof op !== 'object') continue;
      const doc = op.insertOne && op.insertOne.document;
      if (doc && counter.options.gapless) throw gaplessRefusal('a bulkWrite insertOne');
      if (doc) checkDiscriminator(this, doc, (c, Child) => c.needsNumber(doc, Child));
      if (doc && counter.needsNumber(doc, this)) {
        work.push({ source: doc, place: (number) => (op.insertOne.document = counter.withNumber(doc, number)) });
      }
      for (const [kind, key] of Object.entries(BULK_UPSERTS)) {
        const spec = op[kind];
        const given = spec && spec.upsert && spec[key] && typeof spec[key] === 'object';
        if (given) checkUpsert(this, spec.filter, spec[key], kind === 'replaceOne');
        const plan = given ? upsertPlan(counter, this, spec.filter, spec[key], kind === 'replaceOne') : null;
        if (plan) work.push({ source: plan.source, place: (number) => (op[kind] = { ...spec, [key]: plan.place(number && number.value) }) });
      }
    }
    const reserved = work.filter((w) => w.source !== null);
    const numbers = await counter.reserve(reserved.map((w) => w.source), this);
    reserved.forEach((w, i) => w.place(numbers[i]));
    for (const w of work) if (w.source === null) w.place(null);
  });

  for (const [operation, replace] of [['findOneAndUpdate', false], ['updateOne', false], ['updateMany', false], ['replaceOne', true], ['findOneAndReplace', true]]) {
    schema.pre(operation, async function numberUpsert() {
      if (!this.getOptions().upsert) return;
      checkUpsert(this.model, this.getFilter(), this.getUpdate() || {}, replace);
      const plan = upsertPlan(counter, this.model, this.getFilter(), this.getUpdate() || {}, replace);
      if (!plan) return;
      const [number] = plan.source === null ? [null] : await counter.reserve([plan.source], this.model);
      this.setUpdate(plan.place(number && number.value));
    });
  }
}

/** The upserting operations of bulkWrite, and the key of each one's update. */
const BULK_UPSERTS = { updateOne: 'update', updateMany: 'update', replaceOne: 'replacement' };

/**
 * How an upsert of `Model` numbers the document it would insert: `null` when it takes no
 * number (the filter gives the field by equality, the update sets it, the replacement
 * holds it), else `{ source, place }`: the values that choose the counter (`null`: no
 * number to take) and `place(value)`, the update with the number. `update` is an update
 * document, or with `replace` a replacement. Throws what cannot be numbered, before any
 * number is taken: an aggregation pipeline, a replacement that would renumber a document
 * it matches, a reference value written by another operator than `$set` / `$setOnInsert`.
 */
function upsertPlan(counter, Model, filter, update, replace) {
  const field = counter.options.inc_field;
  if (!replace && Array.isArray(update)) {
    if (counter.options.gapless) throw gaplessRefusal('an upsert');
    throw codedError('INVALID_ARGUMENT', `${PLUGIN}: an upsert with an aggregation pipeline cannot be numbered: a pipeline cannot tell the document it inserts from one it matches, so a number would go to matched documents too. Use an update document with $setOnInsert (or number the document afterwards)`);
  }
  // The filter's equalities become fields of the inserted document (only _id for a
  // replacement): an upsert by its number (`{ no: 5 }`, `{ _id: 5 }`) inserts that number.
  const equalities = filterEqualities(filter);
  const byNumber = equalities[field] !== undefined && equalities[field] !== null;
  if (replace) return replacementPlan(counter, Model, equalities, byNumber, isDocument(update) ? update.toObject() : update);
  if (byNumber) return null;
  const touched = updateTouches(update, field);
  if (touched === true) return null;
  if (counter.options.gapless) throw gaplessRefusal('an upsert');
  checkReferenceOperators(counter, update);
  // The document an insert would store: the filter's equalities, then the update's
  // values, cast with the schema as save casts them.
  const plainFields = Object.fromEntries(Object.entries(update).filter(([key]) => !key.startsWith('$')));
  const source = { ...equalities, ...(update.$setOnInsert || {}), ...(update.$set || {}), ...plainFields };
  // `$setOnInsert: { meta: {…} }` with inc_field `meta.no`: the number goes into a copy
  // of that object (a second path under it would conflict, code 40).
  const [key, inside] = touched ? [touched, field.slice(touched.length + 1)] : [field, null];
  const place = (value) => {
    const placed = inside === null ? value : readField(withField({ [key]: update.$setOnInsert[key] }, `${key}.${inside}`, value), key);
    return { ...update, $setOnInsert: { ...(update.$setOnInsert || {}), [key]: placed } };
  };
  return { source, place };
}

/** Whether dotted paths `a` and `b` are the same, or one lies under the other. */
function overlaps(a, b) {
  return a === b || b.startsWith(`${a}.`) || a.startsWith(`${b}.`);
}

/**
 * Refuses an upsert that would take a number of a scoped counter while an operator other
 * than `$set` / `$setOnInsert` (`$inc`, `$max`, `$push`, `$rename`, `$unset`…) writes a
 * reference field, a path under it or an object above it: the counter is chosen from the
 * values given by the filter's equalities, `$set` and `$setOnInsert`, so such a value
 * would be stored beside the number of another counter.
 */
function checkReferenceOperators(counter, update) {
  const references = counter.options.reference_fields || [];
  if (references.length === 0) return;
  for (const [operator, part] of Object.entries(update)) {
    if (!operator.startsWith('$') || operator === '$set' || operator === '$setOnInsert' || !part || typeof part !== 'object') continue;
    // `$rename: { from: to }` writes its targets, and removes its sources.
    const paths = operator === '$rename' ? [...Object.keys(part), ...Object.values(part).map(String)] : Object.keys(part);
    const written = references.find((r) => paths.some((path) => overlaps(path, r)));
    if (written !== undefined) {
      throw codedError('INVALID_ARGUMENT', `${PLUGIN}: an upsert that writes reference field '${written}' with ${operator} cannot be numbered: the counter is chosen from the filter's equalities, $set and $setOnInsert, before the server applies ${operator}. Give the value in one of those (no number was taken)`);
    }
  }
}

/**
 * An upsert's replacement is stored as it is, whether it inserts or replaces: a number
 * taken for it would renumber a document it matches. It is accepted only when its number
 * is known without taking one: the replacement holds it, or the filter gives it by
 * equality (put into the replacement, so that a matched document keeps it; numbered by
 * `_id`, the server inserts the filter's _id).
 */
function replacementPlan(counter, Model, equalities, byNumber, replacement) {
  const field = counter.options.inc_field;
  if (!replacement || typeof replacement !== 'object' || counter.isExplicit(replacement, Model)) return null;
  if (byNumber) return field === '_id' ? null : { source: null, place: () => withField(replacement, field, equalities[field]) };
  if (counter.options.gapless) throw gaplessRefusal('an upsert');
  throw codedError('INVALID_ARGUMENT', `${PLUGIN}: a replace upsert would renumber a document it matches: give the number (${field}) in the filter or the replacement, or use updateOne with $setOnInsert (no number was taken)`);
}

/**
 * What an upsert's `update` does to `field` (a dotted path): `true` when it sets the
 * field, or touches it or an object above it in a way the plugin must not add to (a
 * `$set` of the parent, `$inc`, `$unset`…: a `$setOnInsert` of the field would conflict
 * with it, code 40) — the field is then left to the update; the parent's path when only
 * `$setOnInsert` sets an object above the field (the number goes inside it); else `false`.
 */
function updateTouches(update, field) {
  const parts = field.split('.');
  const parents = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('.'));
  const hits = (object) => {
    if (!object || typeof object !== 'object') return null;
    if (Object.hasOwn(object, field)) return field;
    for (const path of Object.keys(object)) if (path.startsWith(`${field}.`)) return path;
    return parents.find((parent) => Object.hasOwn(object, parent)) || null;
  };
  let parentOnInsert = false;
  for (const [key, part] of Object.entries(update)) {
    if (!key.startsWith('$')) {
      if (hits({ [key]: part })) return true;
      continue;
    }
    const hit = hits(part);
    if (!hit) continue;
    if (key !== '$setOnInsert' || hit === field || hit.startsWith(`${field}.`)) return true;
    // A parent object set on insert: it gives the number itself, or takes ours inside it.
    const inside = resolvePath(field.slice(hit.length + 1), part[hit]);
    if (inside !== undefined && inside !== null) return true;
    if (part[hit] !== null && typeof part[hit] !== 'object') return true;
    parentOnInsert = hit;
  }
  return parentOnInsert;
}

/** `list` as documents of `Model` (documents already are). */
function asDocuments(Model, list) {
  return list.map((d) => (d instanceof Model ? d : new Model(d)));
}

/**
 * Model.create numbered in array order with one reservation per reference value: the
 * array form `create([a, b])` and the spread form `create(a, b)` alike. In mongoose,
 * create is save: a number the caller set is overwritten as save overwrites it.
 */
function addCreate(schema, counter) {
  const previous = schema.statics.create;
  schema.static('create', async function createNumbered(...args) {
    const base = previous || (this.base && this.base.Model && this.base.Model.create) || Object.getPrototypeOf(this).create;
    const many = Array.isArray(args[0]);
    let inputs = many ? args[0] : [...args];
    // As mongoose: a falsy last argument of the spread form is not a document.
    if (!many && inputs.length > 1 && !inputs.at(-1)) inputs = inputs.slice(0, -1);
    if (counter.options.gapless) {
      if (inputs.length === 0) return many ? [] : null;
      const inserted = await counter.insertGapless(this, asDocuments(this, inputs), true);
      return many || inputs.length > 1 ? inserted : inserted[0];
    }
    if (inputs.length === 0) return base.apply(this, args);
    const docs = asDocuments(this, inputs);
    // One document is numbered by its save hook (after the hooks before it, as on save).
    if (docs.length > 1) await counter.numberAll(docs.filter((d) => d.isNew), this, true);
    return many ? base.apply(this, [docs, ...args.slice(1)]) : base.apply(this, docs);
  });
  if (counter.options.gapless) {
    schema.static('insertMany', async function insertManyGapless(docs) {
      const list = Array.isArray(docs) ? docs : [docs];
      return counter.insertGapless(this, asDocuments(this, list));
    });
  } else {
    // The numbering hook gets an array of our own (one object given alone becomes one, as
    // mongoose makes it), which mongoose 8's hook writes the numbered copies into.
    const previousInsertMany = schema.statics.insertMany;
    schema.static('insertMany', function insertManyOnCopy(docs, ...rest) {
      const base = previousInsertMany || (this.base && this.base.Model && this.base.Model.insertMany) || Object.getPrototypeOf(this).insertMany;
      return base.call(this, Array.isArray(docs) ? [...docs] : [docs], ...rest);
    });
  }
}

/**
 * Whether `field` of the saved document `doc` cannot change: `_id`, or a path the schema
 * declares `immutable` (a function deciding it per document too), which mongoose would
 * silently keep as it is.
 */
function unchangeable(doc, field) {
  if (doc.isNew) return false;
  if (field === '_id') return true;
  const path = doc.schema && doc.schema.path(field);
  const immutable = path && path.$immutable;
  return typeof immutable === 'function' ? Boolean(immutable.call(doc, doc)) : Boolean(immutable);
}

function addMethods(schema) {
  schema.method('setNext', function setNext(id, callback) {
    const work = (async () => {
      const counter = registered(id, 'increment', this.constructor);
      const field = counter.options.inc_field;
      if (unchangeable(this, field)) {
        throw codedError('INVALID_ARGUMENT', `${PLUGIN}: setNext cannot give this saved document a new ${field}: the field is ${field === '_id' ? 'its _id' : 'immutable'}, so the number would not be stored (none was taken)`);
      }
      const reference = counter.referenceOf(this);
      const value = await counter.call((await counter.handle(reference, this.constructor)).next());
      counter.give(this, reference, value);
      return this.save();
    })();
    return settle(work, callback);
  });

  schema.static('counterReset', function counterReset(id, reference, callback) {
    let cb = callback;
    let source = reference;
    if (typeof reference === 'function') {
      cb = reference;
      source = undefined;
    }
    const work = (async () => {
      const counter = registered(id, 'reset', this);
      // Reference values are cast with this model's schema when it is the counter's.
      return counter.reset(source, numbersFor(counter, this) ? this : undefined, this);
    })();
    return settle(work, cb);
  });
}

/** Refuses an `inc_field` the schema already has with another type than Number. */
function checkField(schema, field) {
  const path = schema.path(field);
  if (path !== undefined && path.instance !== 'Number') {
    throw codedError('INVALID_ARGUMENT', 'Auto increment field already present and not of type "Number"');
  }
}

function addField(schema, field) {
  checkField(schema, field);
  if (schema.path(field) === undefined) schema.add({ [field]: Number });
}

/**
 * `require('mongodb-sequence/mongoose')(mongoose)`: the plugin factory, as
 * `require('mongoose-sequence')(mongoose)`. Pass the mongoose instance (counters live on
 * its default connection) or a connection.
 */
function AutoIncrementFactory(connectionOrMongoose) {
  if (arguments.length !== 1) throw codedError('INVALID_ARGUMENT', REQUIRE_HELP);
  const target = connectionOrMongoose;
  const connection = target && target.connection && typeof target.model === 'function' && !target.db ? target.connection : target;
  // The BSON library of this mongoose's driver: reference values are keyed by their BSON.
  const bson = (target && target.mongo && target.mongo.BSON) || (connection && connection.base && connection.base.mongo && connection.base.mongo.BSON) || null;
  return function AutoIncrement(schema, pluginOptions) {
    const options = normalise(pluginOptions);
    // Refusals first, so that a refused plugin leaves no counter registered behind it.
    checkField(schema, options.inc_field);
    const others = countersOf({ schema });
    if (others.length && !options.disable_hooks && (options.gapless || others.some((c) => c.options.gapless && !c.options.disable_hooks))) {
      // A gapless counter inserts the documents itself, past the other counter's hooks.
      throw codedError('INVALID_ARGUMENT', `${PLUGIN}: a gapless counter cannot share its schema with another counter`);
    }
    const existing = registry.get(options.id);
    let counter;
    if (!existing) {
      counter = new Counter(connection, options, bson);
      registry.set(options.id, counter);
    } else if (options.exclusive === 'reuse' && signature(existing.options) === signature(options)) {
      // Hot reload: the same schema and options again use the counter already defined,
      // on the same connection; on another connection (another database) the counter is
      // that connection's own, as with exclusive: false.
      counter = existing.connection === connection ? existing : new Counter(connection, options, bson);
    } else if (options.exclusive === false) {
      // Shared on purpose: the same counter documents, this registration's own options.
      counter = new Counter(connection, options, bson);
    } else {
      throw codedError('INVALID_ARGUMENT', `Counter already defined for field "${options.id}"`);
    }
    addToSchema(schema, counter);
    addField(schema, options.inc_field);
    addMethods(schema);
    if (!options.disable_hooks) {
      addHooks(schema, counter);
      addCreate(schema, counter);
    }
  };
}

module.exports = AutoIncrementFactory;
module.exports.syncCounterToMax = syncCounterToMax;
module.exports.takeOverCounter = takeOverCounter;
module.exports.default = AutoIncrementFactory;
module.exports.AutoIncrementFactory = AutoIncrementFactory;
