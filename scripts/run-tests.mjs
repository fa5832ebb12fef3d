// `npm test`: runs the node:test suite in __test__/ once per test server kind
// (mongoeco, then SecantusDB), or once against MONGODB_URI when it is set.
// MONGO_SEQUENCE_SERVER=<kind> runs only that kind. The test files are listed one by one
// (`node --test <folder>` fails from Node 21 on).
import { spawnSync } from 'node:child_process';
import { ensureVenv, ROOT } from './lib/python-env.mjs';
import { testFiles } from './lib/test-files.mjs';
import { SERVER_KINDS } from './lib/test-server.mjs';

const external = Boolean(process.env.MONGODB_URI);
const kinds = external ? ['external'] : process.env.MONGO_SEQUENCE_SERVER ? [process.env.MONGO_SEQUENCE_SERVER] : SERVER_KINDS;
if (!external) ensureVenv();

const files = testFiles();
const outcomes = [];
for (const kind of kinds) {
  const started = Date.now();
  console.log(`\n### test pass: ${external ? 'MONGODB_URI' : kind}`);
  const env = external ? process.env : { ...process.env, MONGO_SEQUENCE_SERVER: kind };
  const run = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit', env, cwd: ROOT });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  outcomes.push({ kind, ok: run.status === 0, seconds });
}
console.log('\n### test passes');
for (const o of outcomes) console.log(`${o.kind}: ${o.ok ? 'passed' : 'FAILED'} in ${o.seconds} s`);
process.exit(outcomes.every((o) => o.ok) ? 0 : 1);
