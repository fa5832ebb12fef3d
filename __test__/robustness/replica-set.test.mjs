// On a replica set (SecantusDB, or a MONGODB_URI replica set or mongos): retryable writes
// cover our findAndModify, so a transient failure is retried once by the driver without
// skipping or repeating a value.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq, rejectsWithCode, external, serverKind, describeDeployment, withQuery } from '../helpers.mjs';

// SecantusDB is a replica set with failpoints; against MONGODB_URI each test asks what the
// deployment is (a real mongod has failpoints only with enableTestCommands set).
const emulatorSkip = serverKind === 'secantus' ? false : 'needs SecantusDB (a replica set with failpoints): runs in the secantus pass';
const deployment = external ? await describeDeployment() : null;
const skipPrimary = !external
  ? emulatorSkip
  : deployment.topology === 'replicaSet'
    ? false
    : `needs a replica set: the MONGODB_URI server is ${deployment.topology === 'sharded' ? 'a mongos' : 'a standalone'}`;
const skipFailpoint = !external
  ? emulatorSkip
  : deployment.topology === 'standalone'
    ? 'needs retryable writes (a replica set or mongos): the MONGODB_URI server is a standalone'
    : deployment.failpoints
      ? false
      : 'needs configureFailPoint: start the MONGODB_URI server with --setParameter enableTestCommands=1';
const skipWriteConcern = external ? false : emulatorSkip;

let env;
before(async () => {
  if (!skipPrimary || !skipFailpoint || !skipWriteConcern) env = await setup('replset');
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

test('the server is a replica set primary', { skip: skipPrimary }, async () => {
  const hello = await env.client.db('admin').command({ hello: 1 });
  if (external) assert.equal(typeof hello.setName, 'string');
  else assert.equal(hello.setName, 'secantus');
  assert.equal(hello.isWritablePrimary, true);
});

test('a transient findAndModify failure is retried: same next value, applied once', { skip: skipFailpoint }, async () => {
  await env.db.collection('counters').insertOne({ _id: 'retry', sequence_value: 41 });
  const client = await seq.connect(withQuery(env.uri, 'appName=retrying'));
  try {
    await failNextFindAndModify('retrying');
    assert.equal(await seq.getNextSequenceValue(client.db(env.dbName), 'retry', { coalesce: false }), 42);
    assert.equal(await seq.getNextSequenceValue(client.db(env.dbName), 'retry', { coalesce: false }), 43);
    assert.equal((await env.db.collection('counters').findOne({ _id: 'retry' })).sequence_value, 43);
  } finally {
    await client.close();
  }
});

test('with retryWrites=false the same failure surfaces as SERVER 91, nothing applied', { skip: skipFailpoint }, async () => {
  await env.db.collection('counters').insertOne({ _id: 'noretry', sequence_value: 0 });
  const client = await seq.connect(withQuery(env.uri, 'appName=notretrying&retryWrites=false'));
  try {
    await failNextFindAndModify('notretrying');
    const e = await rejectsWithCode(assert, seq.getNextSequenceValue(client.db(env.dbName), 'noretry'), 'SERVER');
    assert.equal(e.serverCode, 91);
    assert.equal(await seq.getNextSequenceValue(client.db(env.dbName), 'noretry'), 1, 'the failed call consumed nothing');
  } finally {
    await client.close();
  }
});

test('writeConcern: majority with journal is honoured; an unsatisfiable one is a SERVER error', { skip: skipWriteConcern }, async () => {
  await env.db.collection('counters').insertOne({ _id: 'durable', sequence_value: 0 });
  const majority = { writeConcern: { w: 'majority', journal: true, wtimeoutMS: 5000 } };
  assert.equal(await seq.getNextSequenceValue(env.db, 'durable', majority), 1);
  assert.deepEqual(await seq.getNextSequenceBatch(env.db, 'durable', 2, { writeConcern: { w: 1 } }), [2, 3]);
  const e = await rejectsWithCode(assert, seq.getNextSequenceValue(env.db, 'durable', { writeConcern: { w: 5, wtimeoutMS: 200 } }), 'SERVER');
  assert.equal(typeof e.serverCode, 'number');
  const next = await seq.getNextSequenceValue(env.db, 'durable');
  assert.ok(next >= 4, 'no value handed out twice after a write concern error');
});
