// The mongoose plugin against an oracle (see scripts/lib/plugin-differential.mjs): random
// schemas (reference fields of every kind, _id / another / a nested inc_field, start_seq
// and inc_amount with 0 and negatives, one or two plugins, getters, setters and
// immutable, on the base of a discriminator or on a subdocument schema) and random
// histories (save, create single / array / spread, insertMany, bulkWrite inserts and
// upserts, every upsert and replace with values to cast, inserting or matching existing
// documents, reference values written by $max / $min, explicit numbers, counterReset,
// setNext, syncCounterToMax, through the base or the child), run through this plugin on
// mongoose 8 and 9 and through mongoose-sequence 6.0.1 on mongoose 8: after every
// operation, the same numbers in the documents and the same counter documents.
// Fixed seeds here (PLUGIN_DIFF_SEEDS=1,2 and PLUGIN_DIFF_RUNS=n replay or widen a run);
// `npm run fuzz` runs more.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, seq } from '../helpers.mjs';
import { checkPluginDifferential } from '../../scripts/lib/plugin-differential.mjs';

const SEEDS = (process.env.PLUGIN_DIFF_SEEDS ?? '11,22,33,44').split(',').map(Number);
const RUNS = Number(process.env.PLUGIN_DIFF_RUNS ?? 25);

let env;
before(async () => {
  env = await setup('plugin_diff');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

test(`the plugin agrees with mongoose-sequence 6.0.1 on ${RUNS} random histories per seed (${SEEDS.join(',')})`, { timeout: 600_000 }, async (t) => {
  const stats = await checkPluginDifferential({ uri: env.uri, dbName: env.dbName, seeds: SEEDS, numRuns: RUNS, log: (line) => t.diagnostic(line) });
  t.diagnostic(`${stats.runs} histories, ${stats.skipped} with inc_amount 0 (refused)`);
  assert.equal(stats.runs, SEEDS.length * RUNS);
});
