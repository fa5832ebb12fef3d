// The drop-ins on one schema used on several tenant databases (`connection.useDb`).
// @typegoose/auto-increment 5.0.1 and mongoose-plugin-autoinc 1.1.9 number every tenant
// from one counter, in the database of the first tenant that numbered; the drop-ins keep a
// counter per tenant, and where a tenant's counter is absent but its documents hold
// numbers, continue after them: taking over from theirs, no number twice in a tenant and
// nothing renumbered, by save, create, insertMany, bulkWrite, upserts and nextCount; two
// processes taking a tenant's first numbers at once get distinct ones. mongoose-auto-increment
// keeps its counter in the connection `initialize` was given, as its drop-in does: one
// counter for every tenant on both sides, continued.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import mongoose9 from 'mongoose';
import mongoose8 from 'mongoose-v8';
import mongoose6 from 'mongoose-v6';
import { loadOn, openOn, withCountersCollection } from '../fixtures/old-autoinc.mjs';
import { setup, seq } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const oursTypegoose = require('mongodb-sequence/mongoose/typegoose');
const theirsTypegoose = require('@typegoose/auto-increment');
const oursAutoinc = require('mongodb-sequence/mongoose/plugin-autoinc');
const oursMai = require('mongodb-sequence/mongoose/auto-increment');
const AutoIncrementFactory = require('mongodb-sequence/mongoose');

let env;
let made = 0;
/** The connections opened (closed at the end) and the databases used (dropped at the end). */
const opened = [];
const databases = new Set();
before(async () => {
  env = await setup('dropin_tenants');
});
after(async () => {
  for (const connection of opened) await connection.close();
  for (const name of databases) await env.client.db(name).dropDatabase();
  await seq.closeSharedClients();
  await env?.close();
});

/** An open connection of `mongoose` to a database of its own for this test (dropped at the end). */
async function connectionOf(mongoose, label, options) {
  const connection = await openOn(mongoose, env.uri, `${env.dbName}_${label}_${made++}`, options);
  opened.push(connection);
  databases.add(connection.name);
  return connection;
}

/** `connection.useDb` of each tenant, with the collections made first (see withCountersCollection). */
async function tenantsOf(connection, tenants, collections) {
  const dbs = {};
  for (const tenant of tenants) {
    const db = connection.useDb(`${connection.name}_${tenant}`);
    databases.add(db.name);
    await withCountersCollection(db);
    for (const name of collections) {
      const exists = await db.db.listCollections({ name }).toArray();
      if (exists.length === 0) await db.db.createCollection(name);
    }
    dbs[tenant] = db;
  }
  return dbs;
}

/** The same databases through another connection (another side), `useDb` of each. */
function sameTenants(connection, dbs) {
  return Object.fromEntries(Object.entries(dbs).map(([tenant, db]) => [tenant, connection.useDb(db.name)]));
}

/** `[tag, number]` of every document of `collection` in `db`, by tag. */
async function stored(db, collection, field) {
  const docs = await db.db.collection(collection).find({}).toArray();
  return docs.map((d) => [d.tag, d[field]]).sort(([x], [y]) => x - y);
}

/** Fails when a number (per group, when `group` names the grouping field) is stored twice. */
function assertNoneTwice(rows, label) {
  const seen = new Map();
  for (const [tag, number, group] of rows) {
    const key = `${group ?? ''}:${number}`;
    assert.ok(!seen.has(key), `${label}: ${key} stored twice (tags ${seen.get(key)} and ${tag})`);
    seen.set(key, tag);
  }
}

test('typegoose: theirs numbers tenants A and B from one counter in A; ours continues each tenant after its numbers, by every write', async () => {
  const connection = await connectionOf(mongoose9, 'tg');
  const dbs = await tenantsOf(connection, ['a', 'b'], ['items']);
  const theirsSchema = new mongoose9.Schema({ _id: Number, tag: Number });
  theirsSchema.plugin(theirsTypegoose.AutoIncrementID, { startAt: 1 });
  const T = { a: dbs.a.model('Item', theirsSchema), b: dbs.b.model('Item', theirsSchema) };
  const order = ['a', 'a', 'b', 'a', 'b', 'b'];
  for (const [tag, tenant] of order.entries()) await new T[tenant]({ tag }).save();
  // Theirs: one counter, in the database of the first tenant that numbered.
  assert.deepEqual(await stored(dbs.a, 'items', '_id'), [
    [0, 1],
    [1, 2],
    [3, 4],
  ]);
  assert.deepEqual(await stored(dbs.b, 'items', '_id'), [
    [2, 3],
    [4, 5],
    [5, 6],
  ]);
  assert.equal(Number((await dbs.a.db.collection('identitycounters').findOne({ modelName: 'Item' })).count), 6);
  assert.equal(await dbs.b.db.collection('identitycounters').countDocuments({}), 0);
  const before = { a: await stored(dbs.a, 'items', '_id'), b: await stored(dbs.b, 'items', '_id') };

  // Ours, on the same databases (another connection, as after a restart).
  const again = sameTenants(await connectionOf(mongoose9, 'tg_ours'), dbs);
  const oursSchema = new mongoose9.Schema({ _id: Number, tag: Number });
  oursSchema.plugin(oursTypegoose.AutoIncrementID, { startAt: 1 });
  const O = { a: again.a.model('Item', oursSchema), b: again.b.model('Item', oursSchema) };
  const got = { a: [], b: [] };
  got.b.push((await new O.b({ tag: 10 }).save())._id);
  got.a.push((await O.a.create({ tag: 11 }))._id);
  got.b.push(...(await O.b.create([{ tag: 12 }, { tag: 13 }])).map((d) => d._id));
  got.a.push(...(await O.a.insertMany([{ tag: 14 }, { tag: 15 }])).map((d) => d._id));
  await O.b.bulkWrite([{ insertOne: { document: { tag: 16 } } }]);
  await O.a.updateOne({ tag: 17 }, { $set: { tag: 17 } }, { upsert: true });
  await O.b.findOneAndUpdate({ tag: 18 }, { $set: { tag: 18 } }, { upsert: true });
  // A continues theirs's counter (6, in A), B after its largest number (6).
  assert.deepEqual(got, { a: [7, 8, 9], b: [7, 8, 9] });
  const after = { a: await stored(dbs.a, 'items', '_id'), b: await stored(dbs.b, 'items', '_id') };
  // Nothing renumbered; the later writes after the earlier ones; none twice.
  for (const tenant of ['a', 'b']) {
    assert.deepEqual(after[tenant].slice(0, before[tenant].length), before[tenant], tenant);
    assertNoneTwice(after[tenant], tenant);
  }
  assert.deepEqual(after.a.slice(3), [
    [11, 7],
    [14, 8],
    [15, 9],
    [17, 10],
  ]);
  assert.deepEqual(after.b.slice(3), [
    [10, 7],
    [12, 8],
    [13, 9],
    [16, 10],
    [18, 11],
  ]);
  // A counter per tenant now: A's (theirs, continued) and B's, made at B's largest number.
  assert.equal(Number((await dbs.a.db.collection('identitycounters').findOne({ modelName: 'Item' })).count), 10);
  assert.equal(Number((await dbs.b.db.collection('identitycounters').findOne({ modelName: 'Item' })).count), 11);
});

test('typegoose: numbers a tenant holds before startAt leave the next at startAt; counting down, it continues below the smallest', async () => {
  const connection = await connectionOf(mongoose9, 'tg_edges');
  const dbs = await tenantsOf(connection, ['b'], ['ups', 'downs']);
  await dbs.b.db.collection('ups').insertMany([1, 2, 3].map((n) => ({ _id: n, tag: n })));
  await dbs.b.db.collection('downs').insertMany([-4, -5, 2].map((n, tag) => ({ _id: n, tag })));
  const up = new mongoose9.Schema({ _id: Number, tag: Number });
  up.plugin(oursTypegoose.AutoIncrementID, { startAt: 100 });
  const down = new mongoose9.Schema({ _id: Number, tag: Number });
  down.plugin(oursTypegoose.AutoIncrementID, { startAt: 0, incrementBy: -1 });
  const Up = dbs.b.model('Up', up);
  const Down = dbs.b.model('Down', down);
  assert.deepEqual([(await Up.create({ tag: 9 }))._id, (await Up.create({ tag: 10 }))._id], [100, 101]);
  assert.deepEqual([(await Down.create({ tag: 9 }))._id, (await Down.create({ tag: 10 }))._id], [-6, -7]);
});

/**
 * mongoose-plugin-autoinc's models on each tenant of `dbs`, from one schema each (one
 * plugin call): `Ticket` numbers `_id`, `Receipt` numbers `no` per shop (not unique).
 */
function autoincModels(dbs, plugin) {
  const mongoose = Object.values(dbs)[0].base;
  const ticket = new mongoose.Schema({ tag: Number });
  ticket.plugin(plugin, { model: 'Ticket', startAt: 1 });
  const receipt = new mongoose.Schema({ tag: Number, shop: String });
  receipt.plugin(plugin, { model: 'Receipt', field: 'no', groupingField: 'shop', startAt: 1, unique: false });
  return Object.fromEntries(Object.entries(dbs).map(([tenant, db]) => [tenant, { Ticket: db.model('Ticket', ticket), Receipt: db.model('Receipt', receipt) }]));
}

test('mongoose-plugin-autoinc: theirs numbers tenants A and B from one counter in A; ours continues each tenant and group, by every write and nextCount', async () => {
  const theirs = loadOn('mongoose-plugin-autoinc', 'mongoose-v8');
  const connection = await connectionOf(mongoose8, 'mpa');
  const dbs = await tenantsOf(connection, ['a', 'b'], ['tickets', 'receipts']);
  const T = autoincModels(dbs, theirs.autoIncrement);
  for (const M of Object.values(T)) for (const Model of Object.values(M)) await Model.init();
  const order = ['a', 'b', 'b', 'a', 'b'];
  for (const [tag, tenant] of order.entries()) {
    await new T[tenant].Ticket({ tag }).save();
    await new T[tenant].Receipt({ tag, shop: tag % 2 ? 'north' : 'south' }).save();
  }
  // Theirs: one counter per group, in the database of the first tenant that numbered.
  assert.deepEqual(await stored(dbs.b, 'tickets', '_id'), [
    [1, 2],
    [2, 3],
    [4, 5],
  ]);
  assert.equal(await dbs.b.db.collection('identitycounters').countDocuments({}), 0);
  const receiptsOf = async (db) => (await db.db.collection('receipts').find({}).toArray()).map((d) => [d.tag, d.no, d.shop]).sort(([x], [y]) => x - y);
  const before = { tickets: {}, receipts: {} };
  for (const tenant of ['a', 'b']) {
    before.tickets[tenant] = await stored(dbs[tenant], 'tickets', '_id');
    before.receipts[tenant] = await receiptsOf(dbs[tenant]);
  }
  // B's receipts: south 1, 3 (tags 2, 4)... as numbered from A's counters.
  assert.deepEqual(before.receipts.b, [
    [1, 1, 'north'],
    [2, 2, 'south'],
    [4, 3, 'south'],
  ]);

  for (const mongoose of [mongoose9, mongoose8]) {
    const again = sameTenants(await connectionOf(mongoose, 'mpa_ours', { autoIndex: false }), dbs);
    const O = autoincModels(again, oursAutoinc);
    const tag = mongoose === mongoose9 ? 100 : 200;
    // nextCount sees the tenant's own numbers before anything is written.
    const next = [await O.b.Ticket.nextCount(), await O.b.Receipt.nextCount('south'), await O.b.Receipt.nextCount('north'), await O.b.Receipt.nextCount('west')];
    await new O.b.Ticket({ tag }).save();
    await O.b.Ticket.create([{ tag: tag + 1 }]);
    await O.a.Ticket.insertMany([{ tag: tag + 2 }, { tag: tag + 3 }]);
    await O.b.Receipt.create([
      { tag: tag + 4, shop: 'south' },
      { tag: tag + 5, shop: 'north' },
    ]);
    await O.b.Receipt.insertMany([{ tag: tag + 6, shop: 'south' }]);
    await O.b.Receipt.bulkWrite([{ insertOne: { document: { tag: tag + 7, shop: 'north' } } }]);
    await O.b.Receipt.updateOne({ tag: tag + 8 }, { $set: { shop: 'south' } }, { upsert: true });
    await O.a.Receipt.updateOne({ tag: tag + 9 }, { $set: { shop: 'north' } }, { upsert: true });
    if (mongoose === mongoose9) {
      // B: tickets up to 5, south up to 3, north up to 1; west has none.
      assert.deepEqual(next, [6, 4, 2, 1]);
    } else {
      assert.deepEqual(next, [8, 7, 4, 1]);
    }
  }
  for (const tenant of ['a', 'b']) {
    const tickets = await stored(dbs[tenant], 'tickets', '_id');
    const receipts = await receiptsOf(dbs[tenant]);
    assert.deepEqual(tickets.slice(0, before.tickets[tenant].length), before.tickets[tenant], tenant);
    assert.deepEqual(receipts.slice(0, before.receipts[tenant].length), before.receipts[tenant], tenant);
    assertNoneTwice(tickets, `${tenant} tickets`);
    assertNoneTwice(receipts, `${tenant} receipts`);
  }
  assert.deepEqual((await stored(dbs.b, 'tickets', '_id')).slice(3), [
    [100, 6],
    [101, 7],
    [200, 8],
    [201, 9],
  ]);
  assert.deepEqual((await receiptsOf(dbs.b)).slice(3), [
    [104, 4, 'south'],
    [105, 2, 'north'],
    [106, 5, 'south'],
    [107, 3, 'north'],
    [108, 6, 'south'],
    [204, 7, 'south'],
    [205, 4, 'north'],
    [206, 8, 'south'],
    [207, 5, 'north'],
    [208, 9, 'south'],
  ]);
});

test('mongoose-auto-increment: theirs and ours number every tenant from the one counter of the connection given to initialize', async () => {
  const theirs = loadOn('mongoose-auto-increment', 'mongoose-v6');
  const home = await connectionOf(mongoose6, 'mai');
  const dbs = await tenantsOf(home, ['a', 'b'], ['items']);
  theirs.initialize(home);
  const plugged = (plugin, mongoose) => {
    const schema = new mongoose.Schema({ tag: Number });
    schema.plugin(plugin, { model: 'Item', startAt: 1 });
    return schema;
  };
  const theirsSchema = plugged(theirs.plugin, mongoose6);
  const T = { a: dbs.a.model('Item', theirsSchema), b: dbs.b.model('Item', theirsSchema) };
  for (const [tag, tenant] of ['a', 'b', 'b'].entries()) await new T[tenant]({ tag }).save();
  const ours = await connectionOf(mongoose9, 'mai_ours');
  // The same home database, through another connection.
  const homeAgain = ours.useDb(home.name);
  oursMai.initialize(homeAgain);
  const again = sameTenants(ours, dbs);
  const oursSchema = plugged(oursMai.plugin, mongoose9);
  const O = { a: again.a.model('Item', oursSchema), b: again.b.model('Item', oursSchema) };
  const got = [];
  for (const [tag, tenant] of ['b', 'a', 'b'].entries()) got.push((await new O[tenant]({ tag: 10 + tag }).save())._id);
  assert.deepEqual(got, [4, 5, 6]);
  assert.equal((await home.db.collection('identitycounters').findOne({ model: 'Item' })).count, 6);
  for (const db of Object.values(dbs)) assert.equal(await db.db.collection('identitycounters').countDocuments({}), 0);
});

test('two processes taking the first numbers of a tenant whose counter is absent but whose documents hold numbers: none twice, all after them', { timeout: 180_000 }, async () => {
  const worker = fileURLToPath(new URL('../fixtures/dropin-tenant-worker.mjs', import.meta.url));
  for (const plugin of ['typegoose', 'plugin-autoinc']) {
    const connection = await connectionOf(mongoose9, `procs_${plugin.replace('-', '_')}`);
    const dbs = await tenantsOf(connection, ['b'], ['items']);
    const field = plugin === 'typegoose' ? '_id' : 'no';
    await dbs.b.db.collection('items').insertMany(Array.from({ length: 20 }, (_, i) => ({ [field]: i + 1, tag: -1 })));
    const runs = await Promise.all(
      [1, 2].map((proc) => promisify(execFile)(process.execPath, [worker, env.uri, dbs.b.name, plugin, String(proc), '30', '6'], { timeout: 120_000 })),
    );
    const numbers = runs.flatMap((r) => JSON.parse(r.stdout));
    assert.equal(numbers.length, 60, plugin);
    assert.equal(new Set(numbers).size, numbers.length, `${plugin}: no number twice`);
    assert.ok(
      numbers.every((n) => n > 20),
      `${plugin}: after the numbers stored: ${numbers.filter((n) => n <= 20)}`,
    );
    const all = await dbs.b.db.collection('items').distinct(field);
    assert.equal(all.length, 80, `${plugin}: every document its own number`);
    assert.equal(await dbs.b.db.collection('identitycounters').countDocuments({}), 1, `${plugin}: one counter`);
  }
});

test('a tenant whose numbered field holds NaN, ±Infinity or a number past 2^63 besides numbers: those are passed over, numbering continues after the rest', async () => {
  const connection = await connectionOf(mongoose9, 'mpa_odd');
  // [tenant, the numbers stored, incrementBy, the next number]
  const cases = [
    ['down_nan', [-3, NaN], -1, -4],
    ['nan', [NaN], 1, 1],
    ['inf', [5, Infinity], 1, 6],
    ['down_inf', [-3, -Infinity], -1, -4],
    ['huge', [5, 1e300], 1, 6],
    ['down_huge', [-3, -1e300], -1, -4],
  ];
  const dbs = await tenantsOf(
    connection,
    cases.map(([tenant]) => tenant),
    ['receipts'],
  );
  for (const [tenant, values, step, next] of cases) {
    await dbs[tenant].db.collection('receipts').insertMany(values.map((no, tag) => ({ tag, no })));
    const schema = new mongoose9.Schema({ tag: Number });
    schema.plugin(oursAutoinc, { model: 'Receipt', field: 'no', startAt: step > 0 ? 1 : 0, incrementBy: step, unique: false });
    const Receipt = dbs[tenant].model('Receipt', schema);
    assert.equal(await Receipt.nextCount(), next, `${tenant}: nextCount`);
    assert.equal((await new Receipt({ tag: 10 }).save()).no, next, `${tenant}: save`);
    assert.deepEqual(
      (await Receipt.insertMany([{ tag: 11 }])).map((d) => d.no),
      [next + step],
      `${tenant}: insertMany`,
    );
  }
});

test("the reads that decide a counter (the seed, an old counter's conversion, syncCounterToMax, takeOverCounter) read the primary's latest, whatever the connection reads from and how", async () => {
  // A majority read could miss a number written a moment ago with w: 1.
  const connection = await connectionOf(mongoose9, 'rp', { readPreference: 'secondaryPreferred', readConcernLevel: 'majority', monitorCommands: true });
  const { b: db } = await tenantsOf(connection, ['b'], ['tickets', 'receipts', 'imported', 'taken', 'counters']);
  const commands = [];
  connection.getClient().on('commandStarted', (event) => commands.push(event));
  const mode = (event) => event.command.$readPreference?.mode ?? 'primary';
  const level = (event) => event.command.readConcern?.level;
  /** Each find or aggregate of `collection` sent since the last clear. */
  const sentTo = (collection) => commands.filter((e) => ['find', 'aggregate'].includes(e.commandName) && e.command[e.commandName] === collection);
  const readsOf = (collection) => sentTo(collection).map(mode);
  await db.db.collection('imported').findOne({});
  // A standalone server (mongoeco) is sent no read preference at all.
  const replicaSet = readsOf('imported')[0] !== 'primary';
  if (replicaSet) assert.deepEqual(readsOf('imported'), ['secondaryPreferred'], "the connection's own read carries it");
  assert.deepEqual(sentTo('imported').map(level), ['majority'], "the connection's own read carries its read concern");
  await db.db.collection('tickets').insertOne({ _id: 3, tag: 0 });
  await db.db.collection('receipts').insertOne({ tag: 0, no: 4, shop: 'north' });
  await db.db.collection('imported').insertOne({ tag: 0, no: 12 });
  const { Ticket, Receipt } = autoincModels({ b: db }, oursAutoinc).b;
  const AutoIncrement = AutoIncrementFactory(db);
  const imported = new mongoose9.Schema({ tag: Number, no: Number });
  imported.plugin(AutoIncrement, { id: 'rp_imported', inc_field: 'no' });
  const Imported = db.model('Imported', imported, 'imported');
  const taken = new mongoose9.Schema({ _id: Number });
  taken.plugin(AutoIncrement, { id: 'rp_taken' });
  const Taken = db.model('Taken', taken, 'taken');
  await db.db.collection('identitycounters').insertOne({ modelName: 'Taken', field: '_id', count: 30 });
  commands.length = 0;
  // The seeds (a model's counter, a group's), the conversion of an old counter (Ticket's).
  assert.equal((await new Ticket({ tag: 1 }).save())._id, 4);
  assert.equal((await new Receipt({ tag: 1, shop: 'north' }).save()).no, 5);
  assert.deepEqual(await AutoIncrementFactory.syncCounterToMax(Imported), [{ reference_value: null, value: 12 }]);
  assert.equal(await AutoIncrementFactory.takeOverCounter(Taken, 'typegoose'), 30);
  const decided = { tickets: readsOf('tickets'), receipts: readsOf('receipts'), imported: readsOf('imported'), identitycounters: readsOf('identitycounters') };
  for (const [collection, modes] of Object.entries(decided)) assert.ok(modes.length > 0, `a read of ${collection}: ${JSON.stringify(decided)}`);
  assert.ok(decided.identitycounters.length >= 2, `the conversion's and takeOverCounter's: ${JSON.stringify(decided)}`);
  for (const [collection, modes] of Object.entries(decided)) assert.ok(!modes.includes('secondaryPreferred'), `${collection}: ${JSON.stringify(decided)}`);
  const levels = Object.fromEntries(Object.keys(decided).map((collection) => [collection, sentTo(collection).map(level)]));
  for (const [collection, sent] of Object.entries(levels))
    assert.ok(
      sent.every((l) => l === 'local'),
      `${collection}: ${JSON.stringify(levels)}`,
    );
});

test("the seed of a counter without groups reads one document, sorted on the numbered field (an index serves it); a grouped one's look may spill to disk", async () => {
  const connection = await connectionOf(mongoose9, 'seed_reads', { monitorCommands: true });
  const { b: db } = await tenantsOf(connection, ['b'], ['tickets', 'receipts']);
  await db.db.collection('tickets').insertMany([3, 9, 2].map((_id) => ({ _id, tag: 0 })));
  await db.db.collection('receipts').insertMany([
    { tag: 0, no: 4, shop: 'north' },
    { tag: 1, no: 7, shop: 'south' },
    { tag: 2, no: 1e300, shop: 'north' },
  ]);
  const { Ticket, Receipt } = autoincModels({ b: db }, oursAutoinc).b;
  const commands = [];
  connection.getClient().on('commandStarted', (event) => commands.push(event));
  assert.equal((await new Ticket({ tag: 1 }).save())._id, 10);
  assert.equal((await new Receipt({ tag: 3, shop: 'north' }).save()).no, 5);
  assert.equal((await new Receipt({ tag: 4, shop: 'south' }).save()).no, 8);
  const readsOf = (collection) => commands.filter((e) => ['find', 'aggregate'].includes(e.commandName) && e.command[e.commandName] === collection).map((e) => e.command);
  const tickets = readsOf('tickets');
  assert.equal(tickets.length, 1, JSON.stringify(tickets));
  assert.equal(tickets[0].find, 'tickets', JSON.stringify(tickets));
  assert.deepEqual([Object.fromEntries(tickets[0].sort), tickets[0].limit], [{ _id: -1 }, 1]);
  const receipts = readsOf('receipts');
  assert.ok(receipts.length >= 1, JSON.stringify(receipts));
  for (const command of receipts) assert.equal(command.allowDiskUse, true, JSON.stringify(command));
});

test('a counter deleted while the process runs is looked for again: numbering continues after the numbers stored', async () => {
  const connection = await connectionOf(mongoose9, 'seed_again');
  // typegoose's counters and mongoose-plugin-autoinc's in databases of their own (their
  // unique indexes on identitycounters differ).
  const { tg, pa } = await tenantsOf(connection, ['tg', 'pa'], ['items', 'receipts']);
  await tg.db.collection('items').insertMany([1, 2, 3, 4, 5].map((_id) => ({ _id, tag: 0 })));
  await pa.db.collection('receipts').insertMany([1, 2, 3].map((no) => ({ no, shop: 'north', tag: 0 })));
  const schema = new mongoose9.Schema({ _id: Number, tag: Number });
  schema.plugin(oursTypegoose.AutoIncrementID, { startAt: 1 });
  const Item = tg.model('Item', schema);
  const { Receipt } = autoincModels({ pa }, oursAutoinc).pa;
  const deleteCounters = async () => {
    for (const db of [tg, pa]) await db.db.collection('identitycounters').deleteMany({});
  };
  assert.equal((await Item.create({ tag: 1 }))._id, 6);
  assert.equal((await new Receipt({ tag: 1, shop: 'north' }).save()).no, 4);
  await deleteCounters();
  assert.equal((await Item.create({ tag: 2 }))._id, 7, 'save');
  assert.equal((await new Receipt({ tag: 2, shop: 'north' }).save()).no, 5, 'save');
  await deleteCounters();
  assert.deepEqual(
    (await Item.insertMany([{ tag: 3 }, { tag: 4 }])).map((d) => d._id),
    [8, 9],
    'insertMany',
  );
  assert.deepEqual(
    (
      await Receipt.insertMany([
        { tag: 3, shop: 'north' },
        { tag: 4, shop: 'north' },
      ])
    ).map((d) => d.no),
    [6, 7],
    'insertMany',
  );
  await deleteCounters();
  assert.equal(await Receipt.nextCount('north'), 8, 'nextCount');
  assert.equal((await new Receipt({ tag: 5, shop: 'north' }).save()).no, 8);
  // A group that held no number when first numbered: its counter made by that numbering.
  assert.equal(await Receipt.nextCount('south'), 1);
  assert.equal(await pa.db.collection('identitycounters').countDocuments({ groupingField: 'south' }), 0, 'nextCount creates no counter');
  assert.equal((await new Receipt({ tag: 6, shop: 'south' }).save()).no, 1);
  await deleteCounters();
  assert.equal((await new Receipt({ tag: 7, shop: 'south' }).save()).no, 2);
});

test('a counter first made otherwise than by a seed (a number given on save, another process) and deleted is looked for again all the same', async () => {
  // A: the first numbering's seed finds nothing (the given number is not stored yet), the
  // given number makes the counter; deleted after three numbers, the next is 4, not 1.
  const a = await connectionOf(mongoose9, 'given_first');
  const { pa } = await tenantsOf(a, ['pa'], ['receipts']);
  const { Receipt } = autoincModels({ pa }, oursAutoinc).pa;
  const numbers = [(await new Receipt({ no: 1, tag: 0, shop: 'n' }).save()).no];
  for (const tag of [1, 2]) numbers.push((await new Receipt({ tag, shop: 'n' }).save()).no);
  await pa.db.collection('identitycounters').deleteMany({});
  numbers.push((await new Receipt({ tag: 3, shop: 'n' }).save()).no);
  assert.deepEqual(numbers, [1, 2, 3, 4]);
  assert.equal(await Receipt.nextCount('n'), 5);
  // B: two connections to one database, as two processes. X looks first (nothing stored,
  // no counter made), Y numbers, X numbers after it; deleted, X's next is past both.
  const x = await connectionOf(mongoose9, 'other_first');
  const y = await openOn(mongoose9, env.uri, x.name);
  opened.push(y);
  const [dx, dy] = [await tenantsOf(x, ['t'], ['receipts']), await tenantsOf(y, ['t'], ['receipts'])];
  const X = autoincModels(dx, oursAutoinc).t.Receipt;
  const Y = autoincModels(dy, oursAutoinc).t.Receipt;
  assert.equal(await X.nextCount('n'), 1);
  assert.equal((await new Y({ tag: 0, shop: 'n' }).save()).no, 1);
  assert.equal((await new X({ tag: 1, shop: 'n' }).save()).no, 2);
  await dx.t.db.collection('identitycounters').deleteMany({});
  assert.equal(await X.nextCount('n'), 3, 'nextCount after the deletion');
  assert.equal((await new X({ tag: 2, shop: 'n' }).save()).no, 3);
  const stored = (await dx.t.db.collection('receipts').find({}).toArray()).map((d) => d.no).sort((p, q) => p - q);
  assert.deepEqual(stored, [1, 2, 3], 'no number twice');
});
