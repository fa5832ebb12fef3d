'use strict';
// The native module, through napi-rs's generated loader (index.js). When it cannot load,
// the loader's own error blames an npm bug and names a WebAssembly package this project
// does not build; this one says which package holds this platform's binary, why npm may
// have left it out, and what to run. Its `code` is BINDING_NOT_LOADED, a code of the
// native `ErrorCode` table, written here as a string because that table is what failed.

const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const CODE = 'BINDING_NOT_LOADED';

/** napi-rs's name of this platform (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`). */
function platformName() {
  let abi = '';
  if (process.platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
    abi = report?.header?.glibcVersionRuntime ? '-gnu' : '-musl';
  } else if (process.platform === 'win32') {
    abi = '-msvc';
  }
  return `${process.platform}-${process.arch}${abi}`;
}

/** The messages of `error` and its causes, without the loader's WebAssembly fallbacks. */
function causes(error) {
  const lines = [];
  for (let e = error, depth = 0; e && depth < 8; e = e.cause, depth++) {
    const first = String(e.message ?? e).split('\n')[0];
    if (!/wasm32-wasi|\.wasi\.cjs|Cannot find native binding/.test(first)) lines.push(first);
  }
  return lines;
}

/** The error a failed load of the loader becomes. */
function notLoaded(error) {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8'));
  const platform = platformName();
  const name = `${manifest.name}-${platform}`;
  const engines = manifest.engines?.node ?? 'any';
  const built = (manifest.napi?.targets ?? []).length;
  let installed = null;
  try {
    installed = JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;
  } catch {
    // not installed (or not resolvable from here)
  }
  const detail = causes(error);
  let message;
  if (installed !== null) {
    message =
      `mongodb-sequence: the binary of ${name}@${installed} is installed but could not be loaded on Node.js ${process.version}` +
      (detail.length ? `: ${detail.join('; ')}` : '') +
      (installed !== manifest.version ? `. It should be version ${manifest.version}, as mongodb-sequence is: npm install ${name}@${manifest.version}` : '');
  } else if (!manifest.optionalDependencies || name in manifest.optionalDependencies || built === 0) {
    message =
      `mongodb-sequence: the package holding this platform's binary, ${name}@${manifest.version}, is not installed. ` +
      `npm installs it as an optional dependency and leaves it out without an error when the running Node.js ` +
      `(${process.version}) is outside its engines (${engines}), when optional dependencies are omitted ` +
      `(--omit=optional, --no-optional) or when node_modules was installed on another platform and copied here. ` +
      `Use Node.js ${engines} and run: npm install ${name}@${manifest.version}`;
  } else {
    message = `mongodb-sequence: no binary is published for ${platform} (Node.js ${process.version}); the platforms built are those of the optionalDependencies of mongodb-sequence`;
  }
  const wrapped = new Error(message, { cause: error });
  wrapped.code = CODE;
  return wrapped;
}

let native;
try {
  native = require('../index.js');
} catch (error) {
  throw notLoaded(error);
}

module.exports = native;
