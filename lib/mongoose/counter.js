'use strict';
// One counter of the plugin: its options, its native handles (one per reference value),
// its record of the numbers it gave, and the numbering of documents and batches. Which
// documents take a number is the rule's (./rule.js).

// Through the package's entry, so that the plugin's calls are traced like a user's.
const core = require('../entry.js');
const { BoundedCache } = require('../bounded-cache.js');
const { codedError } = require('../coded-error.js');
const { PLUGIN, COUNTER_FIELD } = require('./options.js');
const { isDocument, readField, writeField, withField, resolvePath } = require('./paths.js');
const { plainValue, referenceKey } = require('./reference-key.js');
const { asCast } = require('./cast.js');
const { openDb } = require('./connection.js');
const { takesNumber, SAVE, BATCH } = require('./rule.js');

/**
 * Native handles a counter keeps, at most (one per reference value, least recently used
 * dropped first; a dropped one is made again when needed).
 */
const HANDLES_KEPT = 1024;

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
   * What this counter recorded when it numbered `doc` (`{ key, value }`), while `doc`
   * still carries that number; `undefined` otherwise.
   */
  ownNumber(doc) {
    const mine = this.numbered.get(doc);
    return mine && readField(doc, this.options.inc_field, true) === mine.value ? mine : undefined;
  }

  /**
   * Whether the caller set `inc_field` of `doc` (a value that is neither null nor the
   * schema's default, and for a plain object one that `Model`'s schema casts to a value).
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

  /** Forgets the number this counter gave `doc` once `doc` is stored: the number is the stored document's now. */
  stored(doc) {
    if (doc && typeof doc === 'object') this.numbered.delete(doc);
  }

  /** What a document receives for the counter's `value` (the value itself; a drop-in may filter it). */
  shown(value) {
    return value;
  }

  /** Sets `value` on `doc` and records that this counter gave it for `reference` (as stored: after setters). */
  give(doc, reference, value) {
    writeField(doc, this.options.inc_field, this.shown(value));
    if (isDocument(doc)) this.numbered.set(doc, { key: this.keyOf(reference), value: readField(doc, this.options.inc_field, true) });
  }

  /**
   * Numbers a new document on save, as mongoose-sequence does, unless the rule keeps its
   * number. A document numbered for another reference value than it has now is numbered
   * again, from the counter of that value.
   */
  async numberOnSave(doc) {
    if (!takesNumber(this, doc, SAVE)) return;
    await this.numberNow(doc);
  }

  /**
   * Moves counters up to the numbers given in `sources` before a write keeps them: nothing
   * here (mongoose-sequence does not); a drop-in's counter does (./located-counter.js).
   */
  async raiseToGiven() {}

  /** Gives `doc` the next number of the counter of its reference value (setNext, save). */
  async numberNow(doc) {
    const reference = this.referenceOf(doc);
    const value = await this.numbering(reference, this.modelOf(doc), (handle) => handle.next());
    this.give(doc, reference, value);
  }

  /** What `take(handle)` (a numbering call on the native handle of `reference`) resolves with. */
  async numbering(reference, Model, take) {
    return this.call(take(await this.handle(reference, Model)));
  }

  /** The model whose connection numbers `doc` (a subdocument is numbered on the connection its constructor knows). */
  modelOf(doc) {
    return doc.constructor;
  }

  /** Whether the counter has reference_fields (one counter document per combination of their values). */
  get scoped() {
    return this.options.reference_fields !== null;
  }

  /** The Node driver `Db` of the connection, once it is open (see openDb). */
  async db(Model) {
    return openDb(this.connection, Model);
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

  /**
   * `error`, or for an `UNSUPPORTED_CLIENT` refusal without the plugin's `uri`, one that
   * says how to give it (not for a client certificate that no connection can present).
   */
  explained(error) {
    if (!error || error.code !== 'UNSUPPORTED_CLIENT' || this.options.uri !== undefined) return error;
    if (/X\.509 version \d/.test(error.message)) return error;
    return codedError(
      'UNSUPPORTED_CLIENT',
      `${PLUGIN}: ${error.message}. With the mongoose plugin, give the counters their connection string as the plugin's uri option: schema.plugin(AutoIncrement, { uri: process.env.MONGODB_URI, ... })`,
      { cause: error },
    );
  }

  /** The field of a counter document that holds its value. */
  get counterField() {
    return COUNTER_FIELD;
  }

  /** The fields that find the counter document of `reference` (mongoose-sequence's `{ id, reference_value }`). */
  locatorOf(reference) {
    return { id: this.options.id, reference_value: reference };
  }

  /** The options of the native handle that numbers documents. */
  handleOptions() {
    return this.nativeOptions({ upsert: true, start: this.options.start_seq, step: this.options.inc_amount, ...this.cacheOption() });
  }

  /** `{ cache }` when the counter has a cache (values reserved in blocks per process), else nothing. */
  cacheOption() {
    return this.options.cache === undefined ? {} : { cache: this.options.cache };
  }

  /** The options of the native calls on this counter's documents (and the plugin's `uri`). */
  nativeOptions(more) {
    const options = { collection: this.options.collection_name, field: this.counterField, ...more };
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
   * The native handle on the counter document `{ id, reference_value }`, once the
   * connection is open (waiting for it as mongoose waits for `Model`'s operations).
   */
  async handle(reference, Model) {
    const db = await this.db(Model);
    const key = this.keyOf(reference);
    const handles = this.handlesOn(db);
    const kept = handles.get(key);
    if (kept && kept.db === db) return kept.handle;
    let handle;
    try {
      handle = core.counterAt(db, this.locatorOf(reference), this.handleOptions());
    } catch (error) {
      throw this.explained(error);
    }
    handles.set(key, { db, handle });
    return handle;
  }

  /** Where the native handles on `db` are kept (one cache: the counter's connection is one). */
  handlesOn() {
    return this.handles;
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
        const values = await this.numbering(reference, Model, (handle) => handle.nextBatch(members.length));
        members.forEach(({ index }, i) => {
          numbers[index] = { reference, value: values[i] };
        });
      }),
    );
    return numbers;
  }

  /** `doc` with `value`, given for `reference`: a document numbered in place, a plain object as a numbered copy. */
  withNumber(doc, { reference, value }) {
    if (!isDocument(doc)) return withField(doc, this.options.inc_field, this.shown(value));
    this.give(doc, reference, value);
    return doc;
  }

  /**
   * Numbers the `docs` that take a number in `write` (the rule's SAVE for create, else
   * BATCH), in array order, one round trip per reference value. Documents are numbered in
   * place; a plain object is never written to: resolves with `docs` where each numbered
   * plain object is replaced by a numbered copy.
   */
  async numberAll(docs, Model, write = BATCH) {
    const pending = [];
    docs.forEach((doc, at) => {
      if (takesNumber(this, doc, write, Model)) pending.push(at);
    });
    const numbers = await this.reserve(
      pending.map((at) => docs[at]),
      Model,
    );
    const result = [...docs];
    pending.forEach((at, i) => {
      result[at] = this.withNumber(docs[at], numbers[i]);
    });
    return result;
  }

  /**
   * Gapless mode: validates `docs` (documents of `Model`), then numbers and inserts them
   * in one transaction per reference value (the native insertMany with `gapless`), so a
   * failed insert gives its numbers back. Documents that take no number in `write` (the
   * rule's GAPLESS_CREATE or GAPLESS_BATCH) are inserted as they are. Resolves with the
   * inserted documents, hydrated, in the order given.
   */
  async insertGapless(Model, docs, write) {
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
    docs.forEach((doc, index) => (takesNumber(this, doc, write) ? numbered : explicit).push({ doc, index }));
    for (const { reference, members } of this.groupByReference(
      numbered.map(({ doc }) => doc),
      Model,
    )) {
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

module.exports = { Counter, HANDLES_KEPT };
