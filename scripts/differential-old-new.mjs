#!/usr/bin/env node
// Differential fuzz between two builds of the addon, loaded in one process and run
// against one test server (a database per side): random calls with random option
// objects (valid and invalid keys, types and values), comparing resolved values, error
// `code`s and the stored documents after each call.
//
//   [DIFF_DRIVER=mongodb-v6] [DIFF_ENTRY=1] node scripts/differential-old-new.mjs <dir of the old build> [runs] [seed]
//
// The old build's folder holds its generated `index.js` and its `.node` file. Differences
// listed in KNOWN are accepted (documented changes); every other one is printed with the
// call that showed it. Messages are compared too, but only reported (they may change).
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
// DIFF_DRIVER names the Node driver package the calls get their `Db` from (default
// `mongodb`): a build older than the support of the newest driver refuses its `Db`, so
// compare such a build through `mongodb-v6`.
const { MongoClient, ObjectId } = await import(process.env.DIFF_DRIVER || 'mongodb');
import fc from 'fast-check';
import { startServer } from './lib/test-server.mjs';

const oldDir = process.argv[2];
if (!oldDir) {
  console.error('usage: differential-old-new.mjs <dir of the old build> [runs] [seed]');
  process.exit(2);
}
const RUNS = Number(process.argv[3] ?? 150);
const SEED = process.argv[4] !== undefined ? Number(process.argv[4]) : Date.now() % 2 ** 31;
// DIFF_ENTRY=1: each side through its package entry (lib/entry.js), as users load it
// (a handle's next() then takes cached values as the entry does), else its generated loader.
const LOAD = process.env.DIFF_ENTRY === '1' ? './lib/entry.js' : './index.js';
const OLD = createRequire(resolve(oldDir) + '/')(LOAD);
const NEW = createRequire(new URL('../', import.meta.url).pathname)(LOAD);

const server = await startServer({ kind: process.env.MONGO_SEQUENCE_SERVER || 'mongoeco' });
const client = new MongoClient(server.uri);
await client.connect();

// ---------------------------------------------------------------- values
const odd = [
  0,
  -0,
  1,
  -1,
  2,
  3,
  7,
  1.5,
  NaN,
  Infinity,
  -Infinity,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  0n,
  1n,
  2n,
  -1n,
  10n,
  2n ** 53n,
  2n ** 63n - 1n,
  2n ** 63n,
  -(2n ** 63n),
  2n ** 64n,
  '',
  'a',
  '1',
  'counters',
  'c2',
  'seq',
  'sequence_value',
  '_id',
  '$x',
  'a.b',
  'x\0y',
  null,
  undefined,
  true,
  false,
  {},
  [],
  [1],
  { $set: 1 },
  { a: 1 },
  { w: 1 },
];
const oneOf = (xs) => fc.constantFrom(...xs);
const oddValue = oneOf(odd);
const names = oneOf(['a', 'b', 'c', 'scope', { t: 'x' }, { t: 'x', n: 2 }, '', '$a', 'a.b', 1, null, {}, { $gt: 1 }]);
const collections = ['counters', 'c2', 'cnt'];
const fields = ['sequence_value', 'seq', 'v', 'n.m'];
const wc = oneOf([
  { w: 1 },
  { w: 'majority' },
  { w: 0 },
  { w: -1 },
  { w: 1.5 },
  { w: 'tag' },
  { journal: true },
  { journal: 'yes' },
  { wtimeoutMS: 100 },
  { wtimeoutMS: 0 },
  { wtimeoutMS: -1 },
  { wtimeoutMS: 1.5 },
  { wtimeoutMS: 2 ** 40 },
  { wtimeoutMS: 100n },
  { w: 1, foo: 1 },
  { w: null },
  { w: undefined },
  { j: true },
  { fsync: true },
  {},
]);
const perKey = {
  collection: oneOf(collections),
  field: oneOf(fields),
  upsert: fc.boolean(),
  start: oneOf([0, 1, 5, 100, -5, 10n, 2 ** 53, 2 ** 31 - 1]),
  bigint: fc.boolean(),
  uri: oneOf(['<uri>', 'mongodb://', 'x', 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200']),
  coalesce: fc.boolean(),
  cache: oneOf([1, 2, 3, 10, 0, 1_000_000, 1_000_001, 2.5]),
  writeConcern: wc,
  format: oneOf(['X{seq:3}', '{seq}', 'A{YY}{seq:2}', '{seq:0}', '{nope}', '{seq', 'plain']),
  step: oneOf([1, 2, -1, -3, 0, 5n, 1.5]),
  name: names,
  sequence: names,
  counterCollection: oneOf(collections),
  counters: oneOf(collections),
  counterField: oneOf(fields),
  gapless: fc.boolean(),
  counterLocator: oneOf([{ id: 'a', reference_value: null }, { id: 'b' }, { k: 1 }, {}, { $id: 1 }, { 'a.b': 1 }]),
  minValue: oneOf([0, 1, -10, 5, 10n]),
  maxValue: oneOf([3, 5, 100, -1, 10n]),
  cycle: fc.boolean(),
  foo: oddValue,
  $set: oddValue,
  Upsert: oddValue,
};
const keys = Object.keys(perKey);
/** An option object: usually a few valid keys, sometimes odd values or odd keys. */
const options = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, 5, 'x', []) },
  {
    weight: 12,
    arbitrary: fc
      .array(
        fc
          .tuple(oneOf(keys), fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constant(0) }))
          .chain(([k, _odd]) => fc.oneof({ weight: 6, arbitrary: perKey[k] }, { weight: 1, arbitrary: oddValue }).map((v) => [k, v])),
        { maxLength: 5 },
      )
      .map((pairs) => Object.fromEntries(pairs)),
  },
);
const count = oneOf([1, 2, 3, 5, 0, -1, 1.5, NaN, 2 ** 32, '2', 1n]);
const value = oneOf([0, 1, 10, 100, -5, 2 ** 53, 2 ** 53 + 2, 10n, 2n ** 63n - 1n, 2n ** 63n, 1.5, NaN, '5', null]);
const method = fc.oneof(
  fc.constant(['next']),
  fc.tuple(fc.constant('nextBatch'), count),
  fc.tuple(fc.constant('nextRange'), count),
  fc.constant(['current']),
  fc.tuple(fc.constant('set'), value),
  fc.constant(['reset']),
  fc.tuple(fc.constant('init'), options),
  fc.constant(['drop']),
  fc.tuple(fc.constant('raiseTo'), value),
  fc.tuple(fc.constant('syncToMax'), oneOf(['docs', 'items']), oneOf(['_id', 'n', 'a.b'])),
);
const doc = oneOf([{}, { x: 1 }, { _id: 5 }, { n: 3 }, { a: { b: 7 } }]);
const op = fc.oneof(
  fc.record({ k: fc.constant('value'), name: names, o: options }),
  fc.record({ k: fc.constant('batch'), name: names, n: count, o: options }),
  fc.record({ k: fc.constant('range'), name: names, n: count, o: options }),
  fc.record({ k: fc.constant('handle'), name: names, o: options, m: method }),
  fc.record({ k: fc.constant('located'), loc: perKey.counterLocator, o: options, m: method }),
  fc.record({ k: fc.constant('insertOne'), coll: oneOf(['docs', 'items', '']), doc, o: options }),
  fc.record({ k: fc.constant('insertMany'), coll: oneOf(['docs', 'items']), docs: fc.array(doc, { maxLength: 3 }), o: options }),
  fc.record({ k: fc.constant('list'), o: options }),
  fc.record({ k: fc.constant('sync'), src: oneOf(['docs', 'items']), f: oneOf(['_id', 'n', 'a.b', '']), name: names, o: options }),
  fc.record({ k: fc.constant('where'), fields: oneOf([{ id: 'a' }, { id: 'b', reference_value: null }, {}, { $x: 1 }]), v: value, o: options }),
  fc.record({ k: fc.constant('format'), v: value, p: perKey.format, d: oneOf([undefined, 0, 1.7e12, new Date(0), 'x', NaN]) }),
  fc.record({ k: fc.constant('parallel'), name: names, o: options, n: fc.integer({ min: 2, max: 6 }) }),
);

// ---------------------------------------------------------------- running
const fix = (o) => {
  if (!o || typeof o !== 'object' || Array.isArray(o)) return o;
  const c = { ...o };
  if (c.uri === '<uri>') c.uri = server.uri;
  return c;
};
const clone = (o) => (o && typeof o === 'object' && !Array.isArray(o) ? structuredClone(o) : o);

async function call(lib, db, o) {
  const opts = fix(clone(o.o));
  switch (o.k) {
    case 'value':
      return lib.getNextSequenceValue(db, clone(o.name), opts);
    case 'batch':
      return lib.getNextSequenceBatch(db, clone(o.name), o.n, opts);
    case 'range':
      return lib.getNextSequenceRange(db, clone(o.name), o.n, opts);
    case 'handle':
    case 'located': {
      const h = o.k === 'handle' ? lib.sequence(db, clone(o.name), opts) : lib.counterAt(db, clone(o.loc), opts);
      const [m, ...args] = o.m;
      return h[m](...args.map(clone));
    }
    case 'insertOne':
      return lib.insertOne(db, o.coll, clone(o.doc), opts);
    case 'insertMany':
      return lib.insertMany(db, o.coll, o.docs.map(clone), opts);
    case 'list':
      return lib.listSequences(db, opts);
    case 'sync':
      return lib.syncToMax(db, o.src, o.f, clone(o.name), opts);
    case 'where':
      return lib.setCountersWhere(db, clone(o.fields), o.v, opts);
    case 'format':
      return lib.formatSequence(o.v, o.p, o.d);
    case 'parallel': {
      const all = await Promise.allSettled(Array.from({ length: o.n }, () => lib.getNextSequenceValue(db, clone(o.name), opts)));
      return all.map((r) => (r.status === 'fulfilled' ? r.value : `error ${r.reason?.code}`));
    }
  }
}

async function outcome(lib, db, o) {
  try {
    return { ok: norm(await call(lib, db, o)) };
  } catch (e) {
    return { code: e?.code ?? `(no code) ${e}`, message: String(e?.message) };
  }
}

function norm(v) {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof ObjectId) return 'ObjectId';
  if (v instanceof Date) return `Date(${v.getTime()})`;
  if (typeof v === 'number' && Object.is(v, -0)) return '-0';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (Array.isArray(v)) return v.map(norm);
  if (v && typeof v === 'object') {
    if (v._bsontype === 'Long') return `Long(${v})`;
    if (v._bsontype === 'Int32') return `Int32(${v.value})`;
    if (v._bsontype === 'Double') return `Double(${v.value})`;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, norm(x)]));
  }
  return v;
}

/**
 * A counter document's cache marks in one form: builds up to 8de07cd flag a counter
 * fetched through a cache with `<field>_cached: true` and `<field>_raised`; later ones keep
 * them under `_mseq_marks.<field>` (`cached` holding the fetch's token), a documented
 * change. Both become `marks: { <field>: { cached: true, raised } }`.
 */
function canonicalMarks(d) {
  const out = { ...d };
  const marks = {};
  const mark = (field) => (marks[field] ??= {});
  if (out._mseq_marks && typeof out._mseq_marks === 'object') {
    for (const [field, m] of Object.entries(out._mseq_marks)) {
      if ('cached' in m) mark(field).cached = true;
      if ('raised' in m) mark(field).raised = m.raised;
    }
    delete out._mseq_marks;
  }
  for (const key of Object.keys(out)) {
    const found = /^(.+)_(cached|raised)$/.exec(key);
    if (!found || !(found[1] in out)) continue;
    if (found[2] === 'cached' && out[key] === true) mark(found[1]).cached = true;
    else if (found[2] === 'raised') mark(found[1]).raised = out[key];
    else continue;
    delete out[key];
  }
  if (Object.keys(marks).length > 0) out.marks = marks;
  return out;
}

/** Every collection of `db` with its documents (BSON number types kept), sorted. */
async function snapshot(db) {
  const out = {};
  const colls = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
  for (const c of colls) {
    const docs = await db.collection(c).find({}, { promoteValues: false, promoteLongs: false }).toArray();
    out[c] = docs.map((d) => JSON.stringify(norm(canonicalMarks(d)))).sort();
  }
  return out;
}

/** Accepted differences (documented in the restructure). */
function known(o, _a, _b) {
  const opts = o.o && typeof o.o === 'object' ? o.o : {};
  // Insert: `name` and `counterCollection` are new option names.
  if ((o.k === 'insertOne' || o.k === 'insertMany') && ('name' in opts || 'counterCollection' in opts)) return 'insert new names';
  // Two wrong options: the first reported may differ (both are INVALID_ARGUMENT then anyway).
  return null;
}

const show = (x) => JSON.stringify(x, (k, v) => (typeof v === 'bigint' ? `${v}n` : v === undefined ? '<undef>' : Number.isNaN(v) ? 'NaN' : v));
const findings = [];
const messageDiffs = new Map();
let runNo = 0;
let calls = 0;

try {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
      runNo++;
      const dbOld = client.db(`dold_${runNo}`);
      const dbNew = client.db(`dnew_${runNo}`);
      for (const c of ['docs', 'items']) {
        for (const db of [dbOld, dbNew])
          await db.collection(c).insertMany([
            { _id: 3, n: 4, a: { b: [9, 2] } },
            { _id: 'k', n: 11 },
          ]);
      }
      try {
        for (let i = 0; i < ops.length; i++) {
          const o = ops[i];
          calls++;
          const a = await outcome(OLD, dbOld, o);
          const b = await outcome(NEW, dbNew, o);
          if (a.code && b.code && a.code === b.code && a.message !== b.message) {
            const key = `${a.message} => ${b.message}`;
            if (!messageDiffs.has(key)) messageDiffs.set(key, show(o));
          }
          const ra = show({ ok: a.ok, code: a.code });
          const rb = show({ ok: b.ok, code: b.code });
          if (ra !== rb) {
            // An accepted difference leaves the two databases apart: end this run.
            if (known(o, a, b)) return true;
            findings.push({ what: 'result', ops: ops.slice(0, i + 1), old: a, new: b });
            return false;
          }
          let sa = show(await snapshot(dbOld));
          let sb = show(await snapshot(dbNew));
          if (sa !== sb) {
            await new Promise((r) => setTimeout(r, 100)); // a cache's prefetch may still be on its way
            sa = show(await snapshot(dbOld));
            sb = show(await snapshot(dbNew));
          }
          if (sa !== sb) {
            findings.push({ what: 'stored', ops: ops.slice(0, i + 1), old: sa, new: sb });
            return false;
          }
        }
        return true;
      } finally {
        await dbOld.dropDatabase().catch(() => {});
        await dbNew.dropDatabase().catch(() => {});
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
  console.log(`no difference in ${RUNS} runs (${calls} calls per side), seed ${SEED}`);
} catch (e) {
  const f = findings.at(-1);
  console.log(`DIFFERENCE (seed ${SEED}):`);
  if (f) {
    console.log(`  kind: ${f.what}`);
    for (const o of f.ops) console.log(`  op: ${show(o)}`);
    console.log(`  old: ${show(f.old)}`);
    console.log(`  new: ${show(f.new)}`);
  } else console.log(String(e).slice(0, 3000));
  process.exitCode = 1;
} finally {
  if (messageDiffs.size) {
    console.log(`\nmessages that changed for the same code (${messageDiffs.size}):`);
    for (const [k, o] of [...messageDiffs].slice(0, 40)) console.log(`  ${k}\n     after ${o}`);
  }
  await OLD.closeSharedClients({ timeoutMS: 1000 }).catch(() => {});
  await NEW.closeSharedClients({ timeoutMS: 1000 }).catch(() => {});
  await client.close();
  await server.stop();
}
