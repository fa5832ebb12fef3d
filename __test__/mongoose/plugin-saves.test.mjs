// The mongoose plugin numbering one document at a time, on mongoose 9 and 8: save (and
// create, which is save), concurrent saves, setNext, a getter or a setter on inc_field, a
// save retried after it failed or after a unique index refused its number, parallel
// pre(save) hooks, and three processes saving on one counter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { eachMongoose, fileDatabase, rejectsCode } from './plugin-setup.mjs';

const env = fileDatabase('plugin_saves');

eachMongoose('s', env, ({ major, mongoose, AutoIncrement, p, model, counters, numbers }) => {
  test('save numbers new documents 1, 2, 3 and stores mongoose-sequence counters', async () => {
    const schema = new mongoose.Schema({ name: String });
    schema.plugin(AutoIncrement, { id: `${p}plain`, inc_field: 'no' });
    const Item = await model(`${p}Item`, schema);
    for (const name of ['a', 'b', 'c']) await new Item({ name }).save();
    const docs = await Item.find().sort({ no: 1 }).lean();
    assert.deepEqual(
      docs.map((d) => [d.no, d.name]),
      [
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
      ],
    );
    const counter = await counters().findOne({ id: `${p}plain` });
    assert.equal(counter.seq, 3);
    assert.equal(counter.reference_value, null);
    assert.equal(counter._id.constructor.name, 'ObjectId');
    const indexes = await counters().indexes();
    const unique = indexes.find((i) => i.name === 'id_1_reference_value_1');
    assert.ok(unique?.unique, JSON.stringify(indexes));
    // Saving again (not new) keeps the number.
    const first = await Item.findOne({ no: 1 });
    first.name = 'A';
    await first.save();
    assert.equal((await Item.findOne({ name: 'A' })).no, 1);
  });

  test('200 concurrent saves on one counter get 1..200, no gap, no duplicate', async () => {
    const schema = new mongoose.Schema({ _id: Number, i: Number });
    schema.plugin(AutoIncrement, { id: `${p}busy` });
    const Busy = await model(`${p}Busy`, schema);
    const saved = await Promise.all(Array.from({ length: 200 }, (_, i) => new Busy({ i }).save()));
    const ids = saved.map((d) => d._id).sort((a, b) => a - b);
    assert.deepEqual(
      ids,
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    assert.equal(await Busy.countDocuments(), 200);
  });

  test('setNext (promise and callback) and its error for an unknown id', async () => {
    const schema = new mongoose.Schema({ name: String, ticket: Number });
    schema.plugin(AutoIncrement, { id: `${p}ticket`, inc_field: 'ticket', disable_hooks: true });
    const Ticket = await model(`${p}Ticket`, schema);
    const t = await Ticket.create({ name: 'x' });
    assert.equal(t.ticket, undefined, 'disable_hooks: no number on save');
    const saved = await t.setNext(`${p}ticket`);
    assert.equal(saved.ticket, 1);
    assert.equal((await Ticket.findById(t._id)).ticket, 1);
    const viaCallback = await new Promise((resolve, reject) => t.setNext(`${p}ticket`, (e, d) => (e ? reject(e) : resolve(d))));
    assert.equal(viaCallback.ticket, 2);
    await assert.rejects(t.setNext('nope'), /Trying to increment a wrong sequence using the id nope/);
  });

  test('a getter or a setter on inc_field: every path numbers once, from the raw value', async () => {
    // A display format (issue 34): the getter's "INV-undefined" is no number of the caller's.
    const schema = new mongoose.Schema({ tag: String, no: { type: Number, get: (n) => `INV-${n}` } });
    schema.plugin(AutoIncrement, { id: `${p}getter`, inc_field: 'no' });
    const M = await model(`${p}Getter`, schema);
    assert.equal((await M.create({ tag: 'a' })).no, 'INV-1');
    await M.create([{ tag: 'b' }, { tag: 'c' }]);
    await M.create({ tag: 'd' }, { tag: 'e' });
    await new M({ tag: 'f' }).save();
    await M.insertMany([{ tag: 'g' }, new M({ tag: 'h' })]);
    await M.bulkWrite([{ insertOne: { document: { tag: 'i' } } }]);
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
      ['e', 5],
      ['f', 6],
      ['g', 7],
      ['h', 8],
      ['i', 9],
    ]);
    // A setter that changes the value: each document is numbered once (no number spent twice).
    const scaled = new mongoose.Schema({ tag: String, no: { type: Number, set: (n) => (n == null ? n : n * 10) } });
    scaled.plugin(AutoIncrement, { id: `${p}setter`, inc_field: 'no' });
    const S = await model(`${p}Setter`, scaled);
    await S.create([{ tag: 'a' }, { tag: 'b' }]);
    await S.create({ tag: 'c' }, { tag: 'd' });
    await S.insertMany([new S({ tag: 'e' })]);
    assert.deepEqual(await numbers(S, 'no'), [
      ['a', 10],
      ['b', 20],
      ['c', 30],
      ['d', 40],
      ['e', 50],
    ]);
    assert.equal((await counters().findOne({ id: `${p}setter` })).seq, 5);
  });

  test('create numbers as save does, a number the caller set included: a copy of a record takes a new number', async () => {
    const schema = new mongoose.Schema({ tag: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}create_copy`, inc_field: 'no' });
    const M = await model(`${p}CreateCopy`, schema);
    const first = await M.create({ tag: 'a' });
    const copy = first.toObject();
    delete copy._id;
    assert.equal((await M.create({ ...copy, tag: 'b' })).no, 2);
    await M.create([
      { ...copy, tag: 'c' },
      { tag: 'd', no: 500 },
    ]);
    await M.create({ tag: 'e', no: 501 }, { ...copy, tag: 'f' });
    await M.create(new M({ tag: 'g', no: 502 }));
    // As mongoose-sequence 6.0.1, whose create is save.
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
      ['e', 5],
      ['f', 6],
      ['g', 7],
    ]);
    assert.equal((await counters().findOne({ id: `${p}create_copy` })).seq, 7);
  });

  test('a save that failed after numbering keeps its number, unless its reference value changed since', async () => {
    const schema = new mongoose.Schema({ tag: { type: String, unique: true }, shop: String, no: Number });
    schema.plugin(AutoIncrement, { id: `${p}retry`, inc_field: 'no', reference_fields: 'shop' });
    const M = await model(`${p}Retry`, schema);
    assert.equal((await M.create({ tag: 'a', shop: 'x' })).no, 1);
    const again = new M({ tag: 'a', shop: 'x' });
    await assert.rejects(again.save(), (e) => e.code === 11000);
    assert.equal(again.no, 2);
    again.tag = 'b';
    await again.save();
    assert.equal((await M.findOne({ tag: 'b' })).no, 2, 'the same number, none spent');
    const moved = new M({ tag: 'a', shop: 'x' });
    await assert.rejects(moved.save(), (e) => e.code === 11000);
    assert.equal(moved.no, 3);
    moved.tag = 'c';
    moved.shop = 'y';
    await moved.save();
    assert.equal((await M.findOne({ tag: 'c' })).no, 1, 'numbered again from the counter of its new shop');
    // The same through insertMany of documents.
    const failed = new M({ tag: 'a', shop: 'x' });
    await assert.rejects(failed.save(), (e) => e.code === 11000);
    assert.equal(failed.no, 4);
    failed.tag = 'd';
    failed.shop = 'y';
    const kept = new M({ tag: 'b', shop: 'x' });
    await assert.rejects(kept.save(), (e) => e.code === 11000);
    kept.tag = 'e';
    await M.insertMany([failed, kept]);
    assert.deepEqual([(await M.findOne({ tag: 'd' })).no, (await M.findOne({ tag: 'e' })).no], [2, 5]);
    assert.deepEqual(
      (
        await counters()
          .find({ id: `${p}retry` })
          .sort({ 'reference_value.shop': 1 })
          .toArray()
      ).map((c) => [c.reference_value.shop, c.seq]),
      [
        ['x', 5],
        ['y', 2],
      ],
    );
  });

  test('setNext on a saved document whose inc_field cannot change fails with INVALID_ARGUMENT and spends nothing', async () => {
    const schema = new mongoose.Schema({ tag: String, locked: Boolean, no: { type: Number, immutable: (doc) => doc.locked !== false } });
    schema.plugin(AutoIncrement, { id: `${p}immutable`, inc_field: 'no' });
    const M = await model(`${p}Immutable`, schema);
    const saved = await M.create({ tag: 'a' });
    const error = await rejectsCode(saved.setNext(`${p}immutable`), 'INVALID_ARGUMENT');
    assert.match(error.message, /immutable/);
    const viaCallback = await new Promise((resolve) => saved.setNext(`${p}immutable`, resolve));
    assert.equal(viaCallback?.code, 'INVALID_ARGUMENT');
    assert.equal((await counters().findOne({ id: `${p}immutable` })).seq, 1, 'no number spent');
    // Before its first save an immutable field takes one; where it is not immutable, always.
    assert.equal((await new M({ tag: 'b' }).setNext(`${p}immutable`)).no, 2);
    const open = await M.create({ tag: 'c', locked: false });
    assert.equal((await open.setNext(`${p}immutable`)).no, 4);
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 1],
      ['b', 2],
      ['c', 4],
    ]);
    // A stored _id never changes.
    const byId = new mongoose.Schema({ _id: Number, tag: String });
    byId.plugin(AutoIncrement, { id: `${p}immutable_id` });
    const I = await model(`${p}ImmutableId`, byId);
    const doc = await I.create({ tag: 'a' });
    await rejectsCode(doc.setNext(`${p}immutable_id`), 'INVALID_ARGUMENT');
    assert.equal((await counters().findOne({ id: `${p}immutable_id` })).seq, 1, 'no number spent');
  });

  test('a number refused by a unique index on inc_field is not kept for the retry', async () => {
    const schema = new mongoose.Schema({ tag: String, no: { type: Number, unique: true } });
    schema.plugin(AutoIncrement, { id: `${p}refused`, inc_field: 'no' });
    const M = await model(`${p}Refused`, schema);
    await M.collection.insertOne({ tag: 'imported', no: 1 });
    const doc = new M({ tag: 'a' });
    await assert.rejects(doc.save(), (e) => e.code === 11000);
    await doc.save();
    assert.equal(doc.no, 2);
    // The caller's own number given to insertMany is the caller's: kept, and refused.
    await assert.rejects(M.insertMany([{ tag: 'b', no: 1 }]), (e) => e.code === 11000);
    // Given to save or create, it is overwritten, as mongoose-sequence does.
    const overwritten = new M({ tag: 'c', no: 1 });
    await overwritten.save();
    assert.equal(overwritten.no, 3);
    assert.equal((await M.create(new M({ tag: 'd', no: 1 }))).no, 4);
    assert.deepEqual(await numbers(M, 'no'), [
      ['a', 2],
      ['c', 3],
      ['d', 4],
      ['imported', 1],
    ]);
  });

  test('parallel_hooks: the next pre(save) hook sees the number only when mongoose runs hooks in series', async () => {
    const seen = {};
    for (const parallel of [true, false]) {
      const schema = new mongoose.Schema({ tag: String, no: Number });
      schema.plugin(AutoIncrement, { id: `${p}hooks_${parallel}`, inc_field: 'no', parallel_hooks: parallel });
      schema.pre('save', function seeNumber() {
        seen[parallel] = this.no;
      });
      const H = await model(`${p}Hooks${parallel}`, schema);
      assert.equal((await H.create({ tag: 'a' })).no, 1);
      assert.equal((await H.findOne({ tag: 'a' })).no, 1);
    }
    // mongoose 8 runs parallel pre hooks (as mongoose-sequence registers them by
    // default); mongoose 9 runs every pre hook in series.
    assert.equal(seen.true, major === 8 ? undefined : 1);
    assert.equal(seen.false, 1);
  });
});

test('three processes (mongoose 8 and 9) saving on one new counter never get a number twice', { timeout: 180_000 }, async () => {
  const worker = fileURLToPath(new URL('../fixtures/plugin-worker.mjs', import.meta.url));
  const dbName = `${env.dbName}_procs`;
  // The collections exist first: SecantusDB 0.7.0b3 can livelock when a collection is
  // created while another connection inserts into it (the counter's first use still races).
  const { MongoClient } = await import('mongodb');
  const client = await new MongoClient(env.uri).connect();
  await client.db(dbName).createCollection('counters');
  await client.db(dbName).createCollection('shareds');
  const runs = await Promise.all(['9', '8', '9'].map((major) => promisify(execFile)(process.execPath, [worker, env.uri, dbName, major, '60', '8'], { timeout: 120_000 })));
  const numbers = runs.flatMap((r) => JSON.parse(r.stdout));
  assert.equal(new Set(numbers).size, numbers.length, 'no number twice');
  try {
    const db = client.db(dbName);
    const counter = await db.collection('counters').findOne({ id: 'shared_between_processes' });
    assert.ok(
      numbers.every((n) => Number.isInteger(n) && n >= 1 && n <= counter.seq),
      'every number came from the counter',
    );
    assert.equal(await db.collection('counters').countDocuments({ id: 'shared_between_processes' }), 1, 'one counter document');
    // Racing first use is retried on the counter's own index; some servers misreport a
    // racing upsert (SecantusDB answers null), which may cost a value, never a duplicate.
    assert.ok(counter.seq - numbers.length <= 3, `at most a few values lost: ${counter.seq} for ${numbers.length}`);
    await db.dropDatabase();
  } finally {
    await client.close();
  }
});
