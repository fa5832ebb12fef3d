// lib/mongoose/reference-key.js without a server: two reference values share a key exactly
// when the server stores them as the same BSON value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose from 'mongoose';

const require = createRequire(import.meta.url);
const { plainValue, canonicalKey, referenceKey } = require('../../../lib/mongoose/reference-key.js');
const { BSON } = mongoose.mongo;

test('plainValue: undefined as null, mongoose wrappers as their BSON form, the rest as it is', () => {
  assert.equal(plainValue(undefined), null);
  assert.equal(plainValue(0), 0);
  const date = new Date(5);
  assert.equal(plainValue(date), date);
  const id = new BSON.ObjectId();
  assert.equal(plainValue(id), id);
  assert.deepEqual(plainValue({ toBSON: () => ({ a: 1 }) }), { a: 1 });
});

test('referenceKey with BSON: equal stored values share a key, different ones do not', () => {
  const key = (v) => referenceKey(v, BSON);
  assert.equal(key(null), '');
  assert.equal(key({ shop: 'a' }), key({ shop: 'a' }));
  assert.notEqual(key({ shop: 'a' }), key({ shop: 'b' }));
  // undefined is stored as null, not dropped.
  assert.equal(key({ shop: undefined }), key({ shop: null }));
  assert.notEqual(key({ shop: null }), key({}));
  // dates to the millisecond, an ObjectId apart from its hex string, 1 apart from '1'.
  assert.equal(key({ d: new Date(1000) }), key({ d: new Date(1000) }));
  assert.notEqual(key({ d: new Date(1000) }), key({ d: new Date(1001) }));
  const id = new BSON.ObjectId();
  assert.notEqual(key({ r: id }), key({ r: id.toHexString() }));
  assert.notEqual(key({ r: 1 }), key({ r: '1' }));
  // objects by their fields, in order.
  assert.notEqual(key({ r: { a: 1, b: 2 } }), key({ r: { b: 2, a: 1 } }));
  assert.match(key({ r: 1 }), /^b:/);
});

test('referenceKey without BSON, or refused by it, falls back to the canonical form', () => {
  assert.equal(referenceKey({ r: 1 }, null), `c:${canonicalKey({ r: 1 })}`);
  const refusing = {
    serialize() {
      throw new Error('no');
    },
  };
  assert.equal(referenceKey({ r: 1 }, refusing), `c:${canonicalKey({ r: 1 })}`);
});

test('canonicalKey tells types, -0, dates, bytes and key order apart', () => {
  assert.equal(canonicalKey(null), canonicalKey(undefined));
  assert.notEqual(canonicalKey(1), canonicalKey('1'));
  assert.notEqual(canonicalKey(0), canonicalKey(-0));
  assert.equal(canonicalKey(new Date(7)), 'date:7');
  assert.notEqual(canonicalKey(new Date(7)), canonicalKey(7));
  assert.equal(canonicalKey(Buffer.from([1, 2])), canonicalKey(new Uint8Array([1, 2])));
  assert.notEqual(canonicalKey(Buffer.from([1, 2])), canonicalKey(Buffer.from([2, 1])));
  assert.notEqual(canonicalKey({ a: 1, b: 2 }), canonicalKey({ b: 2, a: 1 }));
  assert.equal(canonicalKey(new Map([['a', 1]])), `map:${canonicalKey({ a: 1 })}`);
  assert.notEqual(canonicalKey(/a/), canonicalKey('/a/'));
  assert.equal(canonicalKey([1, 'x']), `[${canonicalKey(1)},${canonicalKey('x')}]`);
  const id = new BSON.ObjectId();
  assert.equal(canonicalKey(id), canonicalKey(new BSON.ObjectId(id.toHexString())));
  assert.notEqual(canonicalKey(id), canonicalKey(id.toHexString()));
});
