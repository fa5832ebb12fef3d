// The mongoose plugin numbering upserts, on mongoose 9 and 8: every upsert that can insert
// (updateOne, updateMany, findOneAndUpdate, replaceOne, findOneAndReplace, in bulkWrite
// too), an upsert by its number, a nested inc_field, and what is refused before any
// number is taken (pipelines, replaces without a number, reference fields written by
// other operators than $set / $setOnInsert).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eachMongoose, fileDatabase, rejectsCode } from './plugin-setup.mjs';

const env = fileDatabase('plugin_upserts');

eachMongoose('u', env, ({ mongoose, AutoIncrement, p, model, counters, numbers }) => {
  test('upserts get a number when they insert ($setOnInsert); an update keeps its number', async () => {
    const schema = new mongoose.Schema({ email: String, no: Number, visits: Number });
    schema.plugin(AutoIncrement, { id: `${p}upsert`, inc_field: 'no' });
    const User = await model(`${p}User`, schema);
    const a = await User.findOneAndUpdate({ email: 'a@x' }, { $inc: { visits: 1 } }, { upsert: true, new: true });
    assert.equal(a.no, 1);
    await User.updateOne({ email: 'b@x' }, { $set: { visits: 1 } }, { upsert: true });
    assert.equal((await User.findOne({ email: 'b@x' })).no, 2);
    // An upsert that updates spends a value (documented) but keeps the stored number.
    const again = await User.findOneAndUpdate({ email: 'a@x' }, { $inc: { visits: 1 } }, { upsert: true, new: true });
    assert.deepEqual([again.no, again.visits], [1, 2]);
    assert.equal((await User.create({ email: 'c@x' })).no, 4);
    // Without upsert nothing is spent.
    await User.updateOne({ email: 'zzz' }, { $set: { visits: 1 } });
    assert.equal((await counters().findOne({ id: `${p}upsert` })).seq, 4);
  });

  test('an upsert by its number inserts that number and takes none', async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}upsert_no`, inc_field: 'no' });
    const M = await model(`${p}UpsertNo`, schema);
    await M.updateOne({ no: 500 }, { $set: { tag: 'a' } }, { upsert: true });
    await M.updateOne({ no: 500 }, { $set: { tag: 'b' } }, { upsert: true });
    await M.findOneAndUpdate({ no: { $eq: 501 } }, { tag: 'c' }, { upsert: true });
    await M.updateOne({ tag: 'd' }, { $set: { x: 1 } }, { upsert: true });
    assert.deepEqual(await numbers(M, 'no'), [
      ['b', 500],
      ['c', 501],
      ['d', 1],
    ]);
    const byId = new mongoose.Schema({ _id: Number, tag: String });
    byId.plugin(AutoIncrement, { id: `${p}upsert_id` });
    const I = await model(`${p}UpsertId`, byId);
    await I.updateOne({ _id: 77 }, { $set: { tag: 'a' } }, { upsert: true });
    await I.findOneAndUpdate({ _id: 77 }, { tag: 'b' }, { upsert: true });
    await I.updateOne({ tag: 'c' }, { $set: { x: 1 } }, { upsert: true });
    assert.deepEqual(
      (await I.find().sort({ _id: 1 }).lean()).map((d) => [d._id, d.tag]),
      [
        [1, 'c'],
        [77, 'b'],
      ],
    );
  });

  test('every upsert that can insert a document numbers it, in bulkWrite too; a replace only by a number it is given', async () => {
    const schema = new mongoose.Schema({ tag: String, x: Number, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}upsert_all`, inc_field: 'no' });
    const M = await model(`${p}UpsertAll`, schema);
    await M.bulkWrite([
      { updateOne: { filter: { tag: 'a' }, update: { $set: { x: 1 } }, upsert: true } },
      { insertOne: { document: { tag: 'b' } } },
      { updateMany: { filter: { tag: 'c' }, update: { $set: { x: 1 } }, upsert: true } },
      { replaceOne: { filter: { tag: 'd' }, replacement: { tag: 'd', x: 1, no: 400 }, upsert: true } },
    ]);
    await M.findOneAndUpdate({ tag: 'e' }, { $setOnInsert: { x: 1 } }, { upsert: true });
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 400],
      ['e', 4],
    ]);
    // Matching an existing document: an update keeps its number (a value spent: a gap).
    await M.bulkWrite([{ updateOne: { filter: { tag: 'a' }, update: { $set: { x: 5 } }, upsert: true } }]);
    await M.updateMany({ tag: { $in: ['b', 'c'] } }, { $set: { x: 6 } }, { upsert: true });
    // A replacement is stored as it is: accepted when it holds its number, or when the
    // filter gives it by equality (put into the replacement, which a match keeps).
    await M.replaceOne({ no: 500 }, { tag: 'j' }, { upsert: true });
    await M.findOneAndReplace({ no: 500 }, { tag: 'j', x: 1 }, { upsert: true });
    await M.bulkWrite([{ replaceOne: { filter: { tag: 'k' }, replacement: { tag: 'k', no: 501 }, upsert: true } }]);
    await M.replaceOne({ tag: 'a' }, { tag: 'a', x: 7, no: 1 }, { upsert: true });
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 400],
      ['e', 4],
      ['j', 500],
      ['k', 501],
    ]);
    assert.equal((await counters().findOne({ id: `${p}upsert_all` })).seq, 6);

    // Reference values of an upsert: the filter's equalities, $set and $setOnInsert.
    const scoped = new mongoose.Schema({ tag: String, shop: String, no: Number });
    scoped.plugin(AutoIncrement, { id: `${p}upsert_scoped`, inc_field: 'no', reference_fields: 'shop' });
    const S = await model(`${p}UpsertScoped`, scoped);
    await S.updateOne({ tag: 'a', shop: 'x' }, { $set: { n: 1 } }, { upsert: true });
    await S.updateOne({ tag: 'b' }, { $setOnInsert: { shop: 'y' } }, { upsert: true });
    await S.bulkWrite([{ updateOne: { filter: { tag: 'c' }, update: { $set: { shop: 'x' } }, upsert: true } }]);
    assert.deepEqual(
      (await S.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.shop, d.no]),
      [
        ['a', 'x', 1],
        ['b', 'y', 1],
        ['c', 'x', 2],
      ],
    );

    // Numbered by _id: the server inserts the filter's _id, or the replacement's.
    const byId = new mongoose.Schema({ _id: Number, tag: String });
    byId.plugin(AutoIncrement, { id: `${p}upsert_all_id` });
    const I = await model(`${p}UpsertAllId`, byId);
    await I.replaceOne({ _id: 70 }, { tag: 'a' }, { upsert: true });
    await I.bulkWrite([{ replaceOne: { filter: { tag: 'b' }, replacement: { _id: 71, tag: 'b' }, upsert: true } }]);
    await I.updateOne({ tag: 'c' }, { $set: { x: 1 } }, { upsert: true });
    await rejectsCode(I.replaceOne({ tag: 'd' }, { tag: 'd' }, { upsert: true }), 'INVALID_ARGUMENT');
    await rejectsCode(I.findOneAndReplace({ tag: 'd' }, { tag: 'd' }, { upsert: true }), 'INVALID_ARGUMENT');
    await rejectsCode(I.bulkWrite([{ replaceOne: { filter: { tag: 'd' }, replacement: { tag: 'd' }, upsert: true } }]), 'INVALID_ARGUMENT');
    assert.deepEqual(
      (await I.find().sort({ _id: 1 }).lean()).map((d) => [d._id, d.tag]),
      [
        [1, 'c'],
        [70, 'a'],
        [71, 'b'],
      ],
    );
    assert.equal((await counters().findOne({ id: `${p}upsert_all_id` })).seq, 1);
  });

  test('a pipeline upsert is refused, alone or in bulkWrite (ordered or not), before anything is written', async () => {
    const schema = new mongoose.Schema({ tag: String, grp: String, x: Number, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}pipe`, inc_field: 'no' });
    const M = await model(`${p}Pipe`, schema);
    await M.create([
      { tag: 'a', grp: 'G' },
      { tag: 'b', grp: 'G' },
    ]);
    // Documents written before the plugin, without a number.
    await M.collection.insertMany([
      { tag: 'l1', grp: 'L' },
      { tag: 'l2', grp: 'L' },
    ]);
    const before = await M.find().sort({ tag: 1 }).lean();
    const options = { upsert: true, updatePipeline: true };
    const refusal = (e) => e.code === 'INVALID_ARGUMENT' && /pipeline cannot tell/.test(e.message) && /\$setOnInsert/.test(e.message);
    await assert.rejects(M.updateMany({ grp: 'L' }, [{ $set: { x: 1 } }], options), refusal);
    await assert.rejects(M.updateMany({ grp: 'G' }, [{ $replaceWith: { tag: '$tag', grp: '$grp' } }], options), refusal);
    await assert.rejects(M.updateOne({ tag: 'n' }, [{ $set: { x: 1 } }], options), refusal);
    await assert.rejects(M.findOneAndUpdate({ tag: 'n' }, [{ $set: { x: 1 } }], options), refusal);
    // Even with the number in the filter: every pipeline upsert.
    await assert.rejects(M.updateOne({ no: 502 }, [{ $set: { tag: 'n' } }], options), refusal);
    for (const ordered of [true, false]) {
      const ops = [
        { insertOne: { document: { tag: 'n' } } },
        { updateMany: { filter: { grp: 'L' }, update: [{ $set: { x: 2 } }], upsert: true } },
        { updateOne: { filter: { tag: 'o' }, update: [{ $set: { x: 2 } }], upsert: true } },
      ];
      await assert.rejects(M.bulkWrite(ops, { ordered, updatePipeline: true }), refusal);
    }
    // Nothing written, no number taken; without upsert a pipeline runs as mongoose runs it.
    assert.deepEqual(await M.find().sort({ tag: 1 }).lean(), before);
    assert.equal((await counters().findOne({ id: `${p}pipe` })).seq, 2);
    await M.updateMany({ grp: 'L' }, [{ $set: { x: 3 } }], { updatePipeline: true });
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 2],
      ['l1', undefined],
      ['l2', undefined],
    ]);
  });

  test('an upsert writing a reference field by another operator than $set or $setOnInsert is refused', async () => {
    const schema = new mongoose.Schema({ tag: String, year: Number, old: Number, meta: { y: Number }, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}ref_ops`, inc_field: 'no', reference_fields: ['year', 'meta.y'] });
    const M = await model(`${p}RefOps`, schema);
    await M.create({ tag: 'a', year: 2025, meta: { y: 1 } });
    const refusal = (operator) => (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`with ${operator}`);
    for (const [operator, update] of [
      ['$inc', { $inc: { year: 2025 } }],
      ['$max', { $max: { year: 2025 } }],
      ['$min', { $min: { year: 2025 } }],
      ['$mul', { $mul: { year: 1 } }],
      ['$unset', { $unset: { year: 1 } }],
      ['$rename', { $rename: { old: 'year' } }],
      ['$rename', { $rename: { year: 'old' } }],
      ['$inc', { $inc: { 'meta.y': 1 } }],
      ['$unset', { $unset: { meta: 1 } }],
    ]) {
      await assert.rejects(M.updateOne({ tag: 'b', year: 2025 }, update, { upsert: true }), refusal(operator));
      await assert.rejects(M.findOneAndUpdate({ tag: 'b' }, { $set: { year: 2025 }, ...update }, { upsert: true }), refusal(operator));
      await assert.rejects(M.updateMany({ tag: 'b' }, update, { upsert: true }), refusal(operator));
      await assert.rejects(
        M.bulkWrite([{ insertOne: { document: { tag: 'c', year: 2025 } } }, { updateOne: { filter: { tag: 'b' }, update, upsert: true } }], { ordered: false }),
        refusal(operator),
      );
    }
    assert.deepEqual(await numbers(M, 'no'), [['a', 1]]);
    assert.deepEqual(
      (
        await counters()
          .find({ id: `${p}ref_ops` })
          .toArray()
      ).map((c) => c.seq),
      [1],
    );
    // Other operators on other fields, or an upsert that takes no number, run.
    await M.updateOne({ tag: 'd', year: 2025, 'meta.y': 1 }, { $inc: { old: 1 } }, { upsert: true });
    await M.updateOne({ tag: 'e' }, { $inc: { year: 2025 }, $set: { no: 90 } }, { upsert: true });
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['d', 2],
      ['e', 90],
    ]);
    // Refused by one counter of two: the other takes no number either.
    const two = new mongoose.Schema({ tag: String, year: Number, a: Number, b: Number });
    two.plugin(AutoIncrement, { id: `${p}ref_ops_a`, inc_field: 'a' });
    two.plugin(AutoIncrement, { id: `${p}ref_ops_b`, inc_field: 'b', reference_fields: ['year'] });
    const Two = await model(`${p}RefOpsTwo`, two);
    await Two.create({ tag: 'a', year: 1 });
    await assert.rejects(Two.updateOne({ tag: 'b' }, { $inc: { year: 1 } }, { upsert: true }), refusal('$inc'));
    await assert.rejects(Two.bulkWrite([{ updateOne: { filter: { tag: 'b' }, update: { $max: { year: 1 } }, upsert: true } }]), refusal('$max'));
    await assert.rejects(Two.replaceOne({ tag: 'a' }, { tag: 'a', a: 1 }, { upsert: true }), (e) => e.code === 'INVALID_ARGUMENT');
    assert.deepEqual(
      (
        await counters()
          .find({ id: { $in: [`${p}ref_ops_a`, `${p}ref_ops_b`] } })
          .sort({ id: 1 })
          .toArray()
      ).map((c) => [c.id, c.seq]),
      [
        [`${p}ref_ops_a`, 1],
        [`${p}ref_ops_b`, 1],
      ],
    );
  });

  test('a replace upsert without a number is refused: it would renumber a document it matches', async () => {
    const schema = new mongoose.Schema({ tag: String, x: Number, no: Number }, { timestamps: true });
    schema.plugin(AutoIncrement, { id: `${p}replace`, inc_field: 'no' });
    const M = await model(`${p}Replace`, schema);
    const a = await M.create({ tag: 'a' });
    const refusal = (e) => e.code === 'INVALID_ARGUMENT' && /would renumber a document it matches/.test(e.message);
    await assert.rejects(M.replaceOne({ _id: a._id }, { tag: 'a', x: 1 }, { upsert: true }), refusal);
    await assert.rejects(M.findOneAndReplace({ tag: 'a' }, { tag: 'a', x: 1 }, { upsert: true, new: true }), refusal);
    await assert.rejects(M.replaceOne({ tag: 'new' }, { tag: 'new' }, { upsert: true }), refusal);
    for (const ordered of [true, false]) {
      await assert.rejects(
        M.bulkWrite([{ insertOne: { document: { tag: 'b' } } }, { replaceOne: { filter: { tag: 'a' }, replacement: { tag: 'a' }, upsert: true } }], { ordered }),
        refusal,
      );
    }
    assert.deepEqual(await numbers(M, 'no'), [['a', 1]]);
    assert.equal((await counters().findOne({ id: `${p}replace` })).seq, 1);
    // The number given in the filter or the replacement: kept by a match, inserted otherwise.
    await M.replaceOne({ tag: 'a', no: 1 }, { tag: 'a', x: 2 }, { upsert: true });
    await M.findOneAndReplace({ _id: a._id }, { tag: 'a', x: 3, no: 1 }, { upsert: true });
    await M.bulkWrite([{ replaceOne: { filter: { tag: 'c' }, replacement: { tag: 'c', no: 300 }, upsert: true } }]);
    assert.deepEqual(
      (await M.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.no, d.x]),
      [
        ['a', 1, 3],
        ['c', 300, undefined],
      ],
    );
    // Without upsert, a replace is mongoose's own.
    await M.replaceOne({ tag: 'c' }, { tag: 'c', x: 4 });
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['c', undefined],
    ]);
    assert.equal((await counters().findOne({ id: `${p}replace` })).seq, 1);
  });

  test('an upsert that writes the object above a nested inc_field, or the field itself, still runs', async () => {
    const schema = new mongoose.Schema({ tag: String, meta: { no: Number, x: Number } });
    schema.plugin(AutoIncrement, { id: `${p}upsert_nested`, inc_field: 'meta.no' });
    const M = await model(`${p}UpsertNested`, schema);
    await M.updateOne({ tag: 'a' }, { $setOnInsert: { meta: { x: 1 } } }, { upsert: true });
    await M.updateOne({ tag: 'b' }, { $set: { meta: { x: 2 } } }, { upsert: true });
    await M.updateOne({ tag: 'c' }, { $set: { meta: { no: 90 } } }, { upsert: true });
    await M.updateOne({ tag: 'd' }, { $inc: { 'meta.no': 5 } }, { upsert: true });
    await M.findOneAndUpdate({ tag: 'e' }, { $set: { 'meta.x': 3 } }, { upsert: true });
    await M.updateOne({ tag: 'f' }, { $setOnInsert: { meta: { no: 91 } } }, { upsert: true });
    const docs = (await M.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.meta]);
    // A $set of the whole object (b) replaces it on every update: it is left without a number.
    assert.deepEqual(docs, [
      ['a', { x: 1, no: 1 }],
      ['b', { x: 2 }],
      ['c', { no: 90 }],
      ['d', { no: 5 }],
      ['e', { no: 2, x: 3 }],
      ['f', { no: 91 }],
    ]);
  });
});
