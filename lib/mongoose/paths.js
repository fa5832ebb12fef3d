'use strict';
// Dotted paths of mongoose documents and plain objects: read, written, or set on a copy.

/** Whether `value` is a mongoose document (or subdocument). */
function isDocument(value) {
  return Boolean(value) && typeof value.get === 'function' && value.$__ !== undefined;
}

/** The value at the dotted `path` of the plain object `source`; `null` past a missing level. */
function resolvePath(path, source) {
  return path.split('.').reduce((value, key) => (value == null ? null : value[key]), source);
}

/**
 * The value at `path` of a document or a plain object: through the schema's getters, as
 * mongoose-sequence reads reference values, or with `raw` as it is stored (`inc_field`:
 * a getter's display form, `INV-12`, is no number).
 */
function readField(doc, path, raw = false) {
  if (isDocument(doc)) return raw ? doc.get(path, null, { getters: false }) : doc.get(path);
  if (doc && Object.hasOwn(doc, path)) return doc[path];
  return resolvePath(path, doc);
}

/** Sets `path` of a document (through `set`) or of a plain object, in place. */
function writeField(doc, path, value) {
  if (isDocument(doc)) {
    doc.set(path, value);
    return;
  }
  const keys = path.split('.');
  let target = doc;
  for (const key of keys.slice(0, -1)) {
    if (target[key] == null || typeof target[key] !== 'object') target[key] = {};
    target = target[key];
  }
  target[keys.at(-1)] = value;
}

/**
 * A copy of the plain object `source` with `value` at `path` (the objects along a dotted
 * path copied too): the caller's object is never written to, so one object given twice
 * (`insertMany([o, o])`, or again in a later call) is numbered once per insert.
 */
function withField(source, path, value) {
  const copy = { ...source };
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) {
    const level = target[key];
    target[key] = level && typeof level === 'object' && !Array.isArray(level) ? { ...level } : {};
    target = target[key];
  }
  target[keys.at(-1)] = value;
  return copy;
}

/** Whether dotted paths `a` and `b` are the same, or one lies under the other. */
function overlaps(a, b) {
  return a === b || b.startsWith(`${a}.`) || a.startsWith(`${b}.`);
}

module.exports = { isDocument, resolvePath, readField, writeField, withField, overlaps };
