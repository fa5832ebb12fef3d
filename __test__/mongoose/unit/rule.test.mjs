// lib/mongoose/rule.js without a server: the state of a document's inc_field for a counter,
// as real mongoose documents move between states, and the table read by each write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose from 'mongoose';

const require = createRequire(import.meta.url);
const rule = require('../../../lib/mongoose/rule.js');
const { Counter } = require('../../../lib/mongoose/counter.js');
const { normalise } = require('../../../lib/mongoose/options.js');

const { TAKES, stateOf, takesNumber, EMPTY, CALLERS, OURS, STALE, SAVE, BATCH, GAPLESS_CREATE, GAPLESS_BATCH, REPLACEMENT } = rule;
const WRITES = [SAVE, BATCH, GAPLESS_CREATE, GAPLESS_BATCH, REPLACEMENT];

/** A counter on `no` (scoped by `shop`), never connected, and a model of its schema. */
function fixture(name, fieldSpec = Number) {
  const m = new mongoose.Mongoose();
  const Model = m.model(name, new m.Schema({ no: fieldSpec, shop: String }));
  const counter = new Counter(null, normalise({ id: name, inc_field: 'no', reference_fields: 'shop' }), m.mongo.BSON);
  return { Model, counter };
}

test('the table: every state has an answer for every write, booleans only', () => {
  assert.deepEqual(Object.keys(TAKES).sort(), [CALLERS, EMPTY, OURS, STALE].sort());
  for (const row of Object.values(TAKES)) assert.deepEqual(Object.keys(row).sort(), [...WRITES].sort());
  for (const row of Object.values(TAKES)) for (const cell of Object.values(row)) assert.equal(typeof cell, 'boolean');
});

test('a document moves EMPTY -> OURS -> STALE -> CALLERS -> EMPTY as the counter and the caller write it', () => {
  const { Model, counter } = fixture('RuleMoves');
  const doc = new Model({ shop: 'a' });
  assert.equal(stateOf(counter, doc), EMPTY);
  counter.give(doc, counter.referenceOf(doc), 5);
  assert.equal(doc.no, 5);
  assert.equal(stateOf(counter, doc), OURS);
  doc.shop = 'b';
  assert.equal(stateOf(counter, doc), STALE);
  doc.shop = 'a';
  assert.equal(stateOf(counter, doc), OURS);
  doc.no = 9;
  assert.equal(stateOf(counter, doc), CALLERS);
  doc.no = 5;
  // The number it gave is back: the record still holds.
  assert.equal(stateOf(counter, doc), OURS);
  doc.no = undefined;
  assert.equal(stateOf(counter, doc), EMPTY);
});

test('stored drops the record (OURS -> CALLERS); forget also clears the field (-> EMPTY)', () => {
  const { Model, counter } = fixture('RuleSettle');
  const saved = new Model({ shop: 'a' });
  counter.give(saved, counter.referenceOf(saved), 1);
  counter.stored(saved);
  assert.equal(stateOf(counter, saved), CALLERS);
  const refused = new Model({ shop: 'a' });
  counter.give(refused, counter.referenceOf(refused), 2);
  counter.forget(refused);
  assert.equal(refused.no, undefined);
  assert.equal(stateOf(counter, refused), EMPTY);
});

test('a schema default is EMPTY; a plain object is CALLERS only when its value casts to one', () => {
  const { Model, counter } = fixture('RuleDefault', { type: Number, default: 0 });
  assert.equal(stateOf(counter, new Model({ shop: 'a' })), EMPTY);
  assert.equal(stateOf(counter, new Model({ shop: 'a', no: 0 })), CALLERS);
  const plain = fixture('RulePlain');
  assert.equal(stateOf(plain.counter, {}, plain.Model), EMPTY);
  assert.equal(stateOf(plain.counter, { no: null }, plain.Model), EMPTY);
  assert.equal(stateOf(plain.counter, { no: 3 }, plain.Model), CALLERS);
  assert.equal(stateOf(plain.counter, { no: '3' }, plain.Model), CALLERS);
  assert.equal(stateOf(plain.counter, { no: 'three' }, plain.Model), EMPTY);
  // Without a model the object is read as it is.
  assert.equal(stateOf(plain.counter, { no: 'three' }), CALLERS);
});

test('takesNumber reads the table by state and write', () => {
  const { Model, counter } = fixture('RuleTakes');
  const empty = new Model({ shop: 'a' });
  const callers = new Model({ shop: 'a', no: 4 });
  const ours = new Model({ shop: 'a' });
  counter.give(ours, counter.referenceOf(ours), 1);
  const stale = new Model({ shop: 'a' });
  counter.give(stale, counter.referenceOf(stale), 2);
  stale.shop = 'b';
  for (const [state, doc] of [
    [EMPTY, empty],
    [CALLERS, callers],
    [OURS, ours],
    [STALE, stale],
  ]) {
    assert.equal(stateOf(counter, doc), state);
    for (const write of WRITES) assert.equal(takesNumber(counter, doc, write, Model), TAKES[state][write], `${state} ${write}`);
  }
  // What the table says in words: save renumbers all but OURS, the batch writers keep a
  // value the caller set, a gapless create numbers everything.
  assert.deepEqual(
    WRITES.map((w) => takesNumber(counter, callers, w, Model)),
    [true, false, true, false, false],
  );
  assert.deepEqual(
    [empty, callers, ours, stale].map((d) => takesNumber(counter, d, SAVE)),
    [true, true, false, true],
  );
});

test('takesNumber: never for what is not an object, refuses an unknown write, reads nothing for a one-answer column', () => {
  const untouchable = new Proxy(
    {},
    {
      get() {
        throw new Error('the document was read');
      },
    },
  );
  const counter = { ownNumber: () => assert.fail('read'), isExplicit: () => assert.fail('read') };
  assert.equal(takesNumber(counter, untouchable, GAPLESS_CREATE), true);
  for (const value of [null, undefined, 5, 'doc']) assert.equal(takesNumber(counter, value, BATCH), false);
  assert.throws(() => takesNumber(counter, {}, 'insertOne'), /unknown write/);
});

test('a counter may exempt documents from every write, and read another column for a write', () => {
  const { Model, counter } = fixture('RuleHooks');
  const given = new Model({ no: 7, shop: 'a' });
  const empty = new Model({ shop: 'a' });
  assert.equal(takesNumber(counter, given, SAVE), true);
  // The mongoose-auto-increment drop-in: save reads the BATCH column (a given number is kept).
  counter.writeAs = (write) => (write === SAVE ? BATCH : write);
  assert.equal(takesNumber(counter, given, SAVE), false);
  assert.equal(takesNumber(counter, empty, SAVE), true);
  assert.equal(takesNumber(counter, given, GAPLESS_CREATE), true);
  // The typegoose drop-in's skip symbol: no number in any write.
  counter.exempt = (doc) => doc === empty;
  for (const write of WRITES) assert.equal(takesNumber(counter, empty, write), false);
  assert.equal(takesNumber(counter, new Model({ shop: 'a' }), SAVE), true);
});
