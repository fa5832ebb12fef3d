// Memory per distinct counter name: the per-counter objects (state, queue of merged
// calls, cached blocks) of counters no longer in use are released, so per-tenant or
// per-day names do not grow memory. counterStateCount() counts them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
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
  assert.deepEqual(values, values.map((_, i) => i + 1), 'the held counter kept its block: no gap');
});
