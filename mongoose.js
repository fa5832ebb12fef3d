'use strict';
// mongoose plugin: a drop-in for mongoose-sequence 6 (same options, methods, messages and
// counter documents) that also numbers insertMany, Model.create([...]), bulkWrite
// insertOne operations and upserts. The hooks only gather documents and set fields: the
// counters are advanced by the native core (counterAt / setCountersWhere), with one
// round trip per call, merged across concurrent saves.
//
// This file is the factory; the plugin's parts live in lib/mongoose/, one role each:
//
//   rule.js           which documents take a number: a state table, read by every write
//   counter.js        one counter: native handles, its record of the numbers it gave,
//                     numbering one document, a batch, a gapless insert; reset
//   hooks.js          the schema hooks: save, insertMany, bulkWrite, upserts
//   statics.js        create / insertMany statics, setNext, counterReset
//   upserts.js        what an upsert inserts and where its number goes
//   options.js        defaults and checks of the options, the refusals they cause
//   registry.js       the counters defined, by id and by schema
//   cast.js           plain objects cast with a model's schema; discriminators
//   reference-key.js  the key of a reference value (its BSON)
//   paths.js          dotted paths of documents and plain objects
//   connection.js     the driver Db of a connection, waited for as mongoose buffers
//   migration.js      syncCounterToMax, takeOverCounter

const { codedError } = require('./lib/coded-error.js');
const { normalise, signature, signatureDifferences, checkField, PLUGIN } = require('./lib/mongoose/options.js');
const { registry, countersOf, addToSchema } = require('./lib/mongoose/registry.js');
const { Counter } = require('./lib/mongoose/counter.js');
const { addHooks } = require('./lib/mongoose/hooks.js');
const { addCreate, addMethods } = require('./lib/mongoose/statics.js');
const { syncCounterToMax, takeOverCounter } = require('./lib/mongoose/migration.js');

const REQUIRE_HELP = "Please, pass mongoose while requiring mongodb-sequence/mongoose: require('mongodb-sequence/mongoose')(mongoose)";

/** Adds `inc_field` to the schema as a Number, unless it has it (refused with another type). */
function addField(schema, field) {
  checkField(schema, field);
  if (schema.path(field) === undefined) schema.add({ [field]: Number });
}

/**
 * The counter a registration of `options` on `connection` numbers with: a new one, or
 * with `exclusive: 'reuse'` and the same options the one already defined; refused when
 * the id is taken (`exclusive: true`).
 */
function counterFor(connection, options, bson) {
  const existing = registry.get(options.id);
  if (!existing) {
    const counter = new Counter(connection, options, bson);
    registry.set(options.id, counter);
    return counter;
  }
  if (options.exclusive === 'reuse' && signature(existing.options) === signature(options)) {
    // Hot reload: the same schema and options again use the counter already defined,
    // on the same connection; on another connection (another database) the counter is
    // that connection's own, as with exclusive: false.
    return existing.connection === connection ? existing : new Counter(connection, options, bson);
  }
  // Shared on purpose: the same counter documents, this registration's own options.
  if (options.exclusive === false) return new Counter(connection, options, bson);
  throw alreadyDefined(existing, options);
}

/**
 * The refusal of a second registration of `options.id`: mongoose-sequence's message first
 * (code written for it may match it), then the remedy. The same options again are refused
 * too: a model file run again (a hot reload) makes a new schema with the same options, and
 * so does a second model that shares the id by mistake (`id` defaults to `inc_field`);
 * nothing at plugin time (no model name yet) tells them apart, and taken silently the
 * second would number its collection from the first one's counter. Only the caller can
 * say it is the same model.
 */
function alreadyDefined(existing, options) {
  const prefix = `Counter already defined for field "${options.id}"`;
  if (options.exclusive === 'reuse') {
    const differing = signatureDifferences(existing.options, options);
    const verb = differing.length === 1 ? 'differs' : 'differ';
    return codedError('INVALID_ARGUMENT', `${prefix}; exclusive: 'reuse' accepts it again only with the same options, and ${differing.join(', ')} ${verb}`);
  }
  return codedError(
    'INVALID_ARGUMENT',
    `${prefix}; pass exclusive: 'reuse' to accept the same counter registered again (a hot reload re-running the model file), or give each model's counter an id of its own`,
  );
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
    const counter = counterFor(connection, options, bson);
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
