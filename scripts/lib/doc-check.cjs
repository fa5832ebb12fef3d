// Loaded by every module the doc test generates from a code block: compares a line's
// value with the value its result comment gives, and reports which comments were checked.
'use strict';
const { writeFileSync } = require('node:fs');
const { inspect, isDeepStrictEqual } = require('node:util');

/** Marks `[a, b, ...]` / `[a, b, …]` in a result comment: the array starts with a, b. */
const MORE = Symbol('and more');

/** `[1..5]` in a result comment: the integers from `first` to `last`, both included. */
function range(first, last) {
  const out = [];
  const step = last >= first ? 1 : -1;
  for (let v = first; step > 0 ? v <= last : v >= last; v += step) out.push(v);
  return out;
}

/**
 * Whether `actual` is what the comment says: arrays element by element (all of them, or
 * a prefix before MORE), plain objects with exactly the same keys, anything else by
 * `isDeepStrictEqual` (so `1` and `1n` differ, as a reader would expect).
 */
function matches(actual, expected) {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return false;
    const more = expected.length > 0 && expected[expected.length - 1] === MORE;
    const head = more ? expected.slice(0, -1) : expected;
    if (more ? actual.length < head.length : actual.length !== head.length) return false;
    return head.every((e, i) => matches(actual[i], e));
  }
  if (expected !== null && typeof expected === 'object' && Object.getPrototypeOf(expected) === Object.prototype) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const keys = Object.keys(expected);
    const actualKeys = Object.keys(actual);
    if (keys.length !== actualKeys.length || !keys.every((k) => Object.prototype.hasOwnProperty.call(actual, k))) return false;
    return keys.every((k) => matches(actual[k], expected[k]));
  }
  return isDeepStrictEqual(actual, expected);
}

const checked = [];

/** Throws when `actual` (the value of `source`, at `where`) is not what the comment says. */
function check(where, source, actual, expected) {
  let want;
  try {
    want = expected();
  } catch (e) {
    throw new Error(`${where}: the result comment does not evaluate: ${e.message}`, { cause: e });
  }
  if (!matches(actual, want)) {
    const shown = inspect(want, { depth: 6, breakLength: Infinity }).replace(/Symbol\(and more\)/g, '…');
    const error = new Error(`${where}: \`${source.trim()}\` gives ${inspect(actual, { depth: 6, breakLength: Infinity })}; the comment says ${shown}`);
    error.doctest = true;
    throw error;
  }
  checked.push(where);
}

/**
 * Runs a block's body (CommonJS modules). A rejection ends the process at once with
 * status 1 (its teardown did not run, so clients may still be open); a body that
 * resolves lets the process end by itself, which it must (nothing left open).
 */
function run(body) {
  body().then(finish, (e) => {
    console.error(e && e.doctest ? e.message : e);
    process.exit(1);
  });
}

let finished = false;

/** Marks the block as run to its end (a process that exits before has not run it all). */
function finish() {
  finished = true;
}

process.on('exit', () => {
  if (process.env.DOCTEST_REPORT) writeFileSync(process.env.DOCTEST_REPORT, JSON.stringify({ checked, finished }));
});

module.exports = { MORE, range, check, run, finish, matches };
