// Hosts that evaluate the package's JavaScript more than once in one process, each time in
// a new realm, over the one native module Node loaded: Jest (every test file is its own
// realm; several files share a worker with --runInBand and on a 2-core runner by default),
// `jest.resetModules()` / `jest.isolateModules()`, and `vm` contexts. The package is
// installed from its packed tarballs into an empty app, as users install it, and every
// file makes real calls against the test server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { setup, seq } from '../helpers.mjs';
import { ROOT } from '../../scripts/lib/python-env.mjs';

const JEST = {
  30: join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
  29: join(ROOT, 'node_modules', 'jest-v29', 'bin', 'jest.js'),
};

let env;
let app;
before(async () => {
  env = await setup('hosts');
  app = mkdtempSync(join(tmpdir(), 'mseq-hosts-'));
  const dist = join(app, 'dist');
  await run(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--dest', dist], { cwd: ROOT, env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' } });
  const tarballs = readdirSync(dist).map((f) => join(dist, f));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'hosts-app', version: '1.0.0', private: true }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs], { cwd: app });
  // The app's tests find mongodb and mongoose in this checkout's dependencies.
  const config = { testEnvironment: 'node', modulePaths: [join(ROOT, 'node_modules')], testTimeout: 30_000 };
  writeFileSync(join(app, 'jest.config.json'), JSON.stringify(config));
  for (const name of ['one', 'two', 'three']) writeFileSync(join(app, `${name}.test.js`), cjsFile(name));
  writeFileSync(join(app, 'modules.test.js'), REEVALUATED);
  writeFileSync(join(app, 'esm-a.test.mjs'), esmFile('esm_a'));
  writeFileSync(join(app, 'esm-b.test.mjs'), esmFile('esm_b'));
});
after(async () => {
  if (app) rmSync(app, { recursive: true, force: true });
  await env?.close();
});

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 24, ...options }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed (${error.code ?? error.signal}):\n${stdout}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

// Each file: the main entry and every mongoose entry load, a derived client takes a value,
// and values made in this file's realm (a RegExp, a Map, a Date) are stored as the Node
// driver stores them.
const cjsFile = (name) => `
const { MongoClient } = require('mongodb');
const seq = require('mongodb-sequence');
require('mongodb-sequence/mongoose');
require('mongodb-sequence/mongoose/typegoose');
require('mongodb-sequence/mongoose/auto-increment');
require('mongodb-sequence/mongoose/plugin-autoinc');
let client;
beforeAll(async () => { client = await new MongoClient(process.env.MSEQ_URI).connect(); });
afterAll(async () => { await client.close(); await seq.closeSharedClients(); });
test('${name}: takes values and stores this realm\\'s values', async () => {
  const db = client.db(process.env.MSEQ_DB);
  expect(await seq.getNextSequenceBatch(db, '${name}', 3, { upsert: true })).toEqual([1, 2, 3]);
  const h = seq.sequence(db, '${name}_h', { upsert: true });
  expect(await h.next()).toBe(1);
  await seq.insertOne(db, 'realm_${name}', { re: /a+b/i, map: new Map([['k', 1]]), at: new Date(5) }, { name: '${name}_docs', upsert: true });
  const stored = await db.collection('realm_${name}').findOne({});
  expect(stored.re.source).toBe('a+b');
  expect(stored.map).toEqual({ k: 1 });
  expect(stored.at.getTime()).toBe(5);
  let refused; try { seq.counterAt(db, { id: /x/ }); } catch (e) { refused = e; }
  expect(refused.code).toBe('INVALID_ARGUMENT');
});
`;

const REEVALUATED = `
const { MongoClient } = require('mongodb');
let client;
beforeAll(async () => { client = await new MongoClient(process.env.MSEQ_URI).connect(); });
afterAll(async () => { await client.close(); await require('mongodb-sequence').closeSharedClients(); });
test('resetModules and isolateModules evaluate the package again', async () => {
  const db = client.db(process.env.MSEQ_DB);
  const first = require('mongodb-sequence');
  expect(await first.getNextSequenceValue(db, 'again', { upsert: true })).toBe(1);
  jest.resetModules();
  const second = require('mongodb-sequence');
  expect(second).not.toBe(first);
  expect(await second.getNextSequenceValue(db, 'again', { upsert: true })).toBe(2);
  expect(await second.sequence(db, 'again').next()).toBe(3);
  let third;
  jest.isolateModules(() => { third = require('mongodb-sequence'); require('mongodb-sequence/mongoose'); });
  expect(third).not.toBe(second);
  expect(await third.getNextSequenceValue(db, 'again', { upsert: true })).toBe(4);
});
`;

const esmFile = (name) => `
import { MongoClient } from 'mongodb';
import { getNextSequenceValue, closeSharedClients } from 'mongodb-sequence';
import AutoIncrementFactory from 'mongodb-sequence/mongoose';
test('${name}: ESM', async () => {
  expect(typeof AutoIncrementFactory).toBe('function');
  const client = await new MongoClient(process.env.MSEQ_URI).connect();
  try {
    expect(await getNextSequenceValue(client.db(process.env.MSEQ_DB), '${name}', { upsert: true })).toBe(1);
  } finally {
    await client.close();
    await closeSharedClients();
  }
});
`;

/** Runs Jest `version` in the app with `args`; resolves with its summary counts. */
async function jest(version, args, extraEnv = {}) {
  const jestEnv = { ...process.env, MSEQ_URI: env.uri, MSEQ_DB: `${env.dbName}_${version}_${args.join('').replace(/\W/g, '')}`, ...extraEnv };
  const { stderr } = await run(process.execPath, [JEST[version], '--config', 'jest.config.json', '--ci', ...args], { cwd: app, env: jestEnv });
  return /Test Suites: (.*)/.exec(stderr)?.[1];
}

test('Jest 30 runs every file in one process (--runInBand)', async () => {
  assert.equal(await jest(30, ['--runInBand', '--testPathPatterns', '\\.test\\.js$']), '4 passed, 4 total');
});

test('Jest 30 with two workers, several files each', async () => {
  assert.equal(await jest(30, ['-w', '2', '--testPathPatterns', '\\.test\\.js$']), '4 passed, 4 total');
});

test('Jest 29 in band', async () => {
  assert.equal(await jest(29, ['--runInBand', '--testPathPattern', '\\.test\\.js$']), '4 passed, 4 total');
});

test('Jest 30 in ESM mode (--experimental-vm-modules)', async () => {
  const summary = await jest(30, ['--runInBand', '--testPathPatterns', '\\.test\\.mjs$'], { NODE_OPTIONS: '--experimental-vm-modules --no-warnings' });
  assert.equal(summary, '2 passed, 2 total');
});

test('the entry evaluated again in vm contexts, and values of another realm', async () => {
  const { readFileSync } = await import('node:fs');
  const source = readFileSync(join(ROOT, 'lib', 'entry.js'), 'utf8');
  const entryRequire = createRequire(join(ROOT, 'lib', 'entry.js'));
  const loaded = [];
  for (let i = 0; i < 3; i++) {
    const module = { exports: {} };
    const context = vm.createContext({ module, exports: module.exports, require: entryRequire, process });
    vm.runInContext(`(function (module, exports, require) {${source}\n})(module, exports, require)`, context);
    loaded.push({ exports: module.exports, context });
  }
  assert.equal(loaded[2].exports.Sequence, seq.Sequence, 'the native classes are shared');
  const db = env.db;
  for (const [i, { exports, context }] of loaded.entries()) {
    assert.equal(await exports.getNextSequenceValue(db, 'vm', { upsert: true }), i + 1);
    const doc = vm.runInContext(`({ re: /x?y/m, map: new Map([['a', 2]]) })`, context);
    await exports.insertOne(db, 'vm_docs', doc, { name: 'vm_docs', upsert: true });
    const stored = await db.collection('vm_docs').findOne({ _id: i + 1 });
    assert.equal(stored.re.source, 'x?y', JSON.stringify(stored));
    assert.deepEqual(stored.map, { a: 2 });
    const locator = vm.runInContext(`({ id: /x/ })`, context);
    assert.throws(() => exports.counterAt(db, locator), { code: 'INVALID_ARGUMENT' });
  }
  // A handle's next() is now the last evaluation's, in its realm: a cached value and the
  // error of one past 2^53 - 1 (made in the addon's realm) still resolve and reject.
  const h = seq.sequence(db, 'vm_limit', { cache: 4, upsert: true });
  await h.set(Number.MAX_SAFE_INTEGER - 2);
  assert.equal(await h.next(), Number.MAX_SAFE_INTEGER - 1);
  assert.equal(await h.next(), Number.MAX_SAFE_INTEGER, 'from the cache');
  await assert.rejects(h.next(), { code: 'SEQUENCE_OVERFLOW' });
});
