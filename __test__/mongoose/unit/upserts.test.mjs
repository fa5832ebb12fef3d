// lib/mongoose/upserts.js without a server: what an upsert would insert, whether it takes a
// number, where the number goes, and what is refused before any number is taken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose from 'mongoose';

const require = createRequire(import.meta.url);
const { filterEqualities, isOperatorObject, upsertValues, updateTouches, checkReferenceOperators, upsertPlan } = require('../../../lib/mongoose/upserts.js');
const { Counter } = require('../../../lib/mongoose/counter.js');
const { normalise } = require('../../../lib/mongoose/options.js');

const counterOf = (options) => new Counter(null, normalise(options), mongoose.mongo.BSON);
const refusedWith = (code) => (error) => error.code === code;

test('isOperatorObject: an object with a $ key, not a date, an array or a BSON value', () => {
  assert.equal(isOperatorObject({ $gt: 1 }), true);
  assert.equal(isOperatorObject({ a: 1 }), false);
  assert.equal(isOperatorObject([{ $gt: 1 }]), false);
  assert.equal(isOperatorObject(new Date()), false);
  assert.equal(isOperatorObject(new mongoose.Types.ObjectId()), false);
  assert.equal(isOperatorObject(null), false);
});

test('filterEqualities: plain values, $eq, a one-element $in, inside a top-level $and', () => {
  const filter = { a: 1, b: { $eq: 2 }, c: { $in: [3] }, d: { $in: [4, 5] }, e: { $in: [/x/] }, f: { $gt: 1 }, $or: [{ g: 1 }], $and: [{ h: 8 }, { i: { $eq: 9 } }] };
  assert.deepEqual(filterEqualities(filter), { a: 1, b: 2, c: 3, h: 8, i: 9 });
  assert.deepEqual(filterEqualities(undefined), {});
});

test('upsertValues: equalities, then $setOnInsert, $set and plain fields; a replacement over the equalities', () => {
  assert.deepEqual(upsertValues({ a: 1, k: 0 }, { $setOnInsert: { k: 1, s: 1 }, $set: { k: 2 }, k: 3, $inc: { n: 1 } }, false), { a: 1, k: 3, s: 1 });
  assert.deepEqual(upsertValues({ a: 1 }, { b: 2 }, true), { a: 1, b: 2 });
  assert.deepEqual(upsertValues({ a: 1 }, [{ $set: { b: 2 } }], false), { a: 1 });
});

test('updateTouches: true when the update writes the field or above it, the parent when $setOnInsert sets only that', () => {
  assert.equal(updateTouches({ $set: { x: 1 } }, 'no'), false);
  assert.equal(updateTouches({ $setOnInsert: { no: 1 } }, 'no'), true);
  assert.equal(updateTouches({ $inc: { no: 1 } }, 'no'), true);
  assert.equal(updateTouches({ no: 1 }, 'no'), true);
  assert.equal(updateTouches({ $set: { meta: {} } }, 'meta.no'), true);
  assert.equal(updateTouches({ $unset: { 'meta.no.x': 1 } }, 'meta.no'), true);
  assert.equal(updateTouches({ $setOnInsert: { meta: { a: 1 } } }, 'meta.no'), 'meta');
  assert.equal(updateTouches({ $setOnInsert: { meta: { no: 3 } } }, 'meta.no'), true);
  assert.equal(updateTouches({ $setOnInsert: { meta: 5 } }, 'meta.no'), true);
  assert.equal(updateTouches({ $setOnInsert: { metadata: {} } }, 'meta.no'), false);
});

test('checkReferenceOperators refuses a reference field written by an operator other than $set / $setOnInsert', () => {
  const scoped = counterOf({ id: 'u1', inc_field: 'no', reference_fields: ['shop'] });
  checkReferenceOperators(scoped, { $set: { shop: 'a' }, $setOnInsert: { shop: 'b' }, $inc: { count: 1 } });
  for (const update of [{ $max: { shop: 'z' } }, { $unset: { 'shop.x': 1 } }, { $rename: { old: 'shop' } }, { $rename: { shop: 'other' } }]) {
    assert.throws(() => checkReferenceOperators(scoped, update), refusedWith('INVALID_ARGUMENT'), JSON.stringify(update));
  }
  checkReferenceOperators(counterOf({ id: 'u2', inc_field: 'no' }), { $max: { shop: 'z' } });
});

test('upsertPlan: no number when the filter or the update gives it; else the values and where the number goes', () => {
  const counter = counterOf({ id: 'u3', inc_field: 'no' });
  assert.equal(upsertPlan(counter, undefined, { no: 5 }, { $set: { a: 1 } }, false), null);
  assert.equal(upsertPlan(counter, undefined, {}, { $setOnInsert: { no: 5 } }, false), null);
  const plan = upsertPlan(counter, undefined, { a: 1 }, { $set: { b: 2 }, $setOnInsert: { c: 3 } }, false);
  assert.deepEqual(plan.source, { a: 1, b: 2, c: 3 });
  assert.deepEqual(plan.place(7), { $set: { b: 2 }, $setOnInsert: { c: 3, no: 7 } });
  const nested = upsertPlan(counterOf({ id: 'u4', inc_field: 'meta.no' }), undefined, {}, { $setOnInsert: { meta: { a: 1 } } }, false);
  const update = { $setOnInsert: { meta: { a: 1 } } };
  assert.deepEqual(nested.place(9), { $setOnInsert: { meta: { a: 1, no: 9 } } });
  assert.deepEqual(update, { $setOnInsert: { meta: { a: 1 } } });
});

test('upsertPlan: a replacement takes no number; it is refused unless it or the filter gives one', () => {
  const counter = counterOf({ id: 'u5', inc_field: 'no' });
  assert.equal(upsertPlan(counter, undefined, {}, { no: 4, a: 1 }, true), null);
  const byFilter = upsertPlan(counter, undefined, { no: 4 }, { a: 1 }, true);
  assert.equal(byFilter.source, null);
  assert.deepEqual(byFilter.place(null), { a: 1, no: 4 });
  assert.equal(upsertPlan(counterOf({ id: 'u6' }), undefined, { _id: 4 }, { a: 1 }, true), null);
  assert.throws(() => upsertPlan(counter, undefined, {}, { a: 1 }, true), refusedWith('INVALID_ARGUMENT'));
});

test('upsertPlan refuses a pipeline, and with gapless every upsert that would take a number', () => {
  const counter = counterOf({ id: 'u7', inc_field: 'no' });
  assert.throws(() => upsertPlan(counter, undefined, {}, [{ $set: { a: 1 } }], false), refusedWith('INVALID_ARGUMENT'));
  const gapless = counterOf({ id: 'u8', inc_field: 'no', gapless: true });
  assert.throws(() => upsertPlan(gapless, undefined, {}, [{ $set: { a: 1 } }], false), refusedWith('GAPLESS_UNSUPPORTED_OPERATION'));
  assert.throws(() => upsertPlan(gapless, undefined, {}, { $set: { a: 1 } }, false), refusedWith('GAPLESS_UNSUPPORTED_OPERATION'));
  assert.equal(upsertPlan(gapless, undefined, { no: 1 }, { $set: { a: 1 } }, false), null);
});
