// The documentation as a tested contract: every fenced code block of README.md, the
// other top-level *.md files, docs/*.md and docs/contributing/*.md is run against this run's test server (or MONGODB_URI), or checked, and each
// result comment (`// → 1`, `// 1`) must hold, so that an example cannot drift from the
// code. The rules (hidden setup lines, database names, result comments, shell sessions
// compared byte for byte, sh blocks) are at the top of scripts/lib/doc-run.mjs and
// scripts/lib/doc-blocks.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { docFiles, extractBlocks } from '../../scripts/lib/doc-blocks.mjs';
import { classify, makeApp, removeApp, runScript, runSession, checkShell, checkText, SESSION_LANGS, TEXT_LANGS } from '../../scripts/lib/doc-run.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

// How many blocks the documentation has, by treatment. A block added, dropped, or no
// longer run changes these numbers, so that nothing is skipped without anyone noticing.
const EXPECTED = { run: 24, check: 7, 'not run': 14 };

const extracted = docFiles(ROOT).map((path) => ({ path, ...extractBlocks(path, ROOT) }));
const blocks = extracted.flatMap((e) => e.blocks);
const runId = randomBytes(3).toString('hex');
const outcomes = new Map();
const databases = new Set();
let server;
let app;
let failed = false;

before(async () => {
  server = await startServer();
  app = makeApp(ROOT, pkg.name);
});

after(async () => {
  // A failed block's generated module stays for reading, unless it may hold the
  // credentials of a MONGODB_URI.
  if (app && (!failed || process.env.MONGODB_URI)) removeApp(app);
  else if (app) console.log(`# doc test modules kept in ${app}`);
  if (!server) return;
  const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 10_000 });
  try {
    await client.connect();
    for (const name of databases) await client.db(name).dropDatabase();
  } finally {
    await client.close();
    await server.stop();
  }
});

test('every fence of the documentation is a block the doc test sees; no stray annotation', () => {
  for (const { path, blocks: found, fenceLines, stray } of extracted) {
    assert.equal(fenceLines, 2 * found.length, `${path}: fence lines vs blocks`);
    assert.deepEqual(stray, [], 'doctest annotations not directly before a code block');
  }
  assert.ok(blocks.length > 0);
});

blocks.forEach((block, index) => {
  const kind = classify(block);
  test(`${block.file}:${block.line} (${block.lang || 'no language'}, ${kind})`, async (t) => {
    const context = { app, serverUri: server.uri, suffix: `_d${index}_${runId}`, index, root: ROOT };
    let result;
    if (kind === 'not run') {
      outcomes.set(block, 'not run');
      t.diagnostic(`not run: ${block.notRun}`);
      return;
    } else if (kind === 'check' && TEXT_LANGS.has(block.lang)) {
      result = checkText(block, ROOT);
      t.diagnostic(`paths checked: ${result.checked?.join(', ')}`);
    } else if (kind === 'check') {
      result = checkShell(block, pkg, ROOT);
    } else if (kind === 'run' && SESSION_LANGS.has(block.lang)) {
      result = await runSession(block, context);
    } else if (kind === 'run') {
      result = await runScript(block, context);
      if (result.checks) t.diagnostic(`${result.checks.length} result comment(s) checked`);
    } else {
      assert.fail(`${block.file}:${block.line}: no rule for a '${block.lang}' block; annotate it \`not run: <reason>\``);
    }
    for (const name of result.databases ?? []) databases.add(name);
    outcomes.set(block, kind);
    if (!result.ok) failed = true;
    if (result.expected !== undefined) assert.equal(result.actual, result.expected, `${block.file}:${block.line}: ${result.message}`);
    if (!result.ok) assert.fail(`${block.file}:${block.line}: ${result.message}`);
  });
});

test('how many blocks were run, checked and not run', () => {
  const counts = { run: 0, check: 0, 'not run': 0 };
  for (const block of blocks) counts[classify(block)]++;
  assert.deepEqual(counts, EXPECTED, 'blocks by treatment (update EXPECTED in this file when the documentation changes)');
  const reached = [...outcomes.values()];
  assert.equal(reached.length, blocks.length, 'every block was handled');
  assert.equal(reached.filter((k) => k === 'run').length, EXPECTED.run, 'blocks run');
});
