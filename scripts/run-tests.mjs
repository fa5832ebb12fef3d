// `npm test`: runs the node:test suite in __test__/ once per test server kind
// (mongoeco, then SecantusDB), or once against MONGODB_URI when it is set.
// MONGO_SEQUENCE_SERVER=<kind> runs only that kind.
// Then the newest-versions pass: the test files about Node driver and mongoose objects
// again, on the newest published mongodb and mongoose, installed now into .test-deps/
// (scripts/lib/newest-peers.mjs), on one server kind (SecantusDB unless one is chosen).
// It is reported as skipped, with the reason, when the registry cannot be reached;
// MONGO_SEQUENCE_NEWEST=0 leaves it out, `--newest-only` (`npm run test:newest`) runs it alone.
import { spawnSync } from 'node:child_process';
import { ensureVenv } from './lib/python-env.mjs';
import { SERVER_KINDS } from './lib/test-server.mjs';
import { NEWEST_FILES, newestEnv, prepareNewestPeers } from './lib/newest-peers.mjs';

const external = Boolean(process.env.MONGODB_URI);
const kinds = external ? ['external'] : process.env.MONGO_SEQUENCE_SERVER ? [process.env.MONGO_SEQUENCE_SERVER] : SERVER_KINDS;
const newestOnly = process.argv.includes('--newest-only');
if (!external) ensureVenv();

function passEnv(kind, env = process.env) {
  return external ? env : { ...env, MONGO_SEQUENCE_SERVER: kind };
}

const outcomes = [];
for (const kind of newestOnly ? [] : kinds) {
  const started = Date.now();
  console.log(`\n### test pass: ${external ? 'MONGODB_URI' : kind}`);
  const run = spawnSync(process.execPath, ['--test', '__test__/'], { stdio: 'inherit', env: passEnv(kind) });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  outcomes.push({ kind, result: run.status === 0 ? 'passed' : 'FAILED', seconds });
}

// One server kind is enough here: what these files check happens in the driver and
// mongoose objects handed to the package, the same on either server. SecantusDB is a
// replica set, so the plugin's gapless tests run too.
const newestKind = external ? 'external' : process.env.MONGO_SEQUENCE_SERVER ?? 'secantus';
const newest = { kind: `newest on ${external ? 'MONGODB_URI' : newestKind}` };
outcomes.push(newest);
if (process.env.MONGO_SEQUENCE_NEWEST === '0') {
  newest.result = 'SKIPPED: MONGO_SEQUENCE_NEWEST=0';
} else {
  const started = Date.now();
  console.log(`\n### test pass: newest published mongodb and mongoose, on ${external ? 'MONGODB_URI' : newestKind}`);
  const { peers, skipped, failed } = await prepareNewestPeers();
  if (skipped) {
    newest.result = `SKIPPED: ${skipped}`;
  } else if (failed) {
    newest.result = `FAILED: ${failed}`;
  } else {
    const env = passEnv(newestKind, newestEnv(peers));
    const run = spawnSync(process.execPath, ['--test', ...NEWEST_FILES], { stdio: 'inherit', env });
    newest.kind += ` (${peers.map((p) => `${p.alias} ${p.version}`).join(', ')})`;
    newest.result = run.status === 0 ? 'passed' : 'FAILED';
  }
  newest.seconds = ((Date.now() - started) / 1000).toFixed(1);
}

console.log('\n### test passes');
for (const o of outcomes) console.log(`${o.kind}: ${o.result}${o.seconds ? ` in ${o.seconds} s` : ''}`);
process.exit(outcomes.every((o) => !o.result.startsWith('FAILED')) ? 0 : 1);
