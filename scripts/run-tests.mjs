// `npm test`: runs the node:test suite in __test__/ once per test server kind
// (mongoeco, then SecantusDB), or once against MONGODB_URI when it is set.
// MONGO_SEQUENCE_SERVER=<kind> runs only that kind. The test files are listed one by one
// (`node --test <folder>` fails from Node 21 on).
//
// Then the runtime check: the files that exercise what depends on the Node.js version
// (RUNTIME_FILES: the drop-in, derived clients and their options, round-trip events,
// the tracing channel, inserts, the mongoose plugin, the CLI) run again under Node.js 20.19, 22, 24 and 26, against the first
// server kind only. The binaries are installed into .runtimes/ first (scripts/lib/
// runtimes.mjs), with Bun and Deno, which __test__/tooling/other-runtimes.test.mjs uses.
// Linux x64 (glibc) only; MONGO_SEQUENCE_RUNTIMES=0 skips it (CI's Node.js matrix jobs),
// `npm test -- --runtimes-only` runs only it. When the Node.js that runs `npm test` is older
// than `engines` allows, the newest LTS of the runtime check (Node.js 24) runs the whole
// suite instead, and the check runs the others.
//
// Last, the newest-versions pass: the test files about Node driver and mongoose objects
// again, on the newest published mongodb and mongoose, installed now into .test-deps/
// (scripts/lib/newest-peers.mjs), on one server kind (SecantusDB unless one is chosen).
// It is reported as skipped, with the reason, when the registry cannot be reached;
// MONGO_SEQUENCE_NEWEST=0 leaves it out, `--newest-only` (`npm run test:newest`) runs it alone.
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { ensureVenv, ROOT } from './lib/python-env.mjs';
import { SERVER_KINDS } from './lib/test-server.mjs';
import { testFiles } from './lib/test-files.mjs';
import { ensureRuntimes, NODE_RUNTIMES, runtimesUnavailable } from './lib/runtimes.mjs';
import { NEWEST_FILES, newestEnv, prepareNewestPeers } from './lib/newest-peers.mjs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const RUNTIME_FILES = [
  '__test__/api/seed-example.test.mjs',
  '__test__/api/clients.test.mjs',
  '__test__/api/client-options-table.test.mjs',
  '__test__/api/operations.test.mjs',
  '__test__/api/tracing-channel.test.mjs',
  '__test__/api/insert.test.mjs',
  '__test__/mongoose/plugin-options.test.mjs',
  '__test__/mongoose/plugin-saves.test.mjs',
  '__test__/mongoose/plugin-batches.test.mjs',
  '__test__/mongoose/plugin-upserts.test.mjs',
  '__test__/mongoose/plugin-counters.test.mjs',
  '__test__/tooling/cli.test.mjs',
];

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'runtimes-only': { type: 'boolean', default: false }, 'newest-only': { type: 'boolean', default: false } },
});
const external = Boolean(process.env.MONGODB_URI);
const kinds = external ? ['external'] : process.env.MONGO_SEQUENCE_SERVER ? [process.env.MONGO_SEQUENCE_SERVER] : SERVER_KINDS;
if (!external) ensureVenv();

const files = testFiles();
// `npm test -- <file>...` runs only those files, on each server kind (no runtime check,
// no newest-versions pass).
for (const file of positionals) if (!files.includes(file)) throw new Error(`${file} is not a test file (give it as __test__/<group>/<name>.test.mjs)`);
for (const file of RUNTIME_FILES) if (!files.includes(file)) throw new Error(`RUNTIME_FILES names ${file}, which is not a test file`);

/** Whether `version` (`v22.3.0`) is at least the lowest version `engines.node` (`>= x.y.z`) allows. */
function supported(version) {
  const { engines } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const lowest = /(\d+)\.(\d+)\.(\d+)/.exec(engines.node).slice(1).map(Number);
  const have = version.replace(/^v/, '').split('.').map(Number);
  for (let i = 0; i < 3; i++) if (have[i] !== lowest[i]) return have[i] > lowest[i];
  return true;
}

let runtimes = null;
const skipRuntimes = process.env.MONGO_SEQUENCE_RUNTIMES === '0' ? 'MONGO_SEQUENCE_RUNTIMES=0' : runtimesUnavailable();
if (skipRuntimes) {
  console.log(`### runtime check skipped: ${skipRuntimes}`);
} else {
  runtimes = ensureRuntimes();
  for (const [name, { version }] of Object.entries(runtimes)) console.log(`### ${name}: ${version}`);
}
// The Node.js that runs the whole suite, and the ones the runtime check adds.
let main = { path: process.execPath, version: process.version };
let others = runtimes ? NODE_RUNTIMES : [];
if (!supported(process.version) && runtimes) {
  main = runtimes.node24;
  others = NODE_RUNTIMES.filter((name) => name !== 'node24');
  console.log(`### ${process.version} is older than engines allows: Node.js ${main.version} runs the whole suite`);
}
console.log(`\n### runtimes: ${main.path} ${main.version} runs the whole suite`);

const outcomes = [];
// CI keeps only the end of the output: the failing tests (TAP `not ok`, with the file,
// line and first line of the error from its YAML block) are repeated in the summary.
function noteFailure(failures, line) {
  const notOk = /^(\s*)not ok \d+ - (.*)$/.exec(line);
  if (notOk) {
    failures.push({ depth: notOk[1].length / 4, name: notOk[2], details: [], block: null });
    return;
  }
  const last = failures.at(-1);
  if (!last) return;
  const key = /^(\s+)(\w+): ?(.*)$/.exec(line);
  // The lines of a `error: |-` block are indented deeper than its key.
  if (last.block && (!key || key[1].length > last.block.indent)) {
    if (line.trim() && last.block.left-- > 0) last.details.push(`error: ${line.trim().slice(0, 300)}`);
    return;
  }
  last.block = null;
  if (!key || !['location', 'error', 'code'].includes(key[2]) || last.details.some((d) => d.startsWith(`${key[2]}:`))) return;
  if (key[2] === 'error' && /^[|>]-?$/.test(key[3])) last.block = { indent: key[1].length, left: 3 };
  else last.details.push(`${key[2]}: ${key[3].slice(0, 300)}`);
}

// A pass that prints nothing for QUIET_LIMIT_MS (a test, a hook or a file's process that
// never ends) is stopped, process group and all, and fails, naming the last test that
// reported: CI gets an answer instead of a wait. (`--test-timeout` is no substitute: on
// Node.js 20 it bounds each file as a whole, and a test's own `timeout` cannot lift it.)
const QUIET_LIMIT_MS = (() => {
  const given = process.env.MONGO_SEQUENCE_QUIET_LIMIT_MS;
  if (given === undefined) return 900_000;
  if (!/^[1-9]\d*$/.test(given)) throw new Error(`MONGO_SEQUENCE_QUIET_LIMIT_MS must be a whole number of milliseconds, got '${given}'`);
  return Number(given);
})();

// Each pass's output goes through as it comes; its closing counts (`# pass 12` in TAP,
// `ℹ pass 12` in the spec reporter) are read for the totals line at the end.
const pass = (label, node, list, kind, baseEnv = process.env) =>
  new Promise((resolve) => {
    const started = Date.now();
    console.log(`\n### test pass: ${label}`);
    const env = external ? { ...baseEnv } : { ...baseEnv, MONGO_SEQUENCE_SERVER: kind };
    const child = spawn(node, ['--test', '--test-reporter=tap', ...list], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env,
      cwd: ROOT,
      detached: true,
    });
    running.add(child.pid);
    const counts = { pass: 0, fail: 0, skipped: 0 };
    const failures = [];
    let rest = '';
    let lastReported = null;
    let stalled = null;
    const stall = () => {
      stalled = `no output for ${QUIET_LIMIT_MS / 1000} s after ${lastReported ? `the test '${lastReported}'` : 'the start'}: stopped`;
      console.log(`\n### ${label}: ${stalled}`);
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    let quiet = setTimeout(stall, QUIET_LIMIT_MS);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      clearTimeout(quiet);
      quiet = setTimeout(stall, QUIET_LIMIT_MS);
      process.stdout.write(chunk);
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        const m = /^(?:#|\u2139) (pass|fail|skipped) (\d+)$/.exec(line.trim());
        if (m) counts[m[1]] = Number(m[2]);
        const reported = /^\s*(?:not )?ok \d+ - (.*)$/.exec(line);
        if (reported) lastReported = reported[1];
        noteFailure(failures, line);
      }
    });
    child.on('close', (code) => {
      running.delete(child.pid);
      clearTimeout(quiet);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      outcomes.push({ label: stalled ? `${label}: ${stalled}` : label, ok: code === 0 && !stalled, seconds, counts, failures });
      resolve();
    });
  });
// The passes run in process groups of their own (so that a stalled one can be stopped
// whole): an interrupt of this script stops them too.
const running = new Set();
for (const [signal, number] of [
  ['SIGINT', 2],
  ['SIGTERM', 15],
  ['SIGHUP', 1],
]) {
  process.on(signal, () => {
    for (const pid of running) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
    }
    process.exit(128 + number);
  });
}
if (args['runtimes-only'] && !runtimes) throw new Error(`--runtimes-only: the runtime check is skipped here (${skipRuntimes})`);
const only = args['runtimes-only'] || args['newest-only'];
if (!only) for (const kind of kinds) await pass(`${external ? 'MONGODB_URI' : kind}, Node.js ${main.version}`, main.path, positionals.length ? positionals : files, kind);
if (runtimes && !args['newest-only'] && !positionals.length) {
  for (const name of others) {
    await pass(`${external ? 'MONGODB_URI' : kinds[0]}, Node.js ${runtimes[name].version}, ${RUNTIME_FILES.length} files`, runtimes[name].path, RUNTIME_FILES, kinds[0]);
  }
}

// One server kind is enough here: what these files check happens in the driver and
// mongoose objects handed to the package, the same on either server. SecantusDB is a
// replica set, so the plugin's gapless tests run too.
const newestKind = external ? 'external' : (process.env.MONGO_SEQUENCE_SERVER ?? 'secantus');
const newestLabel = `newest on ${external ? 'MONGODB_URI' : newestKind}`;
const notes = [];
if (args['runtimes-only'] || positionals.length) {
  // only the runtime check, or only the files given
} else if (process.env.MONGO_SEQUENCE_NEWEST === '0') {
  notes.push(`${newestLabel}: SKIPPED: MONGO_SEQUENCE_NEWEST=0`);
} else {
  console.log(`\n### test pass: newest published mongodb and mongoose, on ${external ? 'MONGODB_URI' : newestKind}`);
  const { peers, skipped, failed } = await prepareNewestPeers();
  if (skipped) notes.push(`${newestLabel}: SKIPPED: ${skipped}`);
  else if (failed) outcomes.push({ label: `${newestLabel}: ${failed}`, ok: false, seconds: '0.0', counts: { pass: 0, fail: 0, skipped: 0 } });
  else {
    const versions = peers.map((p) => `${p.alias} ${p.version}`).join(', ');
    await pass(`${newestLabel} (${versions})`, main.path, NEWEST_FILES, newestKind, newestEnv(peers));
  }
}

console.log('\n### test passes');
const total = { pass: 0, fail: 0, skipped: 0 };
for (const o of outcomes) {
  console.log(`${o.label}: ${o.ok ? 'passed' : 'FAILED'} in ${o.seconds} s (${o.counts.pass} passed, ${o.counts.fail} failed, ${o.counts.skipped} skipped)`);
  for (const key of Object.keys(total)) total[key] += o.counts[key];
  for (const f of o.failures ?? []) {
    console.log(`  ${'  '.repeat(f.depth)}not ok: ${f.name}`);
    for (const d of f.details) console.log(`  ${'  '.repeat(f.depth)}    ${d}`);
  }
}
for (const note of notes) console.log(note);
// A pass that failed without a failing test (a crash) still counts as a failure.
const failed = total.fail + outcomes.filter((o) => !o.ok && o.counts.fail === 0).length;
console.log(`tests: ${total.pass} passed, ${failed} failed, ${total.skipped} skipped`);
process.exit(outcomes.every((o) => o.ok) ? 0 : 1);
