// Shared set-up for the test files: one server per file (or MONGODB_URI), a fresh
// database per file, and the addon loaded through the package entry point.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { withQuery, hostsOf } from './fixtures/uri.mjs';

export { withQuery, hostsOf };

const require = createRequire(import.meta.url);
/** The package under test, as users `require` it. */
export const seq = require('../lib/entry.js');

/** Whether the tests run against the server named by MONGODB_URI instead of their own. */
export const external = Boolean(process.env.MONGODB_URI);
/** 'external' (MONGODB_URI), else the test server kind of this pass. */
export const serverKind = external ? 'external' : process.env.MONGO_SEQUENCE_SERVER || 'mongoeco';

let deployment;
/**
 * What the deployment the tests run against is and can do, asked of it once:
 * `{ topology: 'standalone' | 'replicaSet' | 'sharded', transactions, failpoints, version,
 * address }`. `transactions` is whether the server accepted a transaction from the Node
 * driver (a real standalone refuses them; the test servers here accept them), `failpoints`
 * whether `configureFailPoint` exists (test commands enabled), `address` the `host:port`
 * of the server that takes writes (the primary of a replica set), for the tests that put a
 * proxy in front of it.
 */
export function describeDeployment() {
  deployment ??= (async () => {
    const server = await startServer();
    const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 10_000 });
    try {
      const admin = client.db('admin');
      const hello = await admin.command({ hello: 1 });
      const topology = hello.msg === 'isdbgrid' ? 'sharded' : hello.setName ? 'replicaSet' : 'standalone';
      const { version } = await admin.command({ buildInfo: 1 });
      const failpoints = await admin.command({ configureFailPoint: 'failCommand', mode: 'off' }).then(
        () => true,
        () => false,
      );
      const probe = client.db(`mseq_probe_${randomBytes(4).toString('hex')}`);
      const session = client.startSession();
      let transactions = true;
      try {
        await probe.createCollection('t');
        await session.withTransaction(() => probe.collection('t').insertOne({}, { session }));
      } catch {
        transactions = false;
      } finally {
        await session.endSession();
        await probe.dropDatabase();
      }
      const address = hello.primary ?? hostsOf(server.uri)[0];
      return { topology, transactions, failpoints, version, address };
    } finally {
      await client.close();
      await server.stop();
    }
  })();
  return deployment;
}

/** A skip reason when the deployment takes no transactions (gapless mode needs them), else false. */
export async function needsTransactions() {
  const d = await describeDeployment();
  return d.transactions ? false : `needs transactions (gapless mode): this ${d.topology} MongoDB ${d.version} refuses them; they need a replica set or mongos`;
}

/**
 * Starts a server and a Node driver client on a fresh database. `close()` drops the
 * database, closes the client and stops the server. `address` is the `host:port` that
 * takes writes (see `describeDeployment`).
 */
export async function setup(label) {
  const server = await startServer();
  const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  const dbName = `mseq_${label}_${randomBytes(4).toString('hex')}`;
  const db = client.db(dbName);
  // `host:port` of the server that takes writes, for a proxy or a hand-made URI in front of it.
  const address = external ? (await describeDeployment()).address : hostsOf(server.uri)[0];
  return {
    server,
    client,
    db,
    dbName,
    uri: server.uri,
    address,
    async close() {
      try {
        await db.dropDatabase();
      } finally {
        await client.close();
        await server.stop();
      }
    },
  };
}

/** Runs `call` and returns the error it threw or rejected with (undefined when none). */
export async function failure(call) {
  try {
    await call();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Asserts that `promise` rejects with an Error carrying `code` (and returns the error). */
export async function rejectsWithCode(assert, promise, code, messagePattern) {
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected a rejection with code ${code}`);
  assert.ok(error instanceof Error, `rejection is an Error: ${error}`);
  assert.equal(error.code, code, `code of: ${error.message}`);
  if (messagePattern) assert.match(error.message, messagePattern);
  return error;
}

/**
 * Runs the Node script `path` in a process of its own with `vars` added to its
 * environment; resolves with the JSON it prints, rejects with its stderr if it fails.
 */
export function runScript(path, vars) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path], { env: { ...process.env, ...vars } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${path} failed: ${err}`))));
  });
}
