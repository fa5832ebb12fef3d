// The typings and the readers agree: every option an interface of index.d.ts lists is
// known to the call it types (a value of the wrong type is refused as such, not as an
// unknown option), and a key it does not list is refused. Then the insert options'
// names matching the other calls, and their older names kept as aliases.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setup, seq, rejectsWithCode, failure } from '../helpers.mjs';

let env;
before(async () => {
  env = await setup('option_tables');
});
after(async () => {
  await env?.close();
});

const dts = readFileSync(new URL('../../index.d.ts', import.meta.url), 'utf8');

/** The option names of `export interface <name>` in index.d.ts. */
function fieldsOf(name) {
  const start = dts.indexOf(`export interface ${name} {`);
  assert.ok(start >= 0, `interface ${name} in index.d.ts`);
  const body = dts.slice(dts.indexOf('{', start) + 1, dts.indexOf('\n}', start));
  return [...body.matchAll(/^\s*([A-Za-z]+)\?:/gm)].map((m) => m[1]);
}

/** Each option interface with a call that reads it. */
const calls = () => ({
  SequenceOptions: (o) => seq.getNextSequenceValue(env.db, 'tables', o),
  WriteConcernOptions: (o) => seq.getNextSequenceValue(env.db, 'tables', { writeConcern: o }),
  InsertOptions: (o) => seq.insertOne(env.db, 'tables_docs', {}, o),
  LocatedOptions: (o) => seq.counterAt(env.db, { id: 'tables' }, o),
  ListOptions: (o) => seq.listSequences(env.db, o),
  SyncOptions: (o) => seq.syncToMax(env.db, 'tables_docs', 'n', 'tables', o),
  SetCountersOptions: (o) => seq.setCountersWhere(env.db, { id: 'tables' }, 1, o),
  InitOptions: (o) => seq.sequence(env.db, 'tables').init(o),
  ConnectOptions: (o) => seq.connect(env.uri, o),
  CloseOptions: (o) => seq.closeSharedClients(o),
});

test('every option the typings list is read by its call, and no other', async () => {
  const sequenceOptions = fieldsOf('SequenceOptions');
  for (const [name, call] of Object.entries(calls())) {
    const fields = fieldsOf(name);
    assert.ok(fields.length > 0, `${name} has fields`);
    for (const field of fields) {
      // A Symbol is no option's type: the reader must know the key to refuse its value.
      const e = await failure(() => call({ [field]: Symbol('wrong') }));
      assert.equal(e?.code, 'INVALID_ARGUMENT', `${name}.${field}: ${e?.message}`);
      assert.doesNotMatch(e.message, /unknown|not used by/, `${name}.${field} is read`);
    }
    const unknown = await failure(() => call({ notAnOption: 1 }));
    assert.equal(unknown?.code, 'INVALID_ARGUMENT', name);
    assert.match(unknown.message, /unknown .*notAnOption/, name);
    // A common option an interface leaves out is refused by name, not read nor ignored.
    if (!['ListOptions', 'SyncOptions', 'SetCountersOptions'].includes(name)) continue;
    for (const common of sequenceOptions.filter((f) => !fields.includes(f))) {
      const e = await failure(() => call({ [common]: Symbol('wrong') }));
      assert.equal(e?.code, 'INVALID_ARGUMENT', `${name} without ${common}`);
      assert.match(e.message, new RegExp(`${common}.? is not used by`), `${name} without ${common}`);
    }
  }
});

test('insert options take the names of the other calls; the older ones stay aliases', async () => {
  const collection = 'alias_docs';
  const first = await seq.insertOne(env.db, collection, { n: 1 }, { name: 'aliased', counterCollection: 'alias_counters' });
  const second = await seq.insertOne(env.db, collection, { n: 2 }, { sequence: 'aliased', counters: 'alias_counters' });
  const third = await seq.insertMany(env.db, collection, [{ n: 3 }], {
    name: 'aliased',
    sequence: 'aliased',
    counterCollection: 'alias_counters',
    counters: 'alias_counters',
  });
  assert.deepEqual([first.insertedId, second.insertedId, third.insertedIds[0]], [1, 2, 3]);
  const listed = await seq.listSequences(env.db, { collection: 'alias_counters' });
  assert.deepEqual(
    listed.map(({ name, value }) => ({ name, value })),
    [{ name: 'aliased', value: 3 }],
  );
  // Scoped names compare by their fields.
  const scoped = { tenant: 'a', year: 2026 };
  const s = await seq.insertOne(env.db, 'alias_scoped', { n: 4 }, { name: scoped, sequence: { ...scoped } });
  assert.equal(s.insertedId, 1);
});

test('an option given under both its names must say the same under both', async () => {
  const docs = () => env.db.collection('alias_refused').countDocuments();
  const before = await docs();
  for (const options of [
    { name: 'a', sequence: 'b' },
    { name: { tenant: 'a' }, sequence: { tenant: 'b' } },
    { name: 'a', sequence: { tenant: 'a' } },
    { counterCollection: 'a', counters: 'b' },
  ]) {
    await rejectsWithCode(assert, seq.insertOne(env.db, 'alias_refused', {}, options), 'INVALID_ARGUMENT', /differ/);
    await rejectsWithCode(assert, seq.insertMany(env.db, 'alias_refused', [{}], options), 'INVALID_ARGUMENT', /differ/);
  }
  assert.equal(await docs(), before, 'nothing inserted');
  assert.deepEqual(await seq.listSequences(env.db, { collection: 'a' }), []);
  assert.deepEqual(await seq.listSequences(env.db, { collection: 'b' }), []);
});

test('insert refuses collection, pointing to counterCollection', async () => {
  await rejectsWithCode(assert, seq.insertOne(env.db, 'x', {}, { collection: 'c' }), 'INVALID_ARGUMENT', /counterCollection/);
  // Nullish, it is no option at all (as before).
  const r = await seq.insertOne(env.db, 'nullish_collection', {}, { collection: undefined });
  assert.equal(r.insertedId, 1);
});

/** Valid values for each option of the handle-creating calls, by name. */
const validValues = (fc) => ({
  collection: fc.constantFrom('cnt', 'counters2'),
  field: fc.constantFrom('val', 'seq'),
  upsert: fc.boolean(),
  start: fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.bigInt({ min: -1000n, max: 1000n })),
  bigint: fc.boolean(),
  coalesce: fc.boolean(),
  cache: fc.integer({ min: 1, max: 1_000_000 }),
  writeConcern: fc.record(
    {
      w: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constantFrom('majority', 'tagged')),
      journal: fc.boolean(),
      wtimeoutMS: fc.integer({ min: 0, max: 10_000 }),
    },
    { requiredKeys: [] },
  ),
  format: fc.constantFrom('A{seq}', 'ORD{YYYY}{seq:6}'),
  step: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: -1000, max: -1 }), fc.bigInt({ min: 1n, max: 9n })),
});

test('randomized: a handle is made exactly when the typings allow every key and value', async () => {
  const { default: fc } = await import('fast-check');
  const valid = validValues(fc);
  const wrong = fc.constantFrom(Symbol('wrong'), () => 1);
  for (const [name, make] of [
    ['SequenceOptions', (o) => seq.sequence(env.db, 'prop', o)],
    ['LocatedOptions', (o) => seq.counterAt(env.db, { id: 'prop' }, o)],
  ]) {
    // `uri` would open another client: left out of the generated objects.
    const fields = fieldsOf(name).filter((f) => f !== 'uri');
    assert.deepEqual(
      fields.filter((f) => !(f in valid)),
      [],
      `a generator for each option of ${name}`,
    );
    const entry = fc.constantFrom(...fields).chain((key) =>
      fc.oneof(
        valid[key].map((value) => ({ key, value, ok: true })),
        fc.constantFrom(undefined, null).map((value) => ({ key, value, ok: true })),
        wrong.map((value) => ({ key, value, ok: false })),
      ),
    );
    const unknownKey = fc.constantFrom('collections', 'Field', 'step_', 'wtimeoutMS', 'counters', 'sequence');
    const options = fc.record({
      entries: fc.uniqueArray(entry, { selector: (e) => e.key, maxLength: fields.length }),
      extra: fc.option(unknownKey, { nil: undefined }),
    });
    fc.assert(
      fc.property(options, ({ entries, extra }) => {
        const object = Object.fromEntries(entries.map((e) => [e.key, e.value]));
        let ok = entries.every((e) => e.ok);
        if (extra !== undefined && !fields.includes(extra)) {
          object[extra] = 1;
          ok = false;
        }
        let error;
        try {
          make(object);
        } catch (e) {
          error = e;
        }
        if (ok) assert.equal(error, undefined, `${name} ${String(error?.message)}`);
        else assert.equal(error?.code, 'INVALID_ARGUMENT', `${name}: ${String(error?.message)}`);
      }),
      { numRuns: 400, seed: 20261202 },
    );
  }
});
