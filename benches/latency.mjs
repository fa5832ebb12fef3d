// Sequential latency, one await at a time, with the sides taking turns (see turns.mjs):
// the documented helper on the Node driver against our function form, a `sequence()`
// handle and `coalesce: false`; and the mongoose plugin's `save()` against a plain
// `save()` numbered by the helper. Used by `npm run bench`; runnable alone:
//   node benches/latency.mjs [--server mongoeco|secantus] [--calls N] [--rounds R]
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { helperGetNextSequenceValue } from '../scripts/lib/documented-helper.mjs';
import { takeTurns, latencyTable } from './turns.mjs';

const require = createRequire(import.meta.url);
const seq = require('../index.js');
const mongoose = require('mongoose');
const AutoIncrementFactory = require('../mongoose.js');
/** Runs in this process: the plugin's counter ids are process-wide, so each run takes its own. */
let runs = 0;

/**
 * `values` (numbers handed out by one counter, nothing failing) are 1..n, each once.
 * Returns a line saying so; throws otherwise.
 */
function contiguous(label, values) {
  const sorted = values.map(Number).sort((a, b) => a - b);
  sorted.forEach((v, i) => {
    if (v !== i + 1) throw new Error(`${label}: expected ${i + 1} at position ${i}, got ${v}`);
  });
  return `${label}: ${sorted.length} values, 1..${sorted.length}, each once`;
}

/** The counters of the sides compared with the helper, one database each. */
const sideCounters = ['helper', 'function', 'handle', 'direct', 'again'];

/**
 * Measures the counter calls on `uri`: `{ counters, mongoose, checks }`, each the best
 * round of every side (`{ p10, p50, p90, perSecond, ratio }`, in ms and calls per
 * second; `ratio` as `takeTurns` gives it), and lines saying that every side's numbers
 * were 1..n, each once.
 */
export async function latencyRows({ uri, dbName, calls = 200, rounds = 8, progress = () => {} }) {
  const client = new MongoClient(uri);
  await client.connect();
  const db = client.db(dbName);
  const connection = mongoose.createConnection();
  try {
    // Each side's counter is the only document of a `counters` collection in a database of
    // its own: on a server that finds a document by scanning (SecantusDB), a counter stored
    // after others costs more per update, which would bias the later sides.
    const dbOf = Object.fromEntries(sideCounters.map((name) => [name, client.db(`${dbName}_${name}`)]));
    for (const name of sideCounters) {
      await dbOf[name].collection('counters').insertOne({ _id: name, sequence_value: 0 });
    }
    await db.collection('counters').insertOne({ _id: 'save_helper', sequence_value: 0 });
    const handle = seq.sequence(dbOf.handle, 'handle');
    const seen = { helper: [], function: [], handle: [], direct: [], again: [] };
    const kept = (name, promise) => promise.then((v) => seen[name].push(v));
    const counterRows = await takeTurns(
      {
        helper: () => kept('helper', helperGetNextSequenceValue(dbOf.helper, 'helper')),
        function: () => kept('function', seq.getNextSequenceValue(dbOf.function, 'function')),
        handle: () => kept('handle', handle.next()),
        'coalesce: false': () => kept('direct', seq.getNextSequenceValue(dbOf.direct, 'direct', { coalesce: false })),
        // The function form again, on a counter of its own: an A/A control whose ratio to
        // `function` shows how far two identical sides differ in this run.
        'function, again': () => kept('again', seq.getNextSequenceValue(dbOf.again, 'again')),
      },
      { calls, rounds, progress: (m) => progress(`counters: ${m}`) },
    );

    await connection.openUri(uri, { dbName });
    const AutoIncrement = AutoIncrementFactory(connection);
    const numbered = new mongoose.Schema({ _id: Number, i: Number });
    numbered.plugin(AutoIncrement, { id: `latency_plugin_${++runs}`, collection_name: 'plugin_counters' });
    const Plugin = connection.model('LatencyPlugin', numbered);
    const Plain = connection.model('LatencyPlain', new mongoose.Schema({ _id: Number, i: Number }));
    const Bare = connection.model('LatencyBare', new mongoose.Schema({ _id: Number, i: Number }));
    const Stored = connection.model('LatencyStored', new mongoose.Schema({ _id: Number, i: Number }));
    await Promise.all([Plugin.init(), Plain.init(), Bare.init(), Stored.init()]);
    // A counter stored as the plugin stores its own (mongoose-sequence's layout, with its
    // unique index), called directly: the plugin's one counter round trip.
    const stored = seq.counterAt(db, { id: 'latency_direct', reference_value: null }, { collection: 'plugin_counters', field: 'seq', upsert: true });
    let bare = 0;
    const mongooseRows = await takeTurns(
      {
        'plugin save()': () => new Plugin({ i: 1 }).save(),
        'helper + plain save()': async () => new Plain({ _id: await helperGetNextSequenceValue(db, 'save_helper'), i: 1 }).save(),
        'counterAt (plugin storage) + plain save()': async () => new Stored({ _id: await stored.next(), i: 1 }).save(),
        'plain save() alone': () => new Bare({ _id: ++bare, i: 1 }).save(),
      },
      { calls, rounds, progress: (m) => progress(`mongoose: ${m}`) },
    );
    const checks = Object.entries(seen).map(([name, values]) => contiguous(`latency / ${name}`, values));
    for (const [label, Model] of [
      ['plugin save()', Plugin],
      ['counterAt + plain save()', Stored],
      ['helper + plain save()', Plain],
    ]) {
      const ids = (await Model.find({}, { _id: 1 }).lean()).map((d) => d._id);
      checks.push(contiguous(`latency / ${label}`, ids));
    }
    return { counters: counterRows, mongoose: mongooseRows, checks };
  } finally {
    await connection.close();
    await db.dropDatabase();
    for (const name of sideCounters) await client.db(`${dbName}_${name}`).dropDatabase();
    await client.close();
  }
}

/**
 * The tables and goal checks of `latencyRows`'s result, as markdown. The checks use the
 * paired ratios (median over rounds of one side's p50 over the other's in the same round).
 */
export function latencyReport(kind, { counters, mongoose: m }) {
  const check = (label, ratio, limit = 1) => `${label} ${ratio.toFixed(3)} ${ratio <= limit ? 'met' : 'NOT met'}`;
  const helper = counters.helper.ratio;
  const plugin = m['plugin save()'];
  return [
    `sequential calls, ${kind}:`,
    latencyTable(counters, 'helper'),
    '',
    `mongoose 9 save(), ${kind}:`,
    latencyTable(m, 'helper + plain save()'),
    '',
    `goals (paired p50 ratios): ${[
      check('function / helper <= 1:', helper.function),
      check('handle / helper <= 1:', helper.handle),
      check('coalesce: false / helper <= 1:', helper['coalesce: false']),
      check('coalesce: false / function <= 1:', counters.function.ratio['coalesce: false']),
      check('plugin save() / (helper + plain save()) <= 1.1:', m['helper + plain save()'].ratio['plugin save()'], 1.1),
      check('plugin save() / (its counter + plain save()) <= 1.1:', m['counterAt (plugin storage) + plain save()'].ratio['plugin save()'], 1.1),
    ].join('; ')}`,
    `A/A control (identical code, its own counter): function, again / function = ${counters.function.ratio['function, again'].toFixed(3)}`,
    `(plugin save() p50 ${plugin.p50.toFixed(3)} ms in its best round)`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const progress = (msg) => process.stderr.write(`[latency] ${msg}\n`);
  const kinds = arg('server') ? [arg('server')] : ['mongoeco', 'secantus'];
  for (const kind of kinds) {
    const server = await startServer({ kind, log: progress });
    try {
      const rows = await latencyRows({
        uri: server.uri,
        dbName: `mseq_latency_${process.pid}`,
        calls: Number(arg('calls', 200)),
        rounds: Number(arg('rounds', 8)),
        progress,
      });
      console.log(`\n${latencyReport(kind, rows)}\n\n${rows.checks.join('\n')}\n`);
    } finally {
      await seq.closeSharedClients();
      await server.stop();
    }
  }
}
