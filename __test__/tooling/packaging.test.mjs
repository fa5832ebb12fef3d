// The packages as users install them: `npm run package` writes the main tarball (no
// binary) and this platform's tarball (exactly the binary); an empty app installs both
// with no Rust toolchain on PATH, then loads the addon with require() and import(), makes
// a real call against the test server, compiles a typed example against the installed
// typings, and runs the CLI through npx.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, sep } from 'node:path';
import { setup } from '../helpers.mjs';
import { ROOT } from '../../scripts/lib/python-env.mjs';
import { ensureRuntimes, runtimesUnavailable } from '../../scripts/lib/runtimes.mjs';

let env;
let app;
before(async () => {
  env = await setup('pkg');
  app = mkdtempSync(join(tmpdir(), 'mseq-app-'));
});
after(async () => {
  if (app) rmSync(app, { recursive: true, force: true });
  await env?.close();
});

/** PATH without any folder that holds cargo or rustc: the install must not build. */
function pathWithoutRust() {
  return process.env.PATH.split(delimiter)
    .filter((dir) => {
      try {
        return !readdirSync(dir).some((f) => /^(cargo|rustc)(\.exe)?$/.test(f));
      } catch {
        return true;
      }
    })
    .join(delimiter);
}

const sh = (command, args, options = {}) => execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });

test('the tarballs install into an empty app and work without Rust', async () => {
  sh(process.execPath, [join(ROOT, 'scripts', 'package.mjs')], { cwd: ROOT, env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' } });
  const dist = join(ROOT, 'dist');
  const tarballs = readdirSync(dist).filter((f) => f.endsWith('.tgz'));
  const main = tarballs.find((f) => /^mongodb-sequence-\d/.test(f));
  const platform = tarballs.find((f) => f !== main);
  assert.ok(main && platform, tarballs.join(', '));
  // A relative name: Git for Windows' tar would read 'D:\…' as a remote host.
  const list = (t) => sh('tar', ['tzf', t], { cwd: dist }).trim().split('\n');
  assert.deepEqual(
    list(main).filter((f) => f.endsWith('.node')),
    [],
    'the main package holds no binary',
  );
  // Every module under lib/ (the mongoose plugin's lib/mongoose/ included): the entries require them.
  const libFiles = readdirSync(join(ROOT, 'lib'), { recursive: true })
    .map((f) => `lib/${String(f).split(sep).join('/')}`)
    .filter((f) => f.endsWith('.js'));
  assert.ok(libFiles.includes('lib/mongoose/counter.js'), libFiles.join(', '));
  for (const file of ['bin/mongodb-sequence.js', 'bin/commands/next.js', ...libFiles, 'mongoose.js', 'mongoose.mjs', 'mongoose.d.ts', 'mongoose.d.mts']) {
    assert.ok(list(main).includes(`package/${file}`), `main tarball holds ${file}`);
  }
  assert.equal(list(platform).filter((f) => f.endsWith('.node')).length, 1, 'the platform package holds one binary');
  const platformName = platform.replace(/-\d+\.\d+\.\d+\.tgz$/, '');

  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'empty-app', version: '1.0.0', private: true }));
  // Windows spells it Path: drop every spelling before setting PATH, or the child gets two.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.toUpperCase() !== 'PATH'));
  const appEnv = { ...inherited, PATH: pathWithoutRust(), npm_config_audit: 'false', npm_config_fund: 'false' };
  assert.throws(() => sh('cargo', ['--version'], { env: appEnv }), 'no cargo on the app PATH');
  // Windows: Node spawns npm.cmd only through a shell.
  sh('npm', ['install', '--prefer-offline', join(dist, main), join(dist, platform)], { cwd: app, env: appEnv, shell: process.platform === 'win32' });

  const call = `(async (m) => {
    const client = await m.connect(${JSON.stringify(env.uri)});
    const db = client.db(${JSON.stringify(env.dbName)});
    const v = await m.getNextSequenceValue(db, 'pkg', { upsert: true });
    await client.close();
    console.log(v, require.resolve(${JSON.stringify(platformName)}));
  })`;
  const cjs = sh(process.execPath, ['-e', `${call}(require('mongodb-sequence'))`], { cwd: app, env: appEnv }).trim();
  assert.ok(cjs.startsWith('1 ') && cjs.includes(`node_modules/${platformName}/`), cjs);
  const esm = sh(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import m from 'mongodb-sequence'; const c = await m.connect(${JSON.stringify(env.uri)}); console.log(await m.getNextSequenceValue(c.db(${JSON.stringify(env.dbName)}), 'pkg')); await c.close();`,
    ],
    { cwd: app, env: appEnv },
  ).trim();
  assert.equal(esm, '2');
  // The mongoose plugin's subpath, CJS and ESM (mongoose itself is not installed here).
  const plugin = sh(
    process.execPath,
    ['-e', "const f = require('mongodb-sequence/mongoose'); import('mongodb-sequence/mongoose').then((m) => console.log(typeof f, m.default === f, typeof f({ connection: {} })))"],
    { cwd: app, env: appEnv },
  ).trim();
  assert.equal(plugin, 'function true function');
  // A typed example, compiled against the installed package's typings.
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: [] }, files: ['example.ts'] }),
  );
  writeFileSync(
    join(app, 'example.ts'),
    [
      "import { connect, sequence, getNextSequenceValue } from 'mongodb-sequence'",
      "import AutoIncrementFactory, { type AutoIncrementOptions } from 'mongodb-sequence/mongoose'",
      "const options: AutoIncrementOptions = { id: 'order_no', inc_field: 'no', reference_fields: ['shop'], exclusive: 'reuse' }",
      'export const plugin = AutoIncrementFactory({})',
      '// @ts-expect-error inc_amount is a number',
      "export const bad: AutoIncrementOptions = { inc_amount: '1' }",
      'void options',
      'export async function main(uri: string): Promise<string> {',
      '  const client = await connect(uri)',
      "  const db = client.db('app')",
      "  const n: number = await getNextSequenceValue(db, 'x', { upsert: true })",
      "  const big: bigint = await sequence(db, 'x', { bigint: true }).next()",
      '  // @ts-expect-error a formatted value is a string',
      "  const wrong: number = await getNextSequenceValue(db, 'x', { format: 'N{seq}' })",
      '  await client.close()',
      '  return `${n} ${big} ${wrong}`',
      '}',
    ].join('\n'),
  );
  sh(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], { cwd: app, env: appEnv });
  // Windows: npx.cmd runs only through a shell (cmd.exe), so the URI is quoted there.
  const windows = process.platform === 'win32';
  const viaNpx = sh('npx', ['--no-install', 'mongodb-sequence', 'next', 'pkg', '--uri', windows ? `"${env.uri}"` : env.uri, '--db', env.dbName], {
    cwd: app,
    env: appEnv,
    shell: windows,
  }).trim();
  assert.equal(viaNpx, '3');
});

// A vendored or patched copy (`npm i ./vendor/mongodb-sequence`) installs as the tarball
// does: the package runs no script at install time (a `prepare` would run there and fail,
// its scripts/ not being shipped, and npm 11 flags every install script).
test('the main package has no install-time script; a vendored copy installs and loads', async () => {
  const dist = join(app, 'vendor-dist');
  sh(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--dest', dist], { cwd: ROOT, env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' } });
  const tarballs = readdirSync(dist);
  const main = tarballs.find((f) => /^mongodb-sequence-\d/.test(f));
  const platform = tarballs.find((f) => f !== main);
  const vendor = join(app, 'vendored');
  const copy = join(vendor, 'vendor', 'mongodb-sequence');
  mkdirSync(copy, { recursive: true });
  sh('tar', ['xzf', join(dist, main), '-C', copy, '--strip-components=1']);
  const { scripts = {} } = JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8'));
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare']) {
    assert.equal(scripts[hook], undefined, `the packed package.json has a ${hook} script: ${scripts[hook]}`);
  }
  writeFileSync(join(vendor, 'package.json'), JSON.stringify({ name: 'vendored-app', version: '1.0.0', private: true }));
  const installed = sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', './vendor/mongodb-sequence', join(dist, platform)], {
    cwd: vendor,
    shell: process.platform === 'win32',
  });
  assert.doesNotMatch(installed, /install scripts/i, installed);
  const loaded = sh(process.execPath, ['-e', "console.log(typeof require('mongodb-sequence').getNextSequenceValue)"], { cwd: vendor }).trim();
  assert.equal(loaded, 'function');
});

/** npm's own script, to run it under another Node.js (npm checks `engines` against the Node that runs it). */
function npmCli() {
  if (process.env.npm_execpath?.endsWith('.js')) return process.env.npm_execpath;
  return join(dirname(realpathSync(sh('which', ['npm']).trim())), 'npm-cli.js');
}

// npm leaves out an optional dependency whose `engines` the running Node.js does not meet,
// without an error: the platform package must admit every Node.js the main package does,
// down to the oldest (20.19, as the official driver). Installed as users get it, the
// platform package an optional dependency; then the same without it: the loader's error.
test('Node.js 20.19 installs the platform package as an optional dependency; without it, a clear error', { skip: runtimesUnavailable() ?? false }, async () => {
  const node20 = ensureRuntimes().node20;
  assert.match(node20.version, /^v20\.19\./);
  const dist = join(app, 'node20-dist');
  sh(process.execPath, [join(ROOT, 'scripts', 'package.mjs'), '--dest', dist], { cwd: ROOT, env: { ...process.env, MONGO_SEQUENCE_SKIP_BUILD: '1' } });
  const tarballs = readdirSync(dist);
  const main = tarballs.find((f) => /^mongodb-sequence-\d/.test(f));
  const platform = tarballs.find((f) => f !== main);
  const platformName = platform.replace(/-\d+\.\d+\.\d+\.tgz$/, '');
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
  const node20Env = { ...process.env, PATH: `${dirname(node20.path)}${delimiter}${process.env.PATH}` };
  for (const omitted of [false, true]) {
    // Not under the other apps: a package resolved from a parent's node_modules would hide the omission.
    const dir = mkdtempSync(join(tmpdir(), omitted ? 'mseq-node20-omitted-' : 'mseq-node20-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'node20-app',
        version: '1.0.0',
        private: true,
        dependencies: { 'mongodb-sequence': `file:${join(dist, main)}` },
        optionalDependencies: { [platformName]: `file:${join(dist, platform)}` },
      }),
    );
    const args = ['install', '--prefer-offline', '--no-audit', '--no-fund', ...(omitted ? ['--omit=optional'] : [])];
    sh(node20.path, [npmCli(), ...args], { cwd: dir, env: node20Env });
    const script = `try { const m = require('mongodb-sequence'); console.log(JSON.stringify({ loaded: typeof m.getNextSequenceValue })); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    const outcome = JSON.parse(sh(node20.path, ['-e', script], { cwd: dir, env: node20Env }).trim());
    if (!omitted) {
      assert.deepEqual(outcome, { loaded: 'function' }, `${platformName} under ${node20.version}`);
      continue;
    }
    assert.equal(outcome.code, 'BINDING_NOT_LOADED', outcome.message);
    assert.ok(outcome.message.includes(`npm install ${platformName}@${version}`), outcome.message);
    assert.ok(outcome.message.includes(node20.version), outcome.message);
    assert.doesNotMatch(outcome.message, /wasm32|npm has a bug/, outcome.message);
  }
});
