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
  const calls = Array.from({ length: 20 }, () =>
    seq.getNextSequenceValue(db, 'r3').then(
      (v) => v,
      (e) => e.code,
    ),
  );
  await node.close();
  const outcomes = await Promise.all(calls);
  for (const o of outcomes) assert.ok(typeof o === 'number' || o === 'CLIENT_CLOSED', String(o));
  const values = outcomes.filter((o) => typeof o === 'number');
  assert.equal(new Set(values).size, values.length);
});

// A released client gives its cached tails back before its connection's next client
// serves anything: a reset through the next one is never undone by that give-back (its
// guarded update would find the counter back at the tail's last value and move it under
// values the next client handed out).
for (const release of ['its Node client closes', 'closeSharedClients()']) {
  test(`a client released as ${release} gives back before the next client of its connection serves: no value twice after a reset`, async () => {
    const options = { maxPoolSize: 1 }; // one connection: the give-back of many counters takes a while
    const first = await new MongoClient(env.uri, options).connect();
    const names = Array.from({ length: 100 }, (_, i) => `gb_${release.length}_${i}`);
    for (const name of names) assert.equal(await seq.getNextSequenceValue(first.db(env.dbName), name, { cache: 10, upsert: true }), 1);
    const released = release === 'closeSharedClients()' ? seq.closeSharedClients() : first.close();
    const second = await new MongoClient(env.uri, options).connect();
    try {
      const db = second.db(env.dbName);
      const handed = new Map();
      for (const name of names) {
        const handle = seq.sequence(db, name, { cache: 10 });
        await handle.reset();
        handed.set(name, [await handle.next()]);
      }
      await released;
      for (const name of names) {
        const handle = seq.sequence(db, name, { cache: 10 });
        for (let i = 0; i < 11; i++) handed.get(name).push(await handle.next());
      }
      const twice = [...handed].filter(([, values]) => new Set(values).size !== values.length);
      assert.deepEqual(twice, [], 'values handed out twice after a reset');
    } finally {
      await seq.closeSharedClients();
      await second.close();
      await first.close();
    }
  });
}

test('at most 32 shared clients: past it the least recently used idle ones close', async () => {
  const uris = Array.from({ length: 40 }, (_, i) => withQuery(env.uri, `appName=release${i}`));
  const values = [];
  for (const uri of uris) values.push(await seq.getNextSequenceValue(env.db, 'r4', { upsert: true, uri }));
  assert.ok(seq.sharedClientCount() <= 32, `${seq.sharedClientCount()} clients`);
  // The closed ones reopen on demand; the counter is one throughout.
  for (const uri of uris.slice(0, 5)) values.push(await seq.getNextSequenceValue(env.db, 'r4', { uri }));
  assert.ok(seq.sharedClientCount() <= 32);
  assert.deepEqual(
    values,
    Array.from({ length: 45 }, (_, i) => i + 1),
  );
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
