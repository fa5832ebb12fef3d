// lib/mongoose/paths.js without a server: dotted paths read, written and set on copies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose from 'mongoose';

const require = createRequire(import.meta.url);
const { isDocument, resolvePath, readField, writeField, withField, overlaps } = require('../../../lib/mongoose/paths.js');

test('resolvePath reads a dotted path, null past a missing level', () => {
  assert.equal(resolvePath('a.b.c', { a: { b: { c: 3 } } }), 3);
  assert.equal(resolvePath('a.x.c', { a: { b: 1 } }), null);
  assert.equal(resolvePath('a.b', { a: { b: undefined } }), undefined);
  assert.equal(resolvePath('a', null), null);
});

test('readField: an own dotted key of a plain object first, else the path', () => {
  assert.equal(readField({ 'meta.no': 5, meta: { no: 6 } }, 'meta.no'), 5);
  assert.equal(readField({ meta: { no: 6 } }, 'meta.no'), 6);
  assert.equal(readField(null, 'a'), null);
});

test('readField on a document: through getters, or raw', () => {
  const m = new mongoose.Mongoose();
  const schema = new m.Schema({ no: { type: Number, get: (v) => (v == null ? v : `N-${v}`) } });
  const Model = m.model('PathsGetter', schema);
  const doc = new Model({ no: 4 });
  assert.equal(isDocument(doc), true);
  assert.equal(isDocument({ get() {} }), false);
  assert.equal(readField(doc, 'no'), 'N-4');
  assert.equal(readField(doc, 'no', true), 4);
});

test('writeField writes in place, making the levels a path needs', () => {
  const target = { meta: 1 };
  writeField(target, 'meta.no', 7);
  writeField(target, 'x.y.z', 1);
  assert.deepEqual(target, { meta: { no: 7 }, x: { y: { z: 1 } } });
});

test('withField copies every object along the path and leaves the source as it was', () => {
  const source = { meta: { no: 1, keep: true }, list: [1] };
  const copy = withField(source, 'meta.no', 2);
  assert.deepEqual(copy, { meta: { no: 2, keep: true }, list: [1] });
  assert.deepEqual(source, { meta: { no: 1, keep: true }, list: [1] });
  assert.notEqual(copy.meta, source.meta);
  assert.equal(copy.list, source.list);
  // An array or a scalar on the way is replaced by an object.
  assert.deepEqual(withField({ a: [1] }, 'a.b', 1), { a: { b: 1 } });
  assert.deepEqual(withField({ a: 3 }, 'a.b', 1), { a: { b: 1 } });
});

test('overlaps: the same path, or one under the other, never a mere prefix', () => {
  assert.equal(overlaps('a', 'a'), true);
  assert.equal(overlaps('a', 'a.b'), true);
  assert.equal(overlaps('a.b', 'a'), true);
  assert.equal(overlaps('a', 'ab'), false);
  assert.equal(overlaps('a.b', 'a.c'), false);
});
