// Coalescing (default on), coalesce: false, cached allocation across processes, and the
// sequence() handle.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('coalesce');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

const expand = ({ first, last }) => Array.from({ length: last - first + 1 }, (_, i) => first + i);

function assertGapless(values, from, to) {
  const sorted = [...values].sort((a, b) => a - b);
  assert.equal(new Set(sorted).size, sorted.length, 'no duplicate');
  assert.deepEqual(
    sorted,
    Array.from({ length: to - from + 1 }, (_, i) => from + i),
    'no gap',
  );
}

test('1,000 concurrent calls mixed with batch calls: one gapless, duplicate-free set', async () => {
  await env.db.collection('counters').insertOne({ _id: 'mix', sequence_value: 0 });
  const calls = [];
  let expected = 0;
  for (let i = 0; i < 1000; i++) {
    calls.push(seq.getNextSequenceValue(env.db, 'mix').then((v) => [v]));
    expected += 1;
    if (i % 10 === 0) {
      calls.push(seq.getNextSequenceBatch(env.db, 'mix', 5));
      calls.push(seq.getNextSequenceRange(env.db, 'mix', 3).then(expand));
      expected += 8;
    }
  }
  const results = await Promise.all(calls);
  for (const block of results) {
    for (let i = 1; i < block.length; i++) assert.equal(block[i], block[i - 1] + 1, 'each call gets a contiguous slice');
  }
  assertGapless(results.flat(), 1, expected);
  assert.equal((await env.db.collection('counters').findOne({ _id: 'mix' })).sequence_value, expected);
});

test('coalesce: false still gives every caller a distinct value', async () => {
  await env.db.collection('counters').insertOne({ _id: 'plain', sequence_value: 0 });
  const values = await Promise.all(Array.from({ length: 200 }, () => seq.getNextSequenceValue(env.db, 'plain', { coalesce: false })));
  assertGapless(values, 1, 200);
});

test('a failed round trip fails exactly its callers, later calls proceed', async () => {
  await env.db.collection('counters').insertOne({ _id: 'flip', sequence_value: 'not a number' });
  const failing = await Promise.allSettled(Array.from({ length: 20 }, () => seq.getNextSequenceValue(env.db, 'flip')));
  assert.ok(failing.every((r) => r.status === 'rejected' && r.reason.code === 'INVALID_COUNTER'));
  await env.db.collection('counters').updateOne({ _id: 'flip' }, { $set: { sequence_value: 0 } });
  assertGapless(await Promise.all(Array.from({ length: 20 }, () => seq.getNextSequenceValue(env.db, 'flip'))), 1, 20);
});

test('cache: values ascend within a process and few round trips are made', async () => {
  const s = seq.sequence(env.db, 'cached', { upsert: true, cache: 100 });
  const values = [];
  for (let i = 0; i < 1000; i++) values.push(await s.next());
  for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], 'ascending');
  assert.equal(new Set(values).size, values.length);
  const stored = (await env.db.collection('counters').findOne({ _id: 'cached' })).sequence_value;
  assert.ok(stored >= 1000, 'the counter covers every value handed out');
  // The functions take the same option and share the same blocks.
  const more = await Promise.all(Array.from({ length: 300 }, () => seq.getNextSequenceValue(env.db, 'cached', { upsert: true, cache: 100 })));
  const all = new Set([...values, ...more]);
  assert.equal(all.size, 1300, 'no duplicate between handle and function calls');
  // A batch larger than the block bypasses the cache and stays contiguous.
  const big = await s.nextBatch(250);
  assert.deepEqual(
    big,
    Array.from({ length: 250 }, (_, i) => big[0] + i),
  );
  for (const v of big) assert.ok(!all.has(v));
});

test('cache: two processes draw disjoint sets', async () => {
  await env.db.collection('counters').insertOne({ _id: 'procs', sequence_value: 0 });
  const index = fileURLToPath(new URL('../../index.js', import.meta.url));
  const script = `
    const { MongoClient } = require('mongodb');
    const seq = require(${JSON.stringify(index)});
    (async () => {
      const client = new MongoClient(process.env.URI);
      const db = client.db(process.env.DB);
      const s = seq.sequence(db, 'procs', { cache: 100 });
      const out = [];
      for (let i = 0; i < 500; i++) {
        if (i % 50 === 0) out.push(...(await Promise.all(Array.from({ length: 20 }, () => s.next()))));
        else out.push(await s.next());
      }
      console.log(JSON.stringify(out));
      await client.close();
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const run = () =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', script], {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
        env: { ...process.env, URI: env.uri, DB: env.dbName },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(err))));
    });
  const [a, b] = await Promise.all([run(), run()]);
  assert.equal(a.length, 500 + 10 * 19);
  assert.equal(new Set(a).size, a.length);
  assert.equal(new Set(b).size, b.length);
  const inA = new Set(a);
  assert.ok(
    b.every((v) => !inA.has(v)),
    'disjoint across processes',
  );
});

test('sequence(): handle methods and argument checks', async () => {
  const s = seq.sequence(env.db, 'handle', { upsert: true, start: 10 });
  assert.equal(s.name, 'handle');
  assert.equal(await s.next(), 10);
  assert.deepEqual(await s.nextBatch(3), [11, 12, 13]);
  assert.deepEqual(await s.nextRange(5), { first: 14, last: 18, count: 5, step: 1 });
  await rejectsWithCode(assert, s.nextBatch(0), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, s.nextRange(1.5), 'INVALID_ARGUMENT');
  assert.throws(
    () => seq.sequence(env.db, { $gt: '' }),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => seq.sequence(env.db, 'x', { cache: 0 }),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => seq.sequence(env.db, 'x', { cache: 1.5 }),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => seq.sequence(env.db, 'x', { coalesce: 'no' }),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  assert.throws(
    () => seq.sequence(null, 'x'),
    (e) => e.code === 'INVALID_ARGUMENT',
  );
  await rejectsWithCode(assert, seq.sequence(env.db, 'absent').next(), 'SEQUENCE_NOT_FOUND');
});

test('a handle on an own client rejects with CLIENT_CLOSED after close, cached or not', async () => {
  const client = await seq.connect(env.uri);
  const s = seq.sequence(client.db(env.dbName), 'closing', { upsert: true, cache: 50 });
  await s.next();
  await client.close();
  await rejectsWithCode(assert, s.next(), 'CLIENT_CLOSED');
});

test('a counter stored as a double near 2^53, cached or not, as numbers or bigints: every value up to 2^53 - 1, then SEQUENCE_OVERFLOW', async () => {
  const top = 2 ** 53 - 1;
  for (const cache of [undefined, 5, 20]) {
    for (const bigint of [false, true]) {
      const name = `double-top-${cache}-${bigint}`;
      // The Node driver stores a number above 2^31 as a double.
      await env.db.collection('counters').insertOne({ _id: name, sequence_value: top - 40 });
      const got = [];
      let refusal;
      for (let i = 0; i < 45 && !refusal; i++) {
        try {
          got.push(await seq.getNextSequenceValue(env.db, name, { cache, bigint }));
        } catch (error) {
          refusal = error;
        }
      }
      const label = `cache ${cache}, bigint ${bigint}`;
      const want = Array.from({ length: 40 }, (_, i) => top - 39 + i);
      assert.deepEqual(got, bigint ? want.map(BigInt) : want, label);
      assert.equal(refusal?.code, 'SEQUENCE_OVERFLOW', `${label}: ${refusal}`);
      await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, name, { cache, bigint }), 'SEQUENCE_OVERFLOW');
      const stored = await env.db.collection('counters').findOne({ _id: name }, { promoteValues: false });
      assert.equal(stored.sequence_value._bsontype, 'Double', label);
      assert.equal(stored.sequence_value.valueOf(), top, label);
    }
  }
});
