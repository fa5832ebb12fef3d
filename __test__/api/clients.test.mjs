// Which handles the functions accept, and how connections are shared and closed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { MongoClient as MongoClientV6 } from 'mongodb-v6';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('clients');
  await env.db.collection('counters').insertOne({ _id: 'shared', sequence_value: 0 });
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test('Node driver v7 and v6 Db handles both work on the same counter', async () => {
  const v6 = new MongoClientV6(env.uri);
  await v6.connect();
  try {
    const a = await seq.getNextSequenceValue(env.db, 'shared');
    const b = await seq.getNextSequenceValue(v6.db(env.dbName), 'shared');
    assert.deepEqual([a, b], [1, 2]);
  } finally {
    await v6.close();
  }
});

test('one Rust client per distinct connection, never one per call', async () => {
  await seq.closeSharedClients();
  assert.equal(seq.sharedClientCount(), 0);
  await Promise.all(Array.from({ length: 50 }, () => seq.getNextSequenceValue(env.db, 'shared')));
  assert.equal(seq.sharedClientCount(), 1);
  // A second Node client on the same connection string and settings shares it.
  const other = new MongoClient(env.uri, { serverSelectionTimeoutMS: 10_000 });
  await seq.getNextSequenceValue(other.db(env.dbName), 'shared');
  assert.equal(seq.sharedClientCount(), 1);
  // A different connection (other credentials or options) gets its own.
  const separator = env.uri.includes('?') ? '&' : '?';
  const withApp = new MongoClient(`${env.uri}${separator}appName=second`, { serverSelectionTimeoutMS: 10_000 });
  await seq.getNextSequenceValue(withApp.db(env.dbName), 'shared');
  assert.equal(seq.sharedClientCount(), 2);
  await Promise.all([other.close(), withApp.close()]);
});

test('credentials given in the options object are carried over: the call authenticates as that user, as the Node client does', async () => {
  // The test server has no user 'app': the Node client and the derived client both fail to
  // authenticate (before, the addon connected without credentials and succeeded).
  const client = new MongoClient(env.uri, { auth: { username: 'app', password: 'pa55word' }, serverSelectionTimeoutMS: 5000 });
  await assert.rejects(client.db(env.dbName).command({ ping: 1 }), /auth/i);
  const e = await rejectsWithCode(assert, seq.getNextSequenceValue(client.db(env.dbName), 'shared'), 'CONNECTION', /auth/i);
  assert.ok(!e.message.includes('pa55word'));
  // The uri option still replaces the derived connection.
  const v = await seq.getNextSequenceValue(client.db(env.dbName), 'shared', { uri: env.uri });
  assert.equal(typeof v, 'number');
  await client.close();
});

test('connect(uri): own client, db handles, close', async () => {
  const client = await seq.connect(env.uri, { serverSelectionTimeoutMS: 5000 });
  const db = client.db(env.dbName);
  assert.equal(db.databaseName, env.dbName);
  const before = (await env.db.collection('counters').findOne({ _id: 'shared' })).sequence_value;
  assert.equal(await seq.getNextSequenceValue(db, 'shared'), before + 1);
  assert.deepEqual(await seq.getNextSequenceBatch(db, 'shared', 3), [before + 2, before + 3, before + 4]);
  assert.throws(
    () => client.db('bad.name'),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  assert.equal(client.isClosed, false);
  await client.close();
  await client.close();
  assert.equal(client.isClosed, true);
  await rejectsWithCode(assert, seq.getNextSequenceValue(db, 'shared'), 'CLIENT_CLOSED');
  assert.throws(
    () => client.db(env.dbName),
    (e) => e.code === 'CLIENT_CLOSED',
  );
});

test('connect refuses a bad uri and bad options', async () => {
  await rejectsWithCode(assert, seq.connect('http://example'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.connect(42), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.connect(env.uri, { serverSelectionTimeoutMS: 'soon' }), 'INVALID_ARGUMENT');
});

test('a process using the addon exits on its own after closing its clients', () => {
  const script = `
    const { MongoClient } = require('mongodb');
    const seq = require(${JSON.stringify(fileURLToPath(new URL('../../index.js', import.meta.url)))});
    (async () => {
      const node = new MongoClient(${JSON.stringify(env.uri)});
      const own = await seq.connect(${JSON.stringify(env.uri)});
      await seq.getNextSequenceValue(node.db(${JSON.stringify(env.dbName)}), 'shared');
      await seq.getNextSequenceValue(own.db(${JSON.stringify(env.dbName)}), 'shared');
      await own.close();
      await node.close();
      console.log('done');
    })();`;
  const started = Date.now();
  const r = spawnSync(process.execPath, ['-e', script], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /done/);
  assert.ok(Date.now() - started < 60_000);
});
