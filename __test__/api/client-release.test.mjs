// Shared clients are released when nobody needs them: with the Node driver client(s) they
// were derived from (a Node client that connected emits `topologyClosed` when it closes;
// one that never connected is left to the idle limit), and beyond a bounded number (least
// recently used first).
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { setup, seq, withQuery } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('release');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});
beforeEach(async () => {
  await seq.closeSharedClients();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function countBecomes(n, within = 3000) {
  const until = Date.now() + within;
  while (seq.sharedClientCount() !== n && Date.now() < until) await sleep(20);
  return seq.sharedClientCount();
}

test('the derived client closes with its Node driver client, and a later call opens it again', async () => {
  const node = await new MongoClient(env.uri).connect();
  const db = node.db(env.dbName);
  assert.equal(await seq.getNextSequenceValue(db, 'r1', { upsert: true }), 1);
  assert.equal(seq.sharedClientCount(), 1);
  await node.close();
  assert.equal(await countBecomes(0), 0, 'released with the Node client');

  const again = await new MongoClient(env.uri).connect();
  assert.equal(await seq.getNextSequenceValue(again.db(env.dbName), 'r1'), 2);
  assert.equal(seq.sharedClientCount(), 1);
  await again.close();
  assert.equal(await countBecomes(0), 0);
});

test('two Node driver clients on one connection: released with the last of them', async () => {
  const a = await new MongoClient(env.uri).connect();
  const b = await new MongoClient(env.uri).connect();
  await seq.getNextSequenceValue(a.db(env.dbName), 'r2', { upsert: true });
  await seq.getNextSequenceValue(b.db(env.dbName), 'r2');
  assert.equal(seq.sharedClientCount(), 1, 'one shared client for both');
  await a.close();
  await sleep(200);
  assert.equal(seq.sharedClientCount(), 1, 'b still uses it');
  assert.equal(await seq.getNextSequenceValue(b.db(env.dbName), 'r2'), 3);
  await b.close();
  assert.equal(await countBecomes(0), 0);
});

test('a call pending when its Node driver client closes settles (with its value or CLIENT_CLOSED)', async () => {
  const node = await new MongoClient(env.uri).connect();
  const db = node.db(env.dbName);
  await seq.getNextSequenceValue(db, 'r3', { upsert: true });
  const calls = Array.from({ length: 20 }, () => seq.getNextSequenceValue(db, 'r3').then((v) => v, (e) => e.code));
  await node.close();
  const outcomes = await Promise.all(calls);
  for (const o of outcomes) assert.ok(typeof o === 'number' || o === 'CLIENT_CLOSED', String(o));
  const values = outcomes.filter((o) => typeof o === 'number');
  assert.equal(new Set(values).size, values.length);
});

test('at most 32 shared clients: past it the least recently used idle ones close', async () => {
  const uris = Array.from({ length: 40 }, (_, i) => withQuery(env.uri, `appName=release${i}`));
  const values = [];
  for (const uri of uris) values.push(await seq.getNextSequenceValue(env.db, 'r4', { upsert: true, uri }));
  assert.ok(seq.sharedClientCount() <= 32, `${seq.sharedClientCount()} clients`);
  // The closed ones reopen on demand; the counter is one throughout.
  for (const uri of uris.slice(0, 5)) values.push(await seq.getNextSequenceValue(env.db, 'r4', { uri }));
  assert.ok(seq.sharedClientCount() <= 32);
  assert.deepEqual(values, Array.from({ length: 45 }, (_, i) => i + 1));
});

test('a Node driver client that cannot be watched still works (released when idle)', async () => {
  const node = await new MongoClient(env.uri).connect();
  node.once = () => {
    throw new Error('no listeners here');
  };
  assert.equal(await seq.getNextSequenceValue(node.db(env.dbName), 'r5', { upsert: true }), 1);
  assert.equal(await seq.getNextSequenceValue(node.db(env.dbName), 'r5'), 2);
  delete node.once;
  await node.close();
});
