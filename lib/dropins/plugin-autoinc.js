'use strict';
// `mongodb-sequence/mongoose/plugin-autoinc`: a drop-in for mongoose-plugin-autoinc 1
// (`autoIncrement` / `plugin`, `groupingField`, `outputFilter`, `migrate`, `nextCount` /
// `resetCount` returning promises), numbering from its own counter documents,
// `{ model, field, groupingField, count }` in `identitycounters`, in place, and those of
// mongoose-auto-increment (no `groupingField`), which it converts as it does. Only the
// options and the counter's whereabouts are read here: the documents are numbered by the
// mongoose plugin's counter (lib/mongoose/), the values taken by the native core.

const { codedError } = require('../coded-error.js');
const { identityCounter, IDENTITY_COUNTERS } = require('../mongoose/located-counter.js');
const { addToSchema } = require('../mongoose/registry.js');
const { addHooks } = require('../mongoose/hooks.js');
const { LATEST } = require('../mongoose/latest-read.js');
const { addCreate } = require('../mongoose/statics.js');
const { isDocument, readField } = require('../mongoose/paths.js');
const { asCast } = require('../mongoose/cast.js');
const { takesNumber, SAVE } = require('../mongoose/rule.js');
const { checkCache, integerOption } = require('../mongoose/options.js');

/** The name errors start with. */
const PLUGIN = 'mongodb-sequence/mongoose/plugin-autoinc';
const COUNTER_COLLECTION = IDENTITY_COUNTERS;

function invalid(message) {
  return codedError('INVALID_ARGUMENT', message, { type: TypeError });
}

/** Kept for compatibility: mongoose-plugin-autoinc deprecated it; it does nothing. */
function initialize() {}

/**
 * A grouping value as its counter document stores it: a falsy value as `''`, anything
 * else as the string mongoose's String cast makes of it (an ObjectId as its hex string);
 * a populated reference (a document, or an object with an `_id`) by its `_id`, the value
 * the document stores.
 */
function groupKey(value) {
  if (!value) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && !value._bsontype && value._id !== undefined && value._id !== null) return groupKey(value._id);
  return String(value);
}

/** The options with mongoose-plugin-autoinc's defaults, checked. */
function settingsOf(options) {
  let settings = { migrate: false, model: undefined, field: '_id', groupingField: '', startAt: 0, incrementBy: 1, unique: true, outputFilter: undefined };
  if (typeof options === 'string') settings.model = options;
  else if (options && typeof options === 'object') settings = { ...settings, ...options };
  if (typeof settings.model !== 'string') throw invalid('model must be set');
  if (typeof settings.field !== 'string' || settings.field === '') throw invalid(`${PLUGIN}: option field must be a non-empty string`);
  if (typeof settings.groupingField !== 'string') throw invalid(`${PLUGIN}: option groupingField must be a string`);
  if (settings.field === '_id' && settings.groupingField.length) throw invalid('Cannot use a grouping field with _id, choose a different field name.');
  settings.startAt = integerOption(`${PLUGIN}: `, 'startAt', settings.startAt);
  settings.incrementBy = integerOption(`${PLUGIN}: `, 'incrementBy', settings.incrementBy, { nonZero: true });
  if (settings.outputFilter !== undefined && typeof settings.outputFilter !== 'function') throw invalid(`${PLUGIN}: option outputFilter must be a function`);
  settings.cache = checkCache(PLUGIN, settings.cache);
  return settings;
}

/**
 * Converts a mongoose-auto-increment counter (no `groupingField`) of the counter at
 * `locator` in place, as mongoose-plugin-autoinc does: it gets `groupingField: ''`. A
 * counter already in the new form (made meanwhile) wins: the old one is left as it is.
 */
async function convertOldCounter(db, locator) {
  if (locator.groupingField !== '') return;
  const counters = db.collection(COUNTER_COLLECTION);
  try {
    if (await counters.findOne(locator, { ...LATEST, projection: { _id: 1 } })) return;
    await counters.updateOne({ model: locator.model, field: locator.field, groupingField: { $exists: false } }, { $set: { groupingField: '' } });
  } catch (error) {
    if (error && Number(error.code) === 11000) return;
    throw driverError(error);
  }
}

/** A Node driver error as one of the package's: `CONNECTION` when no server answered, else `SERVER` (with the server's code). */
function driverError(error) {
  const name = String(error && error.name);
  const unreachable = /Network|ServerSelection|Timeout|Topology/.test(name);
  const coded = codedError(unreachable ? 'CONNECTION' : 'SERVER', `${PLUGIN}: converting an old counter failed: ${error && error.message}`, { cause: error });
  if (!unreachable && error && error.code !== undefined) {
    coded.serverCode = error.code;
    if (error.codeName) coded.codeName = error.codeName;
  }
  return coded;
}

/** Its counter schema, one per mongoose instance. */
const counterSchemas = new WeakMap();

/**
 * Registers its `IdentityCounter` model on `connection` unless it has a model of that name,
 * as mongoose-plugin-autoinc did at the first numbering: code written for it reads (or
 * drops) the counters through it. The counters are numbered by the core, not through it.
 */
function counterModel(connection) {
  if (!connection || typeof connection.model !== 'function' || (connection.models && connection.models.IdentityCounter)) return;
  const mongoose = connection.base;
  if (!mongoose || typeof mongoose.Schema !== 'function') return;
  let schema = counterSchemas.get(mongoose);
  if (!schema) {
    schema = new mongoose.Schema({
      model: { type: String, required: true },
      field: { type: String, required: true },
      groupingField: { type: String, default: '' },
      count: { type: Number, default: 0 },
    });
    schema.index({ field: 1, groupingField: 1, model: 1 }, { unique: true });
    counterSchemas.set(mongoose, schema);
  }
  connection.model('IdentityCounter', schema, COUNTER_COLLECTION);
}

/** The model a static (`this` a model) or a method (`this` a document) is called on. */
function modelOfThis(self) {
  return typeof self === 'function' ? self : self && self.constructor;
}

/**
 * The plugin: numbers `field` (default `_id`) of new documents from the counter
 * `{ model, field, groupingField, count }`, one counter per value of `groupingField` when
 * given: the first gets `startAt`, each next one `incrementBy` more, passed through
 * `outputFilter`. Numbered before validation, as mongoose-plugin-autoinc numbers them. A
 * number given to a new document is kept and moves the counter up to it. `migrate: true`
 * numbers every saved document that has no number yet.
 */
function autoIncrement(schema, options) {
  const settings = settingsOf(options);
  const { model, field, groupingField, startAt, incrementBy } = settings;
  if (!schema.path(field) || field === '_id') schema.path(field, Number);
  if (groupingField.length) schema.index({ [field]: 1, [groupingField]: 1 }, { unique: settings.unique });
  else if (field !== '_id') schema.path(field).index({ unique: settings.unique });

  const groupOf = (source, Model) => {
    if (!groupingField.length) return '';
    const doc = isDocument(source) || !Model ? source : asCast(Model, source);
    return groupKey(doc ? readField(doc, groupingField) : undefined);
  };
  const counter = identityCounter(settings, {
    plugin: PLUGIN,
    // In the order of mongoose-plugin-autoinc's index { field: 1, groupingField: 1, model: 1 }.
    locate: (Model, source) => ({ field, groupingField: groupOf(source, Model), model }),
    referenceFields: groupingField.length ? [groupingField] : null,
    output: settings.outputFilter,
    prepare: convertOldCounter,
    // Only the '' group's counter can be one of mongoose-auto-increment's to convert.
    preparesFor: (locator) => locator.groupingField === '',
    onConnection: counterModel,
    // mongoose-plugin-autoinc keeps one counter for every tenant database (`useDb`), in the
    // first one that numbered: a tenant's counter absent here continues after its numbers
    // stored. Not through an outputFilter: the numbers stored are then not counts.
    seedFromDocuments: settings.outputFilter === undefined,
  });
  addToSchema(schema, counter);
  addHooks(schema, counter);
  addCreate(schema, counter);

  // Numbered before validation, so that validators (a required field) see the number; the
  // save hook then keeps it. With migrate, saved documents without a number get one too.
  schema.pre('validate', async function numberBeforeValidation() {
    if (this.isNew ? takesNumber(counter, this, SAVE) : settings.migrate && typeof this.get(field) !== 'number') await counter.numberNow(this);
  });
  // A number given to a new document (or, with migrate, found on a saved one) moves the
  // counter up to it (never down).
  schema.pre('save', async function raiseCounterToGivenNumber() {
    if ((!this.isNew && !settings.migrate) || counter.ownNumber(this)) return;
    const given = this.get(field);
    if (typeof given === 'number' && Number.isFinite(given)) await counter.raiseTo(this, Math.floor(given));
  });

  /**
   * The counter's next number for `group` (default `''`); `startAt` before the first. Not
   * passed through outputFilter: mongoose-plugin-autoinc's nextCount returns the count.
   */
  async function nextCount(group) {
    const Model = modelOfThis(this);
    return counter.nextNumberOf({ field, groupingField: groupKey(group), model }, Model);
  }
  /** Sets the counter of `group` back so its next number is `startAt`; resolves with `startAt`. */
  async function resetCount(group) {
    const Model = modelOfThis(this);
    await counter.setValueOf({ field, groupingField: groupKey(group), model }, Model, startAt - incrementBy);
    return startAt;
  }
  schema.method('nextCount', nextCount);
  schema.static('nextCount', nextCount);
  schema.method('resetCount', resetCount);
  schema.static('resetCount', resetCount);
}

function plugin(schema, options) {
  return autoIncrement(schema, options);
}

// The plugin itself, with its names as properties: `require(...)`, a default import and
// the named exports all give it, as the package's compiled exports did.
module.exports = autoIncrement;
module.exports.autoIncrement = autoIncrement;
module.exports.plugin = plugin;
module.exports.initialize = initialize;
module.exports.default = autoIncrement;
