// Pooled connections reset while idle, as a load balancer or NAT does after its idle
// timeout. Behind a proxy that resets (TCP RST) the connections that carried commands,
// leaving the monitoring ones alone (a balancer's timeout is minutes; the monitors talk
// every few seconds):
// - the first call after the reset succeeds, on a standalone server too, as the
//   documented helper's does on the Node driver (whose sockets notice the reset at once);
// - the Node client's `maxIdleTimeMS` is carried: a connection idle longer is not reused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect } from 'node:net';
import { MongoClient } from 'mongodb';
import { setup, seq, withQuery, external } from '../helpers.mjs';

const skip = external ? 'needs a proxy in front of its own test server' : false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The name of the command an OP_MSG carries (its first field), or null for anything else. */
function commandOf(message) {
  if (message.length < 26 || message.readInt32LE(12) !== 2013 || message[20] !== 0) return null;
  const end = message.indexOf(0, 26);
  return end > 26 ? message.toString('latin1', 26, end) : null;
}

/**
 * A TCP proxy to `target` (`host:port`). `resetPooled()` resets, on both sides, every
 * connection that has carried a command other than the handshake and monitoring ones.
 */
async function resettingProxy(target) {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const links = new Set();
  let opened = 0;
  const server = createServer((client) => {
    opened += 1;
    const upstream = connect({ host, port });
    const link = { client, upstream, pooled: false, pending: Buffer.alloc(0) };
    links.add(link);
    client.on('data', (chunk) => {
      link.pending = Buffer.concat([link.pending, chunk]);
      while (link.pending.length >= 4 && link.pending.length >= link.pending.readInt32LE(0)) {
        const size = link.pending.readInt32LE(0);
        const command = commandOf(link.pending.subarray(0, size));
        if (command && !['hello', 'isMaster', 'ismaster'].includes(command)) link.pooled = true;
        link.pending = link.pending.subarray(size);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${server.address().port}`,
    get opened() {
      return opened;
    },
    pooledCount: () => [...links].filter((l) => l.pooled).length,
    resetPooled() {
      let reset = 0;
      for (const link of links) {
        if (!link.pooled) continue;
        reset += 1;
        links.delete(link);
        link.client.resetAndDestroy();
        link.upstream.resetAndDestroy();
      }
      return reset;
    },
    close: () => {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

let env;
let proxy;
before(async () => {
  if (skip) return;
  env = await setup('idle_reset');
  proxy = await resettingProxy(env.address);
});
after(async () => {
  await proxy?.close();
  await env?.close();
});

test('the first call after idle pooled connections were reset succeeds (a Node driver Db)', { skip, timeout: 60_000 }, async (t) => {
  const node = new MongoClient(withQuery(`mongodb://${proxy.address}/`, 'directConnection=true&serverSelectionTimeoutMS=5000'));
  t.after(() => Promise.all([node.close(), seq.closeSharedClients()]));
  const db = node.db(env.dbName);
  await db.collection('counters').insertOne({ _id: 'idle', sequence_value: 0 });
  const helper = async () => {
    const doc = await db.collection('counters').findOneAndUpdate({ _id: 'idle' }, { $inc: { sequence_value: 1 } }, { returnDocument: 'after' });
    return doc.sequence_value;
  };
  const handle = seq.sequence(db, 'idle');
  const taken = [];
  for (let round = 0; round < 3; round++) {
    taken.push(await seq.getNextSequenceValue(db, 'idle'), await helper(), await handle.next());
    await sleep(100);
    assert.ok(proxy.resetPooled() > 0, 'pooled connections were reset');
    await sleep(50);
    // The documented helper (the oracle) goes on; so must every call of ours.
    taken.push(await helper());
    taken.push(await seq.getNextSequenceValue(db, 'idle'));
    proxy.resetPooled();
    await sleep(50);
    taken.push(await handle.next());
    proxy.resetPooled();
    await sleep(50);
    assert.equal(await handle.current(), taken.at(-1));
  }
  assert.deepEqual(
    taken,
    taken.map((_, i) => i + 1),
  );
});

test("the Node client's maxIdleTimeMS is carried: an idle connection is not reused", { skip, timeout: 60_000 }, async (t) => {
  const node = new MongoClient(withQuery(`mongodb://${proxy.address}/`, 'directConnection=true&maxIdleTimeMS=300'));
  t.after(() => Promise.all([node.close(), seq.closeSharedClients()]));
  const db = node.db(env.dbName);
  assert.equal(node.options.maxIdleTimeMS, 300);
  await seq.getNextSequenceValue(db, 'idle_limit', { upsert: true });
  await seq.getNextSequenceValue(db, 'idle_limit', { upsert: true });
  const opened = proxy.opened;
  // Used again within the limit: the same connection.
  await sleep(50);
  await seq.getNextSequenceValue(db, 'idle_limit', { upsert: true });
  assert.equal(proxy.opened, opened, 'a connection idle for less than maxIdleTimeMS is reused');
  await sleep(800);
  assert.equal(await seq.getNextSequenceValue(db, 'idle_limit', { upsert: true }), 4);
  assert.ok(proxy.opened > opened, `a connection idle for longer than maxIdleTimeMS is not reused (${proxy.opened} opened, ${opened} before)`);
});
