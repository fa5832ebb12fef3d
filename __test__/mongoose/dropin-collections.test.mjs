// The drop-ins' counters in one `identitycounters` collection, on mongoose 9 and 8: where
// the plugins they replace disagree (their unique indexes), the counter that cannot be
// stored is refused with INDEX_CONFLICT, naming the index, and nothing is numbered twice.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileDatabase, MONGOOSES } from './plugin-setup.mjs';

const require = createRequire(import.meta.url);
const typegoose = require('mongodb-sequence/mongoose/typegoose');
const mai = require('mongodb-sequence/mongoose/auto-increment');
const autoinc = require('mongodb-sequence/mongoose/plugin-autoinc');

const env = fileDatabase('dropin_collections');

for (const [major, mongoose] of MONGOOSES) {
  describe(`mongoose ${major}`, { timeout: 120_000 }, () => {
    let connection;
    let made = 0;
    const modelWith = async (apply) => {
      const schema = new mongoose.Schema({ _id: Number, shop: String, no: Number });
      const name = `C${major}_${made++}`;
      apply(schema, name);
      const Model = connection.model(name, schema);
      await Model.init();
      return Model;
    };
    const fresh = async (label) => {
      connection = mongoose.createConnection();
      await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}_${label}`, serverSelectionTimeoutMS: 10_000 });
      await connection.createCollection('identitycounters');
      mai.initialize(connection);
    };
    const done = async () => {
      await connection.dropDatabase();
      await connection.close();
    };

    test('mongoose-auto-increment and ungrouped mongoose-plugin-autoinc counters share the collection', async () => {
      await fresh('shared');
      try {
        const A = await modelWith((s, name) => s.plugin(mai.plugin, name));
        const B = await modelWith((s, name) => s.plugin(autoinc, name));
        assert.deepEqual([(await A.create({}))._id, (await B.create({}))._id, (await A.create({}))._id], [0, 0, 1]);
      } finally {
        await done();
      }
    });

    test('typegoose counters beside mongoose-auto-increment ones: INDEX_CONFLICT', async () => {
      await fresh('typegoose');
      try {
        const A = await modelWith((s, name) => s.plugin(mai.plugin, name));
        const B = await modelWith((s, name) => s.plugin(mai.plugin, name));
        await A.create({});
        await B.create({});
        // Two counters without modelName: typegoose's unique index cannot be built over them.
        const T = await modelWith((s) => s.plugin(typegoose.AutoIncrementID, {}));
        await assert.rejects(T.create({}), (e) => e.code === 'INDEX_CONFLICT' && /field_1_modelName_1/.test(e.message));
        // A collection of their own (trackerCollection) numbers them.
        const U = await modelWith((s) => s.plugin(typegoose.AutoIncrementID, { trackerCollection: 'typegoosecounters' }));
        assert.equal((await U.create({}))._id, 0);
      } finally {
        await done();
      }
    });

    test("grouped mongoose-plugin-autoinc counters under mongoose-auto-increment's index: INDEX_CONFLICT", async () => {
      await fresh('grouped');
      try {
        const A = await modelWith((s, name) => s.plugin(mai.plugin, name));
        await A.create({});
        const G = await modelWith((s, name) => s.plugin(autoinc, { model: name, field: 'no', groupingField: 'shop', unique: false }));
        assert.equal((await G.create({ _id: 1, shop: 'north' })).no, 0);
        await assert.rejects(G.create({ _id: 2, shop: 'south' }), (e) => e.code === 'INDEX_CONFLICT' && /field_1_model_1/.test(e.message));
        assert.equal(await G.countDocuments({ shop: 'south' }), 0);
      } finally {
        await done();
      }
    });
  });
}
