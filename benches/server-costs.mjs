// What the test servers charge for what our writes carry beyond the documented helper's,
// measured with the Node driver alone (one client, sides taking turns, best round each):
//   1. the guards of the fast path: `{ _id }` (the helper) against `{ _id, <f>_step:
//      { $exists: false }, <f>: { $type: ['int', 'long'] } }` with the value projection
//      (ours: it keeps a blind `$inc` off configured counters and doubles);
//   2. the plugin's storage (mongoose-sequence's): the same `$inc` by `_id` in a
//      collection with and without the unique index { id: 1, reference_value: 1 }, and
//      found by { id, reference_value };
//   3. the plugin's own JavaScript: mongoose 9 `save()` with the plugin whose counter is
//      a stub that answers at once, against a plain `save()` (latency and CPU time).
//   node benches/server-costs.mjs [--server mongoeco|secantus] [--calls N] [--rounds R]
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { takeTurns, latencyTable, quantile } from './turns.mjs';

const require = createRequire(import.meta.url);
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const CALLS = Number(arg('calls', 200));
const ROUNDS = Number(arg('rounds', 4));
const progress = (msg) => process.stderr.write(`[server-costs] ${msg}\n`);
const kinds = arg('server') ? [arg('server')] : ['mongoeco', 'secantus'];

for (const kind of kinds) {
  const server = await startServer({ kind, log: progress });
  const client = await new MongoClient(server.uri).connect();
  const db = client.db(`mseq_costs_${process.pid}`);
  try {
    // 1. Guards.
    const counters = db.collection('counters');
    const names = ['helper', 'exists', 'type', 'projection', 'ours'];
    await counters.insertMany(names.map((_id) => ({ _id, v: 0 })));
    const inc = { $inc: { v: 1 } };
    const after = { returnDocument: 'after' };
    const projected = { returnDocument: 'after', projection: { v: 1, _id: 0 } };
    const guards = await takeTurns(
      {
        'helper: { _id }': () => counters.findOneAndUpdate({ _id: 'helper' }, inc, after),
        '+ step $exists: false': () => counters.findOneAndUpdate({ _id: 'exists', v_step: { $exists: false } }, inc, after),
        '+ $type int/long': () => counters.findOneAndUpdate({ _id: 'type', v: { $type: ['int', 'long'] } }, inc, after),
        '+ projection': () => counters.findOneAndUpdate({ _id: 'projection' }, inc, projected),
        'ours: all three': () => counters.findOneAndUpdate({ _id: 'ours', v_step: { $exists: false }, v: { $type: ['int', 'long'] } }, inc, projected),
      },
      { calls: CALLS, rounds: ROUNDS, progress },
    );
    console.log(`\n${kind}: the fast path's guards (Node driver, findOneAndUpdate $inc)\n${latencyTable(guards, 'helper: { _id }')}`);

    // 2. The plugin's storage.
    const plain = db.collection('plain');
    const indexed = db.collection('indexed');
    await indexed.createIndex({ id: 1, reference_value: 1 }, { unique: true });
    await plain.insertOne({ _id: 'x', id: 'x', reference_value: null, seq: 0 });
    await indexed.insertOne({ _id: 'x', id: 'x', reference_value: null, seq: 0 });
    const byId = (c) => () => c.findOneAndUpdate({ _id: 'x' }, { $inc: { seq: 1 } }, after);
    const storage = await takeTurns(
      {
        'by _id, no other index': byId(plain),
        'by _id, unique index { id, reference_value }': byId(indexed),
        'by { id, reference_value }': () => indexed.findOneAndUpdate({ id: 'x', reference_value: null }, { $inc: { seq: 1 } }, after),
      },
      { calls: CALLS, rounds: ROUNDS, progress },
    );
    console.log(`\n${kind}: mongoose-sequence's storage (Node driver, findOneAndUpdate $inc)\n${latencyTable(storage, 'by _id, no other index')}`);

    // 3. The plugin's own JavaScript, its counter answering at once.
    const core = require('../index.js');
    const realCounterAt = core.counterAt;
    let stubbed = 0;
    core.counterAt = () => ({ next: () => Promise.resolve(++stubbed) });
    const mongoose = require('mongoose');
    const connection = mongoose.createConnection();
    try {
      await connection.openUri(server.uri, { dbName: db.databaseName });
      const schema = new mongoose.Schema({ _id: Number, i: Number });
      schema.plugin(require('../mongoose.js')(connection), { id: `stubbed_${kind}`, collection_name: 'plugin_counters' });
      const Plugin = connection.model('CostPlugin', schema);
      const Plain = connection.model('CostPlain', new mongoose.Schema({ _id: Number, i: Number }));
      await Promise.all([Plugin.init(), Plain.init()]);
      let numbered = 0;
      const cpu = {};
      const measured = (name, save) => async () => {
        const start = process.cpuUsage();
        await save();
        const used = process.cpuUsage(start);
        (cpu[name] ??= []).push(used.user + used.system);
      };
      const hooks = await takeTurns(
        {
          'plain save(), _id from a resolved promise': measured('plain', async () => new Plain({ _id: await Promise.resolve(++numbered), i: 1 }).save()),
          'plugin save(), counter stubbed': measured('plugin', () => new Plugin({ i: 1 }).save()),
        },
        { calls: CALLS, rounds: ROUNDS, progress },
      );
      const cpuP50 = (name) => quantile(Float64Array.from(cpu[name]).sort(), 0.5);
      console.log(`\n${kind}: the plugin's own work (mongoose 9; its counter stubbed)\n${latencyTable(hooks, 'plain save(), _id from a resolved promise')}`);
      console.log(`CPU time of the JavaScript thread per save, p50: plain ${cpuP50('plain').toFixed(0)} us, plugin ${cpuP50('plugin').toFixed(0)} us`);
    } finally {
      core.counterAt = realCounterAt;
      await connection.close();
    }
  } finally {
    await db.dropDatabase();
    await client.close();
    await server.stop();
  }
}
