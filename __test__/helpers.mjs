// Shared set-up for the test files: one server per file (or MONGODB_URI), a fresh
// database per file, and the addon loaded through the package entry point.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';

const require = createRequire(import.meta.url);
/** The package under test, as users `require` it. */
export const seq = require('../index.js');

/**
 * Starts a server and a Node driver client on a fresh database. `close()` drops the
 * database, closes the client and stops the server.
 */
export async function setup(label) {
  const server = await startServer();
  const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  const dbName = `mseq_${label}_${randomBytes(4).toString('hex')}`;
  const db = client.db(dbName);
  return {
    server,
    client,
    db,
    dbName,
    uri: server.uri,
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
