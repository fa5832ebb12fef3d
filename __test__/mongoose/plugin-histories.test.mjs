// Random histories for the mongoose plugin (fast-check, fixed seeds, printed for replay
// with PLUGIN_SEEDS=1,2): phases of concurrent save / insertMany / create([...]) /
// bulkWrite / upsert calls, with counterReset between some phases, on a counter of random
// start_seq and inc_amount, on mongoose 8 and 9. Checked against a simple model: within a
// phase (between resets) the numbers handed out are exactly the next ones of the
// progression (no gap, no duplicate), each batch call's documents carry consecutive
// numbers in array order, and the stored counter holds the last number.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import { AutoIncrementFactory, fileDatabase } from './plugin-setup.mjs';

const SEEDS = (process.env.PLUGIN_SEEDS ?? '5,17,29').split(',').map(Number);

const env = fileDatabase('plugin_hist');

const call = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'save', n: 1 }) },
  fc.integer({ min: 1, max: 6 }).map((n) => ({ kind: 'insertMany', n })),
  fc.integer({ min: 2, max: 6 }).map((n) => ({ kind: 'create', n })),
  fc.integer({ min: 1, max: 4 }).map((n) => ({ kind: 'bulkWrite', n })),
  fc.constant({ kind: 'upsert', n: 1 }),
);
const history = fc.record({
  start: fc.integer({ min: -5, max: 20 }),
  step: fc.constantFrom(1, 1, 2, 5, -1),
  phases: fc.array(fc.record({ calls: fc.array(call, { minLength: 1, maxLength: 12 }), resetAfter: fc.boolean() }), {
    minLength: 1,
    maxLength: 4,
  }),
});

async function run(mongoose, connection, AutoIncrement, tag, h) {
  const schema = new mongoose.Schema({ no: Number, call: Number, pos: Number, key: String });
  const id = `hist_${tag}`;
  schema.plugin(AutoIncrement, { id, inc_field: 'no', start_seq: h.start, inc_amount: h.step });
  const Model = connection.model(`Hist_${tag}`, schema);
  // Its collection made before the first write (see plugin-saves.test.mjs).
  await Model.init();
  let last = null; // the model: last number handed out in this phase (null: none yet)
  let callNo = 0;
  for (const phase of h.phases) {
    const calls = phase.calls.map((c) => ({ ...c, call: callNo++ }));
    await Promise.all(
      calls.map((c) => {
        const docs = Array.from({ length: c.n }, (_, pos) => ({ call: c.call, pos }));
        switch (c.kind) {
          case 'save':
            return new Model(docs[0]).save();
          case 'insertMany':
            return Model.insertMany(docs);
          case 'create':
            return Model.create(docs);
          case 'bulkWrite':
            return Model.bulkWrite(docs.map((document) => ({ insertOne: { document } })));
          default:
            return Model.updateOne({ key: `u${c.call}` }, { $set: { call: c.call, pos: 0 } }, { upsert: true });
        }
      }),
    );
    const made = await Model.find({ call: { $in: calls.map((c) => c.call) } }).lean();
    const total = calls.reduce((sum, c) => sum + c.n, 0);
    assert.equal(made.length, total, 'every document was written');
    const first = last === null ? h.start : last + h.step;
    const expected = Array.from({ length: total }, (_, i) => first + i * h.step);
    const got = made.map((d) => d.no).sort((a, b) => (a - b) * Math.sign(h.step));
    assert.deepEqual(got, expected, 'the next numbers of the progression, each once');
    for (const c of calls) {
      const mine = made.filter((d) => d.call === c.call).sort((a, b) => a.pos - b.pos);
      mine.forEach((d, i) => assert.equal(d.no, mine[0].no + i * h.step, `${c.kind} of ${c.n}: consecutive in array order`));
    }
    last = expected.at(-1);
    const counter = await connection.db.collection('counters').findOne({ id });
    assert.equal(counter.seq, last, 'the counter holds the last number');
    if (phase.resetAfter) {
      await Model.counterReset(id);
      // As mongoose-sequence stores it: start_seq - 1, or 0 when start_seq is 0.
      last = h.start === 0 ? 0 : h.start - 1;
      await Model.deleteMany({});
    }
  }
}

for (const [major, mongoose] of [
  [9, mongoose9],
  [8, mongoose8],
]) {
  test(`random histories of saves, batches, upserts and resets agree with the model (mongoose ${major})`, { timeout: 300_000 }, async () => {
    const connection = mongoose.createConnection();
    await connection.openUri(env.uri, { dbName: `${env.dbName}_${major}`, serverSelectionTimeoutMS: 10_000 });
    const AutoIncrement = AutoIncrementFactory(connection);
    let runs = 0;
    try {
      for (const seed of SEEDS) {
        await fc.assert(
          fc.asyncProperty(history, async (h) => {
            runs += 1;
            await run(mongoose, connection, AutoIncrement, `${major}_${seed}_${runs}`, h);
          }),
          { seed, numRuns: 20, endOnFailure: true },
        );
      }
      console.log(`mongoose ${major}: ${runs} histories (seeds ${SEEDS.join(',')})`);
    } finally {
      await connection.dropDatabase();
      await connection.close();
    }
  });
}
