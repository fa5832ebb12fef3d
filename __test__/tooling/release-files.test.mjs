// The files that CI and publishing read, checked where they can be without GitHub: the
// lockfile installs on every platform the workflows run on, and (below) the package
// metadata npm needs to publish.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const json = (path) => JSON.parse(readFileSync(join(ROOT, path), 'utf8'));

test('npm ci installs on any platform: no required package is bound to an os, cpu or libc', () => {
  // npm refuses (EBADPLATFORM) a package whose os/cpu/libc do not match the machine unless
  // it is optional; the workflows run `npm ci` on Linux, macOS (arm64) and Windows.
  const lock = json('package-lock.json');
  const bound = Object.entries(lock.packages)
    .filter(([path, p]) => path && !p.optional && (p.os || p.cpu || p.libc))
    .map(([path, p]) => `${path} ${JSON.stringify({ os: p.os, cpu: p.cpu, libc: p.libc })}`);
  assert.deepEqual(bound, []);
});
