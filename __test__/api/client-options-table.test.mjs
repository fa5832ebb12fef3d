// Every option key a Node driver client can carry (driver 6 and 7, read from their typings
// and from live clients) is classified by the derivation's allow-list: none reaches the
// "does not know this option" refusal that an unclassified key gets.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { MongoClient } from 'mongodb';
import { MongoClient as MongoClientV6 } from 'mongodb-v6';
import { setup, seq } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const UNKNOWN = /does not know this option/;

/** Property names of interfaces in a driver's mongodb.d.ts, through the type checker. */
function typingKeys(pkg, interfaces) {
  const dts = join(dirname(require.resolve(`${pkg}/package.json`)), 'mongodb.d.ts');
  const program = ts.createProgram([dts], { noEmit: true, skipLibCheck: true, types: [] });
  const checker = program.getTypeChecker();
  const keys = new Set();
  ts.forEachChild(program.getSourceFile(dts), (node) => {
    if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && interfaces.includes(node.name.text)) {
      for (const p of checker.getPropertiesOfType(checker.getTypeAtLocation(node.name))) keys.add(p.name);
    }
  });
  return keys;
}

let env;
before(async () => {
  env = await setup('options_table');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

function fakeDb(options) {
  return { databaseName: env.dbName, client: { options } };
}

async function refusalOf(options) {
  try {
    await seq.getNextSequenceValue(fakeDb(options), 'probe', { upsert: true });
    return undefined;
  } catch (e) {
    return e;
  }
}

test('every MongoClientOptions / MongoOptions key of drivers 6 and 7 is classified', async () => {
  const keys = new Set();
  for (const pkg of ['mongodb', 'mongodb-v6']) {
    const found = typingKeys(pkg, ['MongoClientOptions', 'MongoOptions']);
    assert.ok(found.size > 90, `${pkg}: ${found.size} keys read from the typings`);
    for (const k of found) keys.add(k);
  }
  // Keys only live clients show (internal state the typings do not list).
  const options = { appName: 'a', tls: true, tlsInsecure: true, writeConcern: { w: 1 }, readPreference: 'secondary' };
  for (const Driver of [MongoClient, MongoClientV6]) {
    for (const k of Object.keys(new Driver(env.uri, options).options)) keys.add(k);
  }
  const base = { ...new MongoClient(env.uri, { serverSelectionTimeoutMS: 5000 }).options };
  // The probe works: an unknown key is refused by name, the unchanged options are not.
  assert.equal(await refusalOf(base), undefined);
  const unknown = await refusalOf({ ...base, notADriverOption: 'probe' });
  assert.equal(unknown?.code, 'UNSUPPORTED_CLIENT');
  assert.match(unknown.message, /'notADriverOption'/);
  assert.match(unknown.message, UNKNOWN);
  const unclassified = [];
  await Promise.all(
    [...keys].map(async (key) => {
      const e = await refusalOf({ ...base, [key]: 'probe' });
      if (e && UNKNOWN.test(e.message)) unclassified.push(key);
    }),
  );
  assert.deepEqual(unclassified.sort(), [], 'keys missing from the table in src/engine/client/node_options/table.rs');
});
