// lib/mongoose/connection.js without a server: mongoose's buffering settings as the plugin
// reads them, and waiting for a connection's `open` event with fake connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { EventEmitter } from 'node:events';

const require = createRequire(import.meta.url);
const { bufferSettings, openDb, MONGOOSE_BUFFER_TIMEOUT_MS } = require('../../../lib/mongoose/connection.js');

test("bufferSettings: the model's collection on that connection first, else the connection, else mongoose's defaults", () => {
  const connection = { _shouldBufferCommands: () => true, _getBufferTimeoutMS: () => 500 };
  const Model = { db: connection, collection: { _shouldBufferCommands: () => false, _getBufferTimeoutMS: () => 20 } };
  assert.deepEqual(bufferSettings(connection, Model), { buffer: false, timeoutMS: 20 });
  assert.deepEqual(bufferSettings(connection, { ...Model, db: {} }), { buffer: true, timeoutMS: 500 });
  assert.deepEqual(bufferSettings({}, undefined), { buffer: true, timeoutMS: MONGOOSE_BUFFER_TIMEOUT_MS });
  assert.deepEqual(bufferSettings({ _getBufferTimeoutMS: () => -1 }), { buffer: true, timeoutMS: MONGOOSE_BUFFER_TIMEOUT_MS });
  assert.deepEqual(bufferSettings({ _getBufferTimeoutMS: () => Infinity }), { buffer: true, timeoutMS: MONGOOSE_BUFFER_TIMEOUT_MS });
});

test('openDb: the Db at once when open; CONNECTION at once with bufferCommands false', async () => {
  const db = {};
  assert.equal(await openDb({ db }), db);
  await assert.rejects(openDb({ _shouldBufferCommands: () => false }), (error) => error.code === 'CONNECTION' && /bufferCommands is false/.test(error.message));
});

test('openDb waits for open, one listener however many wait; CONNECTION when it does not open in time', async () => {
  const connection = new EventEmitter();
  connection._getBufferTimeoutMS = () => 60_000;
  const waiting = [openDb(connection), openDb(connection), openDb(connection)];
  assert.equal(connection.listenerCount('open'), 1);
  const db = {};
  connection.db = db;
  connection.emit('open');
  for (const got of await Promise.all(waiting)) assert.equal(got, db);
  const never = new EventEmitter();
  never._getBufferTimeoutMS = () => 1;
  await assert.rejects(openDb(never), (error) => error.code === 'CONNECTION' && /within bufferTimeoutMS \(1 ms\)/.test(error.message));
});
