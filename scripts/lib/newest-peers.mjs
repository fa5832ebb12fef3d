// The newest-versions pass of `npm test`: installs the newest published mongodb and
// mongoose (latest, and the newest of the previous major) from the npm registry into
// .test-deps/, one folder each (so each mongoose gets the mongodb its own package.json asks
// for), and says which versions it got. The tests then load them in place of the pinned
// devDependencies through scripts/lib/peer-redirect.mjs.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
export const SCRATCH = join(root, '.test-deps');

/**
 * The names the tests import, and what the newest pass installs for each: `latest` is what
 * `npm install mongodb` gives a new user today; the previous major's newest is what an
 * `npm update` gives one who stays on it.
 */
export const NEWEST_PEERS = [
  { alias: 'mongodb', name: 'mongodb', spec: 'latest' },
  { alias: 'mongodb-v6', name: 'mongodb', spec: '6' },
  { alias: 'mongoose', name: 'mongoose', spec: 'latest' },
  { alias: 'mongoose-v8', name: 'mongoose', spec: '8' },
];

/**
 * The test files of the newest pass: every file whose subject is a Node driver or mongoose
 * object handed to the package (the drop-in with a driver Db, the derivation of the
 * connection from a driver client's options, the plugin), and the check of which copies
 * they load.
 */
export const NEWEST_FILES = [
  '__test__/api/peer-versions.test.mjs',
  '__test__/api/seed-example.test.mjs',
  '__test__/api/clients.test.mjs',
  '__test__/api/client-options-table.test.mjs',
  '__test__/api/driver-upgrades.test.mjs',
  '__test__/mongoose/mongoose-db.test.mjs',
  '__test__/mongoose/plugin-options.test.mjs',
  '__test__/mongoose/plugin-saves.test.mjs',
  '__test__/mongoose/plugin-batches.test.mjs',
  '__test__/mongoose/plugin-upserts.test.mjs',
  '__test__/mongoose/plugin-counters.test.mjs',
  '__test__/mongoose/plugin-connections.test.mjs',
  '__test__/mongoose/dropin-typegoose.test.mjs',
  '__test__/mongoose/dropin-auto-increment.test.mjs',
  '__test__/mongoose/dropin-plugin-autoinc.test.mjs',
];

/** npm's error codes that mean the registry could not be reached (the pass is skipped). */
const UNREACHABLE = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'ENOTCONNECTED',
  'ENOTCACHED',
]);
const INSTALL_TIMEOUT_MS = 180_000;

/** The command that runs npm: the one running this script when there is one. */
function npmCommand(args) {
  if (process.env.npm_execpath) return [process.execPath, [process.env.npm_execpath, ...args], {}];
  return ['npm', args, { shell: process.platform === 'win32' }];
}

function run(args, cwd) {
  const [command, argv, options] = npmCommand(args);
  return new Promise((resolve) => {
    const child = spawn(command, argv, { cwd, ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill(), INSTALL_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ status: null, output: `${output}${error.message}`, timedOut: false });
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, output, timedOut: signal !== null });
    });
  });
}

function versionIn(folder) {
  return JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')).version;
}

/** The version of each name the tests import as node_modules holds it (the pins). */
export function pinnedVersion(alias) {
  return versionIn(join(root, 'node_modules', alias));
}

/**
 * Installs `peer` into <scratch>/<name>-<spec> afresh. Resolves with
 * `{ ...peer, folder, version }` (`folder` is the package's own folder), or with
 * `{ ...peer, unreachable: reason }` or `{ ...peer, error: reason }`.
 */
async function install(peer, scratch) {
  const base = join(scratch, `${peer.name}-${peer.spec}`);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  writeFileSync(join(base, 'package.json'), '{ "private": true }\n');
  const wanted = `${peer.name}@${peer.spec}`;
  const r = await run(
    [
      'install',
      wanted,
      '--prefer-online',
      '--no-package-lock',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      // Errors printed whatever the outer npm passes down (`npm test -s` sets loglevel silent).
      '--loglevel=error',
      '--fetch-retries=1',
      '--fetch-retry-mintimeout=2000',
      '--fetch-retry-maxtimeout=10000',
      '--fetch-timeout=60000',
    ],
    base,
  );
  if (r.status === 0) {
    const folder = join(base, 'node_modules', peer.name);
    const found = { ...peer, base, folder, version: versionIn(folder) };
    if (peer.name === 'mongoose') {
      const own = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')).dependencies.mongodb;
      const driver = dirname(createRequire(join(folder, 'package.json')).resolve('mongodb/package.json'));
      found.driver = { asks: own, version: versionIn(driver) };
    }
    return found;
  }
  const code = /npm error code (\w+)/.exec(r.output)?.[1];
  const reason = /failed, reason: (.*)/.exec(r.output)?.[1] ?? code;
  if (r.timedOut) return { ...peer, unreachable: `npm install ${wanted}: no answer within ${INSTALL_TIMEOUT_MS / 1000} s` };
  if (code && UNREACHABLE.has(code)) return { ...peer, unreachable: `npm install ${wanted}: ${reason}` };
  const detail = r.output.split('\n').find((l) => /^npm error /.test(l) && !/^npm error (code|syscall|errno) /.test(l));
  return { ...peer, error: `npm install ${wanted} exited with ${r.status}${detail ? `: ${detail.replace(/^npm error /, '')}` : ''}` };
}

/**
 * Installs every peer of NEWEST_PEERS (at the same time) and prints what it got.
 * Resolves with `{ peers, skipped, failed }`: `skipped` (a reason) when the registry was
 * not reachable, `failed` (a reason) when an install failed otherwise.
 */
export async function prepareNewestPeers(scratch = SCRATCH) {
  const started = Date.now();
  const results = await Promise.all(NEWEST_PEERS.map((peer) => install(peer, scratch)));
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`newest published versions, installed into ${scratch} in ${seconds} s:`);
  for (const p of results) {
    const label = `${p.alias}: ${p.name}@${p.spec}`.padEnd(30);
    if (!p.version) {
      console.log(`  ${label} ${p.unreachable ? `not installed, registry unreachable: ${p.unreachable}` : `FAILED: ${p.error}`}`);
      continue;
    }
    const pinned = pinnedVersion(p.alias);
    const same = pinned === p.version ? 'same as the pinned one' : `pinned: ${pinned}`;
    const driver = p.driver ? `; its mongodb ${p.driver.version} (it asks for ${p.driver.asks})` : '';
    console.log(`  ${label} ${p.version.padEnd(9)} (${same})${driver}`);
  }
  const failed = results.filter((p) => p.error).map((p) => p.error);
  const unreachable = results.filter((p) => p.unreachable).map((p) => p.unreachable);
  return {
    peers: results,
    failed: failed.length ? failed.join('; ') : null,
    skipped:
      !failed.length && unreachable.length
        ? `registry unreachable (${unreachable[0]}${unreachable.length > 1 ? `; ${unreachable.length - 1} more installs failed so` : ''})`
        : null,
  };
}

/** The environment that points the tests at the installed copies (see peer-redirect.mjs). */
export function newestEnv(peers, env = process.env) {
  const hook = pathToFileURL(join(root, 'scripts/lib/peer-redirect.mjs')).href;
  return {
    ...env,
    MONGO_SEQUENCE_PEERS: JSON.stringify(Object.fromEntries(peers.map((p) => [p.alias, p.folder]))),
    NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --import=${hook}`.trim(),
  };
}
