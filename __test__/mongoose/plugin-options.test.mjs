// The mongoose plugin's factory and registration, on mongoose 9 and 8: the factory's
// argument, the ESM and CJS entries, exclusive (true, false, 'reuse'), an inc_field of
// another type, and every refusal with its code, registering nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import mongoose9 from 'mongoose';
import { AutoIncrementFactory, eachMongoose, fileDatabase, rejectsCode } from './plugin-setup.mjs';

const require = createRequire(import.meta.url);
const { syncCounterToMax, takeOverCounter } = AutoIncrementFactory;

const env = fileDatabase('plugin_options');

eachMongoose('o', env, ({ mongoose, AutoIncrement, p, model }) => {
  test('exclusive: true throws, false shares, "reuse" takes the same options again (hot reload)', async () => {
    const make = (options) => {
      const schema = new mongoose.Schema({ n: Number });
      schema.plugin(AutoIncrement, { id: `${p}hot`, inc_field: 'n', ...options });
      return schema;
    };
    const first = await model(`${p}Hot1`, make({}));
    // The same options on a new schema still throw: at plugin time a model file run again
    // cannot be told from a second model sharing the id by mistake. The message keeps
    // mongoose-sequence's and names the remedies.
    assert.throws(
      () => make({}),
      new Error(
        `Counter already defined for field "${p}hot"; pass exclusive: 'reuse' to accept the same counter registered again (a hot reload re-running the model file), or give each model's counter an id of its own`,
      ),
    );
    // With 'reuse' and other options, the message names the options that differ.
    assert.throws(
      () => make({ exclusive: 'reuse', start_seq: 7, inc_amount: 2 }),
      new Error(`Counter already defined for field "${p}hot"; exclusive: 'reuse' accepts it again only with the same options, and start_seq, inc_amount differ`),
    );
    const reloaded = await model(`${p}Hot2`, make({ exclusive: 'reuse' }));
    const shared = await model(`${p}Hot3`, make({ exclusive: false }));
    const got = [(await first.create({})).n, (await reloaded.create({})).n, (await shared.create({})).n];
    assert.deepEqual(got, [1, 2, 3]);
    assert.throws(() => make({ exclusive: 'maybe' }), /exclusive must be true, false or 'reuse'/);
  });

  test('an inc_field of another type is refused as mongoose-sequence refuses it', () => {
    const schema = new mongoose.Schema({ code: String });
    assert.throws(() => schema.plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'code' }), /Auto increment field already present and not of type "Number"/);
  });

  test('a gapless counter refuses to share its schema; every refusal has a code and registers nothing', async () => {
    for (const [first, second] of [
      [true, false],
      [false, true],
      [true, true],
    ]) {
      const schema = new mongoose.Schema({ tag: String, a: Number, b: Number });
      schema.plugin(AutoIncrement, { id: `${p}share_a_${first}${second}`, inc_field: 'a', gapless: first });
      assert.throws(
        () => schema.plugin(AutoIncrement, { id: `${p}share_b_${first}${second}`, inc_field: 'b', gapless: second }),
        (e) => e.code === 'INVALID_ARGUMENT',
      );
      // Nothing was registered for the refused one: the id is free.
      new mongoose.Schema({ b: Number }).plugin(AutoIncrement, { id: `${p}share_b_${first}${second}`, inc_field: 'b' });
    }
    const typed = new mongoose.Schema({ no: String });
    assert.throws(
      () => typed.plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'no' }),
      (e) => e.code === 'INVALID_ARGUMENT' && /not of type "Number"/.test(e.message),
    );
    new mongoose.Schema({ no: Number }).plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'no' });
    for (const options of [{ gapless: 'yes' }, { exclusive: 'maybe' }, { reference_fields: ['x'] }]) {
      assert.throws(
        () => new mongoose.Schema({}).plugin(AutoIncrement, { inc_field: 'n', ...options }),
        (e) => e.code === 'INVALID_ARGUMENT',
        JSON.stringify(options),
      );
    }
    assert.throws(
      () => new mongoose.Schema({}).plugin(AutoIncrement, { id: `${p}typed`, inc_field: 'no' }),
      (e) => e.code === 'INVALID_ARGUMENT' && /already defined/.test(e.message),
    );
    assert.throws(
      () => AutoIncrementFactory(),
      (e) => e.code === 'INVALID_ARGUMENT',
    );
    const schema = new mongoose.Schema({ tag: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}codes`, inc_field: 'no' });
    const M = await model(`${p}Codes`, schema);
    await rejectsCode(new M({ tag: 'a' }).setNext(`${p}no_such_id`), 'INVALID_ARGUMENT');
    await rejectsCode(M.counterReset(`${p}no_such_id`), 'INVALID_ARGUMENT');
    await rejectsCode(syncCounterToMax(M, `${p}no_such_id`), 'INVALID_ARGUMENT');
    await rejectsCode(takeOverCounter(M, 'elsewhere'), 'INVALID_ARGUMENT');
    await rejectsCode(takeOverCounter(M, 'typegoose'), 'SEQUENCE_NOT_FOUND');
  });
});

test('the factory wants exactly one argument, as mongoose-sequence', () => {
  assert.throws(() => AutoIncrementFactory(), /Please, pass mongoose while requiring/);
  assert.throws(() => AutoIncrementFactory(mongoose9, {}), /Please, pass mongoose while requiring/);
  assert.equal(typeof AutoIncrementFactory(mongoose9), 'function');
});

test('ESM and CJS entries give the same factory', async () => {
  const esm = await import('mongodb-sequence/mongoose');
  assert.equal(esm.default, AutoIncrementFactory);
  assert.equal(require('mongodb-sequence/mongoose'), AutoIncrementFactory);
});
