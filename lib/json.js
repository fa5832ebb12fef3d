'use strict';
// JSON text with BigInts as JSON numbers, however large: what `JSON.stringify` writes,
// except that a BigInt is written as its exact digits instead of throwing.

/**
 * The JSON text of `value`, as `JSON.stringify(value)` writes it (no indentation), with
 * every BigInt written as a number of its exact digits; `undefined` when `value` has no
 * JSON form (`undefined`, a function, a symbol), as with `JSON.stringify`.
 */
function toJson(value) {
  return write('', value);
}

/** `value`, found under `key`, as JSON (`undefined` when it has none). */
function write(key, value) {
  let current = value;
  if (current !== null && (typeof current === 'object' || typeof current === 'bigint') && typeof current.toJSON === 'function') {
    current = current.toJSON(key);
  }
  // Boxed primitives are written as their primitive, as JSON.stringify does.
  if (current instanceof Number) current = Number(current);
  else if (current instanceof String) current = String(current);
  else if (current instanceof Boolean) current = current.valueOf();
  else if (typeof current === 'object' && current !== null && Object.prototype.toString.call(current) === '[object BigInt]') current = current.valueOf();
  switch (typeof current) {
    case 'bigint':
      return current.toString();
    case 'number':
      return Number.isFinite(current) ? JSON.stringify(current) : 'null';
    case 'string':
    case 'boolean':
      return JSON.stringify(current);
    case 'object':
      if (current === null) return 'null';
      if (Array.isArray(current)) {
        return `[${current.map((item, i) => write(String(i), item) ?? 'null').join(',')}]`;
      }
      return `{${Object.keys(current)
        .map((k) => {
          const text = write(k, current[k]);
          return text === undefined ? undefined : `${JSON.stringify(k)}:${text}`;
        })
        .filter((part) => part !== undefined)
        .join(',')}}`;
    default:
      return undefined;
  }
}

module.exports = { toJson };
