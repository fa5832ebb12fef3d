'use strict';
// The plugin's options, as mongoose-sequence 6 takes them: defaults, checks, and the
// refusals the gapless option and an existing inc_field cause.

const { codedError } = require('../coded-error.js');

/** The name errors start with. */
const PLUGIN = 'mongodb-sequence/mongoose';
/** The field of a counter document that holds its value (mongoose-sequence's). */
const COUNTER_FIELD = 'seq';

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
  cache: undefined,
};

/** The largest `cache` the core accepts (values reserved per block). */
const MAX_CACHE = 1_000_000;

/**
 * The `cache` option (of the plugin named `plugin`): a whole number from 1 to MAX_CACHE,
 * or `undefined` (also for `null`: no cache, as the core reads it); refused otherwise.
 */
function checkCache(plugin, value) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_CACHE) {
    throw codedError('INVALID_ARGUMENT', `${plugin}: option cache must be a whole number from 1 to ${MAX_CACHE}; got ${shown(value)}`, { type: TypeError });
  }
  return value;
}

/** How a refused option value is shown: never by calling the value's own conversions. */
function shown(value) {
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value === 'function' ? 'a function' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * An integer written in a string, as an environment variable gives one: decimal digits
 * with an optional sign, white space around them (`"100"`, `" -5\n"`). The plugins the
 * drop-ins replace read such a string as that number (they subtract it, pass it to
 * `BigInt()`, or have mongoose cast it in an `$inc`); other strings they read otherwise or
 * not at all (`"1e3"` is 1000 to one and an error to another, `""` is 0), so only these
 * are taken.
 */
const DECIMAL_INTEGER = /^\s*[+-]?\d+\s*$/;

/**
 * The integer option `name` of a drop-in, as a number: a safe integer, a BigInt when
 * `bigint` (the numbers of BigInt fields), or decimal digits in a string (DECIMAL_INTEGER)
 * as the number they write (a BigInt past the safe integers, when `bigint`); `nonZero`: not
 * 0. Refused otherwise with `INVALID_ARGUMENT`, the message starting with `prefix`: a
 * fraction too, which the plugins replaced stored as fractional counts.
 */
function integerOption(prefix, name, value, { nonZero = false, bigint = false } = {}) {
  let number = value;
  if (typeof value === 'string' && DECIMAL_INTEGER.test(value)) {
    number = Number(value);
    if (!Number.isSafeInteger(number) && bigint) number = BigInt(value.trim());
  }
  const integer = (typeof number === 'number' && Number.isSafeInteger(number)) || (bigint && typeof number === 'bigint');
  if (!integer || (nonZero && BigInt(number) === 0n)) {
    const kinds = bigint ? 'a safe integer number or a BigInt' : 'a safe integer';
    throw codedError(
      'INVALID_ARGUMENT',
      `${prefix}option ${name} must be ${nonZero ? 'a non-zero' : 'an'} integer (${kinds}, or its decimal digits in a string such as "100"): the numbers here are integers; got ${shown(value)}`,
      { type: TypeError },
    );
  }
  return number;
}

/** An option that must be a safe integer, refused with `INVALID_ARGUMENT` otherwise. */
function checkNumber(name, value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw codedError('INVALID_ARGUMENT', `option ${name} must be a safe integer; got ${shown(value)}`, { type: TypeError });
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
    throw codedError('INVALID_ARGUMENT', `option gapless must be a boolean; got ${shown(merged.gapless)}`, { type: TypeError });
  }
  merged.cache = checkCache(PLUGIN, merged.cache);
  if (merged.gapless && merged.cache !== undefined) {
    throw codedError(
      'INVALID_ARGUMENT',
      `${PLUGIN}: options gapless and cache cannot be combined: a cache reserves numbers ahead in blocks and loses the unused ones on restart, which gapless numbering exists to prevent`,
      { type: TypeError },
    );
  }
  if (![true, false, 'reuse'].includes(merged.exclusive)) {
    throw codedError('INVALID_ARGUMENT', `option exclusive must be true, false or 'reuse'; got ${shown(merged.exclusive)}`, { type: TypeError });
  }
  if (merged.uri !== undefined && (typeof merged.uri !== 'string' || merged.uri === '')) {
    throw codedError('INVALID_ARGUMENT', `option uri must be a MongoDB connection string; got ${typeof merged.uri}`, { type: TypeError });
  }
  return { ...merged, id: String(id), reference_fields: scoped ? [].concat(merged.reference_fields).sort() : null };
}

/** The options that must agree for a second registration to reuse a counter (`exclusive: 'reuse'`). */
const SIGNATURE = ['id', 'inc_field', 'start_seq', 'inc_amount', 'reference_fields', 'collection_name', 'gapless', 'uri', 'cache'];

/** `options` as far as SIGNATURE names them: equal for registrations that may reuse one counter. */
function signature(options) {
  return JSON.stringify(Object.fromEntries(SIGNATURE.map((name) => [name, options[name]])));
}

/** The names of the options of `signature` on which `a` and `b` differ (never their values: `uri` may hold credentials). */
function signatureDifferences(a, b) {
  return SIGNATURE.filter((name) => JSON.stringify(a[name]) !== JSON.stringify(b[name]));
}

/** Refuses an `inc_field` the schema already has with another type than Number. */
function checkField(schema, field) {
  const path = schema.path(field);
  if (path !== undefined && path.instance !== 'Number') {
    throw codedError('INVALID_ARGUMENT', 'Auto increment field already present and not of type "Number"');
  }
}

/** The refusal, in gapless mode, of `what` (which cannot join the numbering transaction). */
function gaplessRefusal(what) {
  return codedError(
    'GAPLESS_UNSUPPORTED_OPERATION',
    `${PLUGIN}: with gapless: true, new documents are numbered and inserted in one transaction by Model.create() and Model.insertMany(); ${what} cannot join that transaction`,
  );
}

module.exports = { PLUGIN, COUNTER_FIELD, DEFAULTS, MAX_CACHE, checkCache, shown, integerOption, normalise, signature, signatureDifferences, checkField, gaplessRefusal };
