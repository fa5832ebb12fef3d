'use strict';
// The mongoose plugin's migration helpers: continue numbering after data imported or
// numbered elsewhere (`syncCounterToMax`), or after another plugin's counter
// (`takeOverCounter`).

const { codedError } = require('../coded-error.js');
const { LATEST } = require('./latest-read.js');
const { counterOf, numberedModel } = require('./registry.js');

/** Sets the dotted `path` of the plain object `object`. */
function setPath(object, path, value) {
  const keys = path.split('.');
  let target = object;
  for (const key of keys.slice(0, -1)) {
    if (target[key] === null || typeof target[key] !== 'object') target[key] = {};
    target = target[key];
  }
  target[keys.at(-1)] = value;
}

/** A number read from the server as a JS number, or a BigInt beyond 2^53 (an int64 `Long`). */
function fromServer(value) {
  if (value && typeof value === 'object' && value._bsontype === 'Long') {
    const big = BigInt(value.toString());
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }
  return Number(value);
}

/** 2^63 as a double: the first double beyond the 64-bit integer range. */
const INT64_RANGE_END = 2 ** 63;

/**
 * The `$match` of the documents whose `field` may be a counter's value, as the core's own
 * look at the numbers in use reads them: a number of the 64-bit integer range (NaN fails
 * the comparisons; infinities and doubles of 2^63 and beyond are out of it).
 */
function numberMatch(field) {
  return { [field]: { $type: ['int', 'long', 'double'], $lt: INT64_RANGE_END, $gte: -INT64_RANGE_END } };
}

/**
 * The whole number at or past `extreme` (a number read from the server) in the counter's
 * direction (down when `descending`), as the core's `raiseTo` takes it: a BigInt beyond
 * the safe-integer range; `undefined` for what cannot be a counter value (not finite).
 */
function counterTarget(extreme, descending) {
  const value = fromServer(extreme);
  if (typeof value === 'bigint') return value;
  if (!Number.isFinite(value)) return undefined;
  const whole = descending ? Math.ceil(value) : Math.floor(value);
  return Number.isSafeInteger(whole) ? whole : BigInt(whole);
}

/**
 * Moves the counter(s) of `Model` (the one of `id`, or its only one) past every
 * `inc_field` among its documents (per combination with reference_fields), so that data
 * imported or numbered elsewhere never collides with new numbers: an ascending counter
 * to at least the largest value, a descending one (negative `inc_amount`) to at most the
 * smallest. Never moves a counter back over numbers it handed out. `inc_field` may be a
 * dotted path (not one through an array). For a discriminator, a counter of the base
 * schema is moved past the documents of the whole collection, which it numbers. Resolves
 * with the counters moved as `[{ reference_value, value }]`.
 */
async function syncCounterToMax(Model, id) {
  const counter = counterOf(Model, id);
  const field = counter.options.inc_field;
  const descending = counter.options.inc_amount < 0;
  let group = null;
  if (counter.scoped) {
    group = {};
    counter.options.reference_fields.forEach((f, i) => {
      group[`f${i}`] = `$${f}`;
    });
  }
  const Source = numberedModel(Model, counter);
  const extremes = await Source.aggregate([{ $match: numberMatch(field) }, { $group: { _id: group, extreme: { [descending ? '$min' : '$max']: `$${field}` } } }])
    .read(LATEST.readPreference)
    .readConcern(LATEST.readConcern.level);
  const moved = [];
  for (const { _id: values, extreme } of extremes) {
    // The whole number at or past the extreme, in the counter's direction.
    const target = counterTarget(extreme, descending);
    if (target === undefined) continue;
    let reference = null;
    if (counter.scoped) {
      // The stored values as a document of the model, so the counter is chosen as save
      // chooses it (through the schema's getters).
      const stored = {};
      counter.options.reference_fields.forEach((f, i) => {
        setPath(stored, f, values && values[`f${i}`] !== undefined ? values[`f${i}`] : null);
      });
      reference = counter.referenceOf(Source.hydrate(stored));
    }
    // The core moves it in its own direction: $max ascending, $min descending.
    moved.push({ reference_value: reference, value: await counter.call((await counter.handle(reference, Model)).raiseTo(target)) });
  }
  return moved;
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
  if (!locate) throw codedError('INVALID_ARGUMENT', `takeOverCounter: from must be one of ${Object.keys(OTHER_LIBRARIES).join(', ')}; got ${String(from)}`, { type: TypeError });
  const counter = counterOf(Model, options.id);
  if (counter.scoped) throw codedError('INVALID_ARGUMENT', 'takeOverCounter: counters with reference_fields cannot be taken over (the other plugins keep one counter per model)');
  if (counter.options.inc_amount < 0) {
    throw codedError('INVALID_ARGUMENT', 'takeOverCounter: a descending counter (negative inc_amount) cannot continue after a counter that counts upwards');
  }
  const where = locate(options.modelName ?? Model.modelName, options.field ?? counter.options.inc_field);
  const db = await counter.db(Model);
  const other = await db.collection(options.collection ?? where.collection).findOne(where.filter, LATEST);
  const count = other && other[where.value];
  if (count === undefined || count === null) {
    throw codedError('SEQUENCE_NOT_FOUND', `takeOverCounter: no ${from} counter ${JSON.stringify(where.filter)} in ${options.collection ?? where.collection}`);
  }
  const value = typeof count === 'object' && typeof count.toNumber === 'function' ? count.toNumber() : Number(count);
  return counter.call((await counter.handle(null, Model)).raiseTo(Math.trunc(value)));
}

module.exports = { syncCounterToMax, takeOverCounter, setPath, fromServer, numberMatch, counterTarget };
