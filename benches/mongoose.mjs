// The mongoose table of `npm run bench`: documents per second for 1,000 `save()` calls
// (sequential, and 64 at a time) and for 1,000 documents inserted at once, numbered by
// mongodb-sequence/mongoose (without and with `cache: 100`), by mongoose-sequence 6, and
// by the documented helper followed by an insert, beside the same inserts with no counter.
// Same server, same run, mongoose 8 for every side (mongoose-sequence does not work on
// mongoose 9: its hooks expect `next`).
//
// Run alone, `node benches/mongoose.mjs` starts a server (MONGO_SEQUENCE_SERVER, else
// SecantusDB, as `npm run bench` chooses for this table) and prints this table only.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import Module from 'node:module';
import { fileURLToPath } from 'node:url';
import { helperGetNextSequenceValue } from '../scripts/lib/documented-helper.mjs';
import { startServer } from '../scripts/lib/test-server.mjs';

const require = createRequire(import.meta.url);
const mongoose = require('mongoose-v8');
const AutoIncrementFactory = require('../mongoose.js');

/**
 * mongoose-sequence as published, given mongoose 8: it `require`s 'mongoose', which
 * resolves to this project's mongoose 9; for the benchmark only, that one name is
 * resolved to mongoose 8 while mongoose-sequence loads.
 */
function loadMongooseSequence() {
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function redirect(request, ...rest) {
    return resolve.call(this, request === 'mongoose' ? 'mongoose-v8' : request, ...rest);
  };
  try {
    return require('mongoose-sequence');
  } finally {
    Module._resolveFilename = resolve;
  }
}

const DOCS = 1000;
const ROUNDS = 3;

/** The cache of the cached side: numbers reserved per block. */
const CACHE = 100;

/**
 * The numbers must be 1..n (the warm-up save's and the timed ones), each once: no failure
 * happens here, so no gap either. With `unique` only each once: a cached counter's batch
 * larger than a block takes numbers past the block reserved.
 */
function verify(label, numbers, unique = false) {
  const sorted = [...numbers].sort((a, b) => a - b);
  if (unique) {
    sorted.forEach((n, i) => {
      if (!Number.isSafeInteger(n) || (i > 0 && n === sorted[i - 1])) throw new Error(`${label}: ${n} is not a number given once`);
    });
    return `${label}: ${numbers.length} numbers, each once`;
  }
  sorted.forEach((n, i) => {
    if (n !== i + 1) throw new Error(`${label}: expected ${i + 1} at position ${i}, got ${n}`);
  });
  return `${label}: ${numbers.length} numbers, 1..${numbers.length}, each once`;
}

async function timed(work) {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

async function savesAtATime(count, width, saveOne) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        next += 1;
        await saveOne();
      }
    }),
  );
}

/** Rows `{ case, ours, cached, sequence, helper, ceiling }` in documents per second; checks lines. */
export async function mongooseRows({ uri, dbName, progress }) {
  const connection = mongoose.createConnection();
  await connection.openUri(uri, { dbName: `${dbName}_mongoose` });
  const AutoIncrement = AutoIncrementFactory(connection);
  const MongooseSequence = loadMongooseSequence()(connection);
  const db = connection.db;
  const sides = {
    ours: (tag) => {
      const schema = new mongoose.Schema({ _id: Number, i: Number });
      // Not `counters`: the helper's `{ _id, sequence_value }` counters live there, and
      // mongoose-sequence's unique index refuses a second document without `id`.
      schema.plugin(AutoIncrement, { id: `ours_${tag}`, collection_name: 'plugin_counters' });
      const Model = connection.model(`Ours_${tag}`, schema);
      return { Model, save: (i) => new Model({ i }).save(), insertMany: (docs) => Model.insertMany(docs) };
    },
    cached: (tag) => {
      const schema = new mongoose.Schema({ _id: Number, i: Number });
      schema.plugin(AutoIncrement, { id: `cached_${tag}`, collection_name: 'plugin_counters', cache: CACHE });
      const Model = connection.model(`Cached_${tag}`, schema);
      return { Model, save: (i) => new Model({ i }).save(), insertMany: (docs) => Model.insertMany(docs), unique: true };
    },
    sequence: (tag) => {
      const schema = new mongoose.Schema({ _id: Number, i: Number }, { _id: false });
      schema.plugin(MongooseSequence, { id: `ms_${tag}`, collection_name: 'ms_counters' });
      const Model = connection.model(`Ms_${tag}`, schema);
      // mongoose-sequence numbers only in save: create([...]) saves each document.
      return { Model, save: (i) => new Model({ i }).save(), insertMany: (docs) => Model.create(docs) };
    },
    helper: (tag) => {
      const schema = new mongoose.Schema({ _id: Number, i: Number });
      const Model = connection.model(`Helper_${tag}`, schema);
      const name = `helper_${tag}`;
      const ready = db.collection('counters').insertOne({ _id: name, sequence_value: 0 });
      const next = async () => {
        await ready;
        return helperGetNextSequenceValue(db, name);
      };
      return {
        Model,
        save: async (i) => new Model({ _id: await next(), i }).save(),
        insertMany: async (docs) => {
          for (const d of docs) d._id = await next();
          return Model.insertMany(docs);
        },
      };
    },
    // The ceiling: the same inserts numbered by a plain JS variable (not safe across
    // processes; no counter at all), to show how much of the time the inserts take.
    ceiling: (tag) => {
      const schema = new mongoose.Schema({ _id: Number, i: Number });
      const Model = connection.model(`Ceiling_${tag}`, schema);
      let last = 0;
      return {
        Model,
        save: (i) => new Model({ _id: ++last, i }).save(),
        insertMany: (docs) => Model.insertMany(docs.map((d) => ({ ...d, _id: ++last }))),
      };
    },
  };
  const rows = [];
  const checks = [];
  try {
    const cases = [
      [
        '1,000 save() one after another',
        (side) =>
          timed(async () => {
            for (let i = 0; i < DOCS; i++) await side.save(i);
          }),
      ],
      ['1,000 save(), 64 at a time', (side) => timed(() => savesAtATime(DOCS, 64, () => side.save(0)))],
      ['1,000 documents at once (insertMany; mongoose-sequence: create([...]))', (side) => timed(() => side.insertMany(Array.from({ length: DOCS }, (_, i) => ({ i }))))],
    ];
    // The sides take turns, ROUNDS times, and each keeps its best round: the test servers'
    // speed drifts during a run, and turns spread that drift over every side.
    for (const [label, run] of cases) {
      const row = { case: label };
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, make] of Object.entries(sides)) {
          const side = make(`${rows.length}_${round}`);
          await side.Model.init();
          // One untimed save first, so that no side's counter is created by racing saves
          // (mongoose-sequence hands start_seq to more than one of them when its racing
          // upserts are misreported, as SecantusDB sometimes does).
          await side.save(-1);
          const ms = await run(side);
          row[name] = Math.max(row[name] ?? 0, (DOCS / ms) * 1000);
          const numbers = (await side.Model.find({}, { _id: 1 }).lean()).map((d) => d._id);
          checks.push(verify(`${label} / ${name} / round ${round + 1}`, numbers, side.unique));
          // The test servers slow down as they fill: keep only what the next turn needs.
          await side.Model.collection.drop();
        }
        progress(`mongoose: ${label}, round ${round + 1}/${ROUNDS}`);
      }
      rows.push(row);
    }
  } finally {
    await connection.dropDatabase();
    await connection.close();
  }
  return { rows, checks };
}

/** The table of `mongooseRows`' result (`server`: the server's kind), as markdown lines. */
export function mongooseTable({ server, rows }) {
  const lines = [
    `mongoose 8, documents per second, best of ${ROUNDS} turns (server: ${server}, same run):`,
    `| case | mongodb-sequence/mongoose | same, cache: ${CACHE} | mongoose-sequence 6 | helper + insert | inserts alone (no counter) | ours/mongoose-sequence | ours/helper | ours/inserts alone | cached/inserts alone |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const pct = (a, b) => `${((a / b) * 100).toFixed(0)} %`;
  for (const r of rows) {
    lines.push(
      `| ${r.case} | ${r.ours.toFixed(0)} | ${r.cached.toFixed(0)} | ${r.sequence.toFixed(0)} | ${r.helper.toFixed(0)} | ${r.ceiling.toFixed(0)} | ${(r.ours / r.sequence).toFixed(2)}x | ${(r.ours / r.helper).toFixed(2)}x | ${pct(r.ours, r.ceiling)} | ${pct(r.cached, r.ceiling)} |`,
    );
  }
  return lines;
}

// Run alone: this table only, on a server of its own.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const progress = (msg) => process.stderr.write(`[bench] ${msg}\n`);
  const server = await startServer({ kind: process.env.MONGO_SEQUENCE_SERVER || 'secantus', log: progress });
  let result;
  try {
    result = { server: server.kind, ...(await mongooseRows({ uri: server.uri, dbName: `mseq_bench_${process.pid}`, progress })) };
  } finally {
    await require('../index.js').closeSharedClients();
    await server.stop();
  }
  console.log(mongooseTable(result).join('\n'));
  if (process.argv.includes('--check')) for (const line of result.checks) console.log(line);
}
