// Management at the edges (issue 17): syncToMax over dotted paths and arrays (the
// function, the handle and the CLI), raiseTo/syncToMax on descending counters, init and
// reset of a counterAt handle with a step, a cache near the int64 end, huge steps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setup, seq, rejectsWithCode, external, serverKind, needsTransactions } from '../helpers.mjs';

const CLI = fileURLToPath(new URL('../../bin/mongodb-sequence.js', import.meta.url));

let env;
before(async () => {
  env = await setup('edges');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

/** Runs the CLI with the test connection; resolves with { code, stdout, stderr }. */
function cli(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args, '--uri', env.uri, '--db', env.dbName], {
      env: { ...process.env, MONGODB_URI: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI did not finish: ${args.join(' ')}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('syncToMax follows a dotted path: the function, the handle and the CLI', async () => {
  await env.db.collection('imp').insertMany([{ meta: { no: 41 } }, { meta: { no: 7 } }, { meta: {} }, { other: 99 }]);
  assert.equal(await seq.syncToMax(env.db, 'imp', 'meta.no', 'impNo'), 41);
  assert.equal(await seq.getNextSequenceValue(env.db, 'impNo'), 42);
  const h = seq.sequence(env.db, 'impHandle');
  await env.db.collection('deep').insertMany([{ a: { b: { c: 12 } } }, { a: { b: { c: 30.5 } } }]);
  assert.equal(await h.syncToMax('deep', 'a.b.c'), 31, 'doubles rounded up');
  assert.equal(await h.next(), 32);
  const run = await cli(['sync', 'impCli', '--from', 'imp.meta.no']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(await seq.getNextSequenceValue(env.db, 'impCli'), 42);
});

test('syncToMax through arrays takes the largest element the path reaches', async () => {
  await env.db.collection('arr').insertMany([
    { a: [{ b: 5 }, { b: [90, 'x', [5000]] }, 3] },
    { a: { b: 41 } },
    { a: [[{ b: 1000 }]] }, // arrays in arrays are not looked into, as in queries
    { a: { b: 1e300 } }, // out of range: ignored
    { a: [{ b: 'text' }] },
  ]);
  assert.equal(await seq.syncToMax(env.db, 'arr', 'a.b', 'arrNo'), 90);
  await env.db.collection('tags').insertMany([{ tags: [3, 200, 'z'] }, { tags: 150 }, { tags: [] }]);
  assert.equal(await seq.syncToMax(env.db, 'tags', 'tags', 'tagNo'), 200);
  // A sort orders an array by one element of its choosing ('zzz' sorts above numbers,
  // null below): with arrays on the path every document is looked at instead.
  await env.db.collection('mixed').insertMany([{ m: [1, 'zzz'] }, { m: 50 }, { m: [70, null] }, { m: 60 }]);
  assert.equal(await seq.syncToMax(env.db, 'mixed', 'm', 'mixedNo'), 70);
  const mixedDown = seq.counterAt(env.db, { id: 'mixedDown' }, { collection: 'msc_mixed', field: 'seq', step: -1 });
  await mixedDown.init({ start: 100 });
  assert.equal(await mixedDown.syncToMax('mixed', 'm'), 1);
  await env.db.collection('pos').insertOne({ a: [{ b: 4 }, { b: 8 }] });
  assert.equal(await seq.syncToMax(env.db, 'pos', 'a.0.b', 'posNo'), 4, 'a position names one element');
  // What the query sees is what counts: the same documents without arrays give the same.
  assert.equal(await seq.syncToMax(env.db, 'arr', 'a.b', 'arrNo'), 90, 'never moved back');
  // Nothing usable on the path: an existing counter stays as it is.
  const empty = seq.sequence(env.db, 'emptySync', { upsert: true });
  await empty.set(500);
  assert.equal(await empty.syncToMax('arr', 'a.zzz'), 500);
  assert.equal(await empty.next(), 501);
});

test('descending counters are lowered to the smallest value used, never moved back', async () => {
  // mongoose-sequence's { start_seq: 100, inc_amount: -1 } counter.
  const loc = { id: 'down', reference_value: null };
  const h = seq.counterAt(env.db, loc, { collection: 'msc', field: 'seq', upsert: true, start: 100, step: -1 });
  assert.deepEqual([await h.next(), await h.next(), await h.next()], [100, 99, 98]);
  await env.db.collection('down_docs').insertMany([{ no: 100 }, { no: 99 }, { no: 98 }]);
  assert.equal(await h.syncToMax('down_docs', 'no'), 98);
  assert.equal(await h.raiseTo(100), 98, 'never moved back up');
  assert.equal(await h.next(), 97);
  await env.db.collection('down_docs').insertOne({ no: 50.5 });
  assert.equal(await h.syncToMax('down_docs', 'no'), 50, 'doubles rounded down');
  assert.equal(await h.next(), 49);
  assert.equal(await h.raiseTo(10), 10);
  assert.equal(await h.next(), 9);

  const configured = seq.sequence(env.db, 'downConfigured');
  await configured.init({ step: -1, minValue: -100, maxValue: -1 });
  assert.deepEqual(await configured.nextBatch(3), [-1, -2, -3]);
  assert.equal(await configured.raiseTo(-1), -3, 'never moved back');
  assert.equal(await configured.raiseTo(-10), -10);
  await rejectsWithCode(assert, configured.raiseTo(-101), 'INVALID_ARGUMENT', /minValue -100/);
  await env.db.collection('neg_docs').insertMany([{ n: -20 }, { n: -40 }]);
  assert.equal(await configured.syncToMax('neg_docs', 'n'), -40);
  assert.equal(await configured.next(), -41);
});

test('counterAt with a step: init({ start }) and reset() make start the next value', async () => {
  for (const step of [5, -5]) {
    const h = seq.counterAt(env.db, { id: `stepped${step}`, reference_value: null }, { collection: 'msc', field: 'seq', step });
    assert.equal(await h.init({ start: 10 }), true);
    assert.equal(await h.current(), 10 - step);
    assert.equal(await h.next(), 10);
    assert.equal(await h.next(), 10 + step);
    assert.equal(await h.reset(), 10);
    assert.equal(await h.next(), 10);
  }
});

test('a cache near the int64 end hands out every value left, then SEQUENCE_OVERFLOW', async () => {
  const end = 2n ** 63n - 1n;
  const setter = seq.sequence(env.db, 'nearEnd', { upsert: true, bigint: true });
  await setter.set(end - 11n);
  const cached = seq.sequence(env.db, 'nearEnd', { cache: 100, bigint: true });
  const values = [];
  for (let i = 0; i < 11; i++) values.push(await cached.next());
  const expected = Array.from({ length: 11 }, (_, i) => end - 10n + BigInt(i));
  assert.deepEqual(values.slice(0, 11), expected);
  await rejectsWithCode(assert, cached.next(), 'SEQUENCE_OVERFLOW');
  // Coalesced calls near the end: those that fit are served, the others fail alone.
  await setter.set(end - 3n);
  const coalesced = seq.sequence(env.db, 'nearEnd', { bigint: true });
  const outcomes = await Promise.allSettled([coalesced.nextBatch(5), coalesced.next(), coalesced.nextBatch(2)]);
  assert.equal(outcomes[0].status, 'rejected');
  assert.equal(outcomes[0].reason.code, 'SEQUENCE_OVERFLOW');
  assert.deepEqual(outcomes[1].status === 'fulfilled' && outcomes[2].status === 'fulfilled', true);
  const got = [outcomes[1].value, ...outcomes[2].value].sort((a, b) => (a < b ? -1 : 1));
  assert.deepEqual(got, [end - 2n, end - 1n, end]);
});

test('huge steps: batches and concurrent calls are served, not CONTENTION', async () => {
  const step = 2n ** 62n;
  const h = seq.sequence(env.db, 'hugeSteps', { bigint: true });
  await h.init({ step, minValue: -step, maxValue: step });
  assert.deepEqual(await h.nextBatch(2), [-step, 0n]);
  await h.reset();
  const both = await Promise.all([h.next(), h.next(), h.next()]);
  assert.deepEqual(
    both.sort((a, b) => (a < b ? -1 : 1)),
    [-step, 0n, step],
  );
  await rejectsWithCode(assert, h.next(), 'SEQUENCE_EXHAUSTED');
  await h.reset();
  assert.deepEqual(await h.nextBatch(3), [-step, 0n, step]);
});

test('the plugin syncs a descending counter to the smallest number used, per reference too', { timeout: 120_000 }, async () => {
  const { default: mongoose } = await import('mongoose');
  const { createRequire } = await import('node:module');
  const AutoIncrementFactory = createRequire(import.meta.url)('../../mongoose.js');
  const connection = await mongoose.createConnection(env.uri, { dbName: env.dbName }).asPromise();
  try {
    const AutoIncrement = AutoIncrementFactory(connection);
    const plain = new mongoose.Schema({ no: Number });
    plain.plugin(AutoIncrement, { id: 'edges_down', inc_field: 'no', start_seq: 100, inc_amount: -1, collection_name: 'edges_plugin' });
    const Down = connection.model('EdgesDown', plain);
    await Down.init(); // SecantusDB can livelock creating a collection during inserts
    const saved = [];
    for (let i = 0; i < 3; i++) saved.push((await new Down({}).save()).no);
    assert.deepEqual(saved, [100, 99, 98]);
    assert.deepEqual(await AutoIncrementFactory.syncCounterToMax(Down), [{ reference_value: null, value: 98 }]);
    assert.equal((await new Down({}).save()).no, 97, 'not 99 again');

    // A nested inc_field: the imported maximum is read along the path.
    const nested = new mongoose.Schema({ meta: { no: Number } });
    nested.plugin(AutoIncrement, { id: 'edges_nested', inc_field: 'meta.no', collection_name: 'edges_plugin' });
    const Nested = connection.model('EdgesNested', nested);
    await Nested.init(); // SecantusDB can livelock creating a collection during inserts
    await Nested.collection.insertMany([{ meta: { no: 41 } }, { meta: { no: 3 } }]);
    assert.deepEqual(await AutoIncrementFactory.syncCounterToMax(Nested), [{ reference_value: null, value: 41 }]);
    assert.equal((await new Nested({}).save()).meta.no, 42);

    const scoped = new mongoose.Schema({ shop: String, no: Number });
    scoped.plugin(AutoIncrement, { id: 'edges_down_shop', inc_field: 'no', reference_fields: ['shop'], start_seq: 100, inc_amount: -1, collection_name: 'edges_plugin' });
    const Shop = connection.model('EdgesDownShop', scoped);
    await Shop.init(); // SecantusDB can livelock creating a collection during inserts
    for (let i = 0; i < 3; i++) await new Shop({ shop: 'a' }).save();
    await Shop.collection.insertOne({ shop: 'a', no: 50 });
    const moved = await AutoIncrementFactory.syncCounterToMax(Shop);
    assert.deepEqual(moved.map((r) => [r.reference_value.shop, r.value]), [['a', 50]]);
    assert.equal((await new Shop({ shop: 'a' }).save()).no, 49);
  } finally {
    await connection.close();
  }
});

test('gapless near the int64 end rejects SEQUENCE_OVERFLOW and inserts nothing', async (t) => {
  const skip = external ? await needsTransactions() : serverKind !== 'secantus' && 'gapless needs a replica set: runs in the secantus pass';
  if (skip) {
    t.skip(skip);
    return;
  }
  const end = 2n ** 63n - 1n;
  await seq.sequence(env.db, 'gaplessEnd', { upsert: true, bigint: true }).set(end - 1n);
  const opts = { gapless: true, field: 'no', sequence: 'gaplessEnd', bigint: true };
  await rejectsWithCode(assert, seq.insertMany(env.db, 'gapless_end', [{}, {}], opts), 'SEQUENCE_OVERFLOW', /64-bit/);
  assert.equal(await env.db.collection('gapless_end').countDocuments(), 0);
  await seq.insertMany(env.db, 'gapless_end', [{}], opts);
  assert.equal((await env.db.collection('gapless_end').findOne({}, { useBigInt64: true })).no, end);
});

test('gapless past 2^53 without bigint rejects SEQUENCE_OVERFLOW before it commits', async (t) => {
  const skip = external ? await needsTransactions() : serverKind !== 'secantus' && 'gapless needs a replica set: runs in the secantus pass';
  if (skip) {
    t.skip(skip);
    return;
  }
  const safe = Number.MAX_SAFE_INTEGER;
  await seq.sequence(env.db, 'gaplessSafe', { upsert: true }).set(safe - 1);
  const opts = { gapless: true, field: 'no', sequence: 'gaplessSafe' };
  // The second number would be 2^53: as a JavaScript number the call could not tell it.
  await rejectsWithCode(assert, seq.insertMany(env.db, 'gapless_safe', [{}, {}], opts), 'SEQUENCE_OVERFLOW', /bigint/);
  assert.equal(await env.db.collection('gapless_safe').countDocuments(), 0, 'nothing inserted');
  assert.equal(await seq.sequence(env.db, 'gaplessSafe').current(), safe - 1, 'no number spent');
  const doc = {};
  await seq.insertOne(env.db, 'gapless_safe', doc, opts);
  assert.equal(doc.no, safe, 'the last safe number still fits');
});
