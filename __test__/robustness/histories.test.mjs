// Randomized histories: 1-3 processes x up to 64 callers draw from one counter of random
// configuration (plain, step +/-, limits, cycle) in random modes (coalesced, direct,
// cached), with management writes (set, reset, drop + init) between phases, made in one
// of the drawing processes. Every value and rejection is recorded and checked against
// the invariants the README promises. Histories come from fast-check with a fixed seed
// list, printed, so a failure can be replayed (HISTORY_SEEDS=1,2,3).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { setup, seq } from '../helpers.mjs';
import { lineWorker } from '../fixtures/line-worker.mjs';

const SEEDS = (process.env.HISTORY_SEEDS ?? '11,23,37,41,53,67').split(',').map(Number);
const WORKER = fileURLToPath(new URL('../fixtures/history-worker.cjs', import.meta.url));

let env;
before(async () => {
  env = await setup('history');
});
after(async () => {
  await env?.close();
});

const mode = fc.oneof(
  fc.constant({}),
  fc.constant({ coalesce: false }),
  fc.integer({ min: 1, max: 40 }).map((cache) => ({ cache })),
);
const counts = fc.array(fc.oneof({ weight: 5, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 12 })), {
  minLength: 10,
  maxLength: 120,
});
const history = fc.record({
  config: fc.option(
    fc.record({
      step: fc.constantFrom(1, 2, 3, -1, -2),
      min: fc.integer({ min: -50, max: 50 }),
      width: fc.integer({ min: 15, max: 500 }),
      cycle: fc.boolean(),
    }),
  ),
  processes: fc.array(fc.record({ mode, callers: fc.integer({ min: 1, max: 64 }) }), { minLength: 1, maxLength: 3 }),
  phases: fc.array(
    fc.record({
      counts: fc.array(counts, { minLength: 3, maxLength: 3 }),
      admin: fc.constantFrom('set', 'reset', 'dropinit', 'none'),
      who: fc.nat(2),
      jump: fc.integer({ min: 0, max: 40 }),
    }),
    { minLength: 2, maxLength: 4 },
  ),
});

/** Step, limits and start of a history's counter (plain: step 1, no limits, start 1). */
function shapeOf(config) {
  if (!config) return { step: 1, min: -Infinity, max: Infinity, cycle: false, start: 1, plain: true };
  const { step, min, width, cycle } = config;
  const max = min + width;
  return { step, min, max, cycle, start: step > 0 ? min : max, plain: false };
}

/** The first value `next()` gives after the counter holds `stored`. */
function firstAfter(shape, stored) {
  const v = stored + shape.step;
  if (v >= shape.min && v <= shape.max) return { value: v };
  return shape.cycle ? { value: shape.start } : { error: 'SEQUENCE_EXHAUSTED' };
}

/** Values left before the limit after `stored`. */
function room(shape, stored) {
  if (shape.plain) return Infinity;
  const limit = shape.step > 0 ? shape.max : shape.min;
  return Math.floor((limit - stored) / shape.step);
}

async function runHistory(seed) {
  const [h] = fc.sample(history, { seed, numRuns: 1 });
  const shape = shapeOf(h.config);
  const anyCache = h.processes.some((p) => p.mode.cache);
  const name = `history_${seed}`;
  const init = h.config ? { step: shape.step, minValue: shape.min, maxValue: shape.max, cycle: shape.cycle } : { start: 1 };
  const probe = seq.sequence(env.db, name);
  assert.equal(await probe.init(init), true);
  const workers = h.processes.map(() => lineWorker(WORKER));
  const summary = { seed, config: h.config, processes: h.processes, values: 0, rejected: 0 };
  try {
    await Promise.all(workers.map((w, i) => w.ask({ cmd: 'open', uri: env.uri, db: env.dbName, name, seed: seed * 31 + i, options: h.processes[i].mode })));
    const everSeen = new Set();
    for (const [p, phase] of h.phases.entries()) {
      const before = await probe.current();
      const answers = await Promise.all(workers.map((w, i) => w.ask({ cmd: 'draw', counts: phase.counts[i], callers: h.processes[i].callers })));
      const stored = await probe.current();
      const where = `seed ${seed}, phase ${p}`;
      const phaseSeen = new Set();
      for (const [i, answer] of answers.entries()) {
        assert.ok(!answer.crashed, `${where}: worker crashed: ${answer.crashed}`);
        const { cache } = h.processes[i].mode;
        const ordered = [];
        for (const r of answer.records) {
          if (r.error) {
            summary.rejected++;
            if (r.error === 'SEQUENCE_EXHAUSTED') {
              assert.ok(!shape.plain && !shape.cycle, `${where}: exhausted on ${JSON.stringify(h.config)}`);
              assert.ok(room(shape, stored) < r.count, `${where}: exhausted with ${room(shape, stored)} left for ${r.count}`);
            } else if (r.error === 'INVALID_ARGUMENT') {
              const cycleSize = Math.floor((shape.max - shape.min) / Math.abs(shape.step)) + 1;
              assert.ok(shape.cycle && r.count > cycleSize, `${where}: ${r.count} refused`);
            } else {
              assert.fail(`${where}: unexpected rejection ${r.error}`);
            }
            continue;
          }
          const values = r.count === 1 ? [r.value] : r.value;
          assert.equal(values.length, r.count, `${where}: a call got the wrong number of values`);
          for (const [k, v] of values.entries()) {
            assert.ok(Number.isInteger(v), `${where}: ${v}`);
            if (!shape.plain) {
              assert.ok(v >= shape.min && v <= shape.max, `${where}: ${v} outside the limits`);
              assert.ok((v - shape.start) % shape.step === 0, `${where}: ${v} off the step lattice`);
            }
            if (k > 0) assert.equal(v - values[k - 1], shape.step, `${where}: a batch is not contiguous`);
            if (!shape.cycle) {
              assert.ok(!phaseSeen.has(v), `${where}: ${v} handed out twice`);
              phaseSeen.add(v);
              if (anyCache) {
                assert.ok(!everSeen.has(v), `${where}: ${v} handed out again`);
                everSeen.add(v);
              }
            }
            summary.values++;
          }
          if (!cache || r.count <= cache) ordered.push(r);
        }
        // Call order: coalesced and cached calls of one process get ascending values in
        // the order JavaScript made them (direct calls race each other by design).
        if (!shape.cycle && h.processes[i].mode.coalesce !== false) {
          ordered.sort((a, b) => a.index - b.index);
          const firsts = ordered.map((r) => (r.count === 1 ? r.value : r.value[0]));
          for (let k = 1; k < firsts.length; k++) {
            assert.ok(
              (firsts[k] - firsts[k - 1]) * shape.step > 0,
              `${where}: process ${i} ${JSON.stringify(h.processes[i])} ${JSON.stringify(h.config)} calls out of order: ${JSON.stringify(ordered.slice(Math.max(0, k - 4), k + 2))} call ${ordered[k - 1].index} got ${firsts[k - 1]}, call ${ordered[k].index} got ${firsts[k]}`,
            );
          }
        }
      }
      // Without caches nothing is skipped: the phase's values are exactly the run from
      // the value before it to the value after it.
      if (!anyCache && !shape.cycle) {
        const expected = [];
        for (let v = before + shape.step; shape.step > 0 ? v <= stored : v >= stored; v += shape.step) expected.push(v);
        const got = [...phaseSeen].sort((a, b) => (a - b) * shape.step);
        assert.deepEqual(got, expected, `${where}: values are not gapless`);
      }
      // A management write in one of the drawing processes; its next call at once.
      const worker = workers[phase.who % workers.length];
      let admin = phase.admin;
      if (admin === 'none') continue;
      let value = stored + shape.step * (1 + phase.jump);
      if (!anyCache && admin === 'set') value = stored - shape.step * phase.jump; // backwards too
      if (!shape.plain) value = Math.min(shape.max, Math.max(shape.min, value));
      if (anyCache && admin !== 'set') admin = 'set'; // others' caches would repeat values
      const { write, after: next } = await worker.ask({ cmd: 'admin', op: admin, value, init });
      assert.ok(!write.error, `${where}: ${admin} failed: ${write.error}`);
      const expected = admin === 'set' ? firstAfter(shape, value) : firstAfter(shape, shape.start - shape.step);
      assert.deepEqual(next, expected, `${where}: first value after ${admin}`);
      if (anyCache && next.value !== undefined) everSeen.add(next.value);
    }
  } finally {
    await Promise.all(workers.map((w) => w.ask({ cmd: 'exit' })));
    await Promise.all(workers.map((w) => w.exited));
  }
  return summary;
}

for (const seed of SEEDS) {
  test(`randomized history, seed ${seed}`, { timeout: 120_000 }, async () => {
    const s = await runHistory(seed);
    const modes = s.processes.map((p) => `${JSON.stringify(p.mode)}x${p.callers}`).join(' ');
    console.log(`seed ${seed}: ${JSON.stringify(s.config)} ${modes}: ${s.values} values, ${s.rejected} rejections`);
  });
}
