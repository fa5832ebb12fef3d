// Bun and Deno, which load napi addons and the Node driver: the packed tarballs (as
// `npm run package` makes them) are installed into an empty app with mongodb and
// mongoose, and there the README's quick start and the mongoose plugin's example of
// docs/mongoose.md run under each, with every result comment checked as the doc test
// checks it. Deno also runs the CLI from a checkout, where it reads a `.js` file as ESM
// unless package.json says `"type": "commonjs"`. Bun publishes the calls on the tracing
// channel, whose TracingChannel has no `hasSubscribers` getter. The binaries come from .runtimes/
// (scripts/lib/runtimes.mjs); Linux x64 only. Runs in the mongoeco pass and against
// MONGODB_URI, not again in the SecantusDB pass.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup } from '../helpers.mjs';
import { ROOT } from '../../scripts/lib/python-env.mjs';
import { ensureRuntimes, runtimesUnavailable } from '../../scripts/lib/runtimes.mjs';
import { extractBlocks } from '../../scripts/lib/doc-blocks.mjs';
import { runScript } from '../../scripts/lib/doc-run.mjs';

const skip =
  process.env.MONGO_SEQUENCE_SERVER === 'secantus'
    ? 'runs in the mongoeco pass'
    : process.env.MONGO_SEQUENCE_RUNTIMES === '0'
      ? 'MONGO_SEQUENCE_RUNTIMES=0'
      : (runtimesUnavailable() ?? false);

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const block = (file, marker) => {
  const found = extractBlocks(join(ROOT, file), ROOT).blocks.filter((b) => b.code.includes(marker));
  assert.equal(found.length, 1, `${file}: one block with ${marker}`);
  return found[0];
};

let env;
let app;
let runtimes;
before(async () => {
  if (skip) return;
  env = await setup('runtimes');
  runtimes = ensureRuntimes();
  app = mkdtempSync(join(tmpdir(), 'mseq-runtimes-'));
  const dist = join(app, 'dist');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--dest', dist], {
    cwd: ROOT,
    env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'runtimes-app', version: '1.0.0', private: true }));
  const tarballs = readdirSync(dist).map((f) => join(dist, f));
  const { mongodb, mongoose } = pkg.devDependencies;
  execFileSync(
    'npm',
    ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs, `mongodb@${mongodb}`, `mongoose@${mongoose}`],
    {
      cwd: app,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
});
after(async () => {
  if (app) rmSync(app, { recursive: true, force: true });
  await env?.close();
});

// Deno: every permission (the addon is loaded through FFI), no update check, its cache
// inside the app.
const command = (name) => (name === 'deno' ? [runtimes.deno.path, 'run', '--allow-all', '--quiet'] : [runtimes.bun.path]);
const runtimeEnv = () => ({ DENO_DIR: join(app, '.deno'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' });

let index = 0;
for (const name of ['bun', 'deno']) {
  for (const [file, marker] of [
    ['README.md', "getNextSequenceBatch(db, 'ticket_id', 100"],
    ['docs/mongoose.md', "require('mongodb-sequence/mongoose')(mongoose);"],
  ]) {
    test(`${name}: ${file}'s example from the installed tarballs, result comments checked`, { skip }, async (t) => {
      t.diagnostic(`${name} ${runtimes[name].version}`);
      const example = block(file, marker);
      const result = await runScript(example, {
        app,
        serverUri: env.uri,
        suffix: `_rt${index}_${process.pid}`,
        index: index++,
        root: ROOT,
        runtime: command(name),
        env: runtimeEnv(),
        timeoutMs: 60_000,
      });
      for (const db of result.databases ?? []) await env.client.db(db).dropDatabase();
      assert.ok(result.ok, result.message);
      assert.ok(result.checks.length >= 2, `${result.checks.length} result comments checked`);
      t.diagnostic(`${result.checks.length} result comments checked`);
    });
  }
}

test('deno: the CLI runs from a checkout (package.json says "type": "commonjs")', { skip }, () => {
  // Deno reads a .js file of the checkout as ESM unless package.json says otherwise, and
  // the CLI is CommonJS ("require is not defined").
  const run = spawnSync(
    runtimes.deno.path,
    ['run', '--allow-all', '--quiet', join(ROOT, 'bin', 'mongodb-sequence.js'), 'next', 'from_checkout', '--upsert', '--uri', env.uri, '--db', env.dbName],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, ...runtimeEnv() },
    },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), '1');
});

test("bun: calls are published on the tracing channel (Bun's TracingChannel has no hasSubscribers)", { skip }, () => {
  const script = join(app, 'traced.cjs');
  writeFileSync(
    script,
    `const dc = require('node:diagnostics_channel');
const { connect, sequence } = require('mongodb-sequence');
const seen = [];
const events = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];
dc.tracingChannel('mongodb-sequence:call').subscribe(Object.fromEntries(events.map((e) => [e, (c) => seen.push(e + ':' + c.operation)])));
(async () => {
  const client = await connect(process.env.URI);
  await sequence(client.db(process.env.DB), 'bun_traced', { upsert: true }).next();
  await client.close();
  console.log(JSON.stringify(seen));
})();
`,
  );
  const run = spawnSync(runtimes.bun.path, [script], { cwd: app, encoding: 'utf8', env: { ...process.env, URI: env.uri, DB: env.dbName } });
  assert.equal(run.status, 0, run.stderr);
  const call = (operation) => ['start', 'end', 'asyncStart', 'asyncEnd'].map((e) => `${e}:${operation}`);
  assert.deepEqual(JSON.parse(run.stdout), [...call('connect'), ...call('next'), ...call('close')]);
});
