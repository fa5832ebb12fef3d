#!/usr/bin/env node
// The mongoose plugin of two checkouts over the same random histories: the harness of
// scripts/lib/plugin-differential.mjs with the other checkout's plugin as the oracle (on
// mongoose 8 and 9), against one test server. After every operation the documents'
// numbers and the counter documents must be the same, and every refusal the same code.
//
//   node scripts/plugin-old-new.mjs <old checkout's mongoose.js> [runs per seed] [seeds]
//
// The old checkout needs its own index.js and native binary beside its mongoose.js.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { startServer } from './lib/test-server.mjs';
import { checkPluginDifferential } from './lib/plugin-differential.mjs';

const oldPlugin = process.argv[2];
if (!oldPlugin) {
  console.error('usage: plugin-old-new.mjs <old mongoose.js> [runs per seed] [seeds]');
  process.exit(2);
}
const reference = createRequire(import.meta.url)(resolve(oldPlugin));
const numRuns = Number(process.argv[3] ?? 100);
const seeds = (process.argv[4] ?? String(Date.now() % 2 ** 31)).split(',').map(Number);
const server = await startServer({ kind: process.env.MONGO_SEQUENCE_SERVER || 'mongoeco' });
try {
  const stats = await checkPluginDifferential({ uri: server.uri, dbName: 'plugin_old_new', seeds, numRuns, reference, log: console.log });
  console.log(`old and new agree on ${stats.runs} histories (seeds ${seeds.join(',')}; ${stats.skipped} with inc_amount 0, refused by both)`);
} finally {
  await server.stop?.();
}
