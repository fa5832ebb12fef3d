// The bundler configurations docs/bundlers.md gives, tried on an app that installed the
// packed tarballs: a native addon cannot be bundled (esbuild has no loader for `.node`),
// so the package stays external and is loaded from node_modules at run time. esbuild
// (external, and `packages: 'external'`), webpack, Rollup, Vite's SSR build and Next.js
// (`next build`, then `next start` serving a route handler) are run here; each bundle or
// server then makes a real call against the test server. The bundlers are the pinned
// dev dependencies; the app installs Next.js and React at those versions beside the tarballs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup } from '../helpers.mjs';
import { ROOT } from '../../scripts/lib/python-env.mjs';

const require = createRequire(import.meta.url);
const esbuild = require(join(ROOT, 'node_modules', 'esbuild'));
const webpack = require(join(ROOT, 'node_modules', 'webpack'));
const versionOf = (name) => JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;

let env;
let app;
before(async () => {
  env = await setup('bundlers');
  app = mkdtempSync(join(tmpdir(), 'mseq-bundlers-'));
  const dist = join(app, 'dist-tarballs');
  await run(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--dest', dist], { cwd: ROOT, env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' } });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'bundled-app', version: '1.0.0', private: true, type: 'commonjs' }));
  const nextjs = ['next', 'react', 'react-dom'].map((name) => `${name}@${versionOf(name)}`);
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...readdirSync(dist).map((f) => join(dist, f)), ...nextjs], { cwd: app, timeout: 300_000 });
  writeFileSync(
    join(app, 'app.js'),
    `const { connect, getNextSequenceValue } = require('mongodb-sequence');
(async () => {
  const client = await connect(process.env.MSEQ_URI);
  try {
    console.log(await getNextSequenceValue(client.db(process.env.MSEQ_DB), 'bundled', { upsert: true }));
  } finally {
    await client.close();
  }
})();
`,
  );
  writeFileSync(
    join(app, 'app.mjs'),
    `import { connect, getNextSequenceValue } from 'mongodb-sequence';

async function main() {
  const client = await connect(process.env.MSEQ_URI);
  try {
    console.log(await getNextSequenceValue(client.db(process.env.MSEQ_DB), 'bundled', { upsert: true }));
  } finally {
    await client.close();
  }
}
main();
`,
  );
});
after(async () => {
  if (app) rmSync(app, { recursive: true, force: true });
  await env?.close();
});

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8', timeout: 120_000, ...options }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed:\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Runs the bundle `file` of the app; resolves with what it printed. */
const runBundle = (file) => run(process.execPath, [file], { cwd: app, env: { ...process.env, MSEQ_URI: env.uri, MSEQ_DB: env.dbName } }).then((out) => out.trim());

let expected = 0;

test('esbuild without the package external fails: a native addon cannot be bundled', async () => {
  await assert.rejects(
    esbuild.build({ entryPoints: [join(app, 'app.js')], bundle: true, platform: 'node', outfile: join(app, 'out-inlined.js'), logLevel: 'silent' }),
    /No loader is configured for "\.node" files/,
  );
});

for (const [label, options] of [
  ["esbuild, external: ['mongodb-sequence']", { external: ['mongodb-sequence'] }],
  ["esbuild, packages: 'external'", { packages: 'external' }],
]) {
  test(`${label}: the bundle runs and takes values`, async () => {
    const outfile = join(app, `out-${expected}.js`);
    await esbuild.build({ entryPoints: [join(app, 'app.js')], bundle: true, platform: 'node', format: 'cjs', outfile, logLevel: 'silent', ...options });
    assert.equal(await runBundle(outfile), String(++expected));
  });
}

test("Vite's SSR build (dependencies external by default) runs and takes values", async () => {
  const vite = await import(join(ROOT, 'node_modules', 'vite', 'dist', 'node', 'index.js'));
  await vite.build({
    root: app,
    logLevel: 'silent',
    configFile: false,
    build: { ssr: join(app, 'app.js'), outDir: join(app, 'vite-out'), rollupOptions: { output: { format: 'cjs', entryFileNames: 'app.cjs' } } },
    ssr: { external: ['mongodb-sequence'] },
  });
  assert.equal(await runBundle(join(app, 'vite-out', 'app.cjs')), String(++expected));
});

function webpackBuild(config) {
  return new Promise((resolve, reject) => {
    webpack({ mode: 'production', target: 'node', context: app, entry: join(app, 'app.js'), optimization: { minimize: false }, ...config }, (error, stats) => {
      if (error) reject(error);
      else if (stats.hasErrors()) reject(new Error(stats.toString({ all: false, errors: true })));
      else resolve();
    });
  });
}

test('webpack without the package external fails on the .node binary', async () => {
  await assert.rejects(webpackBuild({ output: { path: join(app, 'webpack-inlined'), filename: 'app.js' } }), /Module parse failed/);
});

test("webpack, externals: { 'mongodb-sequence': 'commonjs mongodb-sequence' }: the bundle runs and takes values", async () => {
  await webpackBuild({ output: { path: join(app, 'webpack-out'), filename: 'app.js' }, externals: { 'mongodb-sequence': 'commonjs mongodb-sequence' } });
  assert.equal(await runBundle(join(app, 'webpack-out', 'app.js')), String(++expected));
});

test("Rollup, external: ['mongodb-sequence'], an ES module app bundled to CommonJS and to ESM: both run and take values", async () => {
  const { rollup } = await import(join(ROOT, 'node_modules', 'rollup', 'dist', 'es', 'rollup.js'));
  const bundle = await rollup({ input: join(app, 'app.mjs'), external: ['mongodb-sequence'], onwarn: (warning) => assert.fail(`rollup: ${warning.message}`) });
  try {
    for (const [format, file] of [
      ['cjs', 'rollup-out.cjs'],
      ['es', 'rollup-out.mjs'],
    ]) {
      await bundle.write({ format, file: join(app, file) });
      assert.equal(await runBundle(join(app, file)), String(++expected));
    }
  } finally {
    await bundle.close();
  }
});

/** Ends `child` (SIGTERM, then SIGKILL after 5 s) and waits until it has exited. */
async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill();
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** A port nothing listens on now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** A Next.js site in `dir` whose route handler /api/next takes a value; `config` is its next.config.js. */
function nextSite(dir, config) {
  mkdirSync(join(dir, 'app', 'api', 'next'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'next-site', version: '1.0.0', private: true }));
  writeFileSync(join(dir, 'next.config.js'), `module.exports = ${JSON.stringify(config)};\n`);
  writeFileSync(
    join(dir, 'app', 'api', 'next', 'route.js'),
    `import { connect, getNextSequenceValue } from 'mongodb-sequence';

export const dynamic = 'force-dynamic';
let client;

export async function GET() {
  client ??= await connect(process.env.MSEQ_URI);
  return Response.json({ value: await getNextSequenceValue(client.db(process.env.MSEQ_DB), 'bundled', { upsert: true }) });
}
`,
  );
  return dir;
}
const nextBin = () => join(app, 'node_modules', 'next', 'dist', 'bin', 'next');
const nextEnv = () => ({ ...process.env, NEXT_TELEMETRY_DISABLED: '1', MSEQ_URI: env.uri, MSEQ_DB: env.dbName });

test('Next.js without serverExternalPackages: next build fails on the .node binary', { timeout: 600_000 }, async () => {
  const site = nextSite(join(app, 'next-inlined'), {});
  await assert.rejects(run(process.execPath, [nextBin(), 'build'], { cwd: site, env: nextEnv(), timeout: 480_000 }), /node addon\) is not placeable in ESM chunks/);
});

for (const bundler of ['turbopack', 'webpack']) {
  test(
    `Next.js (${bundler}), serverExternalPackages: ['mongodb-sequence']: next build, then next start serves a route handler that takes values`,
    { timeout: 600_000 },
    async () => {
      const site = nextSite(join(app, `next-${bundler}`), { serverExternalPackages: ['mongodb-sequence'] });
      const next = nextBin();
      await run(process.execPath, [next, 'build', `--${bundler}`], { cwd: site, env: nextEnv(), timeout: 480_000 });
      const port = await freePort();
      const server = spawn(process.execPath, [next, 'start', '-p', String(port), '-H', '127.0.0.1'], { cwd: site, env: nextEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      server.stdout.on('data', (chunk) => (output += chunk));
      server.stderr.on('data', (chunk) => (output += chunk));
      try {
        const deadline = Date.now() + 60_000;
        // Two requests: the second reuses the client the route module keeps.
        for (let call = 0; call < 2; call++) {
          let body;
          for (;;) {
            try {
              if (server.exitCode !== null || server.signalCode !== null) throw new Error(`next start exited (${server.exitCode ?? server.signalCode})`);
              // Bounded: a server that accepts and never answers fails the test, not hangs it.
              const response = await fetch(`http://127.0.0.1:${port}/api/next`, { signal: AbortSignal.timeout(20_000) });
              body = await response.text();
              assert.equal(response.status, 200, `${body}\n${output}`);
              break;
            } catch (error) {
              const over = error.code === 'ERR_ASSERTION' || server.exitCode !== null || server.signalCode !== null || Date.now() > deadline;
              if (over) throw new Error(`next start: ${error.message}\n${output}`, { cause: error });
              await new Promise((resolve) => setTimeout(resolve, 250));
            }
          }
          assert.deepEqual(JSON.parse(body), { value: ++expected });
        }
      } finally {
        await stop(server);
      }
    },
  );
}
