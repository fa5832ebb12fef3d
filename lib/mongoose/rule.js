'use strict';
// The numbering rule: whether a new document takes a number of a counter, by what its
// inc_field holds and which write inserts it. Every write of the plugin asks it here.
//
// What the inc_field of a document holds, for one counter (`stateOf`):
//
//   EMPTY    nothing: undefined, null, the schema's default, or (a plain object) a value
//            the schema casts to nothing
//   CALLERS  a value the caller set: not one this counter gave, or one it gave that the
//            caller has changed since
//   OURS     the number this counter gave it, still there, for the reference value the
//            document has now
//   STALE    the number this counter gave it, still there, for another reference value
//            than the document has now (numbered, then its reference field changed)
//
// Whether it takes a number (`takesNumber`), by write:
//
//              save,     insertMany,       gapless   gapless      replace
//              create    bulkWrite insert  create    insertMany   upsert
//   EMPTY      number    number            number    number       number (1)
//   CALLERS    number(2) keep              number    keep         keep
//   OURS       keep (3)  keep              number    keep         -
//   STALE      number    number            number    keep         -
//
//   (1) refused unless the filter gives the number (lib/mongoose/upserts.js)
//   (2) as mongoose-sequence: a copy of a saved record never repeats its number
//   (3) numbered ahead by create([...]) or setNext, or a save retried after it failed
//   A counter's `exempt(doc, Model)`, when it has one and says so, takes no number in any
//   write (the typegoose drop-in's skip symbol); its `writeAs(write)`, when it has one,
//   names the column a write reads (the mongoose-auto-increment drop-in: save as BATCH).
//   An update upsert takes a number unless its filter or update gives the field
//   (lib/mongoose/upserts.js). Plain objects are never OURS or STALE: a counter records
//   only the documents it numbers, and numbers a plain object as a copy.
//
// How a document moves between states: the counter's record of what it gave (`numbered`,
// a WeakMap document → { key, value } in lib/mongoose/counter.js):
//
//   give (save hook, create, insertMany, bulkWrite, setNext)      -> OURS
//   its reference field changes                          OURS     -> STALE
//   the caller writes inc_field                          OURS, STALE -> CALLERS or EMPTY
//   saved or inserted (post save, post insertMany)       OURS, STALE -> CALLERS (record dropped)
//   its save refused by a unique index on inc_field      OURS, STALE -> EMPTY (field cleared)

const EMPTY = 'empty';
const CALLERS = 'callers';
const OURS = 'ours';
const STALE = 'stale';

/** The writes of the table's columns. */
const SAVE = 'save';
const BATCH = 'batch';
const GAPLESS_CREATE = 'gaplessCreate';
const GAPLESS_BATCH = 'gaplessBatch';
const REPLACEMENT = 'replacement';

/** The table above: state → write → whether a number is taken. */
const TAKES = {
  [EMPTY]: { [SAVE]: true, [BATCH]: true, [GAPLESS_CREATE]: true, [GAPLESS_BATCH]: true, [REPLACEMENT]: true },
  [CALLERS]: { [SAVE]: true, [BATCH]: false, [GAPLESS_CREATE]: true, [GAPLESS_BATCH]: false, [REPLACEMENT]: false },
  [OURS]: { [SAVE]: false, [BATCH]: false, [GAPLESS_CREATE]: true, [GAPLESS_BATCH]: false, [REPLACEMENT]: false },
  [STALE]: { [SAVE]: true, [BATCH]: true, [GAPLESS_CREATE]: true, [GAPLESS_BATCH]: false, [REPLACEMENT]: false },
};

/**
 * The state of `doc` (a document, or a plain object of `Model`) for `counter`: what it
 * recorded (`ownNumber`), the reference value's key (`keyOf(referenceOf(doc))`) and
 * whether a value is set (`isExplicit`).
 */
function stateOf(counter, doc, Model) {
  const mine = counter.ownNumber(doc);
  if (mine) return mine.key === counter.keyOf(counter.referenceOf(doc)) ? OURS : STALE;
  return counter.isExplicit(doc, Model) ? CALLERS : EMPTY;
}

/**
 * Whether `doc` takes a number of `counter` in `write` (a column of the table); never
 * for what is not an object. A column with one answer reads nothing of the document.
 */
function takesNumber(counter, doc, write, Model) {
  if (!Object.hasOwn(TAKES[EMPTY], write)) throw new Error(`unknown write ${String(write)}`);
  if (!doc || typeof doc !== 'object') return false;
  // A counter may exempt documents outright (the typegoose drop-in's skip symbol).
  if (typeof counter.exempt === 'function' && counter.exempt(doc, Model)) return false;
  // A counter may read another column for a write (mongoose-auto-increment's save keeps a
  // number the caller set, as a batch does).
  const as = typeof counter.writeAs === 'function' ? counter.writeAs(write) : write;
  const column = Object.values(TAKES).map((row) => row[as]);
  if (column.every((takes) => takes === column[0])) return column[0];
  return TAKES[stateOf(counter, doc, Model)][as];
}

module.exports = { TAKES, stateOf, takesNumber, EMPTY, CALLERS, OURS, STALE, SAVE, BATCH, GAPLESS_CREATE, GAPLESS_BATCH, REPLACEMENT };
