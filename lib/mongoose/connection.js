'use strict';
// The driver `Db` of a mongoose connection, waited for as mongoose buffers a model's
// operations while the connection is not open yet.

const { codedError } = require('../coded-error.js');
const { PLUGIN } = require('./options.js');

/** mongoose's own default of `bufferTimeoutMS`. */
const MONGOOSE_BUFFER_TIMEOUT_MS = 10_000;

/**
 * Whether mongoose buffers `Model`'s operations while `connection` is not open, and for
 * how long (`bufferCommands` and `bufferTimeoutMS` of the schema, the connection or
 * mongoose, as mongoose reads them).
 */
function bufferSettings(connection, Model) {
  const collection = Model && Model.db === connection ? Model.collection : null;
  const source = collection && typeof collection._shouldBufferCommands === 'function' ? collection : connection;
  const buffer = typeof source._shouldBufferCommands === 'function' ? source._shouldBufferCommands() : true;
  const timeoutMS = typeof source._getBufferTimeoutMS === 'function' ? source._getBufferTimeoutMS() : MONGOOSE_BUFFER_TIMEOUT_MS;
  return { buffer: buffer !== false, timeoutMS: Number.isFinite(timeoutMS) && timeoutMS >= 0 ? timeoutMS : MONGOOSE_BUFFER_TIMEOUT_MS };
}

/** Per connection not yet open: a promise of its `open` event (one listener, however many wait). */
const opening = new WeakMap();

/** Resolves once `connection` has opened, or after `timeoutMS`, whichever comes first. */
async function opened(connection, timeoutMS) {
  if (typeof connection.once !== 'function') return;
  let open = opening.get(connection);
  if (!open) {
    open = new Promise((resolve) => connection.once('open', resolve));
    opening.set(connection, open);
    open.then(() => opening.delete(connection));
  }
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, timeoutMS);
  });
  try {
    await Promise.race([open, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The Node driver `Db` of `connection`, once it is open. Before it opens, waits for it as
 * mongoose buffers `Model`'s operations: up to its `bufferTimeoutMS`, or not at all with
 * `bufferCommands: false`; then rejects with `CONNECTION`.
 */
async function openDb(connection, Model) {
  if (connection.db) return connection.db;
  const { buffer, timeoutMS } = bufferSettings(connection, Model);
  if (!buffer) {
    throw codedError(
      'CONNECTION',
      `${PLUGIN}: the connection is not open and bufferCommands is false, so the counter cannot wait for it: open it first (await mongoose.connect(uri))`,
    );
  }
  await opened(connection, timeoutMS);
  if (!connection.db) {
    throw codedError(
      'CONNECTION',
      `${PLUGIN}: the connection did not open within bufferTimeoutMS (${timeoutMS} ms), so no number was taken: call mongoose.connect(uri) (or connection.openUri(uri))`,
    );
  }
  return connection.db;
}

module.exports = { bufferSettings, opened, openDb, MONGOOSE_BUFFER_TIMEOUT_MS };
