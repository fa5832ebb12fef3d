// The per-counter state in a process.
// Memory per distinct counter name: the per-counter objects (state, queue of merged
// calls, cached blocks) of counters no longer in use are released, so per-tenant or
// per-day names do not grow memory. counterStateCount() counts them.
// One counter document, one state in a process, whatever path and options name it: a
// locator whose numbers are of another BSON type (MongoDB compares numbers by value), its
// fields in another order, another step, cache, coalescing or write concern. A `set`,
// `reset` or `setCountersWhere` through one naming discards what every other naming of
// the same document holds, so no value comes twice after it.
// (The memory test comes first: the states the later tests hold stay out of its count.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Decimal128, Double, Int32, Long } from 'mongodb';
import { setup, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('states');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

/** Collections the names are spread over (each counter state is per collection and name). */
const SPREAD = 64;

/** At most twice 1024 kept states per client, each with its queue and one cache. */
const BOUND = 3 * (2 * 1024 + 64);

test('distinct names through coalesced and cached calls leave a bounded number of counter states', { timeout: 300_000 }, async () => {
  const names = 3_000;
  for (const [label, options] of [
    ['coalesced', { upsert: true, coalesce: true }],
    ['cached', { upsert: true, cache: 10 }],
  ]) {
    let next = 0;
    const worker = async () => {
      while (next < names) {
        const i = next++;
        // Spread over collections: a test server slows down as one collection grows.
        const collection = `states_${i % SPREAD}`;
        assert.equal(await seq.getNextSequenceValue(env.db, `${label}-${i}`, { ...options, collection }), 1);
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    const count = seq.counterStateCount();
    assert.ok(count <= BOUND, `${label}: ${count} per-counter objects after ${names} names`);
  }
  // A counter in use keeps its state and cached block across the pruning.
  const hot = seq.sequence(env.db, 'hot', { upsert: true, cache: 100 });
  const values = [await hot.next()];
  for (let i = 0; i < 3_000; i++) {
    await seq.getNextSequenceValue(env.db, `churn-${i}`, { upsert: true, coalesce: true, collection: `churn_${i % SPREAD}` });
    if (i % 500 === 0) values.push(await hot.next());
  }
  values.push(await hot.next());
  assert.deepEqual(
    values,
    values.map((_, i) => i + 1),
    'the held counter kept its block: no gap',
  );
});

// ---------------------------------------------------------------- one counter, one state

const base = { collection: 'counters', field: 'seq', upsert: true };
/** Every way a locator value 1 can be written that MongoDB compares equal to 1. */
const ONES = [
  ['1', () => 1],
  ['Double(1)', () => new Double(1)],
  ['1n', () => 1n],
  ['Long(1)', () => Long.fromNumber(1)],
  ['Int32(1)', () => new Int32(1)],
  ['Decimal128(1.00)', () => Decimal128.fromString('1.00')],
];

test('a locator number of another BSON type is the same counter: reset and set reach the cached handle', async () => {
  for (const [label, one] of ONES.slice(1)) {
    const id = `typed-${label}`;
    const a = seq.counterAt(env.db, { id, ref: 1 }, { ...base, cache: 10 });
    const d = seq.counterAt(env.db, { id, ref: one() }, base);
    assert.equal(await a.next(), 1, label);
    await d.reset();
    const fromD = [];
    for (let i = 0; i < 11; i++) fromD.push(await d.next());
    assert.deepEqual(fromD, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], label);
    // a's block (2..10) was discarded by the reset: nothing to give back over d's values.
    await a.release();
    assert.equal(await d.next(), 12, `${label}: no value handed out twice after a release`);
    await d.set(5000);
    assert.equal(await a.next(), 5001, `${label}: a set through another naming reaches the cache`);
  }
});

test('fields in another order name the same counter', async () => {
  const a = seq.counterAt(env.db, { id: 'ordered', ref: 'r' }, { ...base, cache: 10 });
  const b = seq.counterAt(env.db, { ref: 'r', id: 'ordered' }, base);
  assert.equal(await a.next(), 1);
  await b.set(100);
  assert.equal(await a.next(), 101);
});

test('handles with another step on one plain counter share its state', async () => {
  const a = seq.counterAt(env.db, { id: 'stepped' }, { ...base, cache: 10 });
  const b = seq.counterAt(env.db, { id: 'stepped' }, { ...base, step: 2 });
  assert.equal(await a.next(), 1);
  await b.set(100);
  assert.equal(await a.next(), 101);
  // a's block is on the server now (a prefetch may add to it later, never below it).
  const reserved = (await env.db.collection('counters').findOne({ id: 'stepped' })).seq;
  assert.ok(reserved >= 110, `a reserved up to ${reserved}`);
  assert.ok((await b.next()) > reserved, 'b counts on past the block a fetched');
});

test('setCountersWhere discards the cached blocks of the counters it may reset', async () => {
  const a = seq.counterAt(env.db, { id: 'where', reference_value: 'A' }, { ...base, cache: 10 });
  const other = seq.counterAt(env.db, { id: 'where', reference_value: 'A' }, base);
  assert.equal(await a.next(), 1);
  const matched = await seq.setCountersWhere(env.db, { id: 'where' }, 0, { collection: 'counters', field: 'seq' });
  assert.equal(matched, 1);
  assert.equal(await other.next(), 1);
  assert.equal(await a.next(), 2, 'not 2 from the old block while `other` also got a 1..');
  // a's release gives back what it fetched after the reset, nothing from before.
  await a.release();
  assert.equal(await other.next(), 3, 'a gave back its unused 3..11');
});

/** Handles naming one document in every way the API allows, with random options. */
const handleSpec = fc.record({
  naming: fc.integer({ min: 0, max: ONES.length - 1 }),
  reversed: fc.boolean(),
  step: fc.constantFrom(1, 2, 3),
  cache: fc.constantFrom(undefined, 3, 10),
  coalesce: fc.boolean(),
  writeConcern: fc.constantFrom(undefined, { w: 1 }, { w: 'majority' }),
});

const operation = fc.oneof(
  fc.record({ kind: fc.constant('next'), handle: fc.nat(), count: fc.constantFrom(1, 1, 1, 2, 5) }),
  fc.record({ kind: fc.constant('set'), handle: fc.nat(), value: fc.integer({ min: 0, max: 1000 }) }),
  fc.record({ kind: fc.constant('reset'), handle: fc.nat() }),
  fc.record({ kind: fc.constant('release'), handle: fc.nat() }),
  fc.record({ kind: fc.constant('setWhere'), value: fc.integer({ min: 0, max: 1000 }) }),
);

test('property: every naming of one document, any options: one state, no value twice between resets', { timeout: 240_000 }, async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(handleSpec, { minLength: 2, maxLength: 5 }), fc.array(operation, { minLength: 5, maxLength: 40 }), async (specs, ops) => {
      const id = `prop-${run++}`;
      const handles = specs.map((s) => {
        const locator = s.reversed ? { ref: ONES[s.naming][1](), id } : { id, ref: ONES[s.naming][1]() };
        const options = { ...base, step: s.step, coalesce: s.coalesce, ...(s.cache ? { cache: s.cache } : {}), ...(s.writeConcern ? { writeConcern: s.writeConcern } : {}) };
        return { spec: s, seq: seq.counterAt(env.db, locator, options) };
      });
      // What the counter held after the last management write, the values since, and
      // whether the next value is known exactly.
      // The counter exists from the start (`reset` refuses a missing one).
      await handles[0].seq.set(0);
      let floor = 0;
      let firstAfterWrite = true;
      const given = new Set();
      const log = [];
      for (const op of ops) {
        const h = handles[(op.handle ?? 0) % handles.length];
        if (op.kind === 'next') {
          const values = op.count === 1 ? [await h.seq.next()] : await h.seq.nextBatch(op.count);
          log.push(`next(${op.count}) step ${h.spec.step} -> ${values}`);
          if (firstAfterWrite) {
            assert.equal(values[0], floor + h.spec.step, `first value after a write:\n${log.join('\n')}`);
          }
          firstAfterWrite = false;
          for (const v of values) {
            assert.ok(!given.has(v), `${v} handed out twice since the last write:\n${log.join('\n')}`);
            assert.ok(v > floor, `${v} not past ${floor}:\n${log.join('\n')}`);
            given.add(v);
          }
        } else if (op.kind === 'set') {
          await h.seq.set(op.value);
          log.push(`set(${op.value})`);
          [floor, firstAfterWrite] = [op.value, true];
          given.clear();
        } else if (op.kind === 'reset') {
          await h.seq.reset();
          log.push(`reset (step ${h.spec.step})`);
          [floor, firstAfterWrite] = [1 - h.spec.step, true];
          given.clear();
        } else if (op.kind === 'setWhere') {
          const matched = await seq.setCountersWhere(env.db, { id }, op.value, { collection: 'counters', field: 'seq' });
          log.push(`setCountersWhere(${op.value}) matched ${matched}`);
          if (matched > 0) {
            [floor, firstAfterWrite] = [op.value, true];
            given.clear();
          }
        } else {
          await h.seq.release();
          log.push('release');
        }
      }
      for (const h of handles) await h.seq.release();
    }),
    { numRuns: 30 },
  );
});

// A scoped counter's document (`_id` its fields, sorted) named by `sequence()` with its
// fields in either order and its number as a number or a bigint, and by the function
// forms (which keep their own cache per options). `counterAt` refuses an `_id` locator,
// so it cannot name a named counter's document.
const scopedSpec = fc.record({
  form: fc.constantFrom('sequence', 'functions'),
  reversed: fc.boolean(),
  bigint: fc.boolean(),
  writeConcern: fc.constantFrom(undefined, { w: 1 }, { w: 'majority' }),
  cache: fc.constantFrom(undefined, 3, 10),
  coalesce: fc.boolean(),
});

function scopedNaming(spec, tenant) {
  const n = spec.bigint ? 7n : 7;
  const scope = spec.reversed ? { tenant, n } : { n, tenant };
  // Not `counters`: the locator tests above gave it unique indexes on `id` and `ref`.
  const options = {
    collection: 'scoped_counters',
    coalesce: spec.coalesce,
    upsert: true,
    ...(spec.cache ? { cache: spec.cache } : {}),
    ...(spec.writeConcern ? { writeConcern: spec.writeConcern } : {}),
  };
  if (spec.form === 'sequence') return seq.sequence(env.db, scope, options);
  const handle = seq.sequence(env.db, scope, options);
  return {
    next: () => seq.getNextSequenceValue(env.db, scope, options),
    nextBatch: (count) => seq.getNextSequenceBatch(env.db, scope, count, options),
    set: (value) => handle.set(value),
    reset: () => handle.reset(),
    release: () => handle.release(),
  };
}

test('property: a scoped name in every form, any options: one state, no value twice between resets', { timeout: 240_000 }, async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(scopedSpec, { minLength: 2, maxLength: 5 }), fc.array(operation, { minLength: 5, maxLength: 40 }), async (specs, ops) => {
      const tenant = `scoped-${run++}`;
      // A named counter's step is its document's: 1 here.
      const handles = specs.map((spec) => ({ spec: { ...spec, step: 1 }, seq: scopedNaming(spec, tenant) }));
      await handles[0].seq.set(0);
      let floor = 0;
      let firstAfterWrite = true;
      const given = new Set();
      const log = [`namings ${JSON.stringify(specs)}`];
      for (const op of ops) {
        const h = handles[(op.handle ?? 0) % handles.length];
        if (op.kind === 'next') {
          const values = op.count === 1 ? [await h.seq.next()] : await h.seq.nextBatch(op.count);
          log.push(`${h.spec.form} next(${op.count}) step ${h.spec.step} -> ${values}`);
          if (firstAfterWrite) assert.equal(values[0], floor + h.spec.step, `first value after a write:\n${log.join('\n')}`);
          firstAfterWrite = false;
          for (const v of values) {
            assert.ok(!given.has(v), `${v} handed out twice since the last write:\n${log.join('\n')}`);
            assert.ok(v > floor, `${v} not past ${floor}:\n${log.join('\n')}`);
            given.add(v);
          }
        } else if (op.kind === 'set' || op.kind === 'setWhere') {
          await h.seq.set(op.value);
          log.push(`${h.spec.form} set(${op.value})`);
          [floor, firstAfterWrite] = [op.value, true];
          given.clear();
        } else if (op.kind === 'reset') {
          await h.seq.reset();
          log.push(`${h.spec.form} reset (step ${h.spec.step})`);
          [floor, firstAfterWrite] = [1 - h.spec.step, true];
          given.clear();
        } else {
          await h.seq.release();
          log.push(`${h.spec.form} release`);
        }
      }
      for (const h of handles) await h.seq.release();
    }),
    { numRuns: 30 },
  );
});
