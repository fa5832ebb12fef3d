'use strict';
// `mongodb-sequence/mongoose/auto-increment`: a drop-in for mongoose-auto-increment 5
// (`initialize(connection)`, `plugin`, `nextCount` / `resetCount`), numbering from its own
// counter documents, `{ model, field, count }` in `identitycounters`, in place. Only the
// options and the counter's whereabouts are read here: the documents are numbered by the
// mongoose plugin's counter (lib/mongoose/), the values taken by the native core.

const { codedError } = require('../coded-error.js');
const { identityCounter, IDENTITY_COUNTERS } = require('../mongoose/located-counter.js');
const { addToSchema } = require('../mongoose/registry.js');
const { addHooks } = require('../mongoose/hooks.js');
const { addCreate } = require('../mongoose/statics.js');
const { promiseOrCallback } = require('../mongoose/callback.js');
const { openDb } = require('../mongoose/connection.js');
const { LATEST } = require('../mongoose/latest-read.js');
const { checkCache, integerOption } = require('../mongoose/options.js');

/** The name errors start with. */
const PLUGIN = 'mongodb-sequence/mongoose/auto-increment';
/** Where mongoose-auto-increment keeps its counters: its model's name and collection. */
const COUNTER_MODEL = 'IdentityCounter';
const COUNTER_COLLECTION = IDENTITY_COUNTERS;

/** The connection `initialize` was given: the counters of every later `plugin` live there. */
let countersConnection = null;

function invalid(message) {
  return codedError('INVALID_ARGUMENT', message, { type: TypeError });
}

/**
 * `initialize(connection)`: the connection that holds the counters, as
 * mongoose-auto-increment takes it (mongoose itself: its default connection), with its
 * `IdentityCounter` model registered on it (unless it has one) for code that reads the
 * counters through it.
 */
function initialize(given) {
  if (!given || typeof given.model !== 'function') throw invalid(`${PLUGIN}: initialize takes a mongoose connection (or mongoose itself)`);
  // Mongoose itself (as mongoose-auto-increment accepts it): its default connection.
  const connection = typeof given.createConnection === 'function' && given.connection && typeof given.connection.model === 'function' ? given.connection : given;
  const models = connection.models || {};
  const mongoose = connection.base || connection;
  if (!models[COUNTER_MODEL] && typeof mongoose.Schema === 'function') {
    const schema = new mongoose.Schema({ model: { type: String }, field: { type: String }, count: { type: Number, default: 0 } });
    connection.model(COUNTER_MODEL, schema, COUNTER_COLLECTION);
  }
  countersConnection = connection;
}

/** Duplicated counters named at most, in an error. */
const DUPLICATES_NAMED = 10;

/**
 * `error`, an `INDEX_CONFLICT` of a counter in `connection`'s `identitycounters`, as one
 * that names what refuses the unique index `{ field: 1, model: 1 }` when it is counters
 * stored twice or more (mongoose-auto-increment never had a working unique index, so two
 * processes starting at once could each create one), and how to fix it; else `error`.
 */
async function explainIndexConflict(connection, error) {
  let duplicates;
  try {
    duplicates = await connection.db
      .collection(COUNTER_COLLECTION)
      .aggregate([
        { $group: { _id: { model: '$model', field: '$field' }, copies: { $sum: 1 }, counts: { $push: '$count' } } },
        { $match: { copies: { $gt: 1 } } },
        { $sort: { '_id.model': 1, '_id.field': 1 } },
        { $limit: DUPLICATES_NAMED + 1 },
      ])
      .toArray();
  } catch {
    return error;
  }
  if (duplicates.length === 0) return error;
  const named = duplicates
    .slice(0, DUPLICATES_NAMED)
    .map(({ _id, counts }) => `model '${_id.model}', field '${_id.field}' (counts ${counts.join(', ')})`)
    .join('; ');
  const more = duplicates.length > DUPLICATES_NAMED ? '; and more' : '';
  const explained = codedError(
    'INDEX_CONFLICT',
    `${PLUGIN}: the unique index { field: 1, model: 1 } cannot be made on collection '${COUNTER_COLLECTION}' of database '${connection.db.databaseName}': these counters are stored more than once (left by mongoose-auto-increment, which had no working unique index): ${named}${more}. Keep the document with the largest count of each and delete the others (removeDuplicateCounters() does it); numbering then works again, without a restart`,
    { cause: error },
  );
  explained.duplicates = duplicates.slice(0, DUPLICATES_NAMED).map(({ _id, counts }) => ({ model: _id.model, field: _id.field, counts }));
  return explained;
}

/**
 * Removes the counters stored more than once in `connection`'s `identitycounters`
 * (default: the one given to `initialize`): of each `{ model, field }`, the document with
 * the largest `count` (the last number handed out) is kept, the others deleted, so the
 * unique index `{ field: 1, model: 1 }` can be made. Resolves with what it did:
 * `[{ model, field, kept, removed }]` (`kept` the count kept, `removed` the counts
 * deleted). Run it while nothing numbers documents of the duplicated models.
 */
async function removeDuplicateCounters(connection = countersConnection) {
  if (!connection || typeof connection.model !== 'function') throw invalid(`${PLUGIN}: removeDuplicateCounters takes a mongoose connection (or call initialize first)`);
  const db = await openDb(connection);
  const counters = db.collection(COUNTER_COLLECTION);
  let duplicated;
  try {
    duplicated = await counters
      .aggregate(
        [
          { $sort: { count: -1 } },
          { $group: { _id: { model: '$model', field: '$field' }, copies: { $push: { id: '$_id', count: '$count' } } } },
          { $match: { 'copies.1': { $exists: true } } },
          { $sort: { '_id.model': 1, '_id.field': 1 } },
        ],
        // Which copy is kept decides what numbering continues from.
        LATEST,
      )
      .toArray();
    for (const { copies } of duplicated) copies.sort((a, b) => Number(b.count) - Number(a.count));
    for (const { copies } of duplicated) await counters.deleteMany({ _id: { $in: copies.slice(1).map((c) => c.id) } });
  } catch (error) {
    throw codedError('SERVER', `${PLUGIN}: removing duplicated counters failed: ${error && error.message}`, { cause: error });
  }
  return duplicated.map(({ _id, copies }) => ({ model: _id.model, field: _id.field, kept: copies[0].count, removed: copies.slice(1).map((c) => c.count) }));
}

/** The options of `plugin` with mongoose-auto-increment's defaults, checked. */
function settingsOf(options) {
  const settings = { model: null, field: '_id', startAt: 0, incrementBy: 1, unique: true };
  if (typeof options === 'string') settings.model = options;
  else if (options && typeof options === 'object') Object.assign(settings, options);
  if (settings.model === null || settings.model === undefined) throw invalid('model must be set');
  if (typeof settings.model !== 'string' || settings.model === '') throw invalid(`${PLUGIN}: option model must be a non-empty string`);
  if (typeof settings.field !== 'string' || settings.field === '') throw invalid(`${PLUGIN}: option field must be a non-empty string`);
  settings.startAt = integerOption(`${PLUGIN}: `, 'startAt', settings.startAt);
  settings.incrementBy = integerOption(`${PLUGIN}: `, 'incrementBy', settings.incrementBy, { nonZero: true });
  if (typeof settings.unique !== 'boolean') throw invalid(`${PLUGIN}: option unique must be a boolean`);
  settings.cache = checkCache(PLUGIN, settings.cache);
  return settings;
}

/** The model a static (`this` a model) or a method (`this` a document) is called on. */
function modelOfThis(self) {
  return typeof self === 'function' ? self : self && self.constructor;
}

/**
 * `schema.plugin(plugin, 'Model')` or `schema.plugin(plugin, { model, field, startAt,
 * incrementBy, unique })`: numbers `field` of new documents from the counter
 * `{ model, field, count }`: the first gets `startAt`, each next one `incrementBy` more. A
 * new document saved with a number of its own keeps it, and the counter moves up to it.
 */
function plugin(schema, options) {
  if (!countersConnection) throw invalid('mongoose-auto-increment has not been initialized');
  const settings = settingsOf(options);
  const { model, field, startAt, incrementBy } = settings;
  const connection = countersConnection;
  // Declared with another type or not, the field becomes a Number, as
  // mongoose-auto-increment makes it (its schema.add replaces the declaration).
  schema.add({ [field]: field === '_id' ? { type: Number } : { type: Number, unique: settings.unique } });

  const counter = identityCounter(settings, {
    plugin: PLUGIN,
    // In the order of mongoose-auto-increment's index { field: 1, model: 1 }.
    locate: () => ({ field, model }),
    connection: countersConnection,
    explainIndexConflict: (error) => explainIndexConflict(connection, error),
  });
  addToSchema(schema, counter);
  addHooks(schema, counter);
  addCreate(schema, counter);

  // A number given to a new document moves the counter up to it (never down), so the
  // numbers after it do not collide with it.
  schema.pre('save', async function raiseCounterToGivenNumber() {
    if (!this.isNew || counter.ownNumber(this)) return;
    const given = this.get(field);
    if (typeof given === 'number' && Number.isFinite(given)) await counter.raiseTo(this, Math.floor(given));
  });

  /** The number the next new document will get (`startAt` before the first). */
  function nextCount(callback) {
    const Model = modelOfThis(this);
    return promiseOrCallback(counter.nextNumber(Model), callback);
  }
  /** Sets the counter back so that the next new document gets `startAt`; resolves with `startAt`. */
  function resetCount(callback) {
    const Model = modelOfThis(this);
    return promiseOrCallback(
      counter.setValue(Model, startAt - incrementBy).then(() => startAt),
      callback,
    );
  }
  schema.method('nextCount', nextCount);
  schema.static('nextCount', nextCount);
  schema.method('resetCount', resetCount);
  schema.static('resetCount', resetCount);
}

module.exports = { initialize, plugin, removeDuplicateCounters };
