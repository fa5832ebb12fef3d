// The bundler configurations docs/bundlers.md gives, tried on an app that installed the
// packed tarballs: a native addon cannot be bundled (esbuild has no loader for `.node`),
// so the package stays external and is loaded from node_modules at run time. esbuild
// (external, and `packages: 'external'`) and Vite's SSR build are run here; each bundle
// then makes a real call against the test server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup } from '../helpers.mjs';
import { ROOT } from '../../scripts/lib/python-env.mjs';

const require = createRequire(import.meta.url);
const esbuild = require(join(ROOT, 'node_modules', 'esbuild'));

let env;
let app;
before(async () => {
  env = await setup('bundlers');
  app = mkdtempSync(join(tmpdir(), 'mseq-bundlers-'));
  const dist = join(app, 'dist-tarballs');
  await run(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--dest', dist], { cwd: ROOT, env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' } });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'bundled-app', version: '1.0.0', private: true, type: 'commonjs' }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...readdirSync(dist).map((f) => join(dist, f))], { cwd: app });
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
