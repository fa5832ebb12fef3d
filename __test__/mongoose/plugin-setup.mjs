// What every plugin test file sets up: a test database for the file, and for each mongoose
// major a connection of its own with the plugin bound to it. A test file reads:
//
//   const env = fileDatabase('plugin_saves');
//   eachMongoose('s', env, ({ mongoose, AutoIncrement, model, p }) => { test(…) });
import { before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import { setup, seq } from '../helpers.mjs';

const require = createRequire(import.meta.url);
/** The plugin's factory, as users require it. */
export const AutoIncrementFactory = require('../../mongoose.js');

/** The mongoose majors the plugin supports, newest first. */
export const MONGOOSES = [
  [9, mongoose9],
  [8, mongoose8],
];

/** The file's test database (`setup(label)` of the helpers), filled in before its tests. */
export function fileDatabase(label) {
  const env = {};
  before(async () => Object.assign(env, await setup(label)));
  after(async () => {
    await seq.closeSharedClients();
    await env.close?.();
  });
  return env;
}

/**
 * A `describe` per mongoose major, each with a connection to a database of its own,
 * opened before its tests and dropped after them. `body` gets:
 * - `major`, `mongoose`, `connection`, `AutoIncrement` (the plugin bound to it);
 * - `p`: a prefix (`letter` and the major) for counter ids and model names;
 * - `model(name, schema)`: the model, its collection made before anything writes to it
 *   (SecantusDB 0.7.0b3 livelocks when a collection is created while another connection
 *   inserts into it);
 * - `counters()`: the counters collection;
 * - `numbers(Model, field, filter)`: `[tag, value of field]` of each document, by tag.
 */
export function eachMongoose(letter, env, body) {
  for (const [major, mongoose] of MONGOOSES) {
    describe(`mongoose ${major}`, { timeout: 180_000 }, () => {
      const connection = mongoose.createConnection();
      const model = async (name, schema) => {
        const made = connection.model(name, schema);
        await made.init();
        return made;
      };
      const numbers = async (Model, field, filter = {}) => (await Model.find(filter).sort({ tag: 1 }).lean()).map((d) => [d.tag, field.split('.').reduce((v, k) => v?.[k], d)]);
      before(async () => {
        await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
        await connection.createCollection('counters');
      });
      after(async () => {
        await connection.dropDatabase();
        await connection.close();
      });
      body({
        major,
        mongoose,
        connection,
        AutoIncrement: AutoIncrementFactory(connection),
        p: `${letter}${major}_`,
        ObjectId: mongoose.Types.ObjectId,
        model,
        counters: () => connection.db.collection('counters'),
        numbers,
      });
    });
  }
}

/** Awaits `promise`'s rejection with `code`; returns the error. */
export async function rejectsCode(promise, code) {
  let error;
  await assert.rejects(promise, (e) => {
    error = e;
    return e.code === code;
  });
  return error;
}
