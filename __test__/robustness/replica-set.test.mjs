// On a replica set (SecantusDB): retryable writes cover our findAndModify, so a transient
// failure is retried once by the driver without skipping or repeating a value.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

const kind = process.env.MONGODB_URI ? 'external' : process.env.MONGO_SEQUENCE_SERVER || 'mongoeco';
const skip = kind === 'secantus' ? false : 'needs SecantusDB (a replica set with failpoints): runs in the secantus pass';

let env;
before(async () => {
  if (!skip) env = await setup('replset');
});
after(async () => {
  await env?.close();
});

async function failNextFindAndModify(appName, times = 1) {
  await env.client.db('admin').command({
    configureFailPoint: 'failCommand',
    mode: { times },
    data: { failCommands: ['findAndModify'], errorCode: 91, appName },
  });
}

test('the server is a replica set primary', { skip }, async () => {
  const hello = await env.client.db('admin').command({ hello: 1 });
  assert.equal(hello.setName, 'secantus');
  assert.equal(hello.isWritablePrimary, true);
});

test('a transient findAndModify failure is retried: same next value, applied once', { skip }, async () => {
  await env.db.collection('counters').insertOne({ _id: 'retry', sequence_value: 41 });
  const client = await seq.connect(`${env.uri}&appName=retrying`);
  try {
    await failNextFindAndModify('retrying');
    assert.equal(await seq.getNextSequenceValue(client.db(env.dbName), 'retry', { coalesce: false }), 42);
    assert.equal(await seq.getNextSequenceValue(client.db(env.dbName), 'retry', { coalesce: false }), 43);
    assert.equal((await env.db.collection('counters').findOne({ _id: 'retry' })).sequence_value, 43);
  } finally {
    await client.close();
  }
});

test('with retryWrites=false the same failure surfaces as SERVER 91, nothing applied', { skip }, async () => {
  await env.db.collection('counters').insertOne({ _id: 'noretry', sequence_value: 0 });
  const client = await seq.connect(`${env.uri}&appName=notretrying&retryWrites=false`);
  try {
    await failNextFindAndModify('notretrying');
    const e = await rejectsWithCode(assert, seq.getNextSequenceValue(client.db(env.dbName), 'noretry'), 'SERVER');
    assert.equal(e.serverCode, 91);
    assert.equal(await seq.getNextSequenceValue(client.db(env.dbName), 'noretry'), 1, 'the failed call consumed nothing');
  } finally {
    await client.close();
  }
});

test('writeConcern: majority with journal is honoured; an unsatisfiable one is a SERVER error', { skip }, async () => {
  await env.db.collection('counters').insertOne({ _id: 'durable', sequence_value: 0 });
  const majority = { writeConcern: { w: 'majority', journal: true, wtimeoutMS: 5000 } };
  assert.equal(await seq.getNextSequenceValue(env.db, 'durable', majority), 1);
  assert.deepEqual(await seq.getNextSequenceBatch(env.db, 'durable', 2, { writeConcern: { w: 1 } }), [2, 3]);
  const e = await rejectsWithCode(
    assert,
    seq.getNextSequenceValue(env.db, 'durable', { writeConcern: { w: 5, wtimeoutMS: 200 } }),
    'SERVER',
  );
  assert.equal(typeof e.serverCode, 'number');
  const next = await seq.getNextSequenceValue(env.db, 'durable');
  assert.ok(next >= 4, 'no value handed out twice after a write concern error');
});

