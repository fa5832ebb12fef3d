'use strict';
// The plugin's and the drop-ins' statics take a Node-style callback where the plugins
// they replace did (mongoose-auto-increment's nextCount and resetCount, setNext and
// counterReset), and return a promise otherwise.

/**
 * `promise` itself without a `callback`; with one, `undefined`, and `callback(null,
 * value)` or `callback(error)` once it settles.
 */
function promiseOrCallback(promise, callback) {
  if (typeof callback !== 'function') return promise;
  promise.then(
    (value) => callback(null, value),
    (error) => callback(error),
  );
  return undefined;
}

module.exports = { promiseOrCallback };
