// The hardened boundary: inputs that used to abort the process, promises that used to
// stay pending, messages that used to echo huge inputs, and passwords in every place an
// error can show them. Each case must settle with an Error carrying a string `code`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { setup, seq, rejectsWithCode } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('boundary');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

/** Fails instead of hanging when `promise` does not settle within `ms`. */
function settles(promise, ms = 15_000) {
  let timer;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, hang]).finally(() => clearTimeout(timer));
}

/** Everything an error shows: message, stack, cause and own properties. */
function shown(error) {
  const parts = [error.message, error.stack, String(error.cause ?? '')];
  for (const key of Object.getOwnPropertyNames(error)) parts.push(String(error[key]));
  return parts.join('\n');
}

/** A throwing-on-write document: `_id` has a setter that throws. */
function documentWithThrowingSetter() {
  const doc = { name: 'x' };
  Object.defineProperty(doc, '_id', {
    get: () => undefined,
    set: () => {
      throw new Error('setter says no');
    },
    enumerable: true,
    configurable: true,
  });
  return doc;
}

const throwingProxy = () =>
  new Proxy(
    {},
    {
      set() {
        throw new Error('set trap says no');
      },
      defineProperty() {
        throw new Error('defineProperty trap says no');
      },
    },
  );

/** A Node driver Db whose `collection` can be replaced by the test. */
function replaceableDb() {
  const db = Object.create(env.db);
  db.collection = (name) => env.db.collection(name);
  return db;
}

test("a Node client's connection string is never read (one the driver parser panics on cannot reach it)", async () => {
  const db = { databaseName: 'a', client: { s: { url: 'mongodb://u:%aé@h/' } } };
  const e = await rejectsWithCode(assert, settles(seq.getNextSequenceValue(db, 'x')), 'UNSUPPORTED_CLIENT', /options/);
  assert.ok(!shown(e).includes('%aé'), shown(e));
});

test('connect and the uri option refuse the URIs the driver parser panics on', async () => {
  for (const uri of ['mongodb://u:%aé@h/', 'mongodb://u%é:p@h/', 'mongodb://u:p%@h/', 'mongodb://é:%é%@h/']) {
    const e = await rejectsWithCode(assert, settles(seq.connect(uri)), 'INVALID_ARGUMENT');
    assert.ok(!shown(e).includes('é'), shown(e));
    await rejectsWithCode(assert, settles(seq.getNextSequenceValue(env.db, 'x', { uri })), 'INVALID_ARGUMENT');
  }
});

test('lengths are checked before anything is allocated', async () => {
  await rejectsWithCode(assert, settles(seq.insertMany(env.db, 'c', new Array(2 ** 32 - 1))), 'INVALID_ARGUMENT', /4294967295/);
  await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', { a: new Array(2 ** 32 - 1) }, { gapless: true })), 'INVALID_ARGUMENT', /array of 4294967295 elements/);
  const nested = { a: [[new Array(2 ** 31)]] };
  await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', nested, { gapless: true })), 'INVALID_ARGUMENT');
  const big = { a: 'x'.repeat(9 * 1024 * 1024), b: 'y'.repeat(9 * 1024 * 1024) };
  await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', big, { gapless: true })), 'INVALID_ARGUMENT', /16 MiB/);
  // A subtree shared 2^40 times by reference: refused by size, not expanded.
  let shared = { leaf: 'x'.repeat(100) };
  for (let i = 0; i < 40; i++) shared = { a: shared, b: shared };
  await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', shared, { gapless: true })), 'INVALID_ARGUMENT', /16 MiB/);
});

test('circular and too deep documents are refused naming the field', async () => {
  const circular = { a: { b: {} } };
  circular.a.b.back = circular;
  await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', circular, { gapless: true })), 'INVALID_ARGUMENT', /circular reference/);
  let deep = { end: 1 };
  for (let i = 0; i < 150; i++) deep = { d: deep };
  await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', deep, { gapless: true })), 'INVALID_ARGUMENT', /deeper than 100/);
  for (const value of [Symbol('s'), () => 1]) {
    const doc = { ok: 1, arr: [value] };
    await rejectsWithCode(assert, settles(seq.insertOne(env.db, 'c', doc, { gapless: true })), 'INVALID_ARGUMENT', /"arr\.0"/);
  }
});

test('an array grown to 2^32 - 1 during the call is numbered without allocating it', async () => {
  const db = replaceableDb();
  db.collection = () => ({ insertMany: async (docs) => ({ acknowledged: true, insertedCount: 1, first: docs[0] }) });
  const docs = [{ a: 1 }];
  const pending = seq.insertMany(db, 'grown', docs);
  docs.length = 2 ** 32 - 1;
  const result = await settles(pending);
  assert.equal(result.first._id, 1);
});

test('exceptions thrown while numbers are written back reject the promise', async () => {
  const cases = [
    ['a throwing _id setter', () => seq.insertOne(env.db, 'wb', documentWithThrowingSetter()), /setter says no/],
    ['a Proxy whose set trap throws', () => seq.insertOne(env.db, 'wb', throwingProxy()), /trap says no/],
    [
      // insertMany numbers the documents its array held when called (replacing docs[0]
      // afterwards changes nothing), so the document itself starts throwing.
      'a document whose set trap starts throwing after the call',
      () => {
        let armed = false;
        const doc = new Proxy(
          { a: 1 },
          {
            set(target, key, value) {
              if (armed) throw new Error('trap says no');
              return Reflect.set(target, key, value);
            },
          },
        );
        const p = seq.insertMany(env.db, 'wb', [doc]);
        armed = true;
        return p;
      },
      /trap says no/,
    ],
    [
      'db.collection replaced by a throwing function after the call',
      () => {
        const db = replaceableDb();
        const p = seq.insertOne(db, 'wb', { a: 1 });
        db.collection = () => {
          throw new Error('collection is gone');
        };
        return p;
      },
      /collection is gone/,
    ],
    ['gapless, a throwing _id setter', () => seq.insertOne(env.db, 'wbg', documentWithThrowingSetter(), { gapless: true, field: 'n' }), null],
  ];
  for (const [label, call, pattern] of cases) {
    let error;
    try {
      await settles(call());
    } catch (e) {
      error = e;
    }
    if (pattern === null) continue; // settled either way (the field written is `n`, not `_id`)
    assert.ok(error instanceof Error, `${label}: rejects with an Error`);
    assert.equal(typeof error.code, 'string', `${label}: has a code`);
    assert.match(`${error.message} ${error.cause}`, pattern, label);
  }
});

test('db.collection made a value of the wrong type during the call rejects with INVALID_ARGUMENT', async () => {
  // napi refuses the value by its status (a function, an object expected): an argument
  // error, whatever the words of napi's message.
  for (const replacement of ['not a function', () => 'not a collection', () => ({ insertOne: 42 })]) {
    const db = replaceableDb();
    const pending = seq.insertOne(db, 'wrong_types', { a: 1 });
    db.collection = replacement;
    await rejectsWithCode(assert, settles(pending), 'INVALID_ARGUMENT');
  }
});

test('messages quote a short prefix of huge inputs', async () => {
  const huge = '\uD800'.repeat(2 ** 26);
  const formatError = (() => {
    try {
      seq.formatSequence(1, huge);
    } catch (e) {
      return e;
    }
  })();
  assert.equal(formatError.code, 'INVALID_ARGUMENT');
  assert.ok(formatError.message.length < 500, `${formatError.message.length} characters`);
  const client = await seq.connect(env.uri);
  try {
    for (const name of [huge, 'x'.repeat(1000), 'a/b'.repeat(100)]) {
      assert.throws(
        () => client.db(name),
        (e) => e.code === 'INVALID_ARGUMENT' && e.message.length < 500,
      );
    }
    const circular = {};
    circular.self = circular;
    let deep = {};
    for (let i = 0; i < 10_000; i++) deep = { deep };
    for (const name of [circular, deep, new Array(2 ** 32 - 1), Symbol('db'), 5n, null]) {
      assert.throws(
        () => client.db(name),
        (e) => e.code === 'INVALID_ARGUMENT',
        String(typeof name),
      );
    }
  } finally {
    await client.close();
  }
  await rejectsWithCode(assert, settles(seq.getNextSequenceValue(env.db, huge)), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, settles(seq.getNextSequenceValue(env.db, 'x', { collection: huge })), 'INVALID_ARGUMENT');
});

test('arguments whose getters or traps throw reject with INVALID_ARGUMENT and the cause', async () => {
  const boom = new Error('getter boom');
  const db = replaceableDb();
  // [argument, the calls that read it through the throwing trap or getter]
  const cases = [
    [
      new Proxy(
        {},
        {
          get() {
            throw boom;
          },
        },
      ),
      ['db', 'doc', 'list'],
    ],
    [
      new Proxy(
        {},
        {
          ownKeys() {
            throw boom;
          },
        },
      ),
      ['name', 'options', 'handle name'],
    ],
    [
      Object.defineProperty({}, 'databaseName', {
        get() {
          throw boom;
        },
        enumerable: true,
      }),
      ['db', 'name', 'list', 'handle name'],
    ],
  ];
  for (const [value, throwing] of cases) {
    const calls = {
      db: () => seq.getNextSequenceValue(value, 'x'),
      name: () => seq.getNextSequenceValue(db, value),
      options: () => seq.getNextSequenceValue(db, 'x', value),
      doc: () => seq.insertOne(db, 'c', value),
      list: () => seq.listSequences(value),
      'handle name': async () => seq.sequence(db, value),
    };
    for (const [label, call] of Object.entries(calls)) {
      let error;
      try {
        await settles(call());
      } catch (e) {
        error = e;
      }
      if (!throwing.includes(label)) continue; // the trap was not reached: any outcome
      assert.ok(error instanceof Error, label);
      assert.equal(error.code, 'INVALID_ARGUMENT', `${label}: ${error.message}`);
      assert.equal(error.cause, boom, `${label}: the thrown value is the cause`);
    }
  }
});

test('a trap or getter throwing a value that is not an Error: the error has a code and that very value as cause', async () => {
  const cyclic = new Error('cyclic cause');
  cyclic.cause = cyclic; // used to overflow the stack (a crash of the process)
  const thrownValues = [
    Symbol('boom'),
    undefined,
    null,
    42,
    'text',
    Object.create(null),
    cyclic,
    new Proxy(
      {},
      {
        get() {
          throw Symbol('inner');
        },
      },
    ),
  ];
  const db = replaceableDb();
  for (const thrown of thrownValues) {
    const trap = {
      ownKeys() {
        throw thrown;
      },
      get() {
        throw thrown;
      },
    };
    const calls = {
      db: () =>
        seq.getNextSequenceValue(
          new Proxy(
            {},
            {
              get() {
                throw thrown;
              },
            },
          ),
          'x',
        ),
      getter: () =>
        seq.getNextSequenceValue(
          Object.defineProperty({}, 'databaseName', {
            get() {
              throw thrown;
            },
            enumerable: true,
          }),
          'x',
        ),
      name: () => seq.getNextSequenceValue(db, new Proxy({}, trap)),
      options: () => seq.getNextSequenceValue(db, 'x', new Proxy({}, trap)),
      doc: () => seq.insertOne(db, 'c', new Proxy({}, trap)),
      'handle name (sync)': async () => seq.sequence(db, new Proxy({}, trap)),
      'locator (sync)': async () => seq.counterAt(db, new Proxy({}, trap)),
      'fields of setCountersWhere': () => seq.setCountersWhere(db, new Proxy({}, trap), 0),
    };
    for (const [label, call] of Object.entries(calls)) {
      const what = `${label}, thrown ${typeof thrown}`;
      let error;
      try {
        await settles(call());
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof Error, `${what}: an Error (${error})`);
      assert.equal(error.code, 'INVALID_ARGUMENT', `${what}: ${error.message}`);
      assert.ok(Object.is(error.cause, thrown), `${what}: the thrown value is the cause`);
    }
  }
});

test('no password in any error, whatever it is made of', async () => {
  const passwords = ['p%40ss:w%2Frd', 'pässwörd', 'sécr%C3%A9t', 'a%25b'];
  for (const encoded of passwords) {
    const decoded = decodeURIComponent(encoded);
    const uri = `mongodb://user:${encoded}@127.0.0.1:9/db?serverSelectionTimeoutMS=200`;
    const errors = [];
    for (const call of [
      () => seq.connect(uri),
      () => seq.getNextSequenceValue(env.db, 'x', { uri }),
      () => seq.getNextSequenceValue({ databaseName: 'db', client: { s: { url: uri }, options: {} } }, 'x'),
      () => seq.connect(`${uri}&authMechanism=NOPE`),
      () => seq.connect(uri.replace('127.0.0.1:9', '')),
    ]) {
      try {
        await settles(call());
      } catch (e) {
        errors.push(e);
      }
    }
    assert.equal(errors.length, 5);
    for (const e of errors) {
      assert.equal(typeof e.code, 'string');
      for (const secret of [encoded, decoded]) assert.ok(!shown(e).includes(secret), `${secret} in ${shown(e)}`);
    }
  }
  // Credentials given only in a Node driver client's options: carried over, and the
  // server (which has no such user) refuses them.
  const client = new MongoClient(env.uri, { auth: { username: 'u', password: 'opt-pässwörd' }, serverSelectionTimeoutMS: 5000 });
  const e = await rejectsWithCode(assert, settles(seq.getNextSequenceValue(client.db('x'), 'x')), 'CONNECTION');
  assert.ok(!shown(e).includes('opt-pässwörd'));
  await client.close();
});
