'use strict';
// The one way the package's JavaScript (the mongoose plugin, the command line) makes an
// error: an `Error` with a stable `code` taken from the native module's `ErrorCode`
// table, the same table the Rust core's errors are coded from, so a code is defined once.

const { ErrorCode } = require('../index.js');

/**
 * A new `type` (default `Error`) with `message` and the stable `code`, one of
 * `ErrorCode`'s; `cause`, when given, is kept as the error's `cause`. An unknown code is
 * a bug of this package and throws at once.
 */
function codedError(code, message, { type = Error, cause } = {}) {
  if (!Object.hasOwn(ErrorCode, code)) throw new Error(`mongodb-sequence: unknown error code ${String(code)}`);
  const error = cause === undefined ? new type(message) : new type(message, { cause });
  error.code = ErrorCode[code];
  return error;
}

module.exports = { ErrorCode, codedError };
