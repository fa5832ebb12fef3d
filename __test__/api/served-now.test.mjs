// A handle's next() through the package entry: a value its block cache holds is taken by
// the addon's synchronous Sequence.takeCached and returned in a promise made in
// JavaScript; everything else goes to the native next(). Against the native next() as the
// oracle: random programs of calls, issued in groups that run concurrently, give the same
// value to every call through either, with the same statistics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('served_now');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const ORIGINAL = Symbol.for('mongodb-sequence.original');
const nativeNext = seq.Sequence.prototype.next[ORIGINAL];

test('the entry serves next() in its own promise, falling back to the native next()', () => {
  assert.equal(typeof nativeNext, 'function', 'the wrapper keeps the native function');
  assert.notEqual(seq.Sequence.prototype.next, nativeNext);
  assert.equal(seq.Sequence.prototype.next.length, nativeNext.length);
});

// Calls issued together (concurrent), and management calls each alone, one group after
// the other. No batches, and no management call beside calls: a batch's values depend on
// where the blocks fetched so far end, and a give-back on whether a call came before it,
// both timing, so two runs of one program could rightly differ.
const calls = fc.array(fc.oneof({ weight: 3, arbitrary: fc.constant({ kind: 'next' }) }, { weight: 1, arbitrary: fc.constant({ kind: 'native' }) }), {
  minLength: 1,
  maxLength: 12,
});
const management = fc.oneof(
  fc.constant({ kind: 'release' }),
  fc.integer({ min: 0, max: 500 }).map((value) => ({ kind: 'set', value })),
);
const program = fc.array(fc.oneof({ weight: 4, arbitrary: calls }, { weight: 1, arbitrary: management.map((o) => [o]) }), { minLength: 1, maxLength: 12 });

/** Runs `groups` on handle `h`, its next() made by `next`; what each call gave. */
async function run(h, groups, next) {
  const results = [];
  for (const group of groups) {
    const calls = group.map((o) => {
      switch (o.kind) {
        case 'next':
          return next(h);
        case 'native':
          return nativeNext.call(h);
        case 'release':
          return h.release().then(() => 'released');
        default:
          return h.set(o.value).then(() => 'set');
      }
    });
    results.push(
      await Promise.all(
        calls.map((c) =>
          c.then(
            (v) => ['ok', v],
            (e) => ['error', e.code],
          ),
        ),
      ),
    );
  }
  return results;
}

test('random programs: the entry next() and the native next() give every call the same value', async () => {
  let round = 0;
  await fc.assert(
    fc.asyncProperty(program, fc.integer({ min: 1, max: 9 }), async (groups, cache) => {
      round += 1;
      const options = { cache, upsert: true };
      const served = seq.sequence(env.db, `fast-${round}`, options);
      const oracle = seq.sequence(env.db, `native-${round}`, options);
      const got = await run(served, groups, (h) => h.next());
      const expected = await run(oracle, groups, (h) => nativeNext.call(h));
      assert.deepEqual(got, expected);
      const a = served.stats();
      const b = oracle.stats();
      // Not cacheHits: whether a prefetch landed before a call is timing.
      for (const key of ['calls', 'values']) assert.equal(a[key], b[key], key);
      assert.deepEqual(a.errors, b.errors);
      if (!groups.flat().some((o) => o.kind === 'set')) {
        const values = got.flat().flatMap(([, v]) => (typeof v === 'number' ? [v] : []));
        assert.equal(new Set(values).size, values.length, 'no value twice');
      }
      await served.release();
      await oracle.release();
    }),
    { numRuns: 40, seed: 4401 },
  );
});

test('a value past 2^53 - 1 served from the cache rejects with SEQUENCE_OVERFLOW, not a throw', async () => {
  const h = seq.sequence(env.db, 'near-limit', { cache: 4, upsert: true });
  await h.set(Number.MAX_SAFE_INTEGER - 2);
  assert.equal(await h.next(), Number.MAX_SAFE_INTEGER - 1, 'the fill');
  assert.equal(await h.next(), Number.MAX_SAFE_INTEGER, 'from the cache');
  let promise;
  assert.doesNotThrow(() => {
    promise = h.next();
  });
  const error = await rejectsWithCode(assert, promise, 'SEQUENCE_OVERFLOW', /bigint: true/);
  assert.ok(error === undefined || error instanceof Error);
  const big = seq.sequence(env.db, 'near-limit', { cache: 4, bigint: true });
  assert.equal(typeof (await big.next()), 'bigint', 'values as BigInts go on');
});

test('a handle that cannot keep what the entry needs, and a this that is no handle, behave as natively', async () => {
  const frozen = Object.freeze(seq.sequence(env.db, 'frozen', { cache: 3, upsert: true }));
  const values = [];
  for (let i = 0; i < 7; i++) values.push(await frozen.next());
  assert.deepEqual(values, [1, 2, 3, 4, 5, 6, 7]);
  assert.equal(frozen.stats().cacheHits > 0, true, 'served from its cache');
  // What a call does, thrown at once or rejected: the native next() throws at once for
  // a `this` that is no handle (V8 checks the receiver before the addon runs).
  const outcome = async (next, self) => {
    let promise;
    try {
      promise = next.call(self);
    } catch (e) {
      return ['thrown', e.constructor.name, e.code, e.message];
    }
    return promise.then(
      (v) => ['ok', v],
      (e) => ['rejected', e.code, e.message],
    );
  };
  const made = seq.sequence(env.db, 'made-from', { cache: 3, upsert: true });
  await made.next();
  for (const self of [{}, null, undefined, 42, Object.create(seq.Sequence.prototype), Object.create(made)]) {
    const natively = await outcome(nativeNext, self);
    const wrapped = await outcome(seq.Sequence.prototype.next, self);
    if (natively[0] === 'thrown') {
      // The package's next() never throws: it rejects with a code of ours.
      assert.deepEqual(wrapped.slice(0, 2), ['rejected', 'INVALID_ARGUMENT'], String(self));
      assert.match(wrapped[2], /next\(\) must be called on a sequence handle/);
    } else {
      assert.deepEqual(wrapped, natively, String(self));
    }
  }
});

test('a method passed on without its handle ([1, 2].map(h.next)) rejects with INVALID_ARGUMENT, never throws', async () => {
  const h = seq.sequence(env.db, 'detached', { cache: 5, upsert: true });
  const methods = { next: [], nextBatch: [2], nextRange: [2], current: [], init: [], set: [5], raiseTo: [5], reset: [], drop: [], release: [], syncToMax: ['c', 'f'] };
  for (const [method, args] of Object.entries(methods)) {
    const detached = h[method];
    for (const self of [undefined, {}]) {
      let promise;
      assert.doesNotThrow(() => {
        promise = detached.apply(self, args);
      }, method);
      await rejectsWithCode(assert, promise, 'INVALID_ARGUMENT', new RegExp(`${method}\\(\\) must be called on a sequence handle`));
    }
  }
  const client = await seq.connect(env.uri);
  await rejectsWithCode(assert, client.close.call({}), 'INVALID_ARGUMENT', /close\(\) must be called on a SequenceClient/);
  await client.close();
  const settled = await Promise.allSettled([1, 2].map(h.next));
  assert.deepEqual(
    settled.map((r) => r.reason?.code),
    ['INVALID_ARGUMENT', 'INVALID_ARGUMENT'],
  );
  assert.equal(await h.next(), 1, 'the handle itself is untouched');
});

test('a handle closed with its client: next() rejects with CLIENT_CLOSED, as natively', async () => {
  const client = await seq.connect(env.uri);
  const h = seq.sequence(client.db(env.dbName), 'closing', { cache: 50, upsert: true });
  assert.equal(await h.next(), 1);
  assert.equal(await h.next(), 2, 'from the cache');
  await client.close();
  await rejectsWithCode(assert, h.next(), 'CLIENT_CLOSED');
  await rejectsWithCode(assert, nativeNext.call(h), 'CLIENT_CLOSED');
});

test('takeCached given anything but a taker throws INVALID_ARGUMENT, never crashes', async () => {
  const h = seq.sequence(env.db, 'taker-check', { cache: 5, upsert: true });
  assert.equal(await h.next(), 1);
  const taker = h.taker();
  assert.equal(seq.Sequence.takeCached(taker), 2, 'a taker is served');
  const notTakers = { object: {}, null: null, undefined, number: 42, string: 'taker', handle: h, 'array of a taker': [taker] };
  for (const [what, value] of Object.entries(notTakers)) {
    assert.throws(
      () => seq.Sequence.takeCached(value),
      (e) => e instanceof Error && e.code === 'INVALID_ARGUMENT',
      what,
    );
  }
  assert.equal(await h.next(), 3, 'nothing was taken by the refused calls');
});
