// lib/mongoose/options.js without a server: defaults, checks and the registration signature.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { normalise, signature, signatureDifferences, DEFAULTS, gaplessRefusal, integerOption } = require('../../../lib/mongoose/options.js');

const refused = (options, code, type = Error) =>
  assert.throws(
    () => normalise(options),
    (error) => error.code === code && error instanceof type,
    inspect(options),
  );

test("normalise: the defaults, the id from inc_field, reference_fields sorted, the caller's object untouched", () => {
  assert.deepEqual(normalise(undefined), { ...DEFAULTS, id: '_id', reference_fields: null });
  assert.equal(normalise({ inc_field: 'no' }).id, 'no');
  const given = { id: 7, reference_fields: ['shop', 'year', 'a.b'], other: 1 };
  const options = normalise(given);
  assert.equal(options.id, '7');
  assert.deepEqual(options.reference_fields, ['a.b', 'shop', 'year']);
  assert.deepEqual(given, { id: 7, reference_fields: ['shop', 'year', 'a.b'], other: 1 });
  assert.deepEqual(normalise({ id: 'x', reference_fields: 'shop' }).reference_fields, ['shop']);
});

test('normalise refuses what mongoose-sequence refuses, and bad types, with INVALID_ARGUMENT', () => {
  refused({ reference_fields: ['shop'] }, 'INVALID_ARGUMENT');
  refused({ start_seq: 1.5 }, 'INVALID_ARGUMENT', TypeError);
  refused({ start_seq: '1' }, 'INVALID_ARGUMENT', TypeError);
  refused({ inc_amount: 2 ** 53 }, 'INVALID_ARGUMENT', TypeError);
  refused({ inc_amount: 0 }, 'INVALID_ARGUMENT', TypeError);
  refused({ gapless: 'yes' }, 'INVALID_ARGUMENT', TypeError);
  refused({ exclusive: 'yes' }, 'INVALID_ARGUMENT', TypeError);
  refused({ uri: '' }, 'INVALID_ARGUMENT', TypeError);
  refused({ uri: 5 }, 'INVALID_ARGUMENT', TypeError);
  assert.equal(normalise({ start_seq: 0, inc_amount: -3, exclusive: 'reuse' }).inc_amount, -3);
  for (const cache of [0, -1, 1.5, '10', 1_000_001, true, Number.NaN, 10n, Object.create(null), Symbol('x')]) refused({ cache }, 'INVALID_ARGUMENT', TypeError);
  refused({ cache: 10, gapless: true }, 'INVALID_ARGUMENT', TypeError);
  // A value without conversions (no prototype, a symbol) is described, never converted.
  for (const bad of [{ start_seq: Object.create(null) }, { gapless: Object.create(null) }, { exclusive: Symbol('s') }]) refused(bad, 'INVALID_ARGUMENT', TypeError);
  assert.equal(normalise({ cache: 1_000_000 }).cache, 1_000_000);
  assert.equal(normalise({ cache: null }).cache, undefined);
});

test('signature: what a reuse must agree on, and nothing else', () => {
  const a = normalise({ id: 'x', inc_field: 'no', exclusive: 'reuse' });
  assert.equal(signature(a), signature(normalise({ id: 'x', inc_field: 'no', exclusive: false, parallel_hooks: false, disable_hooks: true })));
  assert.equal(signature(a), signature(normalise({ id: 'x', inc_field: 'no', cache: null })));
  assert.notEqual(signature(normalise({ cache: 10 })), signature(normalise({ cache: 20 })));
  for (const change of [{ start_seq: 2 }, { inc_amount: 2 }, { collection_name: 'c' }, { gapless: true }, { uri: 'mongodb://h' }, { reference_fields: 'shop' }, { cache: 10 }]) {
    assert.notEqual(signature(a), signature(normalise({ id: 'x', inc_field: 'no', ...change })), JSON.stringify(change));
    // The refusal names the option that differs, by name only (a uri may hold credentials).
    assert.deepEqual(signatureDifferences(a, normalise({ id: 'x', inc_field: 'no', ...change })), Object.keys(change));
  }
  assert.deepEqual(signatureDifferences(a, normalise({ id: 'x', inc_field: 'no', exclusive: false, parallel_hooks: false })), []);
});

test('gaplessRefusal names the operation, with GAPLESS_UNSUPPORTED_OPERATION', () => {
  const error = gaplessRefusal('an upsert');
  assert.equal(error.code, 'GAPLESS_UNSUPPORTED_OPERATION');
  assert.match(error.message, /an upsert cannot join that transaction/);
});

test('integerOption: an integer, or its decimal digits in a string (as process.env gives them); else refused, a string quoted', () => {
  const taken = [
    [100, 100],
    ['100', 100],
    [' 100 ', 100],
    ['+5\n', 5],
    ['-5', -5],
    ['\t7', 7],
  ];
  for (const [value, number] of taken) assert.equal(integerOption('', 'startAt', value), number, JSON.stringify(value));
  // Past the safe integers: a BigInt, exact, where BigInts are taken; refused elsewhere.
  assert.equal(integerOption('', 'startAt', '9007199254740993', { bigint: true }), 9007199254740993n);
  assert.equal(integerOption('', 'startAt', 5n, { bigint: true }), 5n);
  const refusal = (value, options) => {
    try {
      integerOption('p: ', 'startAt', value, options);
    } catch (error) {
      assert.equal(error.code, 'INVALID_ARGUMENT');
      assert.ok(error instanceof TypeError);
      return error.message;
    }
    assert.fail(`${JSON.stringify(value)} taken`);
  };
  // What the plugins replaced read otherwise (or not at all), and fractions: refused.
  for (const value of ['abc', '1e3', '1.5', '0x10', '0b11', '', ' ', '1 000', '１００', '100n', '9007199254740993']) {
    const message = refusal(value);
    assert.ok(message.startsWith('p: option startAt must be an integer ') && message.endsWith(`; got ${JSON.stringify(value)}`), message);
  }
  assert.match(refusal(1.5), /the numbers here are integers; got 1\.5$/);
  assert.match(refusal(5n), /; got 5n$/);
  assert.match(refusal('0', { nonZero: true }), /must be a non-zero integer .*; got "0"$/);
  assert.match(refusal(Object.create(null)), /; got an object$/);
});
