'use strict';
// `mongodb-sequence/mongoose/typegoose`: a drop-in for @typegoose/auto-increment 5
// (`AutoIncrementID`, `AutoIncrementIDSkipSymbol`, `AutoIncrementSimple`), numbering from
// its own counter documents, `{ modelName, field, count }` in `identitycounters`, in place.
// Only the options and the counter's whereabouts are read here: the documents are
// numbered by the mongoose plugin's counter (lib/mongoose/), the values taken by the
// native core.

const { codedError } = require('../coded-error.js');
const { LocatedCounter } = require('../mongoose/located-counter.js');
const { addToSchema } = require('../mongoose/registry.js');
const { addHooks } = require('../mongoose/hooks.js');
const { addCreate } = require('../mongoose/statics.js');
const { asCast } = require('../mongoose/cast.js');
const { isDocument } = require('../mongoose/paths.js');
const { checkCache, shown, integerOption } = require('../mongoose/options.js');

/** The name errors start with. */
const PLUGIN = 'mongodb-sequence/mongoose/typegoose';

/**
 * Set to `true` on a document (or on a connection: every document saved through it) so
 * that `AutoIncrementID` gives it no number.
 */
const AutoIncrementIDSkipSymbol = Symbol('AutoIncrementIDSkip');

function isNullOrUndefined(value) {
  return value === null || value === undefined;
}

/** A refusal, worded as typegoose words it (its users' tests match the messages). */
function invalid(message) {
  return codedError('INVALID_ARGUMENT', message, { type: TypeError });
}

/**
 * An integer option as a number: a safe integer number, a BigInt, or decimal digits in a
 * string (typegoose passes it to `BigInt()`, which reads them so); `nonZero`: not 0.
 */
function integer(name, value, nonZero) {
  return integerOption('', name, value, { nonZero, bigint: true });
}

/** The schema type of `field` in `schema`: `'Number'` or `'BigInt'`, else refused as typegoose refuses it. */
function numericPath(schema, field) {
  if (typeof field !== 'string' || field === '') throw invalid(`option field must be a non-empty string; got ${shown(field)}`);
  const path = schema.path(field);
  if (isNullOrUndefined(path)) throw invalid(`Field "${field}" does not exists on the Schema!`);
  if (path.instance !== 'Number' && path.instance !== 'BigInt') throw invalid(`Field "${field}" is not a Number or BigInt!`);
  return path.instance;
}

/** The options of `AutoIncrementID` with typegoose's defaults, checked. */
function idOptions(options) {
  if (options !== undefined && (options === null || typeof options !== 'object')) throw invalid('the options must be an object');
  const opt = {
    field: '_id',
    incrementBy: 1,
    trackerCollection: 'identitycounters',
    trackerModelName: 'identitycounter',
    startAt: 0,
    overwriteModelName: '',
    ...options,
  };
  opt.incrementBy = integer('incrementBy', opt.incrementBy, true);
  opt.startAt = integer('startAt', opt.startAt, false);
  if (typeof opt.trackerCollection !== 'string' || opt.trackerCollection === '') throw invalid('option trackerCollection must be a non-empty string');
  if (typeof opt.trackerModelName !== 'string') throw invalid('option trackerModelName must be a string');
  if (typeof opt.overwriteModelName !== 'string' && typeof opt.overwriteModelName !== 'function') {
    throw invalid('option overwriteModelName must be a string or a function');
  }
  opt.cache = checkCache(PLUGIN, opt.cache);
  return opt;
}

/**
 * The model name the counter of `Model` is kept under (`overwriteModelName`, else the
 * model's; `null` for a subdocument's constructor, which has none, as typegoose stores it).
 */
function trackedName(opt, Model) {
  if (typeof opt.overwriteModelName !== 'function') return opt.overwriteModelName || Model.modelName || null;
  const name = opt.overwriteModelName(Model.modelName, Model);
  if (!name || typeof name !== 'string') throw invalid('"overwriteModelname" is a function, but did return a falsy type or is not a string!');
  return name;
}

/** typegoose's tracker schema, one per mongoose instance. */
const trackerSchemas = new WeakMap();

/**
 * Registers typegoose's tracker model (`trackerModelName`, on `trackerCollection`) on
 * `connection` unless it has a model of that name: code written for typegoose reads the
 * counters through it. The counters are numbered by the core, not through it.
 */
function trackerModel(connection, opt) {
  if (!connection || typeof connection.model !== 'function' || (connection.models && connection.models[opt.trackerModelName])) return;
  const mongoose = connection.base;
  if (!mongoose || typeof mongoose.Schema !== 'function') return;
  let schema = trackerSchemas.get(mongoose);
  if (!schema) {
    schema = new mongoose.Schema({ field: String, modelName: String, count: BigInt }, { versionKey: false });
    schema.index({ field: 1, modelName: 1 }, { unique: true });
    trackerSchemas.set(mongoose, schema);
  }
  connection.model(opt.trackerModelName, schema, opt.trackerCollection);
}

/**
 * The plugin: numbers `field` (default `_id`, a Number or BigInt path) of new documents
 * from the counter `{ modelName, field, count }` of `trackerCollection`: the first document
 * gets `startAt`, each next one `incrementBy` more. New documents are numbered by `save`,
 * `Model.create` (one round trip for an array), `insertMany` and `bulkWrite` inserts (those
 * without a value of their own) and upserts, unless skipped by `AutoIncrementIDSkipSymbol`.
 */
function AutoIncrementID(schema, options) {
  const opt = idOptions(options);
  const type = numericPath(schema, opt.field);
  const counter = new LocatedCounter({
    plugin: PLUGIN,
    label: `${opt.field} (typegoose)`,
    field: opt.field,
    collection: opt.trackerCollection,
    counterField: 'count',
    start: opt.startAt,
    step: opt.incrementBy,
    bigint: type === 'BigInt',
    cache: opt.cache,
    // In the order of typegoose's unique index, so the core makes sure of that very index.
    locate: (Model, source) => {
      // A plain object is counted as the document it becomes (a discriminator's, when it names one).
      const cast = isDocument(source) ? null : asCast(Model, source);
      const model = cast && isDocument(cast) ? cast.constructor : Model;
      return { field: opt.field, modelName: trackedName(opt, model) };
    },
    exempt: (doc, Model) => {
      if (doc[AutoIncrementIDSkipSymbol] === true) return true;
      const db = isDocument(doc) ? (doc.db ?? (typeof doc.ownerDocument === 'function' ? doc.ownerDocument().db : undefined)) : Model && Model.db;
      return Boolean(db && db[AutoIncrementIDSkipSymbol] === true);
    },
    onConnection: (connection) => trackerModel(connection, opt),
    // typegoose keeps one counter for every tenant database (`useDb`), in the first one
    // that numbered: a tenant's counter absent here continues after its numbers stored.
    seedFromDocuments: true,
  });
  addToSchema(schema, counter);
  addHooks(schema, counter);
  addCreate(schema, counter);
  if (typeof opt.overwriteModelName === 'function') {
    // typegoose asks the name function on every save, of saved documents too (and fails
    // the save when it answers no name); new documents ask it as they take their number.
    schema.pre('save', function AutoIncrementIDName() {
      if (!this.isNew && typeof this.constructor.modelName === 'string') trackedName(opt, this.constructor);
    });
  }
}

/**
 * typegoose's simple version, kept as it is: every save of a document that is not new
 * adds `incrementBy` (default 1) to each field given (a revision number; no counter).
 */
function AutoIncrementSimple(schema, options) {
  const given = Array.isArray(options) ? options : [options];
  if (given.length <= 0) throw invalid('Options with at least one field are required!');
  const fields = given.map((entry) => {
    if (!entry || typeof entry.field !== 'string') {
      throw invalid(`Got Field object, but did not contain a "field" key with "string" value, got: ${JSON.stringify(entry)}`);
    }
    const type = numericPath(schema, entry.field);
    if (typeof entry.incrementBy === 'string') {
      throw invalid(
        `option incrementBy of AutoIncrementSimple must be a number or a BigInt: typegoose adds it with +, which joins a string to the value (5 + "2" is "52"); got ${shown(entry.incrementBy)}`,
      );
    }
    const by = integer('incrementBy', isNullOrUndefined(entry.incrementBy) ? 1 : entry.incrementBy, false);
    return { field: entry.field, incrementBy: type === 'BigInt' ? BigInt(by) : Number(by) };
  });
  schema.pre('save', function AutoIncrementPreSaveSimple() {
    if (this.isNew) return;
    for (const { field, incrementBy } of fields) this.set(field, this.get(field) + incrementBy);
  });
}

module.exports = { AutoIncrementID, AutoIncrementIDSkipSymbol, AutoIncrementSimple, isNullOrUndefined };
