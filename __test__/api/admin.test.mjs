// Managing counters: init, current, set, reset, drop, listSequences, syncToMax, raiseTo;
// then the edges (issue 17): syncToMax over dotted paths and arrays (the function, the
// handle and the CLI), raiseTo/syncToMax on descending counters, init and reset of a
// counterAt handle with a step, a cache near the int64 end, huge steps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setup, seq, rejectsWithCode, external, serverKind, needsTransactions } from '../helpers.mjs';

const CLI = fileURLToPath(new URL('../../bin/mongodb-sequence.js', import.meta.url));

let env;
let counters;
before(async () => {
  env = await setup('admin');
  counters = env.db.collection('counters');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test('init creates once and never overwrites; current does not advance', async () => {
  const s = seq.sequence(env.db, 'invoice');
  assert.equal(await s.init({ start: 1000 }), true);
  assert.equal(await s.init({ start: 5 }), false, 'an existing counter is left alone');
  assert.equal(await s.current(), 999);
  assert.equal(await s.next(), 1000);
  assert.equal(await s.next(), 1001);
  assert.equal(await s.current(), 1001);
  assert.equal(await s.current(), 1001);
  assert.deepEqual(await counters.findOne({ _id: 'invoice' }), {
    _id: 'invoice',
    sequence_value: 1001,
    sequence_value_start: 1000,
  });
});

test('set makes the next value value + 1; reset goes back to the start', async () => {
  const s = seq.sequence(env.db, 'invoice');
  await s.set(5000);
  assert.equal(await s.next(), 5001);
  assert.equal(await s.reset(), 1000, 'the start given to init');
  assert.equal(await s.next(), 1000);
  const plain = seq.sequence(env.db, 'plain', { start: 10 });
  await rejectsWithCode(assert, plain.set(1), 'SEQUENCE_NOT_FOUND');
  await rejectsWithCode(assert, plain.reset(), 'SEQUENCE_NOT_FOUND');
  await rejectsWithCode(assert, plain.current(), 'SEQUENCE_NOT_FOUND');
  const upserting = seq.sequence(env.db, 'plain', { start: 10, upsert: true });
  await upserting.set(3);
  assert.equal(await upserting.next(), 4);
  assert.equal(await upserting.reset(), 10, 'no init: the handle start');
  assert.equal(await upserting.next(), 10);
});

test('drop deletes; later calls find no counter', async () => {
  const s = seq.sequence(env.db, 'temp', { upsert: true });
  assert.equal(await s.next(), 1);
  assert.equal(await s.drop(), true);
  assert.equal(await s.drop(), false);
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'temp'), 'SEQUENCE_NOT_FOUND');
});

test('counters beside others in one document: init fills its own fields in, drop takes only them out', async () => {
  const shop = counters;
  const on = (field, options = {}) => seq.sequence(env.db, 'shop', { field, upsert: true, ...options });
  const [invoices, orders] = [on('invoices'), on('orders')];
  assert.deepEqual(await invoices.nextBatch(3), [1, 2, 3]);
  assert.equal(await orders.next(), 1);
  // A counter created in the document of the others, configured.
  const credits = on('credits', { upsert: false });
  assert.equal(await credits.init({ start: 1000, step: 10 }), true, 'created beside the others');
  assert.equal(await credits.init({ start: 5 }), false, 'then it exists');
  assert.deepEqual(await credits.nextBatch(2), [1000, 1010]);
  // A cached counter created in it by its first fetch keeps its marks beside the others'.
  const cached = on('cached', { cache: 5 });
  assert.equal(await cached.next(), 1);
  assert.equal((await cached.release()).abandoned, 0, 'its tail given back');
  assert.equal(await orders.drop(), true);
  assert.equal(await orders.drop(), false, 'gone');
  const doc = await shop.findOne({ _id: 'shop' });
  assert.equal(doc.orders, undefined);
  assert.equal(doc.invoices, 3, 'the other counters stay');
  assert.equal(doc.credits_step, 10);
  assert.equal(await invoices.next(), 4, 'nothing handed out again');
  assert.equal(await credits.drop(), true);
  assert.deepEqual(
    Object.keys(await shop.findOne({ _id: 'shop' })).filter((k) => k.startsWith('credits')),
    [],
    'its configuration goes with it',
  );
  assert.equal(await invoices.drop(), true);
  assert.equal(await cached.drop(), true, 'the last one');
  assert.equal(await shop.findOne({ _id: 'shop' }), null, 'the document held nothing else: deleted');
  // A neighbour named like one of the fields init stores is never overwritten by it.
  await shop.insertOne({ _id: 'named-like-a-start', inv_start: 41 });
  assert.equal(await seq.sequence(env.db, 'named-like-a-start', { field: 'inv' }).init({ start: 1 }), false, 'not created over it');
  assert.deepEqual(await shop.findOne({ _id: 'named-like-a-start' }), { _id: 'named-like-a-start', inv_start: 41 });
  // Something another program keeps in a counter's document is never deleted with it.
  await shop.insertOne({ _id: 'described', sequence_value: 7, description: 'Order numbers' });
  assert.equal(await seq.sequence(env.db, 'described').drop(), true);
  assert.deepEqual(await shop.findOne({ _id: 'described' }), { _id: 'described', description: 'Order numbers' });
  // A located counter's document (mongoose's version key too) is deleted with it.
  const located = seq.counterAt(env.db, { model: 'M', field: 'n' }, { collection: 'located_drop', field: 'count', upsert: true });
  assert.equal(await located.next(), 1);
  await env.db.collection('located_drop').updateOne({ model: 'M' }, { $set: { __v: 0 } });
  assert.equal(await located.drop(), true);
  assert.equal(await env.db.collection('located_drop').countDocuments(), 0);
});

test('every management write discards the cached block of the counter it writes', async () => {
  // A cached handle holds 2..10 after its first value; each write, made through another
  // handle of the same counter (and the syncToMax function), must be seen by its next call.
  const cached = seq.sequence(env.db, 'fenced', { cache: 10 });
  const other = seq.sequence(env.db, 'fenced', { upsert: true });
  const refill = async () => {
    await other.set(0);
    assert.equal(await cached.next(), 1, 'a fresh block');
  };
  await refill();
  // Without a fence the block is served on: a write the package does not make.
  await counters.updateOne({ _id: 'fenced' }, { $set: { sequence_value: 100 } });
  assert.equal(await cached.next(), 2, 'a write around the package leaves the block');
  await refill();
  await other.set(100);
  assert.equal(await cached.next(), 101, 'set');
  await refill();
  await other.raiseTo(50);
  assert.equal(await cached.next(), 51, 'raiseTo');
  await refill();
  await env.db.collection('fenced_source').insertOne({ n: 70 });
  await other.syncToMax('fenced_source', 'n');
  assert.equal(await cached.next(), 71, "a handle's syncToMax");
  await refill();
  await seq.syncToMax(env.db, 'fenced_source', 'n', 'fenced');
  assert.equal(await cached.next(), 71, 'the syncToMax function');
  await refill();
  assert.equal(await other.reset(), 1);
  assert.equal(await cached.next(), 1, 'reset');
  assert.equal(await cached.next(), 2);
  assert.equal(await other.drop(), true);
  await rejectsWithCode(assert, cached.next(), 'SEQUENCE_NOT_FOUND');
  assert.equal(await other.init({ start: 40 }), true);
  assert.equal(await cached.next(), 40, 'init after drop');
});

test('listSequences lists names (strings and scopes) and values', async () => {
  await env.db.createCollection('list_counters');
  const opts = { collection: 'list_counters', upsert: true };
  await seq.getNextSequenceValue(env.db, 'b', opts);
  await seq.getNextSequenceBatch(env.db, 'a', 3, opts);
  await seq.getNextSequenceValue(env.db, { type: 'invoice', year: 2025 }, opts);
  await env.db.collection('list_counters').insertOne({ _id: 'broken', sequence_value: 'x' });
  const listed = await seq.listSequences(env.db, { collection: 'list_counters' });
  // Name and value here; the range and share used are checked in operations.test.mjs.
  const list = listed.map(({ name, value }) => ({ name, value }));
  assert.deepEqual(
    list.filter((e) => typeof e.name === 'string'),
    [
      { name: 'a', value: 3 },
      { name: 'b', value: 1 },
    ],
  );
  assert.deepEqual(
    list.filter((e) => typeof e.name === 'object'),
    [{ name: { type: 'invoice', year: 2025 }, value: 1 }],
  );
  const big = await seq.listSequences(env.db, { collection: 'list_counters', bigint: true });
  assert.equal(big.find((e) => e.name === 'a').value, 3n);
});

test('syncToMax raises the counter past imported data, never lowers it', async () => {
  await env.db.collection('imported').insertMany([{ _id: 12 }, { _id: 57 }, { _id: 3 }, { _id: 'not-a-number' }]);
  assert.equal(await seq.syncToMax(env.db, 'imported', '_id', 'importedId'), 57, 'created at the max');
  assert.equal(await seq.getNextSequenceValue(env.db, 'importedId'), 58);
  await counters.updateOne({ _id: 'importedId' }, { $set: { sequence_value: 100 } });
  assert.equal(await seq.syncToMax(env.db, 'imported', '_id', 'importedId'), 100, 'never lowered');
  await env.db.collection('orders_by_no').insertMany([{ no: 7 }, { no: 41 }]);
  assert.equal(await seq.syncToMax(env.db, 'orders_by_no', 'no', 'orderNo'), 41);
});

test('syncToMax counts decimals an import left (Decimal128 ids), exactly', async () => {
  const { Decimal128 } = await import('mongodb');
  const products = env.db.collection('decimal_products');
  await products.insertMany([{ _id: 5 }, { _id: Decimal128.fromString('100') }, { _id: Decimal128.fromString('NaN') }, { _id: Decimal128.fromString('1E+400') }]);
  assert.equal(await seq.syncToMax(env.db, 'decimal_products', '_id', 'decimal-product'), 100);
  // One just below 2^63 rounds up past it: skipped, never hiding the others.
  await products.insertOne({ _id: Decimal128.fromString('9223372036854775807.5') });
  assert.equal(await seq.syncToMax(env.db, 'decimal_products', '_id', 'decimal-product'), 100);
  await products.insertOne({ _id: 'x', n: Decimal128.fromString('9007199254740993') });
  assert.equal(await seq.syncToMax(env.db, 'decimal_products', 'n', 'decimal-big', { bigint: true }), 9007199254740993n);
  await products.insertOne({ _id: 'y', m: Decimal128.fromString('-41.5') });
  const down = seq.sequence(env.db, 'decimal-down');
  await down.init({ step: -1, maxValue: 0 });
  assert.equal(await down.syncToMax('decimal_products', 'm'), -42, 'a descending counter passes it downwards');
});

test('handles raise to a value or to imported data, never lowering, creating when absent', async () => {
  const h = seq.sequence(env.db, 'raised', { upsert: true });
  assert.equal(await h.raiseTo(50), 50, 'created at the value');
  assert.equal(await h.raiseTo(10), 50, 'never lowered');
  assert.equal(await h.next(), 51);
  await env.db.collection('raised_source').insertMany([{ n: 70 }, { n: 3 }, { n: 'x' }]);
  assert.equal(await h.syncToMax('raised_source', 'n'), 70);
  assert.equal(await h.next(), 71);
  const big = seq.sequence(env.db, 'raised_big', { bigint: true });
  assert.equal(await big.raiseTo(2n ** 60n), 2n ** 60n);
  await rejectsWithCode(assert, h.raiseTo('5'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, h.syncToMax('raised_source', '$n'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, h.syncToMax(5, 'n'), 'INVALID_ARGUMENT');
  assert.equal(await h.current(), 71, 'refused calls wrote nothing');
});

test('set racing next: every value is from before or after the set, none twice', async () => {
  const s = seq.sequence(env.db, 'race', { upsert: true });
  await s.set(0);
  const calls = Array.from({ length: 200 }, (_, i) => (i === 100 ? s.set(10_000).then(() => null) : seq.getNextSequenceValue(env.db, 'race', { upsert: true })));
  const values = (await Promise.all(calls)).filter((v) => v !== null);
  assert.equal(new Set(values).size, values.length, 'no duplicate');
  for (const v of values) assert.ok(v <= 199 || v > 10_000, `value ${v} is from one side of the set`);
  const after = values.filter((v) => v > 10_000).length;
  assert.equal(await s.current(), 10_000 + after);
});

test('reset racing next: each value is from before or after the reset, none twice on a side', async () => {
  const s = seq.sequence(env.db, 'resetRace');
  await s.init({ start: 1 });
  await s.set(1000);
  const calls = Array.from({ length: 200 }, (_, i) => (i === 100 ? s.reset().then(() => null) : seq.getNextSequenceValue(env.db, 'resetRace')));
  const values = (await Promise.all(calls)).filter((v) => v !== null);
  const before = values.filter((v) => v > 1000);
  const after = values.filter((v) => v <= 1000);
  assert.equal(new Set(before).size, before.length);
  assert.equal(new Set(after).size, after.length);
  assert.deepEqual(
    after.sort((a, b) => a - b),
    Array.from({ length: after.length }, (_, i) => i + 1),
    'restarted at 1',
  );
  assert.ok(before.every((v) => v <= 1000 + 199));
  assert.equal(await s.current(), after.length);
});

test('bad arguments of the management calls are refused before any I/O', async () => {
  const s = seq.sequence(env.db, 'invoice');
  for (const bad of ['x', 1.5, null, {}, 2 ** 53]) await rejectsWithCode(assert, s.set(bad), 'INVALID_ARGUMENT');
  for (const bad of [{ start: '1' }, { begin: 1 }, 5]) await rejectsWithCode(assert, s.init(bad), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.listSequences(env.db, { collection: '' }), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.listSequences({}), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.syncToMax(env.db, 42, '_id', 'x'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.syncToMax(env.db, 'imported', '$x', 'x'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.syncToMax(env.db, 'imported', '_id', { $gt: '' }), 'INVALID_ARGUMENT');
  // Options a call does not use are refused, naming the call, not silently ignored.
  for (const [call, options] of [
    [(o) => seq.listSequences(env.db, o), { cache: 10 }],
    [(o) => seq.listSequences(env.db, o), { upsert: true }],
    [(o) => seq.syncToMax(env.db, 'imported', '_id', 'x', o), { format: 'N{seq}' }],
    [(o) => seq.syncToMax(env.db, 'imported', '_id', 'x', o), { start: 5 }],
  ]) {
    const e = await rejectsWithCode(assert, call(options), 'INVALID_ARGUMENT');
    assert.match(e.message, /is not used by (listSequences|syncToMax); it takes collection, field, bigint, uri/);
    assert.ok(e.message.includes(`"${Object.keys(options)[0]}"`), e.message);
  }
  await rejectsWithCode(assert, seq.listSequences(env.db, { colection: 'x' }), 'INVALID_ARGUMENT');
  assert.equal(await s.current(), 1000, 'unchanged');
});

test('step, limits and cycle are stored with the counter and obeyed by every call', async () => {
  const s = seq.sequence(env.db, 'by10');
  assert.equal(await s.init({ start: 100, step: 10, maxValue: 150 }), true);
  assert.equal(await s.next(), 100);
  assert.deepEqual(await s.nextBatch(2), [110, 120]);
  assert.deepEqual(await s.nextRange(2), { first: 130, last: 140, count: 2, step: 10 });
  // Other calls (functions, coalesced, other options) obey the stored step and limits.
  assert.equal(await seq.getNextSequenceValue(env.db, 'by10'), 150);
  await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'by10'), 'SEQUENCE_EXHAUSTED');
  await rejectsWithCode(assert, s.next(), 'SEQUENCE_EXHAUSTED');
  assert.equal(await s.current(), 150, 'exhaustion writes nothing');
  assert.equal(await s.reset(), 100);
  assert.equal(await s.next(), 100);
});

test('a configuration other code damaged fails every call with INVALID_COUNTER naming the field, never CONTENTION', async () => {
  for (const [id, init, damage, field] of [
    ['no-max', { maxValue: 1000 }, { $unset: { sequence_value_max: '' } }, 'sequence_value_max'],
    ['no-min', { minValue: 5 }, { $unset: { sequence_value_min: '' } }, 'sequence_value_min'],
    ['no-cycle', { maxValue: 3 }, { $unset: { sequence_value_cycle: '' } }, 'sequence_value_cycle'],
    ['cycle-int', { maxValue: 3, cycle: true }, { $set: { sequence_value_cycle: 1 } }, 'sequence_value_cycle'],
  ]) {
    const s = seq.sequence(env.db, id);
    await s.init(init);
    await counters.updateOne({ _id: id }, damage);
    for (const call of [() => s.next(), () => s.nextBatch(2), () => seq.getNextSequenceValue(env.db, id), () => s.set(10)]) {
      await rejectsWithCode(assert, call(), 'INVALID_COUNTER', new RegExp(`'${field}'`));
    }
  }
  // A plain counter beside a counter named like its step field.
  await counters.insertOne({ _id: 'named-like-a-step', seq: 2, seq_step: 3 });
  await rejectsWithCode(assert, seq.sequence(env.db, 'named-like-a-step', { field: 'seq' }).next(), 'INVALID_COUNTER', /'seq_min'/);
});

test('descending sequences and cycling', async () => {
  const down = seq.sequence(env.db, 'countdown');
  await down.init({ step: -1, minValue: -3, maxValue: -1 });
  assert.deepEqual(await down.nextBatch(3), [-1, -2, -3]);
  await rejectsWithCode(assert, down.next(), 'SEQUENCE_EXHAUSTED');

  const ring = seq.sequence(env.db, 'ring');
  await ring.init({ minValue: 1, maxValue: 3, cycle: true });
  const values = [];
  for (let i = 0; i < 7; i++) values.push(await ring.next());
  assert.deepEqual(values, [1, 2, 3, 1, 2, 3, 1]);
  await rejectsWithCode(assert, ring.nextBatch(4), 'INVALID_ARGUMENT');
});

test('configured counters under concurrency: no duplicate within a cycle', async () => {
  const s = seq.sequence(env.db, 'by3');
  await s.init({ start: 3, step: 3 });
  const values = await Promise.all(Array.from({ length: 300 }, () => seq.getNextSequenceValue(env.db, 'by3')));
  assert.deepEqual(
    values.sort((a, b) => a - b),
    Array.from({ length: 300 }, (_, i) => 3 * (i + 1)),
  );
});

test('bad configurations are refused', async () => {
  const s = seq.sequence(env.db, 'badcfg');
  for (const bad of [{ step: 0 }, { minValue: 5, maxValue: 5 }, { start: 0, minValue: 1 }, { step: 1.5 }, { cycle: 'yes' }, { maxValue: 'x' }]) {
    await rejectsWithCode(assert, s.init(bad), 'INVALID_ARGUMENT');
  }
  await rejectsWithCode(assert, s.current(), 'SEQUENCE_NOT_FOUND');
});

// ---------------------------------------------------------------- at the edges (issue 17)

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
    assert.deepEqual(
      moved.map((r) => [r.reference_value.shop, r.value]),
      [['a', 50]],
    );
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
