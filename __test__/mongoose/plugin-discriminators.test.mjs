// The mongoose plugin with discriminators and subdocuments, on mongoose 9 and 8: the
// counters of the base schema and of the child's (migration helpers, counterReset), a
// child numbered by its own counters refused through the base model's batch writers, a
// child compiled from a clone of the base schema, and a plugin on a subdocument schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AutoIncrementFactory, eachMongoose, fileDatabase, rejectsCode } from './plugin-setup.mjs';

const { syncCounterToMax } = AutoIncrementFactory;

const env = fileDatabase('plugin_discriminators');

eachMongoose('d', env, ({ mongoose, AutoIncrement, p, model, counters }) => {
  test("discriminators: the migration helpers and counterReset find the counters of the base schema and of the child's", async () => {
    const schema = new mongoose.Schema({ tag: String, year: Number, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}disc`, inc_field: 'no', reference_fields: ['year'] });
    const Base = await model(`${p}Disc`, schema);
    const Child = Base.discriminator(`${p}DiscChild`, new mongoose.Schema({ extra: String }));
    await Base.create({ tag: 'a', year: 2025 });
    await Child.create({ tag: 'b', year: 2025 });
    // The counter numbers every document of the collection: sync reads them all.
    await Base.collection.insertOne({ tag: 'imported', year: 2025, no: 40 });
    assert.deepEqual(await syncCounterToMax(Child), [{ reference_value: { year: 2025 }, value: 40 }]);
    assert.deepEqual(await syncCounterToMax(Child, `${p}disc`), [{ reference_value: { year: 2025 }, value: 40 }]);
    assert.equal((await Child.create({ tag: 'c', year: 2025 })).no, 41);
    // Reference values cast with the child's schema: '2025' is the Number 2025.
    assert.equal((await Child.counterReset(`${p}disc`, { year: '2025' })).matchedCount, 1);
    assert.equal((await Child.create({ tag: 'd', year: 2025 })).no, 1);
    // A counter of the child's own schema, beside the base's.
    const own = new mongoose.Schema({ cno: Number });
    own.plugin(AutoIncrement, { id: `${p}disc_own`, inc_field: 'cno', start_seq: 100 });
    const Other = Base.discriminator(`${p}DiscOther`, own);
    const e = await Other.create({ tag: 'e', year: 2025 });
    assert.deepEqual([e.no, e.cno], [2, 100]);
    await rejectsCode(syncCounterToMax(Other), 'INVALID_ARGUMENT');
    await Base.collection.insertOne({ tag: 'f', year: 2025, cno: 150, __t: `${p}DiscOther` });
    assert.deepEqual(await syncCounterToMax(Other, `${p}disc_own`), [{ reference_value: null, value: 150 }]);
    assert.equal((await Other.create({ tag: 'g', year: 2025 })).cno, 151);
    assert.equal((await Other.counterReset(`${p}disc_own`)).matchedCount, 1);
    assert.equal((await Other.create({ tag: 'h', year: 2025 })).cno, 100);
    await rejectsCode(syncCounterToMax(Child, `${p}disc_own`), 'INVALID_ARGUMENT');
  });

  test("a discriminator numbered by its own schema's counters is refused through the base model's batch writers", async () => {
    const base = new mongoose.Schema({ tag: String, no: Number }, { discriminatorKey: 'kind' });
    base.plugin(AutoIncrement, { id: `${p}dbase`, inc_field: 'no' });
    const Base = await model(`${p}DBase`, base);
    const own = new mongoose.Schema({ cno: Number });
    own.plugin(AutoIncrement, { id: `${p}dchild`, inc_field: 'cno' });
    const Child = Base.discriminator(`${p}DChild`, own);
    const Plain = Base.discriminator(`${p}DPlain`, new mongoose.Schema({ other: String }));
    const kind = Child.modelName;
    const refusal = (e) => e.code === 'INVALID_ARGUMENT' && e.message.includes(`through the model ${kind}`) && e.message.includes(`'${p}dchild'`);
    await assert.rejects(Base.insertMany([{ tag: 'a', kind }]), refusal);
    await assert.rejects(Base.insertMany([new Child({ tag: 'a' })]), refusal);
    await assert.rejects(Base.bulkWrite([{ insertOne: { document: { tag: 'a', kind } } }], { ordered: false }), refusal);
    await assert.rejects(Base.updateOne({ tag: 'a', kind }, { $set: { x: 1 } }, { upsert: true }), refusal);
    await assert.rejects(Base.findOneAndUpdate({ tag: 'a' }, { $setOnInsert: { kind } }, { upsert: true }), refusal);
    await assert.rejects(Base.bulkWrite([{ updateOne: { filter: { tag: 'a', kind }, update: { $set: { x: 1 } }, upsert: true } }]), refusal);
    await assert.rejects(Base.replaceOne({ tag: 'a' }, { tag: 'a', kind, no: 5 }, { upsert: true }), refusal);
    assert.equal(await Base.countDocuments(), 0);
    assert.equal(await counters().countDocuments({ id: { $in: [`${p}dbase`, `${p}dchild`] } }), 0);
    // With the child's number given, through the child, or a child without counters of its own: numbered.
    await Base.insertMany([
      { tag: 'b', kind, cno: 50 },
      { tag: 'c', kind: Plain.modelName },
    ]);
    await Base.create({ tag: 'd', kind });
    await Child.insertMany([{ tag: 'e' }]);
    await Child.updateOne({ tag: 'f' }, { $set: { x: 1 } }, { upsert: true });
    await Child.bulkWrite([{ insertOne: { document: { tag: 'g' } } }]);
    const docs = (await Base.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.no, d.cno]);
    assert.deepEqual(docs, [
      ['b', 1, 50],
      ['c', 2, undefined],
      ['d', 3, 1],
      ['e', 4, 2],
      ['f', 5, 3],
      ['g', 6, 4],
    ]);
  });

  test("a discriminator compiled from a clone of the base schema counts the base's counter once", async () => {
    const base = new mongoose.Schema({ tag: String, no: Number }, { discriminatorKey: 'kind' });
    base.plugin(AutoIncrement, { id: `${p}clone`, inc_field: 'no' });
    const Base = await model(`${p}CloneBase`, base);
    const Copy = Base.discriminator(`${p}CloneCopy`, base.clone());
    await Copy.create([{ tag: 'a' }, { tag: 'b' }]);
    await Base.collection.insertOne({ tag: 'c', no: 30, kind: Copy.modelName });
    assert.deepEqual(await syncCounterToMax(Copy), [{ reference_value: null, value: 30 }]);
    assert.equal((await Copy.create({ tag: 'd' })).no, 31);
    assert.equal((await Copy.counterReset(`${p}clone`)).matchedCount, 1);
    assert.equal((await Base.create({ tag: 'e' })).no, 1);
  });

  test('on a subdocument schema: new subdocuments are numbered when their parent is saved, not by its insertMany', async () => {
    const item = new mongoose.Schema({ name: String });
    item.plugin(AutoIncrement, { id: `${p}items`, inc_field: 'no' });
    const Order = await model(`${p}Order`, new mongoose.Schema({ tag: String, items: [item], main: item }));
    await new Order({ tag: 'a', items: [{ name: 'x' }, { name: 'y' }], main: { name: 'm' } }).save();
    await Order.create({ tag: 'b', items: [{ name: 'z' }] });
    const a = await Order.findOne({ tag: 'a' });
    a.items.push({ name: 'w' });
    await a.save();
    await Order.insertMany([{ tag: 'c', items: [{ name: 'v' }] }]);
    await Order.updateOne({ tag: 'd' }, { $set: { items: [{ name: 'u' }] } }, { upsert: true });
    const stored = (await Order.find().sort({ tag: 1 }).lean()).map((d) => [d.tag, d.items.map((i) => i.no ?? null), d.main?.no ?? null]);
    assert.deepEqual(stored, [
      ['a', [1, 2, 5], 3],
      ['b', [4], null],
      ['c', [null], null],
      ['d', [null], null],
    ]);
  });
});
