// One table of error codes: the list in the engine's source (src/engine/error.rs), the
// native `ErrorCode` export and the typings' `ErrorCode` union (both generated from that
// list), the docs' error table, and every code the package's own JavaScript (the mongoose
// plugin, the CLI) raises agree.
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

/** The string literals of the `ErrorCode` union of `typings`, in order. */
function unionOf(typings) {
  const union = typings.match(/export type ErrorCode =([^]*?)\n\n/);
  assert.ok(union, 'the typings declare the ErrorCode union');
  return [...union[1].matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]);
}

/** The JavaScript strings of the engine's list of codes (`Variant => CODE,` lines). */
function engineList() {
  const source = read('src/engine/error.rs');
  const body = source.match(/macro_rules! with_error_codes \{([^]*?)\n\}/);
  assert.ok(body, 'src/engine/error.rs defines with_error_codes!');
  return [...body[1].matchAll(/^\s*[A-Z][A-Za-z0-9]* => ([A-Z][A-Z0-9_]*),$/gm)].map((m) => m[1]);
}

test('ErrorCode is frozen in every environment that loads the addon (worker threads)', async () => {
  // The export is napi's string enum object, frozen by the addon's module_exports hook,
  // which runs for each environment the addon is registered in.
  const { Worker } = await import('node:worker_threads');
  const source = `const { parentPort } = require('node:worker_threads');
    const { ErrorCode } = require(${JSON.stringify(join(ROOT, 'index.js'))});
    parentPort.postMessage({ frozen: Object.isFrozen(ErrorCode), codes: Object.keys(ErrorCode) });`;
  const seen = await Promise.all(
    [0, 1].map(
      () =>
        new Promise((resolve, reject) => {
          const worker = new Worker(source, { eval: true });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  for (const { frozen, codes: inWorker } of seen) {
    assert.equal(frozen, true);
    assert.deepEqual(inWorker, codes);
  }
});

test('the typings list exactly the codes of the table, in its order', () => {
  const typings = read('index.d.ts');
  assert.deepEqual(unionOf(typings), codes);
  assert.equal(typings.match(/export type ErrorCode =/g).length, 1, 'one ErrorCode union');
  assert.match(typings, /export declare const ErrorCode: ErrorCodeTable/);
});

test('the engine list, the native table and the typings hold the same codes', () => {
  // A code added to the engine's list but missing from the committed typings (or from a
  // stale build) fails here: both are generated from the list by `napi build`.
  const listed = engineList();
  assert.ok(listed.length >= 14, listed.join(', '));
  assert.deepEqual(listed, codes, 'the native ErrorCode export (rebuild the addon?)');
  assert.deepEqual(unionOf(read('index.d.ts')), listed, 'index.d.ts (regenerate it with napi build)');
});

test('the union is generated: the typings header names no code', () => {
  const header = read('scripts/dts-header.d.ts');
  assert.doesNotMatch(header, /export type ErrorCode =/);
  for (const code of codes) assert.ok(!header.includes(`'${code}'`), `${code} written by hand in the header`);
  // index.d.ts is the header followed by what napi generates from the Rust source.
  const typings = read('index.d.ts');
  assert.ok(typings.startsWith(header.trimEnd()), 'index.d.ts begins with the header');
  assert.ok(typings.indexOf('export type ErrorCode =') > header.trimEnd().length, 'the union comes after the header');
  // napi writes a string enum as a type-only union only with `constEnum: false`.
  assert.equal(JSON.parse(read('package.json')).napi.constEnum, false);
});

test('the docs error table has a row for every code', () => {
  const docs = [
    'README.md',
    ...(existsSync(join(ROOT, 'docs'))
      ? readdirSync(join(ROOT, 'docs'))
          .filter((f) => f.endsWith('.md'))
          .map((f) => `docs/${f}`)
      : []),
  ];
  const text = docs.map(read).join('\n');
  for (const code of codes) assert.match(text, new RegExp(`^\\| \`${code}\` \\|`, 'm'), `an error table row for ${code}`);
});

test("every code the package's JavaScript raises is one of the table's", () => {
  // Every folder of JavaScript, however deep: the plugin's helpers live in lib/mongoose/.
  const sources = [
    'mongoose.js',
    ...['lib', 'bin'].flatMap((dir) =>
      readdirSync(join(ROOT, dir), { recursive: true })
        .filter((f) => f.endsWith('.js'))
        .map((f) => `${dir}/${f}`),
    ),
  ];
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
  assert.ok(seen > 20, `${seen} codedError calls found`);
  // The loader's error is made before the table exists: its code is written once, there.
  const loader = /const CODE = '([A-Z_]+)';/.exec(read('lib/native.js'));
  assert.ok(loader && codes.includes(loader[1]), `lib/native.js: ${loader?.[1]} is not in ErrorCode`);
});
