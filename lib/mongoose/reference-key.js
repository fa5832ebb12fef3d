'use strict';
// The key of a counter's reference value: two values share a counter exactly when the
// server stores them as the same `reference_value`.

/**
 * A reference value as it is written to the counter document: mongoose wrappers
 * (subdocuments, arrays, buffers) as their BSON form, `undefined` as `null`.
 */
function plainValue(value) {
  if (value === undefined) return null;
  if (value && typeof value === 'object' && !value._bsontype && !(value instanceof Date) && typeof value.toBSON === 'function') return value.toBSON();
  return value;
}

/**
 * A canonical key for a value, for when BSON cannot serialise it: tagged by type, dates
 * by their milliseconds, BSON types by their own JSON form, objects with their key order.
 */
function canonicalKey(value) {
  if (value === null || value === undefined) return 'null';
  if (value instanceof Date) return `date:${value.getTime()}`;
  if (Array.isArray(value)) return `[${value.map(canonicalKey).join(',')}]`;
  if (typeof value === 'object') {
    if (value._bsontype) {
      const shown = typeof value.toJSON === 'function' ? value.toJSON() : String(value);
      return `${value._bsontype}:${value.sub_type ?? ''}:${JSON.stringify(shown)}`;
    }
    if (value instanceof RegExp) return `regexp:${String(value)}`;
    if (value instanceof Map) return `map:${canonicalKey(Object.fromEntries(value))}`;
    if (ArrayBuffer.isView(value)) return `bytes:${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')}`;
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${canonicalKey(v)}`)
      .join(',')}}`;
  }
  return `${typeof value}:${typeof value === 'number' && Object.is(value, -0) ? '-0' : String(value)}`;
}

/**
 * The key of a counter's reference value: its exact BSON encoding (with `bson`, the BSON
 * library of the mongoose in use), so two values share a counter exactly when the server
 * stores them as the same `reference_value` (dates to the millisecond, objects by their
 * fields, an ObjectId apart from its hex string). Falls back to a canonical form when
 * that library is not at hand or refuses a value.
 */
function referenceKey(reference, bson) {
  if (reference === null) return '';
  if (bson && typeof bson.serialize === 'function') {
    try {
      // `undefined` as null, as the driver and the core store it (js-bson's own default drops it).
      return `b:${Buffer.from(bson.serialize({ r: reference }, { ignoreUndefined: false })).toString('base64')}`;
    } catch {
      // a value of another BSON major version, for instance: the canonical form below
    }
  }
  return `c:${canonicalKey(reference)}`;
}

module.exports = { plainValue, canonicalKey, referenceKey };
