'use strict';
// The statics and methods a counter adds to its schema: create and insertMany (numbered
// ahead, or inserted in one transaction with gapless), setNext and counterReset.

const { codedError } = require('../coded-error.js');
const { promiseOrCallback } = require('./callback.js');
const { PLUGIN } = require('./options.js');
const { registered, numbersFor } = require('./registry.js');
const { takesNumber, SAVE, GAPLESS_CREATE, GAPLESS_BATCH } = require('./rule.js');

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
      const inserted = await counter.insertGapless(this, asDocuments(this, inputs), GAPLESS_CREATE);
      return many || inputs.length > 1 ? inserted : inserted[0];
    }
    if (inputs.length === 0) return base.apply(this, args);
    const docs = asDocuments(this, inputs);
    // One document is numbered by its save hook (after the hooks before it, as on save);
    // numbers given in the others first move the counter up (a drop-in's counter).
    if (docs.length > 1)
      await counter.raiseToGiven(
        docs.filter((d) => d.isNew && !takesNumber(counter, d, SAVE, this)),
        this,
      );
    if (docs.length > 1)
      await counter.numberAll(
        docs.filter((d) => d.isNew),
        this,
        SAVE,
      );
    return many ? base.apply(this, [docs, ...args.slice(1)]) : base.apply(this, docs);
  });
  if (counter.options.gapless) {
    schema.static('insertMany', async function insertManyGapless(docs) {
      const list = Array.isArray(docs) ? docs : [docs];
      return counter.insertGapless(this, asDocuments(this, list), GAPLESS_BATCH);
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

/** `doc.setNext(id)` and `Model.counterReset(id, reference)`, as mongoose-sequence names them. */
function addMethods(schema) {
  schema.method('setNext', function setNext(id, callback) {
    const work = (async () => {
      const counter = registered(id, 'increment', this.constructor);
      const field = counter.options.inc_field;
      if (unchangeable(this, field)) {
        throw codedError(
          'INVALID_ARGUMENT',
          `${PLUGIN}: setNext cannot give this saved document a new ${field}: the field is ${field === '_id' ? 'its _id' : 'immutable'}, so the number would not be stored (none was taken)`,
        );
      }
      await counter.numberNow(this);
      return this.save();
    })();
    return promiseOrCallback(work, callback);
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
    return promiseOrCallback(work, cb);
  });
}

module.exports = { addCreate, addMethods, unchangeable };
