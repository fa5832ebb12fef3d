// A Node driver release that adds an option with a default, or a hook such as
// `client.options.toJSON` (mongodb 7.9.1), must not break calls with its `Db`: such keys
// are the driver's, not the user's settings. A value the user set to something else is
// still refused, naming the option. The "next release" here is a copy of the installed
// driver with options added to its OPTIONS table.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { MongoClient } from 'mongodb';
import { setup, seq } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const installed = dirname(require.resolve('mongodb/package.json'));
// Inside the project's node_modules so that the copy resolves the driver's own
// dependencies (bson, …) as the original does.
const scratch = join(installed, '..', '.cache', `mongodb-sequence-next-driver-${process.pid}`);

/** A copy of the installed driver whose OPTIONS table has `additions` (source text). */
function nextRelease(additions) {
  const copy = join(scratch, 'mongodb');
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  cpSync(installed, copy, { recursive: true });
  const file = join(copy, 'lib', 'connection_string.js');
  const source = readFileSync(file, 'utf8');
  const patched = source.replace('exports.OPTIONS = {', `exports.OPTIONS = {\n${additions}`);
  assert.notEqual(patched, source, 'the driver still declares exports.OPTIONS');
  writeFileSync(file, patched);
  return require(copy);
}

let env;
let next;
const hook = 'function futureHook() { return 1; }';
before(async () => {
  env = await setup('driver_upgrades');
  next = nextRelease(
    `    futureFlag: { default: false, type: 'boolean' },\n` + `    futureLimit: { default: 10, type: 'uint' },\n` + `    futureHook: { default: ${hook}, type: 'any' },\n`,
  );
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function nextValueThrough(client, name) {
  try {
    return await seq.getNextSequenceValue(client.db(env.dbName), name, { upsert: true });
  } finally {
    await client.close();
  }
}

test('the installed driver works, whatever it adds to client.options', async (t) => {
  const { version } = require('mongodb/package.json');
  t.diagnostic(`mongodb ${version}; client.options.toJSON is ${typeof new MongoClient(env.uri).options.toJSON}`);
  assert.equal(await nextValueThrough(new MongoClient(env.uri), 'installed'), 1);
  assert.equal(await nextValueThrough(new MongoClient(env.uri), 'installed'), 2);
});

test('a release that adds options with defaults works untouched', async () => {
  const probe = new next.MongoClient(env.uri);
  assert.equal(probe.options.futureFlag, false);
  assert.equal(probe.options.futureLimit, 10);
  assert.equal(typeof probe.options.futureHook, 'function');
  assert.equal(await nextValueThrough(new next.MongoClient(env.uri), 'next'), 1);
  assert.equal(await nextValueThrough(new next.MongoClient(env.uri), 'next'), 2);
});

test('the same options set by the user are refused, naming them', async () => {
  const cases = [
    ['futureFlag', new next.MongoClient(`${env.uri}${env.uri.includes('?') ? '&' : '?'}futureFlag=true`)],
    ['futureLimit', new next.MongoClient(env.uri, { futureLimit: 11 })],
    ['futureHook', new next.MongoClient(env.uri, { futureHook: () => 1 })],
  ];
  for (const [option, client] of cases) {
    await assert.rejects(nextValueThrough(client, 'refused'), (e) => {
      assert.equal(e.code, 'UNSUPPORTED_CLIENT', option);
      assert.match(e.message, new RegExp(`option '${option}' is not carried over`));
      return true;
    });
  }
});

test('only the driver class is constructed for the comparison, never a subclass', async () => {
  let made = 0;
  class AppClient extends next.MongoClient {
    constructor(...args) {
      super(...args);
      made += 1;
    }
  }
  assert.equal(await nextValueThrough(new AppClient(env.uri), 'subclass'), 1);
  assert.equal(made, 1);
});

test('a subclass named MongoClient is never constructed either; a fake class of that name neither', async () => {
  let made = 0;
  const Driver = next.MongoClient;
  const named = {
    MongoClient: class extends Driver {
      constructor(...args) {
        super(...args);
        made += 1;
      }
    },
  }.MongoClient;
  assert.equal(named.name, 'MongoClient');
  assert.equal(await nextValueThrough(new named(env.uri), 'same-name'), 1);
  assert.equal(made, 1, 'only the application made one');
  // Not a driver client, though its class is named so: nothing is constructed, and its
  // unknown set keys are refused.
  let fakes = 0;
  const Fake = {
    MongoClient: function () {
      fakes += 1;
      this.options = { ...new Driver(env.uri).options };
    },
  }.MongoClient;
  const fake = new Fake();
  await assert.rejects(seq.getNextSequenceValue({ databaseName: env.dbName, client: fake }, 'fake-named', { upsert: true }), {
    code: 'UNSUPPORTED_CLIENT',
  });
  assert.equal(fakes, 1);
});

test('an object that is not a driver client gets no comparison: unknown set keys are refused', async () => {
  const options = { ...new next.MongoClient(env.uri).options };
  const db = { databaseName: env.dbName, client: { options } };
  await assert.rejects(seq.getNextSequenceValue(db, 'fake', { upsert: true }), (e) => {
    assert.equal(e.code, 'UNSUPPORTED_CLIENT');
    assert.match(e.message, /option '(futureFlag|futureHook|futureLimit|toJSON)'/);
    return true;
  });
});
