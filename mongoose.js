'use strict';
// mongoose plugin: a drop-in for mongoose-sequence 6 (same options, methods, messages and
// counter documents) that also numbers insertMany, Model.create([...]), bulkWrite
// insertOne operations and upserts. The hooks only gather documents and set fields: the
// counters are advanced by the native core (counterAt / setCountersWhere), with one
// round trip per call, merged across concurrent saves.

const core = require('./index.js');

const COUNTER_FIELD = 'seq';
const NUMBERED = Symbol('mongo-sequence numbered');
const REQUIRE_HELP = 'Please, pass mongoose while requiring mongo-sequence/mongoose: require(\'mongo-sequence/mongoose\')(mongoose)';

/** Every counter defined in this process, by id (mongoose-sequence keeps one registry too). */
const registry = new Map();
/** The counters each schema numbers with, for the migration helpers. */
const schemaCounters = new WeakMap();

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
};

function resolvePath(path, source) {
  return path.split('.').reduce((value, key) => (value == null ? null : value[key]), source);
}

function readField(doc, path) {
  if (doc && typeof doc.get === 'function' && doc.$__ !== undefined) return doc.get(path);
  if (doc && Object.hasOwn(doc, path)) return doc[path];
  return resolvePath(path, doc);
}

/** A grouping key for a reference value that tells types apart (an ObjectId from its hex string). */
function referenceKey(reference) {
  if (reference === null) return '';
  return JSON.stringify(
    Object.entries(reference).map(([k, v]) => [k, v === null || v === undefined ? 'null' : `${typeof v}:${v.constructor ? v.constructor.name : ''}:${String(v)}`]),
  );
}

function writeField(doc, path, value) {
  if (doc && typeof doc.set === 'function' && doc.$__ !== undefined) {
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

function checkNumber(name, value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    const error = new TypeError(`option ${name} must be a safe integer; got ${String(value)}`);
    error.code = 'INVALID_ARGUMENT';
    throw error;
  }
}

/** The options with their defaults, checked like mongoose-sequence checks them. */
function normalise(options) {
  const merged = { ...DEFAULTS, ...options };
  const useReference = merged.reference_fields !== null && merged.reference_fields !== undefined;
  const fields = useReference ? [].concat(merged.reference_fields) : [];
  if (useReference && (merged.id === null || merged.id === undefined)) {
    throw new Error('Cannot use reference fields without specifying an id');
  }
  const id = merged.id || merged.inc_field;
  checkNumber('start_seq', merged.start_seq);
  checkNumber('inc_amount', merged.inc_amount);
  if (merged.inc_amount === 0) checkNumber('inc_amount (not 0)', Number.NaN);
  if (typeof merged.gapless !== 'boolean') {
    throw new TypeError(`option gapless must be a boolean; got ${String(merged.gapless)}`);
  }
  if (![true, false, 'reuse'].includes(merged.exclusive)) {
    throw new TypeError(`option exclusive must be true, false or 'reuse'; got ${String(merged.exclusive)}`);
  }
  return { ...merged, id: String(id), reference_fields: [...fields].sort(), useReference };
}

/** What must agree for a second registration to reuse a counter (`exclusive: 'reuse'`). */
function signature(options) {
  const { id, inc_field, start_seq, inc_amount, reference_fields, collection_name, gapless } = options;
  return JSON.stringify({ id, inc_field, start_seq, inc_amount, reference_fields, collection_name, gapless });
}

/** The counter registered for `id`, or an Error as mongoose-sequence words it. */
function registered(id, verb) {
  const counter = registry.get(String(id));
  if (!counter) throw new Error(`Trying to ${verb} a wrong sequence using the id ${id}`);
  return counter;
}

/** Settles `promise` through `callback` when one is given, else returns it. */
function settle(promise, callback) {
  if (typeof callback !== 'function') return promise;
  promise.then((value) => callback(null, value), (error) => callback(error));
  return undefined;
}

class Counter {
  constructor(connection, options) {
    this.connection = connection;
    this.options = options;
    this.handles = new Map();
  }

  /** The Node driver `Db` of the connection, once it is open. */
  async db() {
    const connection = this.connection;
    if (!connection.db && typeof connection.asPromise === 'function') await connection.asPromise();
    if (!connection.db) throw new Error('mongo-sequence/mongoose: the connection is not open');
    return connection.db;
  }

  /** `reference_value` of `source` (a document, a plain object, or reference values). */
  referenceOf(source) {
    if (!this.options.useReference) return null;
    const reference = {};
    for (const field of this.options.reference_fields) {
      const value = readField(source, field);
      reference[field] = value === undefined ? null : value;
    }
    return reference;
  }

  /** The native handle on the counter document `{ id, reference_value }`. */
  async handle(reference) {
    const db = await this.db();
    const key = referenceKey(reference);
    const kept = this.handles.get(key);
    if (kept && kept.db === db) return kept.handle;
    const handle = core.counterAt(db, { id: this.options.id, reference_value: reference }, {
      collection: this.options.collection_name,
      field: COUNTER_FIELD,
      upsert: true,
      start: this.options.start_seq,
      step: this.options.inc_amount,
    });
    if (this.handles.size > 10_000) this.handles.clear();
    this.handles.set(key, { db, handle });
    return handle;
  }

  /** The next value for a document like `source`. */
  async next(source) {
    return (await this.handle(this.referenceOf(source))).next();
  }

  /** `docs` grouped by reference value, in order of first appearance: `[{ reference, members: [{ doc, index }] }]`. */
  groupByReference(docs) {
    const groups = new Map();
    docs.forEach((doc, index) => {
      const reference = this.referenceOf(doc);
      const key = referenceKey(reference);
      if (!groups.has(key)) groups.set(key, { reference, members: [] });
      groups.get(key).members.push({ doc, index });
    });
    return [...groups.values()];
  }

  /**
   * Numbers `docs` (documents or plain objects) in array order: one block per reference
   * value, reserved in one round trip.
   */
  async numberAll(docs) {
    await Promise.all(
      this.groupByReference(docs).map(async ({ reference, members }) => {
        const values = await (await this.handle(reference)).nextBatch(members.length);
        members.forEach(({ doc }, i) => {
          writeField(doc, this.options.inc_field, values[i]);
          if (doc && doc.$locals) doc.$locals[NUMBERED] = true;
        });
      }),
    );
  }

  /**
   * Gapless mode: validates `docs` (documents of `Model`), then numbers and inserts them
   * in one transaction per reference value (the native insertMany with `gapless`), so a
   * failed insert gives its numbers back. Resolves with the inserted documents, hydrated.
   */
  async insertGapless(Model, docs) {
    // What Model.insertMany does for its documents: timestamps, validation (save
    // middleware does not run, as for insertMany).
    for (const doc of docs) if (typeof doc.initializeTimestamps === 'function') doc.initializeTimestamps();
    await Promise.all(docs.map((doc) => doc.validate()));
    const versionKey = Model.schema.options.versionKey;
    const db = await this.db();
    const inserted = new Array(docs.length);
    for (const { reference, members } of this.groupByReference(docs)) {
      const objects = members.map(({ doc }) => {
        const object = doc.toBSON();
        if (versionKey && object[versionKey] === undefined) object[versionKey] = 0;
        return object;
      });
      await core.insertMany(db, Model.collection.collectionName, objects, {
        gapless: true,
        field: this.options.inc_field,
        sequence: this.options.id,
        counters: this.options.collection_name,
        counterField: COUNTER_FIELD,
        counterLocator: { id: this.options.id, reference_value: reference },
        start: this.options.start_seq,
        step: this.options.inc_amount,
      });
      members.forEach(({ index }, i) => {
        inserted[index] = Model.hydrate(objects[i]);
      });
    }
    return inserted;
  }

  /** Sets the counters of `id` (one reference value, or all) so the next value is start_seq - 1 + inc_amount. */
  async reset(referenceSource) {
    const fields = { id: this.options.id };
    if (referenceSource !== undefined) fields.reference_value = this.referenceOf(referenceSource);
    const matched = await core.setCountersWhere(await this.db(), fields, this.options.start_seq - 1, {
      collection: this.options.collection_name,
      field: COUNTER_FIELD,
    });
    return { acknowledged: true, matchedCount: matched, modifiedCount: matched };
  }
}

function arrayArgument(args) {
  return args.find((a) => Array.isArray(a));
}

/** The refusal, in gapless mode, of `what` (which cannot join the numbering transaction). */
function gaplessRefusal(what) {
  const error = new Error(
    `mongo-sequence/mongoose: with gapless: true, new documents are numbered and inserted in one transaction by Model.create() and Model.insertMany(); ${what} cannot join that transaction`,
  );
  error.code = 'GAPLESS_UNSUPPORTED_OPERATION';
  return error;
}

/** Adds the hooks that number new documents, batches and upserts. */
function addHooks(schema, counter) {
  schema.pre('save', async function numberNewDocument() {
    if (!this.isNew) return;
    if (counter.options.gapless) throw gaplessRefusal('doc.save() of a new document');
    if (this.$locals && this.$locals[NUMBERED]) {
      delete this.$locals[NUMBERED];
      return;
    }
    writeField(this, counter.options.inc_field, await counter.next(this));
  });

  // Declared parameters: mongoose 8 passes (next, docs, options) to hooks that declare
  // any (none otherwise), mongoose 9 (docs, options); either way the promise settles it.
  schema.pre('insertMany', async function numberInsertMany(first, second, third) {
    if (counter.options.gapless) return; // numbered by the insertMany static itself
    const args = [first, second, third];
    let docs = arrayArgument(args);
    if (!docs) {
      const single = args.find((a) => a && typeof a === 'object' && typeof a !== 'function');
      if (!single) return;
      docs = [single];
    }
    await counter.numberAll(docs.filter((d) => d && typeof d === 'object'));
  });

  schema.pre('bulkWrite', async function numberBulkInserts(first, second, third) {
    const ops = arrayArgument([first, second, third]);
    if (!ops) return;
    const documents = ops
      .filter((op) => op && op.insertOne && op.insertOne.document)
      .map((op) => op.insertOne.document);
    if (documents.length && counter.options.gapless) throw gaplessRefusal('a bulkWrite insertOne');
    if (documents.length) await counter.numberAll(documents);
  });

  for (const operation of ['findOneAndUpdate', 'updateOne', 'updateMany']) {
    schema.pre(operation, async function numberUpsert() {
      if (!this.getOptions().upsert) return;
      const update = this.getUpdate() || {};
      // An aggregation-pipeline update has no $setOnInsert: it is left as it is (no number).
      if (Array.isArray(update)) return;
      const field = counter.options.inc_field;
      const already = [update, update.$set, update.$setOnInsert].some((part) => part && Object.hasOwn(part, field));
      if (already) return;
      if (counter.options.gapless) throw gaplessRefusal('an upsert');
      const source = { ...this.getFilter(), ...(update.$setOnInsert || {}), ...(update.$set || {}), ...update };
      const value = await counter.next(source);
      this.setUpdate({ ...update, $setOnInsert: { ...(update.$setOnInsert || {}), [field]: value } });
    });
  }
}

/** `list` as documents of `Model` (documents already are). */
function asDocuments(Model, list) {
  return list.map((d) => (d instanceof Model ? d : new Model(d)));
}

/** Model.create([...]) numbered in array order with one reservation per reference value. */
function addCreate(schema, counter) {
  const previous = schema.statics.create;
  schema.static('create', async function createNumbered(...args) {
    const base = previous || (this.base && this.base.Model && this.base.Model.create) || Object.getPrototypeOf(this).create;
    const many = Array.isArray(args[0]);
    if (counter.options.gapless) {
      const inputs = many ? args[0] : args.filter((a) => a && typeof a === 'object' && !Array.isArray(a)).slice(0, 1);
      const inserted = await counter.insertGapless(this, asDocuments(this, inputs));
      return many ? inserted : inserted[0];
    }
    if (!many || args[0].length < 2) return base.apply(this, args);
    const docs = asDocuments(this, args[0]);
    await counter.numberAll(docs.filter((d) => d.isNew));
    return base.apply(this, [docs, ...args.slice(1)]);
  });
  if (counter.options.gapless) {
    schema.static('insertMany', async function insertManyGapless(docs) {
      const list = Array.isArray(docs) ? docs : [docs];
      return counter.insertGapless(this, asDocuments(this, list));
    });
  }
}

function addMethods(schema) {
  schema.method('setNext', function setNext(id, callback) {
    const work = (async () => {
      const counter = registered(id, 'increment');
      writeField(this, counter.options.inc_field, await counter.next(this));
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
    const work = (async () => registered(id, 'reset').reset(source))();
    return settle(work, cb);
  });
}

function addField(schema, field) {
  const path = schema.path(field);
  if (path === undefined) {
    schema.add({ [field]: Number });
  } else if (path.instance !== 'Number') {
    throw new Error('Auto increment field already present and not of type "Number"');
  }
}

/**
 * `require('mongo-sequence/mongoose')(mongoose)`: the plugin factory, as
 * `require('mongoose-sequence')(mongoose)`. Pass the mongoose instance (counters live on
 * its default connection) or a connection.
 */
function AutoIncrementFactory(connectionOrMongoose) {
  if (arguments.length !== 1) throw new Error(REQUIRE_HELP);
  const target = connectionOrMongoose;
  const connection = target && target.connection && typeof target.model === 'function' && !target.db ? target.connection : target;
  return function AutoIncrement(schema, pluginOptions) {
    const options = normalise(pluginOptions);
    const existing = registry.get(options.id);
    let counter;
    if (!existing) {
      counter = new Counter(connection, options);
      registry.set(options.id, counter);
    } else if (options.exclusive === 'reuse' && signature(existing.options) === signature(options)) {
      // Hot reload: the same schema and options again use the counter already defined.
      counter = existing;
    } else if (options.exclusive === false) {
      // Shared on purpose: the same counter documents, this registration's own options.
      counter = new Counter(connection, options);
    } else {
      throw new Error(`Counter already defined for field "${options.id}"`);
    }
    if (!schemaCounters.has(schema)) schemaCounters.set(schema, []);
    schemaCounters.get(schema).push(counter);
    addField(schema, options.inc_field);
    addMethods(schema);
    if (!options.disable_hooks) {
      addHooks(schema, counter);
      addCreate(schema, counter);
    }
  };
}

/** The counter `Model` numbers with: the one of `id`, or its only one. */
function counterOf(Model, id) {
  const counters = (Model && Model.schema && schemaCounters.get(Model.schema)) || [];
  if (id !== undefined) {
    const found = counters.find((c) => c.options.id === String(id));
    if (!found) throw new Error(`Model ${Model && Model.modelName} has no counter with id "${id}"`);
    return found;
  }
  if (counters.length !== 1) {
    throw new Error(`Model ${Model && Model.modelName} has ${counters.length} counters: name one with its id`);
  }
  return counters[0];
}

/**
 * Raises the counter(s) of `Model` (the one of `id`, or its only one) to the largest
 * `inc_field` among its documents, so that data imported or numbered elsewhere never
 * collides with new numbers: with reference_fields, each combination's counter to the
 * largest of its documents. A descending counter (negative `inc_amount`) is lowered to
 * the smallest instead. Never moves a counter back over numbers it handed out. Resolves
 * with the counters moved as `[{ reference_value, value }]`.
 */
async function syncCounterToMax(Model, id) {
  const counter = counterOf(Model, id);
  const field = counter.options.inc_field;
  if (!counter.options.useReference) {
    const handle = await counter.handle(null);
    return [{ reference_value: null, value: await handle.syncToMax(Model.collection.collectionName, field) }];
  }
  const group = {};
  counter.options.reference_fields.forEach((f, i) => {
    group[`f${i}`] = `$${f}`;
  });
  const maxima = await Model.aggregate([
    { $match: { [field]: { $type: ['int', 'long', 'double'] } } },
    // A descending counter (negative inc_amount) has used the smallest number.
    { $group: { _id: group, max: { [counter.options.inc_amount < 0 ? '$min' : '$max']: `$${field}` } } },
  ]);
  const raised = [];
  for (const { _id: values, max } of maxima) {
    const source = {};
    counter.options.reference_fields.forEach((f, i) => {
      source[f] = values[`f${i}`] ?? null;
    });
    const reference = counter.referenceOf(source);
    raised.push({ reference_value: reference, value: await (await counter.handle(reference)).raiseTo(Math.trunc(max)) });
  }
  return raised;
}

/** Where other plugins keep their counters: collection, the filter for a model's field, the value's field. */
const OTHER_LIBRARIES = {
  typegoose: (model, field) => ({ collection: 'identitycounters', filter: { modelName: model, field }, value: 'count' }),
  'mongoose-auto-increment': (model, field) => ({ collection: 'identitycounters', filter: { model, field }, value: 'count' }),
};

/**
 * Takes over the counter another plugin kept for `Model`'s field: `from` is `'typegoose'`
 * (@typegoose/auto-increment: `identitycounters { field, modelName, count }`) or
 * `'mongoose-auto-increment'` (`identitycounters { model, field, count }`). Raises this
 * plugin's counter (the one of `options.id`, or the model's only one) to that count, the
 * last number the other plugin handed out, so numbering continues after it. Options:
 * `id`, `collection` (default `'identitycounters'`), `modelName` (default the model's),
 * `field` (default the counter's inc_field). Resolves with the counter's value afterwards;
 * rejects when the other counter is not found.
 */
async function takeOverCounter(Model, from, options = {}) {
  const locate = OTHER_LIBRARIES[from];
  if (!locate) throw new TypeError(`takeOverCounter: from must be one of ${Object.keys(OTHER_LIBRARIES).join(', ')}; got ${String(from)}`);
  const counter = counterOf(Model, options.id);
  if (counter.options.useReference) throw new Error('takeOverCounter: counters with reference_fields cannot be taken over (the other plugins keep one counter per model)');
  const where = locate(options.modelName ?? Model.modelName, options.field ?? counter.options.inc_field);
  const db = await counter.db();
  const other = await db.collection(options.collection ?? where.collection).findOne(where.filter);
  const count = other && other[where.value];
  if (count === undefined || count === null) {
    throw new Error(`takeOverCounter: no ${from} counter ${JSON.stringify(where.filter)} in ${options.collection ?? where.collection}`);
  }
  const value = typeof count === 'object' && typeof count.toNumber === 'function' ? count.toNumber() : Number(count);
  return (await counter.handle(null)).raiseTo(Math.trunc(value));
}

module.exports = AutoIncrementFactory;
module.exports.syncCounterToMax = syncCounterToMax;
module.exports.takeOverCounter = takeOverCounter;
module.exports.default = AutoIncrementFactory;
module.exports.AutoIncrementFactory = AutoIncrementFactory;
