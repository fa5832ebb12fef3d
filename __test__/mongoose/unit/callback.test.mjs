// lib/mongoose/callback.js: a promise, or a Node-style callback called once with its outcome.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { promiseOrCallback } = require('../../../lib/mongoose/callback.js');

test('without a callback (none, or not a function): the promise itself', async () => {
  const promise = Promise.resolve(7);
  assert.equal(promiseOrCallback(promise), promise);
  assert.equal(promiseOrCallback(promise, 'not a function'), promise);
});

test('with a callback: undefined, then (null, value) once', async () => {
  const calls = [];
  const done = new Promise((resolve) => {
    assert.equal(
      promiseOrCallback(Promise.resolve(7), (...args) => {
        calls.push(args);
        resolve();
      }),
      undefined,
    );
  });
  await done;
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(calls, [[null, 7]]);
});

test('with a callback: (error) once when the promise rejects', async () => {
  const failure = Object.assign(new Error('no'), { code: 'CONNECTION' });
  const calls = [];
  await new Promise((resolve) => {
    promiseOrCallback(Promise.reject(failure), (...args) => {
      calls.push(args);
      resolve();
    });
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(calls.length, 1);
  assert.equal(calls[0].length, 1);
  assert.equal(calls[0][0], failure);
});
