// Type tests as an application sees the package: an app folder with the package (and
// mongoose) in its node_modules, compiled with `tsc --strict` under each module setting
// users pick, importing the plugin by its package name so that package.json "exports"
// and the per-condition typings (mongoose.d.ts for require, mongoose.d.mts for import)
// are what tsc resolves. Lines marked @ts-expect-error must fail to compile.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NAME = require('../../package.json').name;

// Server-independent: runs in one pass of `npm test` (not again in the SecantusDB pass).
const skip = process.env.MONGO_SEQUENCE_SERVER === 'secantus' ? 'compiles only; runs in the mongoeco pass' : false;
const apps = [];
after(() => {
  for (const app of apps) rmSync(app, { recursive: true, force: true });
});

/** An app folder with `files`, its package.json type, and node_modules links. */
function app(type, compilerOptions, files) {
  const dir = mkdtempSync(join(tmpdir(), 'mseq-types-'));
  apps.push(dir);
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', NAME), 'dir');
  symlinkSync(join(ROOT, 'node_modules', 'mongoose'), join(dir, 'node_modules', 'mongoose'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', '@types'), join(dir, 'node_modules', '@types'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, ...(type ? { type } : {}) }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', skipLibCheck: false, types: ['node'], ...compilerOptions },
      files: Object.keys(files),
    }),
  );
  for (const [file, lines] of Object.entries(files)) writeFileSync(join(dir, file), lines.join('\n'));
  return dir;
}

function compiles(dir) {
  const run = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
}

// What an app does with the factory once it has it, whichever way it was imported.
const USE = (factory) => [
  `const plugin = ${factory}(mongoose)`,
  'const schema = new mongoose.Schema({ no: Number })',
  "schema.plugin(plugin, { inc_field: 'no', start_seq: 100 })",
  '// @ts-expect-error start_seq is a number',
  "schema.plugin(plugin, { start_seq: '1' })",
  "schema.plugin(plugin, { inc_field: 'no', cache: 100 })",
  '// @ts-expect-error cache is a number (or null)',
  "schema.plugin(plugin, { cache: '100' })",
  `export const same: typeof ${factory} = ${factory}.AutoIncrementFactory`,
  `export const sync: Promise<unknown[]> = ${factory}.syncCounterToMax({})`,
];

const ESM_IMPORT = [
  "import mongoose from 'mongoose'",
  `import AutoIncrementFactory, { syncCounterToMax, takeOverCounter, type AutoIncrementOptions, type CachedNumberingOptions } from '${NAME}/mongoose'`,
  ...USE('AutoIncrementFactory'),
  'export const cached: CachedNumberingOptions = { cache: null }',
  "export const options: AutoIncrementOptions = { id: 'n', inc_field: 'no' }",
  'export const helpers = [syncCounterToMax, takeOverCounter]',
];

const REQUIRE_IMPORT = [
  "import mongoose = require('mongoose')",
  `import F = require('${NAME}/mongoose')`,
  ...USE('F'),
  "export const options: F.AutoIncrementOptions = { id: 'n', inc_field: 'no' }",
];

const DEFAULT_IMPORT_IN_CJS = ["import mongoose from 'mongoose'", `import AutoIncrementFactory from '${NAME}/mongoose'`, ...USE('AutoIncrementFactory')];

test('ESM app, module nodenext: the default import is callable (mongoose.d.mts)', { skip }, () => {
  compiles(app('module', { module: 'nodenext', moduleResolution: 'nodenext' }, { 'app.ts': ESM_IMPORT }));
});

test('CommonJS app, module nodenext: import = require and a default import', { skip }, () => {
  compiles(app(undefined, { module: 'nodenext', moduleResolution: 'nodenext' }, { 'app.ts': REQUIRE_IMPORT, 'default.ts': DEFAULT_IMPORT_IN_CJS }));
});

test('module commonjs: import = require and a default import (esModuleInterop)', { skip }, () => {
  compiles(
    app(
      undefined,
      { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true },
      {
        'app.ts': REQUIRE_IMPORT,
        'default.ts': DEFAULT_IMPORT_IN_CJS,
      },
    ),
  );
});

test('moduleResolution bundler: an ESM import and import = require (module preserve)', { skip }, () => {
  compiles(app(undefined, { module: 'preserve', moduleResolution: 'bundler' }, { 'app.ts': ESM_IMPORT, 'required.ts': REQUIRE_IMPORT }));
});

// Each mongoose entry imported by an ES module (an .mts file) as Node gives it: a CommonJS
// entry's default import is its module.exports, and its names are named imports.
const MTS_ENTRIES = [
  "import mongoose from 'mongoose'",
  `import AutoIncrementFactory from '${NAME}/mongoose'`,
  `import typegoose, { AutoIncrementID } from '${NAME}/mongoose/typegoose'`,
  `import autoIncrement, { plugin as maiPlugin } from '${NAME}/mongoose/auto-increment'`,
  `import pluginAutoinc, { autoIncrement as named, plugin as alias } from '${NAME}/mongoose/plugin-autoinc'`,
  'const schema = new mongoose.Schema({ no: Number, _id: Number })',
  "schema.plugin(AutoIncrementFactory(mongoose), { inc_field: 'no' })",
  "schema.plugin(AutoIncrementID, { field: 'no' })",
  // The drop-ins' options take `cache` from the plugin's typings (a relative import there).
  "schema.plugin(AutoIncrementID, { field: 'no', cache: 50 })",
  '// @ts-expect-error cache is a number (or null)',
  "schema.plugin(AutoIncrementID, { field: 'no', cache: true })",
  "schema.plugin(autoIncrement.plugin, { model: 'M', field: 'no', cache: null })",
  "schema.plugin(pluginAutoinc, { model: 'N', field: 'no', cache: 10 })",
  'schema.plugin(typegoose.AutoIncrementID, { startAt: 1 })',
  'autoIncrement.initialize(mongoose.connection)',
  "schema.plugin(autoIncrement.plugin, { model: 'M', field: 'no' })",
  "schema.plugin(maiPlugin, 'M')",
  "schema.plugin(pluginAutoinc, { model: 'N', field: 'no' })",
  "schema.plugin(pluginAutoinc.autoIncrement, 'N')",
  "schema.plugin(named, 'N')",
  "schema.plugin(alias, 'N')",
  '// @ts-expect-error model is required',
  "schema.plugin(pluginAutoinc, { field: 'no' })",
  'export const helpers = [pluginAutoinc.initialize, pluginAutoinc.plugin, pluginAutoinc.default]',
];

test('an .mts file, module nodenext: the default and named imports of every mongoose entry', { skip }, () => {
  const options = { module: 'nodenext', moduleResolution: 'nodenext' };
  compiles(app(undefined, options, { 'app.mts': MTS_ENTRIES }));
  compiles(app('module', options, { 'app.mts': MTS_ENTRIES }));
});
