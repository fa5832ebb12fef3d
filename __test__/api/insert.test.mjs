// insertOne / insertMany with a sequence-assigned field (mongoose-sequence users' top
// complaint: insertMany gets no ids there), and the order they number in: concurrent
// insertOne calls get their numbers in the order they were made, as getNextSequenceValue
// does (both with coalescing, the default, and with `cache`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, Int32, Long, Double, Decimal128, ObjectId } from 'mongodb';
import * as driver6 from 'mongodb-v6';
import { setup, seq, rejectsWithCode, external, describeDeployment, needsTransactions } from '../helpers.mjs';
import { recordingProxy } from '../fixtures/security-lab.mjs';

// The test servers here take transactions; a MONGODB_URI standalone refuses them.
const noTransactions = external ? await needsTransactions() : false;
const refusesTransactions = external && !(await describeDeployment()).transactions;

let env;
before(async () => {
  env = await setup('insert');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test('insertOne numbers a field from a sequence created at start', async () => {
  const doc = { name: 'Laptop' };
  const result = await seq.insertOne(env.db, 'products', doc, { field: 'product_id', sequence: 'products', start: 1000 });
  assert.equal(result.acknowledged, true);
  assert.equal(doc.product_id, 1000, 'the document carries its number');
  await seq.insertOne(env.db, 'products', { name: 'Mouse' }, { field: 'product_id', start: 1000 });
  const stored = await env.db.collection('products').find().sort({ product_id: 1 }).project({ _id: 0 }).toArray();
  assert.deepEqual(stored, [
    { name: 'Laptop', product_id: 1000 },
    { name: 'Mouse', product_id: 1001 },
  ]);
});

test('insertMany reserves every id in one round trip and numbers in array order', async () => {
  await env.db.collection('counters').insertOne({ _id: 'tickets', sequence_value: 0 });
  const docs = Array.from({ length: 250 }, (_, i) => ({ i }));
  const result = await seq.insertMany(env.db, 'tickets', docs);
  assert.equal(result.insertedCount, 250);
  assert.deepEqual(
    docs.map((d) => d._id),
    Array.from({ length: 250 }, (_, i) => i + 1),
  );
  const stored = await env.db.collection('tickets').find().sort({ _id: 1 }).toArray();
  assert.deepEqual(
    stored.map((d) => [d._id, d.i]),
    docs.map((d) => [d._id, d.i]),
  );
  assert.equal((await env.db.collection('counters').findOne({ _id: 'tickets' })).sequence_value, 250);
});

test('concurrent insertMany calls never share a number', async () => {
  const batches = Array.from({ length: 10 }, (_, b) => Array.from({ length: 20 }, (_, i) => ({ b, i })));
  await Promise.all(batches.map((docs) => seq.insertMany(env.db, 'events', docs, { field: 'eventNo' })));
  const numbers = (await env.db.collection('events').find().toArray()).map((d) => d.eventNo).sort((a, b) => a - b);
  assert.deepEqual(
    numbers,
    Array.from({ length: 200 }, (_, i) => i + 1),
  );
});

test('business numbers and scoped sequences on insert', async () => {
  const year = new Date().getUTCFullYear();
  const doc = { total: 10 };
  await seq.insertOne(env.db, 'invoices', doc, { field: 'number', sequence: { type: 'invoice', year }, format: 'INV{YYYY}-{seq:5}' });
  assert.equal(doc.number, `INV${year}-00001`);
});

test('a failed insert leaves a gap, never a duplicate', async () => {
  await env.db.collection('uniq').createIndex({ code: 1 }, { unique: true });
  await seq.insertOne(env.db, 'uniq', { code: 'a' });
  await assert.rejects(seq.insertOne(env.db, 'uniq', { code: 'a' }), (e) => e.code === 11000);
  const doc = { code: 'b' };
  await seq.insertOne(env.db, 'uniq', doc);
  assert.equal(doc._id, 3, 'value 2 was consumed by the failed insert');
});

test('bad insert arguments are refused before any write', async () => {
  await rejectsWithCode(assert, seq.insertOne(env.db, 'products', { product_id: 5 }, { field: 'product_id' }), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertOne(env.db, 'products', 'doc'), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertMany(env.db, 'products', []), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertMany(env.db, 'products', {}), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertMany(env.db, 'products', [{}, 3]), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertOne(env.db, '', {}), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertOne(env.db, 'products', {}, { field: '$x' }), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertOne(env.db, 'products', {}, { collection: 'counters' }), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertOne(env.db, 'products', {}, { bogus: 1 }), 'INVALID_ARGUMENT');
  const own = await seq.connect(env.uri);
  await rejectsWithCode(assert, seq.insertOne(own.db(env.dbName), 'products', {}), 'INVALID_ARGUMENT');
  await own.close();
  assert.equal(await env.db.collection('products').countDocuments(), 2);
});

test('gapless: a failed insert gives its number back', { skip: noTransactions }, async () => {
  await env.db.collection('gapless_docs').createIndex({ code: 1 }, { unique: true });
  const opts = { gapless: true, field: 'no' };
  const first = { code: 'a', when: new Date(Date.UTC(2025, 0, 2)), tags: ['x'], big: 2n ** 40n };
  const result = await seq.insertOne(env.db, 'gapless_docs', first, opts);
  assert.deepEqual(Object.keys(result), ['acknowledged', 'insertedId'], "the driver's InsertOneResult shape");
  assert.equal(result.acknowledged, true);
  assert.match(result.insertedId, /^[0-9a-f]{24}$/, 'the generated ObjectId, as hex');
  assert.equal(first.no, 1);
  await rejectsWithCode(assert, seq.insertOne(env.db, 'gapless_docs', { code: 'a' }, opts), 'SERVER');
  const next = { code: 'b' };
  await seq.insertOne(env.db, 'gapless_docs', next, opts);
  assert.equal(next.no, 2, 'the failed insert gave number 2 back');
  const many = [{ code: 'c' }, { code: 'd' }];
  await seq.insertMany(env.db, 'gapless_docs', many, opts);
  assert.deepEqual(
    many.map((d) => d.no),
    [3, 4],
  );
  const stored = await env.db.collection('gapless_docs').find().sort({ no: 1 }).toArray();
  assert.deepEqual(
    stored.map((d) => d.no),
    [1, 2, 3, 4],
  );
  assert.ok(stored[0].when instanceof Date, 'types survive the conversion');
  assert.deepEqual(stored[0].tags, ['x']);
  assert.equal(stored[0].big, 2 ** 40);
  assert.equal((await env.db.collection('counters').findOne({ _id: 'gapless_docs' })).sequence_value, 4);
});

test('gapless: concurrent inserts are serialised without gap or duplicate', { skip: noTransactions }, async () => {
  const opts = { gapless: true, field: 'no', sequence: 'gapless_race' };
  await Promise.all(Array.from({ length: 20 }, (_, i) => seq.insertOne(env.db, 'gapless_race', { i }, opts)));
  const numbers = (await env.db.collection('gapless_race').find().toArray()).map((d) => d.no).sort((a, b) => a - b);
  assert.deepEqual(
    numbers,
    Array.from({ length: 20 }, (_, i) => i + 1),
  );
});

// The driver carries a client's read preference and read concern into a transaction: a
// read preference other than primary fails the transaction's first read (the read of a
// configured counter's settings), and real servers refuse `available` and `linearizable`
// there. The transaction reads on the primary with `local`, whatever the client asks.
test('gapless reads on the primary with local, whatever read settings the client has', { skip: noTransactions, timeout: 60_000 }, async () => {
  const proxy = await recordingProxy(env.address);
  try {
    const clientSettings = ['readPreference=secondaryPreferred&readConcernLevel=available', 'readConcernLevel=linearizable', 'readPreference=nearest&readConcernLevel=majority'];
    for (const [index, settings] of clientSettings.entries()) {
      const client = new MongoClient(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true&${settings}`, { serverSelectionTimeoutMS: 5000 });
      try {
        const name = `gapless_reads_${index}`;
        await seq.sequence(env.db, name).init({ start: 1, step: 1 });
        proxy.clear();
        const doc = { settings };
        await seq.insertOne(client.db(env.dbName), 'gapless_reads', doc, { gapless: true, field: 'no', sequence: name });
        assert.equal(doc.no, 1, settings);
        const opening = proxy.commands().filter((c) => c.startTransaction === true);
        assert.equal(opening.length, 1, `${settings}: one transaction, opened once`);
        assert.deepEqual(opening[0].readConcern, { level: 'local' }, settings);
        const inTransaction = proxy.commands().filter((c) => c.txnNumber !== undefined && c.autocommit === false);
        assert.ok(inTransaction.length >= 3, `${settings}: the read, the increment and the insert in the transaction`);
        // The read concern travels with the transaction's first command only.
        for (const command of inTransaction.slice(1)) assert.equal(command.readConcern, undefined, `${settings}: ${JSON.stringify(command)}`);
      } finally {
        await client.close();
      }
    }
  } finally {
    await seq.closeSharedClients();
    await proxy.close();
  }
});

test('gapless refuses documents it cannot convert, before any write', async () => {
  const before = await env.db.collection('counters').findOne({ _id: 'gapless_docs' });
  const code = { _bsontype: 'Code', code: 'function () {}' };
  await rejectsWithCode(assert, seq.insertOne(env.db, 'gapless_docs', { code }, { gapless: true }), 'INVALID_ARGUMENT');
  await rejectsWithCode(assert, seq.insertOne(env.db, 'gapless_docs', { big: 2n ** 70n }, { gapless: true }), 'INVALID_ARGUMENT');
  assert.deepEqual(await env.db.collection('counters').findOne({ _id: 'gapless_docs' }), before);
});

const onlyWithoutTransactions = refusesTransactions ? false : 'needs a server that refuses transactions (MONGODB_URI to a standalone mongod)';
test('gapless on a server without transactions: TRANSACTIONS_UNSUPPORTED, nothing inserted, no number spent', { skip: onlyWithoutTransactions }, async () => {
  const opts = { gapless: true, field: 'no', sequence: 'gapless_refused' };
  await rejectsWithCode(assert, seq.insertOne(env.db, 'gapless_refused', { a: 1 }, opts), 'TRANSACTIONS_UNSUPPORTED');
  await rejectsWithCode(assert, seq.insertMany(env.db, 'gapless_refused', [{ a: 2 }, { a: 3 }], opts), 'TRANSACTIONS_UNSUPPORTED');
  assert.equal(await env.db.collection('gapless_refused').countDocuments(), 0);
  // The counter may have been created (outside the transaction), but handed out nothing.
  const doc = { a: 4 };
  await seq.insertOne(env.db, 'gapless_refused', doc, { field: 'no', sequence: 'gapless_refused' });
  assert.equal(doc.no, 1);
});

test('inserts can number from a counter found by other fields, with a step', async () => {
  const options = { counters: 'located_counters', counterField: 'seq', counterLocator: { id: 'docs', reference_value: null }, start: 5, step: 5 };
  const docs = [{ a: 1 }, { a: 2 }, { a: 3 }];
  await seq.insertMany(env.db, 'located_docs', docs, options);
  assert.deepEqual(
    docs.map((d) => d._id),
    [5, 10, 15],
  );
  const counter = await env.db.collection('located_counters').findOne({ id: 'docs' });
  assert.deepEqual([counter.reference_value, counter.seq], [null, 15]);
  assert.equal(counter._id.constructor.name, 'ObjectId');
  for (const bad of [5, 'x', {}, { _id: 1 }, { seq: 1 }]) {
    await rejectsWithCode(assert, seq.insertOne(env.db, 'located_docs', { a: 4 }, { ...options, counterLocator: bad }), 'INVALID_ARGUMENT');
  }
  await rejectsWithCode(assert, seq.insertOne(env.db, 'located_docs', { a: 4 }, { ...options, step: 0 }), 'INVALID_ARGUMENT');
  assert.equal(await env.db.collection('located_docs').countDocuments(), 3, 'refused calls inserted nothing');
});

/** Both insert modes where this server takes transactions, else the plain one. */
const modes = noTransactions ? [false] : [false, true];

test('documents that cannot take their number (frozen, sealed, not extensible) are refused before any is spent', async () => {
  await seq.insertOne(env.db, 'fixed_docs', { a: 0 }, { field: 'no' });
  const makers = { frozen: Object.freeze, sealed: Object.seal, 'not extensible': Object.preventExtensions };
  for (const [kind, make] of Object.entries(makers)) {
    for (const gapless of modes) {
      const opts = { field: 'no', gapless };
      const label = `${kind}, gapless: ${gapless}`;
      const one = await rejectsWithCode(assert, seq.insertOne(env.db, 'fixed_docs', make({ _id: `${kind}-one` }), opts), 'INVALID_ARGUMENT');
      assert.match(one.message, /document 0 .*(frozen|sealed|extensible)/, label);
      const docs = [{ _id: `${kind}-a` }, make({ _id: `${kind}-b` })];
      const many = await rejectsWithCode(assert, seq.insertMany(env.db, 'fixed_docs', docs, opts), 'INVALID_ARGUMENT');
      assert.match(many.message, /document 1 /, label);
      assert.equal(docs[0].no, undefined, `${label}: the other document was left alone`);
    }
  }
  assert.equal((await env.db.collection('counters').findOne({ _id: 'fixed_docs' })).sequence_value, 1, 'no number was spent');
  assert.deepEqual(await env.db.collection('fixed_docs').find().project({ _id: 0 }).toArray(), [{ a: 0, no: 1 }], 'nothing was inserted');
});

test('a document whose setter or Proxy drops the number is not inserted without it', async () => {
  const dropping = () =>
    new Proxy(
      { a: 1 },
      {
        set: () => true,
      },
    );
  const ignoring = () => Object.defineProperty({ a: 2 }, 'no', { get: () => undefined, set: () => {}, enumerable: true });
  for (const make of [dropping, ignoring]) {
    const e = await rejectsWithCode(assert, seq.insertOne(env.db, 'dropped_docs', make(), { field: 'no' }), 'INVALID_ARGUMENT');
    assert.match(e.message, /did not keep its number \d+/);
    assert.match(e.message, /left unused/);
    const many = [{ a: 3 }, make()];
    await rejectsWithCode(assert, seq.insertMany(env.db, 'dropped_docs', many, { field: 'no' }), 'INVALID_ARGUMENT', /document 1 did not keep/);
  }
  assert.equal(await env.db.collection('dropped_docs').countDocuments(), 0, 'nothing was inserted without its number');
});

test('a document whose field the driver would not store is refused before any number is spent', async () => {
  await seq.insertOne(env.db, 'hidden_docs', { a: 0 }, { field: 'no' });
  class Accessor {
    #no;
    get no() {
      return this.#no;
    }
    set no(v) {
      this.#no = v;
    }
  }
  const makers = {
    'a class accessor': () => new Accessor(),
    'a non-enumerable own field': () => Object.defineProperty({ a: 1 }, 'no', { value: undefined, writable: true, enumerable: false }),
    'a field of its prototype': () => Object.create({ no: null }),
  };
  for (const [kind, make] of Object.entries(makers)) {
    for (const gapless of modes) {
      const label = `${kind}, gapless: ${gapless}`;
      const e = await rejectsWithCode(assert, seq.insertOne(env.db, 'hidden_docs', make(), { field: 'no', gapless }), 'INVALID_ARGUMENT');
      assert.match(e.message, /document 0 has 'no' as an inherited or non-enumerable property/, label);
      await rejectsWithCode(assert, seq.insertMany(env.db, 'hidden_docs', [{ a: 2 }, make()], { field: 'no', gapless }), 'INVALID_ARGUMENT', /document 1 has 'no'/);
    }
  }
  // A Proxy that stores the number as a field the driver skips is caught when read back.
  const hiding = new Proxy({ a: 3 }, { set: (target, key, value) => Reflect.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: false }) });
  await rejectsWithCode(
    assert,
    seq.insertOne(env.db, 'hidden_docs', hiding, { field: 'no' }),
    'INVALID_ARGUMENT',
    /did not keep its number 2 in 'no' as a field the driver stores/,
  );
  assert.equal((await env.db.collection('counters').findOne({ _id: 'hidden_docs' })).sequence_value, 2, 'only the read-back spent a number');
  assert.deepEqual(await env.db.collection('hidden_docs').find().project({ _id: 0 }).toArray(), [{ a: 0, no: 1 }], 'nothing was inserted');
});

test('a document that says how it is stored (toBSON) is inserted with its number', async () => {
  class Record {
    #no;
    get no() {
      return this.#no;
    }
    set no(v) {
      this.#no = v;
    }
    toBSON() {
      return { kind: 'record', no: this.#no };
    }
  }
  const doc = new Record();
  await seq.insertOne(env.db, 'records', doc, { field: 'no' });
  await seq.insertMany(env.db, 'records', [new Record(), new Record()], { field: 'no' });
  assert.equal(doc.no, 1);
  const stored = await env.db.collection('records').find().sort({ no: 1 }).project({ _id: 0 }).toArray();
  assert.deepEqual(
    stored,
    [1, 2, 3].map((no) => ({ kind: 'record', no })),
  );
});

test('insertMany inserts the documents the array held when it was called, each once', async () => {
  const docs = [{ a: 1 }];
  const pending = seq.insertMany(env.db, 'grown_docs', docs, { field: 'no' });
  docs.push({ a: 2 });
  const result = await pending;
  assert.equal(result.insertedCount, 1);
  assert.equal(docs[1].no, undefined);
  assert.deepEqual(await env.db.collection('grown_docs').find().project({ _id: 0 }).toArray(), [{ a: 1, no: 1 }]);

  const twice = { a: 3 };
  for (const gapless of modes) {
    const e = await rejectsWithCode(assert, seq.insertMany(env.db, 'grown_docs', [{ a: 4 }, twice, twice], { field: 'no', gapless }), 'INVALID_ARGUMENT');
    assert.match(e.message, /one document object more than once/);
    assert.deepEqual(Object.keys(twice), ['a'], `gapless: ${gapless}: no _id or number was written into it`);
  }
  assert.equal((await env.db.collection('counters').findOne({ _id: 'grown_docs' })).sequence_value, 1, 'no number was spent');
  assert.equal(await env.db.collection('grown_docs').countDocuments(), 1);
});

test('gapless: a document that drops its number after the commit is reported as inserted, with its number', { skip: noTransactions }, async () => {
  const doc = Object.defineProperty({ a: 1 }, 'no', { get: () => undefined, set: () => {}, enumerable: true });
  const e = await rejectsWithCode(assert, seq.insertOne(env.db, 'gapless_dropped', doc, { field: 'no', gapless: true }), 'INVALID_ARGUMENT');
  assert.match(e.message, /inserted/);
  assert.doesNotMatch(e.message, /unused/);
  assert.match(e.message, /\b1\b/, 'the message gives the number the document was inserted with');
  assert.deepEqual(await env.db.collection('gapless_dropped').find().project({ _id: 0 }).toArray(), [{ a: 1, no: 1 }]);
});

test('gapless: documents replaced in the array during the call keep their numbers; the call resolves', { skip: noTransactions }, async () => {
  const docs = [{ i: 0 }, { i: 1 }];
  const originals = [...docs];
  const pending = seq.insertMany(env.db, 'gapless_replaced', docs, { gapless: true, field: 'no' });
  docs[0] = 'not a document';
  docs[1] = { i: 'replacement' };
  const result = await pending;
  assert.equal(result.insertedCount, 2);
  assert.deepEqual(
    originals.map((d) => d.no),
    [1, 2],
    'the documents inserted carry their numbers',
  );
  assert.equal(docs[1].no, undefined, 'the replacement was neither inserted nor numbered');
  const stored = await env.db.collection('gapless_replaced').find().sort({ no: 1 }).project({ _id: 0 }).toArray();
  assert.deepEqual(stored, [
    { i: 0, no: 1 },
    { i: 1, no: 2 },
  ]);
});

test("gapless inserts honour the client's pkFactory and ignoreUndefined, as the driver's inserts do", { skip: noTransactions }, async () => {
  let made = 0;
  const client = new MongoClient(env.uri, { pkFactory: { createPk: () => `custom-${++made}` }, ignoreUndefined: true, serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  try {
    const db = client.db(env.dbName);
    const shape = () => ({ note: undefined, nested: { gone: undefined, kept: 1 }, list: [undefined, 2] });
    const stored = async (name) => await env.db.collection(name).find().sort({ no: 1 }).toArray();
    const plain = shape();
    await seq.insertOne(db, 'pk_plain', plain, { field: 'no' });
    const gapless = shape();
    const result = await seq.insertOne(db, 'pk_gapless', gapless, { field: 'no', gapless: true });
    const expected = (id) => ({ _id: id, no: 1, nested: { kept: 1 }, list: [null, 2] });
    assert.deepEqual(await stored('pk_plain'), [expected('custom-1')]);
    assert.deepEqual(await stored('pk_gapless'), [expected('custom-2')]);
    assert.equal(result.insertedId, 'custom-2');
    assert.equal(gapless._id, 'custom-2', 'the id is set on the document, as the driver sets it');
    const many = [{ a: undefined }, { _id: 'own', a: 1 }, { _id: null }];
    const manyResult = await seq.insertMany(db, 'pk_gapless', many, { field: 'no', gapless: true });
    assert.deepEqual(Object.values(manyResult.insertedIds), ['custom-3', 'own', 'custom-4']);
    assert.deepEqual((await stored('pk_gapless')).slice(1), [
      { _id: 'custom-3', no: 2 },
      { _id: 'own', a: 1, no: 3 },
      { _id: 'custom-4', no: 4 },
    ]);
  } finally {
    await client.close();
  }
  // Without them (the defaults): undefined is stored as null, and an _id of null or
  // undefined is replaced by an ObjectId, never stored as null.
  const doc = { _id: null, note: undefined };
  await seq.insertOne(env.db, 'pk_default', doc, { field: 'no', gapless: true });
  const [stored] = await env.db.collection('pk_default').find().toArray();
  assert.ok(stored._id instanceof ObjectId, `an ObjectId: ${stored._id}`);
  assert.equal(stored.note, null);
  assert.ok(doc._id instanceof ObjectId && doc._id.equals(stored._id), 'the id is set on the document');
});

test("gapless refuses a function the client's serializeFunctions would store as Code; without it, leaves it out as the driver does", { skip: noTransactions }, async () => {
  const client = new MongoClient(env.uri, { serializeFunctions: true, serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  try {
    const opts = { field: 'no', gapless: true, sequence: 'functions' };
    await rejectsWithCode(assert, seq.insertOne(client.db(env.dbName), 'functions', { a: 1, f() {} }, opts), 'INVALID_ARGUMENT', /"f".*serializeFunctions/);
    assert.equal(await env.db.collection('functions').countDocuments(), 0);
    await seq.insertOne(env.db, 'functions', { a: 2, f() {} }, opts);
    assert.deepEqual(await env.db.collection('functions').find().project({ _id: 0 }).toArray(), [{ a: 2, no: 1 }]);
  } finally {
    await client.close();
  }
});

test('gapless writes real BSON wrappers only, never a look-alike, and never a saturated number', { skip: noTransactions }, async () => {
  const opts = { gapless: true, field: 'no', sequence: 'bson_docs' };
  const real = (bson) => ({
    int: new bson.Int32(-5),
    long: bson.Long.fromString('9007199254740993'),
    double: new bson.Double(2),
    decimal: bson.Decimal128.fromString('1.10'),
    oid: new bson.ObjectId('0123456789abcdef01234567'),
  });
  for (const bson of [{ Int32, Long, Double, Decimal128, ObjectId }, driver6]) {
    await seq.insertOne(env.db, 'bson_docs', real(bson), opts);
  }
  const stored = await env.db.collection('bson_docs').find({}, { promoteValues: false }).sort({ no: 1 }).toArray();
  assert.equal(stored.length, 2, 'wrappers of bson 7 (driver 7) and bson 6 (driver 6) are both written');
  for (const doc of stored) {
    assert.deepEqual(
      [doc.int._bsontype, doc.int.value, doc.long._bsontype, doc.long.toString(), doc.double._bsontype, doc.decimal.toString(), doc.oid.toHexString()],
      ['Int32', -5, 'Long', '9007199254740993', 'Double', '1.10', '0123456789abcdef01234567'],
    );
  }
  const before = await env.db.collection('counters').findOne({ _id: 'bson_docs' });
  const outOfRange = new Int32(1);
  outOfRange.value = 123456789012;
  const refused = [
    JSON.parse('{"_bsontype":"Int32","value":123456789012}'),
    JSON.parse('{"_bsontype":"Int32","value":5}'),
    JSON.parse('{"_bsontype":"Double","value":1.5}'),
    { _bsontype: 'Long', toString: () => '5' },
    { _bsontype: 'ObjectId', toHexString: () => '0123456789abcdef01234567' },
    outOfRange,
    Object.assign(new Int32(1), { value: 1.5 }),
  ];
  for (const value of refused) {
    await rejectsWithCode(assert, seq.insertOne(env.db, 'bson_docs', { nested: { value } }, opts), 'INVALID_ARGUMENT', /"nested\.value"/);
    await rejectsWithCode(assert, seq.insertMany(env.db, 'bson_docs', [{ a: 1 }, { list: [value] }], opts), 'INVALID_ARGUMENT', /"list\.0"/);
  }
  assert.deepEqual(await env.db.collection('counters').findOne({ _id: 'bson_docs' }), before, 'no number spent');
  assert.equal(await env.db.collection('bson_docs').countDocuments(), 2, 'nothing inserted');
});

// ---------------------------------------------------------------- numbering order

const ascending = (values) => values.every((v, i) => i === 0 || v > values[i - 1]);

for (const [label, options] of [
  ['coalesced (default)', {}],
  ['cached', { cache: 4 }],
]) {
  test(`concurrent insertOne calls are numbered in call order: ${label}`, async () => {
    const collection = `order_${label.split(' ')[0]}`;
    // The first call opens the client; later rounds find it open.
    for (let round = 0; round < 12; round++) {
      const docs = Array.from({ length: 8 }, (_, i) => ({ round, i }));
      const results = await Promise.all(docs.map((doc) => seq.insertOne(env.db, collection, doc, options)));
      const ids = results.map((r) => r.insertedId);
      assert.deepEqual(
        ids,
        docs.map((d) => d._id),
        'each document carries its own number',
      );
      assert.ok(ascending(ids), `round ${round}: ${ids.join(', ')}`);
    }
    // Mixed with insertMany and getNextSequenceValue on the same counter with the same
    // options (inserts create the counter on first use, so upsert: true): one order.
    const calls = [];
    for (let i = 0; i < 8; i++) {
      if (i % 3 === 0) calls.push(seq.getNextSequenceValue(env.db, collection, { ...options, upsert: true }).then((v) => [v]));
      else if (i % 3 === 1) calls.push(seq.insertMany(env.db, collection, [{ m: i }, { m: i }], options).then((r) => Object.values(r.insertedIds)));
      else calls.push(seq.insertOne(env.db, collection, { m: i }, options).then((r) => [r.insertedId]));
    }
    const flat = (await Promise.all(calls)).flat();
    assert.ok(ascending(flat), flat.join(', '));
    const stored = await env.db
      .collection(collection)
      .find({}, { projection: { _id: 1 } })
      .toArray();
    assert.equal(new Set(stored.map((d) => d._id)).size, stored.length, 'no number twice');
  });
}
