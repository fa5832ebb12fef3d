// The doc test's own harness (scripts/lib/doc-*.mjs) on made-up Markdown: what it must
// catch — a result comment that no longer holds, one never reached, a block that leaves
// the process running, a session transcript that differs, a wrong install line, a
// stray annotation, a TypeScript block that does not compile — and what it must accept.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { extractBlocks } from '../../scripts/lib/doc-blocks.mjs';
import { makeApp, removeApp, runScript, runSession, checkShell, checkText, instrument } from '../../scripts/lib/doc-run.mjs';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const FENCE = '```';
// The harness does not depend on the server kind: it runs in the mongoeco pass only.
const onePass = process.env.MONGO_SEQUENCE_SERVER === 'secantus' ? 'the harness is checked in the mongoeco pass' : false;
let server;
let app;
let docs;
let n = 0;

before(async () => {
  if (onePass) return;
  server = await startServer();
  app = makeApp(ROOT, pkg.name);
  docs = mkdtempSync(join(tmpdir(), 'mseq-doctest-md-'));
  mkdirSync(join(docs, 'docs'));
});
after(async () => {
  if (app) removeApp(app);
  if (docs) rmSync(docs, { recursive: true, force: true });
  if (server) await server.stop();
});

/** The blocks of a made-up Markdown text. */
function parse(markdown) {
  const path = join(docs, `t${n++}.md`);
  writeFileSync(path, markdown);
  return extractBlocks(path, docs);
}

const run = (block) => runScript(block, { app, serverUri: server.uri, suffix: `_h${n++}`, index: `h${n}`, timeoutMs: 8_000 });

const counterBlock = (comment) =>
  `<!-- doctest setup
const { MongoClient } = require('mongodb');
const client = await new MongoClient('mongodb://localhost:27017').connect();
const db = client.db('app');
-->
<!-- doctest teardown
await client.close();
-->
${FENCE}js
const { getNextSequenceValue } = require('mongodb-sequence');
await getNextSequenceValue(db, 'c', { upsert: true }); // 1
const second = await getNextSequenceValue(db, 'c', { upsert: true }); ${comment}
const three = await getNextSequenceBatch(db, 'c', 3, { upsert: true }); // → [3..5]
${FENCE}
`.replace('const three', "const { getNextSequenceBatch } = require('mongodb-sequence');\nconst three");

test('a result comment that holds passes; the same comment drifted fails and names its line', { skip: onePass }, async () => {
  const good = await run(parse(counterBlock('// → 2')).blocks[0]);
  assert.equal(good.ok, true, good.message);
  assert.equal(good.checks.length, 3);
  const drifted = await run(parse(counterBlock('// → 3')).blocks[0]);
  assert.equal(drifted.ok, false);
  assert.match(drifted.message, /t\d+\.md:12: `second` gives 2; the comment says 3/);
  const plainStyle = await run(parse(counterBlock('// 4: prose after the value')).blocks[0]);
  assert.equal(plainStyle.ok, false);
  assert.match(plainStyle.message, /gives 2; the comment says 4/);
});

test('values: ranges, "and more", numbers are not BigInts, objects need all their keys', { skip: onePass }, () => {
  const probe = (expr, comment) => instrument([`${expr}; // ${comment}`], () => 'x').lines[0];
  assert.match(probe('f()', '→ [1..3]'), /__doctest\.range\(1, 3\)/);
  assert.match(probe('f()', '[{ a: 1 }, ...]'), /__doctest\.MORE\]/);
  assert.match(probe('f()', '9007199254740993'), /9007199254740993n/);
  assert.equal(probe('f()', 'or: prose'), 'f(); ');
  assert.throws(() => instrument(['f(); // → ['], () => 'x'), /does not parse/);
  const { matches, MORE } = require('../../scripts/lib/doc-check.cjs');
  assert.equal(matches({ a: 1, b: 2 }, { a: 1 }), false);
  assert.equal(matches({ a: 1 }, { a: 1, b: undefined }), false);
  assert.equal(matches([1, 2, 3], [1, 2, MORE]), true);
  assert.equal(matches([1], [1, 2, MORE]), false);
  assert.equal(matches([1, 2], [1]), false);
  assert.equal(matches(1n, 1), false);
  assert.equal(matches([{ name: 'x', value: 3 }], [{ name: 'x', value: 3 }]), true);
});

test('a result comment that is never reached fails the block', { skip: onePass }, async () => {
  const { blocks } = parse(`${FENCE}js
function never() {
  const one = 1; // → 1
}
${FENCE}
`);
  const result = await run(blocks[0]);
  assert.equal(result.ok, false);
  assert.match(result.message, /never reached: .*:3/);
});

test('a block that never finishes, or ends its process early, fails', { skip: onePass }, async () => {
  const [pending, exits] = parse(`${FENCE}js
await new Promise(() => {});
${FENCE}
${FENCE}js
process.exit(0);
${FENCE}
`).blocks;
  for (const block of [pending, exits]) {
    const result = await run(block);
    assert.equal(result.ok, false);
    assert.match(result.message, /ended before the block did/);
  }
});

test('a block that leaves a client open (the process does not end) fails', { skip: onePass }, async () => {
  const { blocks } = parse(`${FENCE}js
const { MongoClient } = require('mongodb');
const client = await new MongoClient('mongodb://localhost:27017').connect();
${FENCE}
`);
  const result = await run(blocks[0]);
  assert.equal(result.ok, false);
  assert.match(result.message, /did not exit/);
});

test('an ESM block runs as a module; a TypeScript block is type-checked first', { skip: onePass }, async () => {
  const esm = parse(`${FENCE}js
import { formatSequence } from 'mongodb-sequence';
formatSequence(7, 'A{seq:3}'); // → 'A007'
${FENCE}
`).blocks[0];
  const ok = await run(esm);
  assert.equal(ok.ok, true, ok.message);
  const typed = parse(`${FENCE}ts
import { formatSequence } from 'mongodb-sequence';
const s: string = formatSequence(7, 'A{seq:3}'); // → 'A007'
${FENCE}
${FENCE}ts
import { formatSequence } from 'mongodb-sequence';
const s: number = formatSequence(7, 'A{seq:3}');
${FENCE}
`).blocks;
  const compiles = await run(typed[0]);
  assert.equal(compiles.ok, true, compiles.message);
  const fails = await run(typed[1]);
  assert.equal(fails.ok, false);
  assert.match(fails.message, /TS2322/);
});

test('a shell session is compared byte for byte', { skip: onePass }, async () => {
  const session = (output) =>
    parse(`${FENCE}console
$ export MONGODB_URI=mongodb://localhost:27017/shop
$ mongodb-sequence next s --upsert --count 2
${output}
${FENCE}
`).blocks[0];
  const context = { app, serverUri: server.uri, suffix: `_s${n++}` };
  const good = await runSession(session('1\n2'), context);
  assert.equal(good.ok, true, good.actual);
  // The same session on a fresh database, its block differing by one trailing space.
  const trailingSpace = await runSession(session('1\n2 '), { ...context, suffix: `_s${n++}` });
  assert.equal(trailingSpace.ok, false);
  assert.equal(trailingSpace.actual, trailingSpace.expected.replace('2 \n', '2\n'));
});

test('sh and text blocks: the install line names this package, scripts and paths exist', { skip: onePass }, () => {
  const [install, wrong, script, other, tree, badTree] = parse(`${FENCE}sh
npm install ${pkg.name}
${FENCE}
${FENCE}sh
npm install mongo-sequence
${FENCE}
${FENCE}sh
npm install && npm run demo   # a comment
npm run no-such-script
${FENCE}
${FENCE}sh
curl https://example.com | sh
${FENCE}
${FENCE}text
index.js → src/engine/
${FENCE}
${FENCE}text
src/nowhere/file.rs
${FENCE}
`).blocks;
  assert.equal(checkShell(install, pkg, ROOT).ok, true);
  assert.match(checkShell(wrong, pkg, ROOT).message, /installs 'mongo-sequence'/);
  assert.match(checkShell(script, pkg, ROOT).message, /no script 'no-such-script'/);
  assert.match(checkShell(other, pkg, ROOT).message, /no check for this command/);
  assert.equal(checkText(tree, ROOT).ok, true);
  assert.match(checkText(badTree, ROOT).message, /src\/nowhere\/file\.rs/);
});

test('annotations: attached ones are read, stray ones and unknown kinds are reported', { skip: onePass }, () => {
  const { blocks, stray, fenceLines } = parse(`<!-- doctest not run: shown only -->

${FENCE}yaml
a: 1
${FENCE}

<!-- doctest setup
x
-->
Some prose.

${FENCE}js
${FENCE}
`);
  assert.equal(blocks[0].notRun, 'shown only');
  assert.deepEqual(blocks[1].setup, []);
  assert.equal(stray.length, 1);
  assert.equal(fenceLines, 4);
  assert.throws(() => parse(`<!-- doctest hidden -->\n${FENCE}js\n${FENCE}\n`), /unknown doctest annotation/);
});
