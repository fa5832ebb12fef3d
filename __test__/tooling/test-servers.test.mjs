// The test servers themselves: SecantusDB, as the suite launches it, does not stall when a
// collection is created while another connection writes into it (the launcher's
// correction; the stock server stalled 2 to 8 times in 1,000 such races), and a server
// that stalls anyway is detected and killed rather than waited out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { MongoClient } from 'mongodb';
import { external, serverKind } from '../helpers.mjs';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { watchForStall } from '../../scripts/lib/stall-watch.mjs';

const RACES_PER_KIND = 700;
const RACE_BOUND_MS = 5_000;

const within = (promise, ms, what) => {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
};

// Each race: A makes a new collection (or its first index) while B writes into it.
const RACES = {
  'createCollection / upsert': (a, b, name) => [a.createCollection(name), b.collection(name).findOneAndUpdate({ _id: 'x' }, { $inc: { n: 1 } }, { upsert: true })],
  'createIndex / upsert': (a, b, name) => [
    a.collection(name).createIndex({ k: 1 }, { unique: true }),
    b.collection(name).findOneAndUpdate({ _id: 'x' }, { $inc: { n: 1 } }, { upsert: true }),
  ],
  'createCollection / insertOne': (a, b, name) => [a.createCollection(name), b.collection(name).insertOne({ k: 1 })],
};

test(
  'SecantusDB as launched: collections created while another connection writes',
  { skip: external || serverKind !== 'secantus' ? 'SecantusDB only' : false, timeout: 300_000 },
  async (t) => {
    const server = await startServer({ kind: 'secantus' });
    const a = new MongoClient(server.uri, { serverSelectionTimeoutMS: 5_000 });
    const b = new MongoClient(server.uri, { serverSelectionTimeoutMS: 5_000 });
    try {
      await Promise.all([a.connect(), b.connect()]);
      for (const [kind, race] of Object.entries(RACES)) {
        for (let i = 0; i < RACES_PER_KIND; i++) {
          const name = `race_${kind.replace(/\W/g, '')}_${i}`;
          const settled = Promise.allSettled(race(a.db('races'), b.db('races'), name));
          await within(settled, RACE_BOUND_MS, `${kind}, race ${i + 1}`);
        }
      }
      t.diagnostic(`${RACES_PER_KIND} races of each of ${Object.keys(RACES).length} kinds, none stalled`);
    } finally {
      await Promise.all([a.close(true), b.close(true)]);
      await server.kill();
    }
  },
);

/** A TCP server that accepts and reads but answers nothing, or answers every request with 16 bytes. */
async function fakeServer(answers) {
  const sockets = new Set();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => answers && socket.write(Buffer.alloc(16)));
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    uri: `mongodb://127.0.0.1:${server.address().port}/`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

for (const answers of [false, true]) {
  test(`the stall watch ${answers ? 'leaves a server that answers alone' : 'kills a running server that answers nothing'}`, { timeout: 30_000 }, async () => {
    const fake = await fakeServer(answers);
    // A running process stands for the server's (it is not stopped, so not frozen on purpose).
    const process_ = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    const stalls = [];
    let killed = 0;
    const server = { uri: fake.uri, pid: process_.pid, kind: 'fake', kill: async () => killed++ };
    const watch = watchForStall(server, { onStall: (m) => stalls.push(m), probeEveryMs: 250, probeTimeoutMs: 1000, stalledAfter: 4 });
    try {
      await new Promise((r) => setTimeout(r, answers ? 3_000 : 8_000));
      if (answers) {
        assert.deepEqual(stalls, []);
        assert.equal(killed, 0);
      } else {
        assert.equal(stalls.length, 1, stalls.join('\n'));
        assert.match(stalls[0], /fake \(pid \d+\) stalled: no answer to listDatabases/);
        assert.equal(killed, 1);
      }
    } finally {
      watch.stop();
      process_.kill('SIGKILL');
      await fake.close();
    }
  });
}
