'use strict';
// The one way the package's JavaScript (the mongoose plugin, the command line) makes an
// error: an `Error` with a stable `code` taken from the native module's `ErrorCode`
// table, the same table the Rust core's errors are coded from, so a code is defined once.

const { ErrorCode, redactConnectionStrings } = require('./native.js');

/**
 * A new `type` (default `Error`) with `message` and the stable `code`, one of
 * `ErrorCode`'s; `cause`, when given, is kept as the error's `cause`. A connection
 * string in the message (user input, such as a name) is shown without its credentials,
 * as in the native errors. An unknown code is a bug of this package and throws at once.
 */
function codedError(code, message, { type = Error, cause } = {}) {
  if (!Object.hasOwn(ErrorCode, code)) throw new Error(`mongodb-sequence: unknown error code ${String(code)}`);
  const shown = redactConnectionStrings(String(message));
  const error = cause === undefined ? new type(shown) : new type(shown, { cause });
  error.code = ErrorCode[code];
  return error;
}

module.exports = { ErrorCode, codedError };
