// Every value a process reserves is accounted for in `stats()`: handed out (`values`),
// never handed out by cause (`discarded.*`: the rest of a block too short for a batch,
// values a call did not take — past 2^53 - 1 as a number —, close), or given back. So the
// counter's advance equals `values` plus every `discarded` figure. (Management writes
// move the counter themselves and are left out here.)
// Its own file: the process-wide figures must not move with other tests' handles.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Long } from 'mongodb';
import { setup, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('stats_accounting');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const discardedTotal = (s) => Object.values(s.discarded).reduce((a, n) => a + n, 0);

async function stored(name) {
  const doc = await env.db.collection('counters').findOne({ _id: name });
  return BigInt(doc.sequence_value.toString());
}

test('the counter advances by the values handed out plus those discarded, whatever the calls', { timeout: 240_000 }, async () => {
  let round = 0;
  let short = 0;
  let unclaimed = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        mode: fc.constantFrom('coalesce', 'cache', 'cache'),
        cache: fc.integer({ min: 2, max: 8 }),
        // Near 2^53 - 1: calls past it reserve values they cannot take as numbers.
        nearLimit: fc.boolean(),
        below: fc.integer({ min: 0, max: 30 }),
        calls: fc.array(fc.record({ kind: fc.constantFrom('next', 'batch', 'range'), count: fc.integer({ min: 1, max: 12 }), together: fc.boolean() }), {
          minLength: 1,
          maxLength: 30,
        }),
      }),
      async ({ mode, cache, nearLimit, below, calls }) => {
        const name = `acct-${round++}`;
        const start = nearLimit ? Number.MAX_SAFE_INTEGER - below : 0;
        await env.db.collection('counters').insertOne({ _id: name, sequence_value: Long.fromNumber(start) });
        const handle = seq.sequence(env.db, name, mode === 'cache' ? { cache } : { coalesce: true });
        const before = seq.stats();
        let pending = [];
        for (const call of calls) {
          const made = (async () => {
            if (call.kind === 'next') return handle.next();
            if (call.kind === 'batch') return handle.nextBatch(call.count);
            return handle.nextRange(call.count);
          })().catch((e) => assert.equal(e.code, 'SEQUENCE_OVERFLOW', e.message));
          pending.push(made);
          if (!call.together) {
            await Promise.all(pending);
            pending = [];
          }
        }
        await Promise.all(pending);
        await handle.release();
        const after = seq.stats();
        const accounted = after.values - before.values + discardedTotal(after) - discardedTotal(before);
        const advanced = (await stored(name)) - BigInt(start);
        short += after.discarded.shortBlock - before.discarded.shortBlock;
        unclaimed += after.discarded.unclaimed - before.discarded.unclaimed;
        assert.equal(BigInt(accounted), advanced, `values ${after.values - before.values}, discarded ${JSON.stringify(after.discarded)} vs ${JSON.stringify(before.discarded)}`);
      },
    ),
    { numRuns: 40, seed: 29 },
  );
  assert.ok(short > 0, 'some batches skipped the rest of a block');
  assert.ok(unclaimed > 0, 'some values were reserved past 2^53 - 1 and not taken');
});
