// Finds a Python >= 3.13 and keeps the project's virtual environment (.venv) with the
// pinned test servers installed. Used by the tests, the demo and the benchmark.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const VENV = join(ROOT, '.venv');
const REQUIREMENTS = join(ROOT, 'scripts', 'servers', 'requirements.txt');
const STAMP = join(VENV, '.requirements-installed');
const MIN = [3, 13];

function versionOf(python) {
  const r = spawnSync(python, ['-c', 'import sys; print(sys.version_info[0], sys.version_info[1])'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) return null;
  return r.stdout.trim().split(' ').map(Number);
}

function recentEnough(v, min = MIN) {
  return v && (v[0] > min[0] || (v[0] === min[0] && v[1] >= min[1]));
}

/** Candidate interpreters: PATH first, then pyenv's versions folder. */
function candidates() {
  const list = ['python3.14', 'python3.13', 'python3'];
  const r = spawnSync('pyenv', ['root'], { encoding: 'utf8' });
  const roots = [r.status === 0 ? r.stdout.trim() : null, process.env.PYENV_ROOT, join(process.env.HOME ?? '', '.pyenv')];
  for (const root of roots.filter(Boolean)) {
    const versions = join(root, 'versions');
    if (!existsSync(versions)) continue;
    for (const v of readdirSync(versions).sort().reverse()) list.push(join(versions, v, 'bin', 'python3'));
  }
  return list;
}

/** A Python of at least `min` ([major, minor]; the test servers' 3.13 by default). */
export function findPython(min = MIN) {
  for (const python of candidates()) {
    if (recentEnough(versionOf(python), min)) return python;
  }
  if (min !== MIN) throw new Error(`no Python >= ${min.join('.')} on PATH or under pyenv`);
  throw new Error('The test servers need Python >= 3.13 (on PATH or under pyenv); none was found. ' + 'Install one, or set MONGODB_URI to run against your own MongoDB.');
}

/** Path of the venv's python, creating the venv and installing the servers if needed. */
export function ensureVenv({ log = (m) => process.stderr.write(m + '\n') } = {}) {
  const python = join(VENV, 'bin', 'python');
  const wanted = readFileSync(REQUIREMENTS, 'utf8');
  if (existsSync(python) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === wanted) return python;
  const started = Date.now();
  if (!existsSync(python)) {
    const base = findPython();
    log(`[servers] creating ${VENV} with ${base}`);
    execFileSync(base, ['-m', 'venv', VENV], { stdio: 'inherit' });
  }
  log('[servers] installing the pinned test servers (scripts/servers/requirements.txt)');
  execFileSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--pre', '-r', REQUIREMENTS], {
    stdio: 'inherit',
  });
  writeFileSync(STAMP, wanted);
  log(`[servers] ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return python;
}
