// lib/mongoose/counter.js `explained`: how an UNSUPPORTED_CLIENT refusal tells a plugin
// user to give the counters a connection string, and when that would not help.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Counter } = require('../../../lib/mongoose/counter.js');

const refusal = (message) => Object.assign(new Error(message), { code: 'UNSUPPORTED_CLIENT' });

test("a setting the core cannot carry: the message says to give the plugin's uri option", () => {
  const error = refusal("cannot derive a connection from this MongoClient: its option 'family' is not carried over");
  const explained = new Counter(null, {}).explained(error);
  assert.equal(explained.code, 'UNSUPPORTED_CLIENT');
  assert.match(explained.message, /the plugin's uri option/);
  assert.equal(explained.cause, error);
});

test('with the uri option given, or for another code, the error as it is', () => {
  const error = refusal("its option 'family' is not carried over");
  assert.equal(new Counter(null, { uri: 'mongodb://h' }).explained(error), error);
  const other = Object.assign(new Error('x'), { code: 'CONNECTION' });
  assert.equal(new Counter(null, {}).explained(other), other);
});

test('a client certificate no connection can present: no advice to give a uri, which names the same file', () => {
  const error = refusal("the client certificate in 'tlsCertificateKeyFile' is an X.509 version 1 certificate, which the Rust TLS stack used here (rustls) cannot present");
  assert.equal(new Counter(null, {}).explained(error), error);
});
