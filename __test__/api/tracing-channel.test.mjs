// The package entry publishes every public asynchronous call on
// `diagnostics_channel.tracingChannel('mongodb-sequence:call')`, on the caller's thread:
// an AsyncLocalStorage store of the caller is seen on start, end and asyncEnd; a failed
// call carries its code; with no subscriber the call goes straight to the addon.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { setup, rejectsWithCode } from '../helpers.mjs';
import { recordingProxy } from '../fixtures/security-lab.mjs';

const require = createRequire(import.meta.url);
const pkg = require('../../lib/entry.js');
const native = require('../../index.js');

let env;
before(async () => {
  env = await setup('tracing');
});
after(async () => {
  await pkg.closeSharedClients();
  await env?.close();
});

const EVENTS = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];
const channel = diagnostics.tracingChannel('mongodb-sequence:call');
let subscribed = null;

/** Records every event with the store `als` holds when it is published. */
function record(als) {
  const seen = [];
  subscribed = Object.fromEntries(EVENTS.map((e) => [e, (context) => seen.push({ event: e, store: als.getStore(), context })]));
  channel.subscribe(subscribed);
  return seen;
}
afterEach(() => {
  if (subscribed) channel.unsubscribe(subscribed);
  subscribed = null;
});

test('the entry keeps the addon: same classes, ErrorCode, sync functions, ESM names', async () => {
  assert.equal(pkg.Sequence, native.Sequence);
  assert.equal(pkg.SequenceClient, native.SequenceClient);
  assert.equal(pkg.ErrorCode, native.ErrorCode);
  assert.equal(pkg.formatSequence, native.formatSequence);
  assert.ok(pkg.sequence(env.db, 'tc-kind') instanceof pkg.Sequence);
  assert.equal(pkg.getNextSequenceValue.name, 'getNextSequenceValue');
  const esm = await import('mongodb-sequence');
  assert.equal(esm.getNextSequenceValue, pkg.getNextSequenceValue);
  assert.deepEqual(Object.keys(pkg).sort(), Object.keys(native).sort());
});

test("a subscriber with AsyncLocalStorage sees the caller's store on start, end and asyncEnd", async () => {
  const als = new AsyncLocalStorage();
  const seen = record(als);
  const value = await als.run({ caller: 'fn' }, () => pkg.getNextSequenceValue(env.db, 'tc-fn', { upsert: true }));
  assert.equal(value, 1);
  assert.deepEqual(
    seen.map((s) => s.event),
    ['start', 'end', 'asyncStart', 'asyncEnd'],
  );
  for (const s of seen) assert.deepEqual(s.store, { caller: 'fn' }, s.event);
  const context = seen[0].context;
  assert.equal(context.operation, 'getNextSequenceValue');
  assert.equal(context.counter, 'tc-fn');
  assert.equal(context.database, env.dbName);
  assert.equal(context.collection, 'counters');
  assert.equal(context.result, 1);
  assert.equal(context.error, undefined);
});

test("handle methods are traced with the handle's counter (cached calls too)", async () => {
  const als = new AsyncLocalStorage();
  const h = pkg.sequence(env.db, { tenant: 'a', kind: 'tc' }, { cache: 10, collection: 'tc_counters', upsert: true });
  const seen = record(als);
  await als.run(1, () => h.next());
  await als.run(2, () => h.next()); // from the cache
  const batch = await als.run(3, () => h.nextBatch(2));
  assert.deepEqual(batch, [3, 4]);
  const ends = seen.filter((s) => s.event === 'asyncEnd');
  assert.deepEqual(
    ends.map((s) => [s.store, s.context.operation, s.context.result]),
    [
      [1, 'next', 1],
      [2, 'next', 2],
      [3, 'nextBatch', [3, 4]],
    ],
  );
  assert.equal(ends[0].context.counter, h.name);
  assert.equal(ends[0].context.database, env.dbName);
  assert.equal(ends[0].context.collection, 'tc_counters');
  assert.deepEqual(
    seen.filter((s) => s.event === 'start').map((s) => s.store),
    [1, 2, 3],
  );
});

test("a failed call publishes error with its code, in the caller's store", async () => {
  const als = new AsyncLocalStorage();
  const seen = record(als);
  await als.run('missing', () => rejectsWithCode(assert, pkg.sequence(env.db, 'tc-absent').current(), 'SEQUENCE_NOT_FOUND'));
  const errors = seen.filter((s) => s.event === 'error');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].store, 'missing');
  assert.equal(errors[0].context.operation, 'current');
  assert.equal(errors[0].context.error.code, 'SEQUENCE_NOT_FOUND');
  assert.ok(errors[0].context.error instanceof Error);
  assert.equal(seen.at(-1).event, 'asyncEnd');
  // A bad argument: whether the addon throws or rejects, it is an error event with a code.
  seen.length = 0;
  await rejectsWithCode(assert, (async () => pkg.getNextSequenceValue(env.db, 'tc-bad', { cache: -1 }))(), 'INVALID_ARGUMENT');
  assert.equal(seen.filter((s) => s.event === 'error')[0]?.context.error.code, 'INVALID_ARGUMENT');
});

test('connect and close are traced without the URI', async () => {
  const seen = record(new AsyncLocalStorage());
  const client = await pkg.connect(env.uri);
  await pkg.getNextSequenceValue(client.db(env.dbName), 'tc-own', { upsert: true });
  await client.close();
  const ops = seen.filter((s) => s.event === 'asyncEnd').map((s) => s.context.operation);
  assert.deepEqual(ops, ['connect', 'getNextSequenceValue', 'close']);
  for (const s of seen) {
    const { result, ...names } = s.context;
    assert.ok(!JSON.stringify(names).includes('mongodb://'), JSON.stringify(names));
  }
});

test('inserts and management calls are traced under their own names', async () => {
  const seen = record(new AsyncLocalStorage());
  await pkg.insertOne(env.db, 'tc_docs', { a: 1 });
  await pkg.insertMany(env.db, 'tc_more', [{ a: 2 }], { name: 'tc-docs' });
  await pkg.listSequences(env.db);
  const h = pkg.sequence(env.db, 'tc-admin');
  await h.init({ start: 5 });
  await h.set(9);
  await h.reset();
  await h.drop();
  const ends = seen.filter((s) => s.event === 'asyncEnd').map((s) => [s.context.operation, s.context.counter]);
  assert.deepEqual(ends, [
    ['insertOne', 'tc_docs'],
    ['insertMany', 'tc-docs'],
    ['listSequences', undefined],
    ['init', 'tc-admin'],
    ['set', 'tc-admin'],
    ['reset', 'tc-admin'],
    ['drop', 'tc-admin'],
  ]);
});

test('with no subscriber a call goes straight to the addon (its context is never built)', async () => {
  const name = Object.getOwnPropertyDescriptor(pkg.Sequence.prototype, 'name');
  let reads = 0;
  Object.defineProperty(pkg.Sequence.prototype, 'name', {
    ...name,
    get() {
      reads++;
      return name.get.call(this);
    },
  });
  try {
    const h = pkg.sequence(env.db, 'tc-quiet', { cache: 5, upsert: true });
    assert.equal(channel.hasSubscribers, false);
    for (let i = 0; i < 5; i++) await h.next();
    assert.equal(reads, 0, 'no context built without subscribers');
    const seen = record(new AsyncLocalStorage());
    await h.next();
    assert.equal(reads, 1, 'the context is built once subscribed');
    assert.equal(seen[0].context.counter, 'tc-quiet');
  } finally {
    Object.defineProperty(pkg.Sequence.prototype, 'name', name);
  }
});

test("the mongoose plugin numbers documents through the traced entry, in the caller's store", async () => {
  const mongoose = (await import('mongoose')).default;
  const AutoIncrement = require('../../mongoose.js');
  const connection = mongoose.createConnection();
  await connection.openUri(env.uri, { dbName: `${env.dbName}_plugin`, serverSelectionTimeoutMS: 10_000 });
  try {
    await connection.createCollection('counters');
    const schema = new mongoose.Schema({ name: String });
    schema.plugin(AutoIncrement(connection), { id: 'tc_plugin', inc_field: 'no' });
    const Item = connection.model('TcItem', schema);
    await Item.init();
    const als = new AsyncLocalStorage();
    const seen = record(als);
    const doc = await als.run('save', () => new Item({ name: 'a' }).save());
    assert.equal(doc.no, 1);
    const ends = seen.filter((s) => s.event === 'asyncEnd');
    assert.ok(ends.length >= 1, 'the numbering call is published');
    for (const s of seen) assert.equal(s.store, 'save', s.event);
    assert.equal(ends.at(-1).context.database, `${env.dbName}_plugin`);
  } finally {
    await connection.dropDatabase();
    await connection.close();
  }
});

test('loading the entry again (a cleared require cache) does not wrap the methods twice', async () => {
  const path = require.resolve('../../lib/entry.js');
  const cached = require.cache[path];
  delete require.cache[path];
  let again;
  try {
    again = require(path);
  } finally {
    require.cache[path] = cached;
  }
  const h = again.sequence(env.db, 'tc-twice', { collection: 'tc_twice', upsert: true });
  const first = pkg.sequence(env.db, 'tc-twice-first', { collection: 'tc_twice', upsert: true });
  const seen = record(new AsyncLocalStorage());
  await h.next();
  await first.next();
  await again.getNextSequenceValue(env.db, 'tc-twice-fn', { upsert: true });
  const starts = seen.filter((s) => s.event === 'start');
  assert.deepEqual(
    starts.map((s) => [s.context.operation, s.context.counter, s.context.collection]),
    [
      ['next', 'tc-twice', 'tc_twice'],
      ['next', 'tc-twice-first', 'tc_twice'],
      ['getNextSequenceValue', 'tc-twice-fn', 'counters'],
    ],
  );
});

test('a context that cannot be built still traces the call, which fails as without a subscriber', async () => {
  const throwing = () => ({
    upsert: true,
    get collection() {
      throw new Error('getter');
    },
  });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const named = () => ({
    get name() {
      throw new Error('getter');
    },
  });
  const calls = [
    ['getNextSequenceValue', (m) => m.getNextSequenceValue(env.db, 'tc-getter', throwing())],
    ['getNextSequenceValue', (m) => m.getNextSequenceValue(env.db, 'tc-proxy', proxy)],
    ['insertOne', (m) => m.insertOne(env.db, 'tc_getter_docs', {}, named())],
  ];
  const outcome = async (call) => {
    try {
      return `resolved ${await call()}`;
    } catch (e) {
      return `rejected ${e?.code}`;
    }
  };
  const seen = record(new AsyncLocalStorage());
  for (const [operation, call] of calls) {
    const without = await outcome(() => call(native));
    assert.match(without, /^rejected [A-Z_]+$/);
    seen.length = 0;
    assert.equal(await outcome(() => call(pkg)), without, operation);
    assert.deepEqual(
      seen.map((s) => [s.event, s.context.operation]),
      [
        ['start', operation],
        ['end', operation],
        ['error', operation],
        ['asyncStart', operation],
        ['asyncEnd', operation],
      ],
    );
  }
});

test("a handle's database and collection are the ones it was made with", async () => {
  const options = { collection: 'tc_invoices', upsert: true };
  const a = pkg.sequence(env.db, 'tc-origin-a', options);
  options.collection = 'tc_orders';
  const b = pkg.sequence(env.db, 'tc-origin-b', options);
  const like = { databaseName: env.dbName };
  const c = pkg.sequence(like, 'tc-origin-c', { upsert: true, uri: env.uri });
  like.databaseName = 'tc_elsewhere';
  const seen = record(new AsyncLocalStorage());
  await a.next();
  await b.next();
  await c.next();
  assert.deepEqual(
    seen.filter((s) => s.event === 'asyncEnd').map((s) => [s.context.counter, s.context.database, s.context.collection]),
    [
      ['tc-origin-a', env.dbName, 'tc_invoices'],
      ['tc-origin-b', env.dbName, 'tc_orders'],
      ['tc-origin-c', env.dbName, 'counters'],
    ],
  );
});

test('a counter named after a connection string is masked in every context, as in messages', async () => {
  const secret = 'alice-S3cret%21pw';
  const name = `mongodb://alice:${secret}@h/x`;
  const scope = { tenant: `mongodb+srv://bob:${secret}@cluster0.example.net/db` };
  const seen = record(new AsyncLocalStorage());
  await rejectsWithCode(assert, pkg.getNextSequenceValue(env.db, name), 'SEQUENCE_NOT_FOUND');
  assert.equal(await pkg.getNextSequenceValue(env.db, scope, { upsert: true }), 1);
  const handle = pkg.sequence(env.db, name, { upsert: true });
  assert.equal(await handle.next(), 1);
  await rejectsWithCode(assert, pkg.sequence(env.db, `${name}-absent`).current(), 'SEQUENCE_NOT_FOUND');
  await pkg.insertOne(env.db, `mongodb://carol:${secret}@h`, { a: 1 }, { name, upsert: true });
  assert.ok(seen.length >= 5 * 3, `${seen.length} events`);
  for (const { event, context } of seen) {
    const text = JSON.stringify({ ...context, error: context.error?.message });
    assert.ok(!text.includes(secret), `${event} of ${context.operation} holds the password: ${text}`);
  }
  assert.ok(
    seen.some((s) => s.context.counter === 'mongodb://****@h/x'),
    'the masked name',
  );
});

test('round-trip events carry a connection-string name masked', async () => {
  const secret = 'alice-S3cret%21pw';
  const events = [];
  const listener = (message) => events.push(message);
  const handle = pkg.sequence(env.db, `mongodb://alice:${secret}@h/x`, { upsert: true });
  await handle.next();
  diagnostics.subscribe('mongodb-sequence:round-trip', listener);
  try {
    for (let i = 0; i < 3; i++) await handle.next();
  } finally {
    diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
  }
  assert.ok(events.length > 0);
  for (const event of events) assert.ok(!JSON.stringify(event).includes(secret), JSON.stringify(event));
  assert.equal(events.at(-1).counter, 'mongodb://****@h/x');
});

test('a subscriber gets an event for every round trip from its first call on, by any call form', async () => {
  const forms = [
    ['getNextSequenceValue', (name) => pkg.getNextSequenceValue(env.db, name, { upsert: true })],
    ['coalesce: false', (name) => pkg.getNextSequenceValue(env.db, name, { upsert: true, coalesce: false })],
    ['a handle', (name) => pkg.sequence(env.db, name, { upsert: true }).next()],
  ];
  for (const [label, call] of forms) {
    const name = `first-events-${label}`;
    // The client is open and the counter prepared before anyone listens.
    await call(name);
    const events = [];
    const listener = (message) => {
      if (message.counter === name) events.push(message);
    };
    diagnostics.subscribe('mongodb-sequence:round-trip', listener);
    try {
      for (let i = 0; i < 5; i++) await call(name);
    } finally {
      diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
    }
    assert.equal(events.length, 5, `${label}: 5 calls one after another, 5 round trips, ${events.length} events`);
  }
});

// The data commands the package sends (the connection's own hello, ping and session
// commands are none of a call's).
const DATA_COMMANDS = new Set(['find', 'getMore', 'findAndModify', 'insert', 'update', 'delete', 'aggregate', 'listIndexes', 'createIndexes']);

test('every command a management call sends publishes a round-trip event, names masked', { timeout: 60_000 }, async () => {
  const secret = 'alice-S3cret%21pw';
  const name = `mongodb://alice:${secret}@h/mgmt`;
  const masked = 'mongodb://****@h/mgmt';
  const proxy = await recordingProxy(env.address);
  const client = await pkg.connect(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`);
  const events = [];
  const listener = (message) => events.push(message);
  diagnostics.subscribe('mongodb-sequence:round-trip', listener);
  try {
    const db = client.db(env.dbName);
    await env.db.collection('mgmt_source').insertOne({ n: 40 });
    const h = pkg.sequence(db, name);
    const located = { id: name, ref: 1 };
    const cached = pkg.sequence(db, `${name}-cached`, { cache: 10, upsert: true });
    // [call, what it runs, the commands it sends, the counter its events name]
    const steps = [
      ['init', () => h.init({ start: 5 }), ['update'], masked],
      ['current', () => h.current(), ['find'], masked],
      ['set', () => h.set(9), ['find', 'findAndModify'], masked],
      ['raiseTo', () => h.raiseTo(20), ['find', 'findAndModify'], masked],
      ['Sequence.syncToMax', () => h.syncToMax('mgmt_source', 'n'), ['find', 'find', 'find', 'findAndModify'], masked],
      ['syncToMax', () => pkg.syncToMax(db, 'mgmt_source', 'n', name), ['find', 'find', 'find', 'findAndModify'], masked],
      ['reset', () => h.reset(), ['find', 'findAndModify'], masked],
      ['drop', () => h.drop(), ['delete'], masked],
      ['listSequences', () => pkg.listSequences(db), ['find'], undefined],
      // A located counter: its unique index is looked for, then made, before the creation.
      [
        'counterAt init',
        () => pkg.counterAt(db, located, { collection: 'mgmt_located' }).init({ start: 3 }),
        ['listIndexes', 'createIndexes', 'update'],
        '{"id":"mongodb://****@h/mgmt","ref":1}',
      ],
      ['setCountersWhere', () => pkg.setCountersWhere(db, { id: name }, 7, { collection: 'mgmt_located' }), ['update'], '{"id":"mongodb://****@h/mgmt"}'],
      // A value-taking call publishes its one event however many commands it took (here
      // the counter is created: an increment finds nothing, a read, an upsert), never one
      // per command as well.
      ['a cache fill', () => cached.next(), ['findAndModify', 'find', 'update'], `${masked}-cached`],
      ['release (give-back)', () => cached.release(), ['findAndModify'], `${masked}-cached`],
    ];
    for (const [label, run, commands, counter] of steps) {
      events.length = 0;
      proxy.clear();
      await run();
      const sent = proxy
        .commands()
        .map((c) => Object.keys(c)[0])
        .filter((c) => DATA_COMMANDS.has(c));
      assert.deepEqual(sent, commands, `${label}: the commands sent`);
      const fetch = label === 'a cache fill';
      assert.deepEqual(
        events.map((e) => e.operation),
        fetch ? ['findAndModify'] : sent,
        `${label}: ${fetch ? 'one event for the fetch' : 'one event per command sent'}, ${JSON.stringify(events)}`,
      );
      for (const event of events) {
        assert.equal(event.counter, counter, `${label}: ${JSON.stringify(event)}`);
        assert.equal(event.database, env.dbName);
        assert.equal(event.outcome, 'ok', `${label}: ${JSON.stringify(event)}`);
        assert.equal(event.serverPort, proxy.port, `${label}: the server written to`);
        assert.ok(event.durationMs >= 0 && event.retries === 0);
        assert.ok(!JSON.stringify(event).includes(secret), `${label}: ${JSON.stringify(event)}`);
      }
      // The fill: the call's value and a block of 10; management reserves nothing.
      assert.deepEqual(
        events.map((e) => [e.values, e.calls]),
        events.map(() => (fetch ? [11, 1] : [0, 0])),
        `${label}: values and calls of a fetch only`,
      );
    }
    // The give-back at close is published too.
    assert.equal(await cached.next(), 2);
    events.length = 0;
    proxy.clear();
    await client.close();
    const sent = proxy
      .commands()
      .map((c) => Object.keys(c)[0])
      .filter((c) => DATA_COMMANDS.has(c));
    assert.deepEqual(sent, ['findAndModify'], 'the close gives the tail back');
    assert.deepEqual(
      events.map((e) => [e.operation, e.counter, e.outcome]),
      [['findAndModify', `${masked}-cached`, 'ok']],
    );
  } finally {
    diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
    await client.close();
    await proxy.close();
  }
});

test('a management command that fails publishes its error code', async () => {
  // A unique index over the counter field: a second counter at the same value collides.
  await env.db.collection('mgmt_conflict').createIndex({ sequence_value: 1 }, { unique: true });
  const options = { collection: 'mgmt_conflict' };
  assert.equal(await pkg.sequence(env.db, 'mgmt-a', options).init({ start: 5 }), true);
  const events = [];
  const listener = (message) => events.push(message);
  diagnostics.subscribe('mongodb-sequence:round-trip', listener);
  try {
    await rejectsWithCode(assert, pkg.sequence(env.db, 'mgmt-b', options).init({ start: 5 }), 'INDEX_CONFLICT');
  } finally {
    diagnostics.unsubscribe('mongodb-sequence:round-trip', listener);
  }
  assert.deepEqual(
    events.map((e) => [e.operation, e.counter, e.collection, e.outcome, e.code]),
    [['update', 'mgmt-b', 'mgmt_conflict', 'error', 'INDEX_CONFLICT']],
  );
});
