// The behaviour the docs' prose describes with numbers (docs/caching-and-gaps.md,
// docs/management-and-cli.md, docs/errors.md, the README's API table), so that a change of
// behaviour shows up here and the text is changed with it. Closing with the Node client
// is covered by client-release.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('claims');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stored = async (name) => (await env.db.collection('counters').findOne({ _id: name }))?.sequence_value;
/** The stored value once it is `expected`, else what it is after 10 s. */
async function storedBecomes(name, expected) {
  const until = Date.now() + 10_000;
  let value = await stored(name);
  while (value !== expected && Date.now() < until) {
    await sleep(20);
    value = await stored(name);
  }
  return value;
}

test('cache: a batch larger than the block bypasses it and takes values beyond every block', async () => {
  const s = seq.sequence(env.db, 'claims_bypass', { cache: 10, upsert: true });
  const a = await s.next();
  const b = await s.next();
  const batch = await s.nextBatch(11);
  const c = await s.next();
  // The second call started no fetch (9 of a fetch of 10 left): the batch takes 12..22.
  assert.deepEqual([a, b, batch, c], [1, 2, Array.from({ length: 11 }, (_, i) => 12 + i), 3]);
});

test('cache: when the next block is fetched, one call at a time', async () => {
  const s = seq.sequence(env.db, 'claims_apart', { cache: 10, upsert: true });
  // First call: its value and a block of 10 (a first fill does not double the next
  // fetch). Then a fetch only when fewer than 5 are left: after 7.
  const expected = [
    [1, 11],
    [2, 11],
    [3, 11],
    [4, 11],
    [5, 11],
    [6, 11],
    [7, 21],
  ];
  const seen = [];
  for (const [, after] of expected) {
    const value = await s.next();
    // A background fetch the call started has normally landed by then; one that is
    // expected is waited for (on a loaded machine one took 138 ms).
    await sleep(150);
    seen.push([value, await storedBecomes('claims_apart', after)]);
  }
  assert.deepEqual(seen, expected);

  const close = seq.sequence(env.db, 'claims_close', { cache: 10, upsert: true });
  const first = await close.next();
  const second = await close.next();
  await sleep(200);
  assert.deepEqual([first, second, await stored('claims_close')], [1, 2, 11]);
});

test('a batch follows the counter direction: step -2 gives -1, -3, -5', async () => {
  const s = seq.sequence(env.db, 'claims_down');
  await s.init({ step: -2 });
  assert.deepEqual(await s.nextBatch(3), [-1, -3, -5]);
  assert.deepEqual(await seq.getNextSequenceBatch(env.db, 'claims_down', 2), [-7, -9]);
});

test("reset: the start init stored, else the resetting handle's start option, else 1", async () => {
  const made = seq.sequence(env.db, 'claims_reset', { upsert: true, start: 1000 });
  assert.equal(await made.next(), 1000);
  await made.next();
  assert.equal(await made.reset(), 1000, 'the handle with start: 1000');
  assert.equal(await made.next(), 1000);
  assert.equal(await seq.sequence(env.db, 'claims_reset').reset(), 1, 'no start stored: 1');
  assert.equal(await seq.getNextSequenceValue(env.db, 'claims_reset'), 1);

  const init = seq.sequence(env.db, 'claims_init');
  await init.init({ start: 1000 });
  await init.next();
  await init.next();
  assert.equal(await seq.sequence(env.db, 'claims_init').reset(), 1000, 'init stored it');
  assert.equal(await seq.getNextSequenceValue(env.db, 'claims_init'), 1000);
});

test('the calls that throw synchronously, counterAt(db, null) among them', () => {
  const throwsNow = (f, what) => {
    let error;
    let returned;
    try {
      returned = f();
    } catch (e) {
      error = e;
    }
    if (returned && typeof returned.catch === 'function') returned.catch(() => {});
    assert.ok(error instanceof Error, `${what} throws synchronously`);
    assert.equal(error.code, 'INVALID_ARGUMENT', what);
  };
  throwsNow(() => seq.counterAt(env.db, null), 'counterAt(db, null)');
  throwsNow(() => seq.counterAt(env.db, { $ne: 1 }), 'counterAt(db, { $ne: 1 })');
  throwsNow(() => seq.sequence(env.db, null), 'sequence(db, null)');
  throwsNow(() => seq.formatSequence(1, 5), 'formatSequence(1, 5)');
});
