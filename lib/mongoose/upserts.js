'use strict';
// Upserts: what the document an upsert would insert holds, whether it takes a number, and
// where the number goes in the update. The decisions are made on the filter and the
// update alone, before any number is taken.

const { codedError } = require('../coded-error.js');
const { PLUGIN, gaplessRefusal } = require('./options.js');
const { isDocument, readField, resolvePath, withField, overlaps } = require('./paths.js');
const { checkDiscriminator } = require('./cast.js');
const { countersOf } = require('./registry.js');
const { takesNumber, REPLACEMENT } = require('./rule.js');

/** The upserting operations of bulkWrite, and the key of each one's update. */
const BULK_UPSERTS = { updateOne: 'update', updateMany: 'update', replaceOne: 'replacement' };

/** Whether a filter's condition on one path is an operator object (`{ $gt: … }`). */
function isOperatorObject(value) {
  return Boolean(value) && typeof value === 'object' && !Array.isArray(value) && !value._bsontype && !(value instanceof Date) && Object.keys(value).some((k) => k.startsWith('$'));
}

/**
 * The values an upsert's filter gives the document it inserts: equality conditions
 * (`path: value`, `{ $eq: value }`, a one-element `$in`), also inside a top-level `$and`.
 */
function filterEqualities(filter, into = {}) {
  for (const [key, value] of Object.entries(filter || {})) {
    if (key === '$and' && Array.isArray(value)) {
      for (const part of value) filterEqualities(part, into);
    } else if (key.startsWith('$')) {
      continue;
    } else if (!isOperatorObject(value)) {
      into[key] = value;
    } else if (Object.hasOwn(value, '$eq')) {
      into[key] = value.$eq;
    } else if (Array.isArray(value.$in) && value.$in.length === 1 && !(value.$in[0] instanceof RegExp)) {
      into[key] = value.$in[0];
    }
  }
  return into;
}

/** The values of the document an upsert would insert, as far as they name its discriminator. */
function upsertValues(filter, update, replace) {
  const equalities = filterEqualities(filter);
  if (replace) return { ...equalities, ...(isDocument(update) ? update.toObject() : update) };
  if (!update || typeof update !== 'object' || Array.isArray(update)) return equalities;
  const plainFields = Object.fromEntries(Object.entries(update).filter(([key]) => !key.startsWith('$')));
  return { ...equalities, ...(update.$setOnInsert || {}), ...(update.$set || {}), ...plainFields };
}

/**
 * What an upsert's `update` does to `field` (a dotted path): `true` when it sets the
 * field, or touches it or an object above it in a way the plugin must not add to (a
 * `$set` of the parent, `$inc`, `$unset`…: a `$setOnInsert` of the field would conflict
 * with it, code 40) — the field is then left to the update; the parent's path when only
 * `$setOnInsert` sets an object above the field (the number goes inside it); else `false`.
 */
function updateTouches(update, field) {
  const parts = field.split('.');
  const parents = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('.'));
  const hits = (object) => {
    if (!object || typeof object !== 'object') return null;
    if (Object.hasOwn(object, field)) return field;
    for (const path of Object.keys(object)) if (path.startsWith(`${field}.`)) return path;
    return parents.find((parent) => Object.hasOwn(object, parent)) || null;
  };
  let parentOnInsert = false;
  for (const [key, part] of Object.entries(update)) {
    if (!key.startsWith('$')) {
      if (hits({ [key]: part })) return true;
      continue;
    }
    const hit = hits(part);
    if (!hit) continue;
    if (key !== '$setOnInsert' || hit === field || hit.startsWith(`${field}.`)) return true;
    // A parent object set on insert: it gives the number itself, or takes ours inside it.
    const inside = resolvePath(field.slice(hit.length + 1), part[hit]);
    if (inside !== undefined && inside !== null) return true;
    if (part[hit] !== null && typeof part[hit] !== 'object') return true;
    parentOnInsert = hit;
  }
  return parentOnInsert;
}

/**
 * Refuses an upsert that would take a number of a scoped counter while an operator other
 * than `$set` / `$setOnInsert` (`$inc`, `$max`, `$push`, `$rename`, `$unset`…) writes a
 * reference field, a path under it or an object above it: the counter is chosen from the
 * values given by the filter's equalities, `$set` and `$setOnInsert`, so such a value
 * would be stored beside the number of another counter.
 */
function checkReferenceOperators(counter, update) {
  const references = counter.options.reference_fields || [];
  if (references.length === 0) return;
  for (const [operator, part] of Object.entries(update)) {
    if (!operator.startsWith('$') || operator === '$set' || operator === '$setOnInsert' || !part || typeof part !== 'object') continue;
    // `$rename: { from: to }` writes its targets, and removes its sources.
    const paths = operator === '$rename' ? [...Object.keys(part), ...Object.values(part).map(String)] : Object.keys(part);
    const written = references.find((r) => paths.some((path) => overlaps(path, r)));
    if (written !== undefined) {
      throw codedError(
        'INVALID_ARGUMENT',
        `${PLUGIN}: an upsert that writes reference field '${written}' with ${operator} cannot be numbered: the counter is chosen from the filter's equalities, $set and $setOnInsert, before the server applies ${operator}. Give the value in one of those (no number was taken)`,
      );
    }
  }
}

/**
 * An upsert's replacement is stored as it is, whether it inserts or replaces: a number
 * taken for it would renumber a document it matches. It is accepted only when its number
 * is known without taking one: the replacement holds it, or the filter gives it by
 * equality (put into the replacement, so that a matched document keeps it; numbered by
 * `_id`, the server inserts the filter's _id).
 */
function replacementPlan(counter, Model, equalities, byNumber, replacement) {
  const field = counter.options.inc_field;
  if (!takesNumber(counter, replacement, REPLACEMENT, Model)) return null;
  if (byNumber) return field === '_id' ? null : { source: null, place: () => withField(replacement, field, equalities[field]) };
  if (counter.options.gapless) throw gaplessRefusal('an upsert');
  throw codedError(
    'INVALID_ARGUMENT',
    `${PLUGIN}: a replace upsert would renumber a document it matches: give the number (${field}) in the filter or the replacement, or use updateOne with $setOnInsert (no number was taken)`,
  );
}

/**
 * How an upsert of `Model` numbers the document it would insert: `null` when it takes no
 * number (the filter gives the field by equality, the update sets it, the replacement
 * holds it), else `{ source, place }`: the values that choose the counter (`null`: no
 * number to take) and `place(value)`, the update with the number the document receives
 * for the counter's `value` (`counter.shown(value)`, as saves and batches give it).
 * `update` is an update document, or with `replace` a replacement. Throws what cannot be numbered, before any
 * number is taken: an aggregation pipeline, a replacement that would renumber a document
 * it matches, a reference value written by another operator than `$set` / `$setOnInsert`.
 */
function upsertPlan(counter, Model, filter, update, replace) {
  const field = counter.options.inc_field;
  if (!replace && Array.isArray(update)) {
    if (counter.options.gapless) throw gaplessRefusal('an upsert');
    throw codedError(
      'INVALID_ARGUMENT',
      `${PLUGIN}: an upsert with an aggregation pipeline cannot be numbered: a pipeline cannot tell the document it inserts from one it matches, so a number would go to matched documents too. Use an update document with $setOnInsert (or number the document afterwards)`,
    );
  }
  // The filter's equalities become fields of the inserted document (only _id for a
  // replacement): an upsert by its number (`{ no: 5 }`, `{ _id: 5 }`) inserts that number.
  const equalities = filterEqualities(filter);
  const byNumber = equalities[field] !== undefined && equalities[field] !== null;
  if (replace) return replacementPlan(counter, Model, equalities, byNumber, isDocument(update) ? update.toObject() : update);
  if (byNumber) return null;
  const touched = updateTouches(update, field);
  if (touched === true) return null;
  if (counter.options.gapless) throw gaplessRefusal('an upsert');
  checkReferenceOperators(counter, update);
  // The document an insert would store: the filter's equalities, then the update's
  // values, cast with the schema as save casts them.
  const plainFields = Object.fromEntries(Object.entries(update).filter(([key]) => !key.startsWith('$')));
  const source = { ...equalities, ...(update.$setOnInsert || {}), ...(update.$set || {}), ...plainFields };
  // `$setOnInsert: { meta: {…} }` with inc_field `meta.no`: the number goes into a copy
  // of that object (a second path under it would conflict, code 40).
  const [key, inside] = touched ? [touched, field.slice(touched.length + 1)] : [field, null];
  // `value` is the counter's; the document receives what every other write gives it for
  // that value (a drop-in's outputFilter), or an upsert would store numbers saves store.
  const place = (value) => {
    const shown = counter.shown(value);
    const placed = inside === null ? shown : readField(withField({ [key]: update.$setOnInsert[key] }, `${key}.${inside}`, shown), key);
    return { ...update, $setOnInsert: { ...(update.$setOnInsert || {}), [key]: placed } };
  };
  return { source, place };
}

/**
 * Refuses an upsert through `Model` that any of its counters refuses, or that would
 * insert a discriminator numbered by its own counters (see checkDiscriminator). Each
 * counter's hook runs it before taking a number, so that a refusal by one counter leaves
 * no number of another spent.
 */
function checkUpsert(Model, filter, update, replace) {
  checkDiscriminator(Model, upsertValues(filter, update, replace), (counter, Child) => {
    try {
      return upsertPlan(counter, Child, filter, update, replace) !== null;
    } catch {
      return true;
    }
  });
  for (const counter of countersOf(Model)) if (!counter.options.disable_hooks) upsertPlan(counter, Model, filter, update, replace);
}

module.exports = { BULK_UPSERTS, isOperatorObject, filterEqualities, upsertValues, updateTouches, checkReferenceOperators, replacementPlan, upsertPlan, checkUpsert };
