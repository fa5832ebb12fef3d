// One table of error codes: the native `ErrorCode` export (from the engine's table), the
// typings' `ErrorCode` union, the docs' error table, and every code the package's own
// JavaScript (the mongoose plugin, the CLI) raises agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { seq } from '../helpers.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path) => readFileSync(join(ROOT, path), 'utf8');
const codes = Object.keys(seq.ErrorCode);

test('ErrorCode is a frozen table of every code, each mapped to itself', () => {
  assert.ok(Object.isFrozen(seq.ErrorCode));
  assert.ok(codes.length >= 14, codes.join(', '));
  for (const code of codes) assert.equal(seq.ErrorCode[code], code);
  // The plugin's own code is in the same table.
  assert.equal(seq.ErrorCode.GAPLESS_UNSUPPORTED_OPERATION, 'GAPLESS_UNSUPPORTED_OPERATION');
  assert.throws(() => {
    'use strict';
    seq.ErrorCode.SERVER = 'x';
  }, TypeError);
});

test('the typings list exactly the codes of the table', () => {
  const typings = read('index.d.ts');
  const union = typings.match(/export type ErrorCode =([^]*?)\n\n/);
  assert.ok(union, 'index.d.ts declares the ErrorCode union');
  const listed = [...union[1].matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]);
  assert.deepEqual([...listed].sort(), [...codes].sort());
  assert.match(typings, /export declare const ErrorCode: ErrorCodeTable/);
});

test('the docs error table has a row for every code', () => {
  const docs = ['README.md', ...(existsSync(join(ROOT, 'docs')) ? readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`) : [])];
  const text = docs.map(read).join('\n');
  for (const code of codes) assert.match(text, new RegExp(`^\\| \`${code}\` \\|`, 'm'), `an error table row for ${code}`);
});

test("every code the package's JavaScript raises is one of the table's", () => {
  const sources = ['mongoose.js', ...['lib', 'bin', 'bin/commands'].flatMap((dir) => readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.js')).map((f) => `${dir}/${f}`))];
  let seen = 0;
  for (const file of sources) {
    const text = read(file);
    // Every error is made by codedError; no code is assigned by hand.
    assert.doesNotMatch(text, /\.code = '/, `${file} sets a code by hand`);
    for (const [, code] of text.matchAll(/codedError\(\s*'([A-Z_]+)'/g)) {
      seen += 1;
      assert.ok(codes.includes(code), `${file}: ${code} is not in ErrorCode`);
    }
  }
  assert.ok(seen > 10, `${seen} codedError calls found`);
});
