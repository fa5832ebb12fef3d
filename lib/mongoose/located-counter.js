'use strict';
// A counter kept in another plugin's counter documents, for the drop-ins: one document
// per model (and field, and group), found by equality on fields such as
// `{ field, modelName }`, its value in a field such as `count`. It numbers documents as
// the plugin's own counter does (./counter.js: the hooks, batches, the rule); what differs
// is which document a model's writes advance and on which connection.

const { Counter, HANDLES_KEPT } = require('./counter.js');
const { BoundedCache } = require('../bounded-cache.js');
const { codedError } = require('../coded-error.js');
const { openDb } = require('./connection.js');
const { DEFAULTS } = require('./options.js');
const { isDocument, readField } = require('./paths.js');
const { setPath, numberMatch, counterTarget } = require('./migration.js');
const { asCast } = require('./cast.js');
const { LATEST } = require('./latest-read.js');
const { SAVE, BATCH } = require('./rule.js');
// Through the package's entry, so that the drop-ins' calls are traced like a user's.
const core = require('../entry.js');

class LocatedCounter extends Counter {
  /**
   * `spec`: `label` (the counter in messages), `field` (the numbered path),
   * `collection`, `counterField`, `start` and `step` (number or bigint), `bigint` (the
   * numbered path holds BigInts), `locate(Model, source)` (the locator fields of the
   * counter that numbers `source`, a document or plain object of `Model`), and
   * optionally `exempt(doc, Model)` (documents that take no number), `keepGivenOnSave`
   * (save keeps a number the caller set, as batches do), `connection` (the counters'
   * connection, else each model's own), `onConnection(connection)` (called before each
   * numbering on a connection), `prepare(db, locator)` (a promise, awaited before a
   * counter's first use on a `Db`; with `preparesFor(locator)`, only for the counters it
   * names, so that the record of those prepared stays small), `output(value)` (what
   * documents receive for a value), `referenceFields` (the document's fields that choose the counter, besides its model),
   * `raiseGiven` (a number the caller gives in any write moves the counter up to it: see
   * raiseToGiven), `seedFromDocuments` (a counter absent on a `Db` is first created at
   * the furthest number its documents hold there: see seeded), `cache` (values reserved in blocks of that many per process: the
   * core's `cache`; checked by the caller) and `plugin` (the name errors start with).
   */
  constructor(spec) {
    const options = {
      ...DEFAULTS,
      id: spec.label,
      inc_field: spec.field,
      start_seq: spec.start,
      inc_amount: spec.step,
      collection_name: spec.collection,
      // The fields that choose the counter, as the base plugin's refusals read them (an
      // upsert writing one with $max, $rename…: ./upserts.js).
      reference_fields: Array.isArray(spec.referenceFields) && spec.referenceFields.length ? [...spec.referenceFields] : null,
      parallel_hooks: false,
      cache: spec.cache,
    };
    super(null, options, null);
    this.spec = spec;
    if (typeof spec.exempt === 'function') this.exempt = spec.exempt;
    if (spec.keepGivenOnSave) this.writeAs = (write) => (write === SAVE ? BATCH : write);
    /** Per driver `Db`: the preparation of each counter, by reference key (`spec.prepare`). */
    this.prepared = new WeakMap();
    /** Per driver `Db`: its native handles (a schema may be used on several connections, a database per tenant). */
    this.handlesByDb = new WeakMap();
    /** Per driver `Db`: the seeding of each counter from the numbers stored (`spec.seedFromDocuments`), by reference key. */
    this.seeds = new WeakMap();
  }

  handlesOn(db) {
    if (!this.handlesByDb.has(db)) this.handlesByDb.set(db, new BoundedCache(HANDLES_KEPT));
    return this.handlesByDb.get(db);
  }

  shown(value) {
    return typeof this.spec.output === 'function' ? this.spec.output(value) : value;
  }

  /** The native handle, once `spec.prepare(db, locator)` has run for the counter on that `Db` (once each). */
  async handle(reference, Model) {
    if (typeof this.spec.prepare === 'function' && (typeof this.spec.preparesFor !== 'function' || this.spec.preparesFor(this.locatorOf(reference)))) {
      const db = await this.db(Model);
      if (!this.prepared.has(db)) this.prepared.set(db, new Map());
      const done = this.prepared.get(db);
      const key = this.keyOf(reference);
      if (!done.has(key)) {
        const preparing = this.spec.prepare(db, this.locatorOf(reference));
        done.set(key, preparing);
        preparing.catch(() => done.delete(key));
      }
      await done.get(key);
    }
    const handle = await super.handle(reference, Model);
    if (this.spec.seedFromDocuments) await this.seeded(reference, Model, handle);
    return handle;
  }

  /**
   * With `spec.seedFromDocuments`: before a counter's first use on a `Db` (once per
   * counter and `Db`), when the counter does not exist there but `Model`'s collection
   * already holds numbers of it (numbered while the counter lived elsewhere: the peer
   * plugins keep one counter for every tenant database, in the first one), the counter is
   * created at the furthest of them (see seedCounter), so that numbering continues after
   * them instead of starting again at `start`. Seeded again when a numbering finds it
   * deleted since (see numbering).
   */
  async seeded(reference, Model, handle) {
    const db = await this.db(Model);
    if (!this.seeds.has(db)) this.seeds.set(db, new BoundedCache(HANDLES_KEPT));
    const done = this.seeds.get(db);
    const key = this.keyOf(reference);
    let seeding = done.get(key);
    if (!seeding) {
      seeding = this.seedCounter(db, reference, Model, handle);
      done.set(key, seeding);
      // A failed look is tried again by the next numbering.
      seeding.catch(() => done.get(key) === seeding && done.delete(key));
    }
    await seeding;
  }

  /**
   * As Counter's numbering. With `spec.seedFromDocuments` the handle does not create its
   * counter (see handleOptions): a counter deleted since it was seeded (its counters
   * collection emptied while the process runs) is seeded again, and the call made again.
   */
  async numbering(reference, Model, take) {
    try {
      return await super.numbering(reference, Model, take);
    } catch (error) {
      if (!this.spec.seedFromDocuments || !error || error.code !== 'SEQUENCE_NOT_FOUND') throw error;
      const db = await this.db(Model);
      await this.forgetSeed(reference, db);
      const handle = await this.handle(reference, Model);
      // Created at `start - step` when no number is stored (a `$max`/`$min`: a counter a
      // seed or another process made meanwhile is left where it is); present from now on,
      // so that its deletion is seen.
      await this.call(handle.raiseTo(this.beforeStart()));
      const seeds = this.seeds.get(db);
      if (seeds) seeds.set(this.keyOf(reference), Promise.resolve(true));
      return this.call(take(handle));
    }
  }

  /**
   * Forgets the seeding of the counter of `reference` on `db` (found missing: deleted
   * since, or never made by it), so that the next use seeds it again; whether there was
   * one. Whatever that seeding found: one that found no number may be followed by a
   * counter made otherwise (a number given on save, another process) and then deleted,
   * with numbers stored meanwhile.
   */
  async forgetSeed(reference, db) {
    const seeds = this.seeds.get(db);
    const key = this.keyOf(reference);
    const seeding = seeds && seeds.get(key);
    if (!seeding) return false;
    await seeding.catch(() => false);
    if (seeds.get(key) !== seeding) return false;
    seeds.delete(key);
    return true;
  }

  /**
   * Creates the absent counter of `reference` at the furthest number (largest, smallest
   * counting down) that the documents it numbers hold in `Model`'s collection on `db`,
   * with the core's `raiseTo` (a `$max` or `$min` upsert: never back over a number another
   * process took meanwhile, so concurrent first uses stay apart). Nothing when the counter
   * exists, when no document holds a number, or when the furthest is before `start` (the
   * numbering creates it then: see numbering). Resolves with whether the counter exists.
   */
  async seedCounter(db, reference, Model, handle) {
    try {
      await this.call(handle.current());
      return true;
    } catch (error) {
      if (!error || error.code !== 'SEQUENCE_NOT_FOUND') throw error;
    }
    const extreme = await this.storedExtreme(db, reference, Model);
    if (extreme === undefined) return false;
    const before = this.beforeStart();
    if (this.spec.step > 0 ? extreme < before : extreme > before) return false;
    await this.call(handle.raiseTo(extreme));
    return true;
  }

  /**
   * The furthest whole number (the largest; counting down, the smallest) that the
   * documents numbered by the counter of `reference` hold in `field` of `Model`'s
   * collection on `db`; `undefined` when none holds one. Documents are told apart by the
   * fields that choose the counter (and a discriminator's key), each group's counter
   * chosen as save chooses it.
   */
  async storedExtreme(db, reference, Model) {
    const field = this.options.inc_field;
    const descending = this.spec.step < 0;
    const Source = Model && Model.collection ? Model : null;
    if (!Source) return undefined;
    const fields = [...(this.options.reference_fields ?? [])];
    const discriminatorKey = Source.schema && Source.schema.options && Source.schema.options.discriminatorKey;
    if (discriminatorKey && (Source.discriminators || Source.baseModelName)) fields.push(discriminatorKey);
    const read = { ...LATEST, promoteLongs: false };
    const collection = db.collection(Source.collection.collectionName);
    if (!fields.length) {
      // One counter for the whole collection: its furthest number is the first document
      // sorted on the field (an index on it serves the look).
      const [top] = await collection.find(numberMatch(field), { ...read, projection: { [field]: 1 }, sort: { [field]: descending ? 1 : -1 }, limit: 1 }).toArray();
      return top === undefined
        ? undefined
        : counterTarget(
            field.split('.').reduce((value, key) => (value == null ? value : value[key]), top),
            descending,
          );
    }
    const group = {};
    fields.forEach((f, i) => {
      group[`f${i}`] = `$${f}`;
    });
    // A collection of many groups may need more than the memory a $group is given.
    const rows = await collection
      .aggregate([{ $match: numberMatch(field) }, { $group: { _id: group, extreme: { [descending ? '$min' : '$max']: `$${field}` } } }], { ...read, allowDiskUse: true })
      .toArray();
    const key = this.keyOf(reference);
    const base = Source.baseModelName && Source.base && typeof Source.db.model === 'function' ? Source.db.model(Source.baseModelName) : Source;
    let found;
    for (const { _id: values, extreme } of rows) {
      const stored = {};
      fields.forEach((f, i) => setPath(stored, f, values && values[`f${i}`] !== undefined ? values[`f${i}`] : null));
      if (this.keyOf(this.referenceOf(base.hydrate(stored), base)) !== key) continue;
      const value = counterTarget(extreme, descending);
      if (value === undefined) continue;
      if (found === undefined || (descending ? value < found : value > found)) found = value;
    }
    return found;
  }

  /** `start - step`: the value of a counter whose next number is `start` (a BigInt when either is one). */
  beforeStart() {
    const { start, step } = this.spec;
    return typeof start === 'bigint' || typeof step === 'bigint' ? BigInt(start) - BigInt(step) : start - step;
  }

  /**
   * As Counter's call; an `INDEX_CONFLICT` is passed through `spec.explainIndexConflict(error)`
   * when given (a promise of the error to throw: the drop-in names what refuses its index).
   */
  async call(promise) {
    try {
      return await super.call(promise);
    } catch (error) {
      if (error && error.code === 'INDEX_CONFLICT' && typeof this.spec.explainIndexConflict === 'function') throw await this.spec.explainIndexConflict(error);
      throw error;
    }
  }

  get counterField() {
    return this.spec.counterField;
  }

  /** Counters are chosen by the model (and group) of a document: always a reference. */
  get scoped() {
    return true;
  }

  /**
   * The locator fields of the counter of `source`: a document or subdocument (its own
   * constructor names the counter), or a plain object of `Model`.
   */
  referenceOf(source, Model) {
    const model = isDocument(source) ? source.constructor : Model;
    if (typeof model !== 'function') throw codedError('INVALID_ARGUMENT', `${this.spec.plugin}: cannot tell the model of a document to number`);
    return this.spec.locate(model, source);
  }

  /** A subdocument is numbered on its top document's connection. */
  modelOf(doc) {
    let top = doc;
    while (top && typeof top.ownerDocument === 'function' && top.ownerDocument() !== top) top = top.ownerDocument();
    return top ? top.constructor : doc.constructor;
  }

  locatorOf(reference) {
    return reference;
  }

  handleOptions() {
    // A seeded counter is created by its seed (see numbering).
    return this.nativeOptions({ upsert: !this.spec.seedFromDocuments, start: this.spec.start, step: this.spec.step, bigint: Boolean(this.spec.bigint), ...this.cacheOption() });
  }

  /** The driver `Db` of `Model`'s own connection (the drop-ins are given no connection), once open. */
  async db(Model) {
    const connection = this.spec.connection || (Model && Model.db);
    if (!connection) throw codedError('INVALID_ARGUMENT', `${this.spec.plugin}: cannot tell the connection of a document to number`);
    if (typeof this.spec.onConnection === 'function') this.spec.onConnection(connection);
    return openDb(connection, Model);
  }

  /** The value of the counter of `reference` (the last number handed out), or `undefined` when it does not exist yet. */
  async currentValueOf(reference, Model, again = true) {
    try {
      return await this.call((await this.handle(reference, Model)).current());
    } catch (error) {
      if (!error || error.code !== 'SEQUENCE_NOT_FOUND') throw error;
      // A seeded counter deleted since: seeded again (see numbering).
      if (!again || !this.spec.seedFromDocuments || !(await this.forgetSeed(reference, await this.db(Model)))) return undefined;
      return this.currentValueOf(reference, Model, false);
    }
  }

  /**
   * The number the next document numbered from the counter of `reference` in this process
   * gets, when nothing else takes one meanwhile (`start` before the first). Without a
   * cache that is the stored value plus `step`. With one, the stored value is ahead of
   * the numbers handed out (the block reserved): this process's unused reserved numbers
   * are given back first (or, when another process moved the counter since, abandoned as
   * a gap), so the next numbering fetches from the stored value, which this reads.
   */
  async nextNumberOf(reference, Model) {
    if (this.options.cache !== undefined) {
      // A handle gives back only once it has reached its counter (a handle made for a new
      // `Db`, or made again after its group's was evicted, has not): read first.
      await this.currentValueOf(reference, Model);
      await this.call((await this.handle(reference, Model)).release());
    }
    const value = await this.currentValueOf(reference, Model);
    if (value === undefined) return this.spec.start;
    return typeof value === 'bigint' ? value + BigInt(this.spec.step) : value + this.spec.step;
  }

  /** `nextNumberOf` for `Model`'s counter (one whose locator does not depend on the document). */
  async nextNumber(Model) {
    return this.nextNumberOf(this.referenceOf(null, Model), Model);
  }

  /** Sets the counter of `reference` to `value` when it exists (the next number is `value + step`); resolves with how many matched. */
  async setValueOf(reference, Model, value) {
    if (typeof this.spec.prepare === 'function') await this.handle(reference, Model);
    const db = await this.db(Model);
    return this.call(core.setCountersWhere(db, this.locatorOf(reference), value, this.nativeOptions()));
  }

  /** Sets `Model`'s counter (one whose locator does not depend on the document) to `value`. */
  async setValue(Model, value) {
    return this.setValueOf(this.referenceOf(null, Model), Model, value);
  }

  /**
   * Moves the counter of `doc` to at least `value` (at most, counting down), creating it
   * when absent at `start - step` first, as the original plugins create it: a number given
   * before `start` leaves the next number at `start`.
   */
  async raiseTo(doc, value) {
    return this.raiseCounter(this.referenceOf(doc), this.modelOf(doc), value);
  }

  /** Moves the counter of `reference` to at least `value` (at most, counting down), created at `start - step` when absent. */
  async raiseCounter(reference, Model, value) {
    const handle = await this.handle(reference, Model);
    const { start, step } = this.spec;
    const beforeStart = step > 0 ? value < start - step : value > start - step;
    // A counter absent is made at `start - step` (the given number is before it): raising
    // to that is safe against a racing creation, which makes it there or further on.
    if (beforeStart && (await this.currentValueOf(reference, Model)) === undefined) return this.call(handle.raiseTo(start - step));
    return this.call(handle.raiseTo(value));
  }

  /**
   * With `spec.raiseGiven`: moves each counter up to the largest number given in `sources`
   * (documents, or plain objects of `Model`: documents to insert, an upsert's values) that
   * keep a number the caller set, before they are written, as save moves it for one
   * document; the numbers then taken in the same write come after them. Sources that hold
   * no number of the caller's (or the one this counter gave) are passed over.
   */
  async raiseToGiven(sources, Model) {
    if (!this.spec.raiseGiven) return;
    const field = this.options.inc_field;
    const extremes = new Map();
    for (const source of sources) {
      if (!source || typeof source !== 'object' || this.ownNumber(source) || !this.isExplicit(source, Model)) continue;
      const cast = asCast(Model, source);
      const given = readField(cast, field, true);
      if (typeof given !== 'number' || !Number.isFinite(given)) continue;
      const value = Math.floor(given);
      const reference = this.referenceOf(cast, Model);
      const key = this.keyOf(reference);
      const kept = extremes.get(key);
      const further = this.spec.step > 0 ? value > (kept ? kept.value : -Infinity) : value < (kept ? kept.value : Infinity);
      if (further) extremes.set(key, { reference, value });
    }
    await Promise.all([...extremes.values()].map(({ reference, value }) => this.raiseCounter(reference, Model, value)));
  }
}

/** Where mongoose-auto-increment and mongoose-plugin-autoinc keep their counters. */
const IDENTITY_COUNTERS = 'identitycounters';

/**
 * The counter of a model for mongoose-auto-increment's and mongoose-plugin-autoinc's
 * options (`settings`: `model`, `field`, `startAt`, `incrementBy`, `cache`): a document of
 * `identitycounters` holding its value in `count`; a number the caller gives a new
 * document is kept and moves the counter up to it. `spec` adds what differs between the
 * two (`plugin`, `locate`, `referenceFields`, `connection`, `output`, `prepare`…).
 */
function identityCounter(settings, spec) {
  const { model, field, startAt, incrementBy, cache } = settings;
  return new LocatedCounter({
    label: `${model}.${field}`,
    cache,
    field,
    collection: IDENTITY_COUNTERS,
    counterField: 'count',
    start: startAt,
    step: incrementBy,
    keepGivenOnSave: true,
    raiseGiven: true,
    ...spec,
  });
}

module.exports = { LocatedCounter, identityCounter, IDENTITY_COUNTERS };
