// The files that CI and publishing read, checked where they can be without GitHub: the
// lockfile installs on every platform the workflows run on, the package metadata npm needs
// to publish, the platform packages in step with package.json, and the release's own
// checks (scripts/check-release.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { platformPackageProblems, releaseProblems, repositoryOf } from '../../scripts/lib/release-checks.mjs';

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

test('the package names its repository, homepage, issues and licence, as npm provenance needs', () => {
  const pkg = json('package.json');
  // npm refuses a provenance statement (E422) when package.json names no repository, or
  // another one than the repository the workflow ran in (scripts/check-release.mjs).
  const repo = repositoryOf(pkg);
  assert.ok(repo, `repository.url: ${pkg.repository?.url}`);
  assert.equal(pkg.homepage, `https://github.com/${repo}#readme`);
  assert.equal(pkg.bugs?.url, `https://github.com/${repo}/issues`);
  assert.equal(pkg.license, 'MIT');
  assert.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright \(c\) \d{4} /);
  // Deno reads a .js file outside node_modules as ESM unless package.json says otherwise.
  assert.equal(pkg.type, 'commonjs');
});

test('each platform package is what `napi create-npm-dirs` makes from package.json', () => {
  assert.deepEqual(platformPackageProblems(ROOT), []);
  // The check sees a stale platform package (as npm/*/package.json were, with engines >= 18).
  const stale = mkdtempSync(join(tmpdir(), 'mseq-stale-'));
  try {
    cpSync(join(ROOT, 'package.json'), join(stale, 'package.json'));
    cpSync(join(ROOT, 'npm'), join(stale, 'npm'), { recursive: true });
    const file = join(stale, 'npm', 'linux-x64-gnu', 'package.json');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), engines: { node: '>= 18' } }));
    assert.deepEqual(platformPackageProblems(stale), ['npm/linux-x64-gnu/package.json: engines differs from package.json (npx napi create-npm-dirs)']);
  } finally {
    rmSync(stale, { recursive: true, force: true });
  }
});

test('a release publishes only from a tag equal to v + the version, in the named repository', () => {
  const pkg = json('package.json');
  const repository = repositoryOf(pkg);
  assert.deepEqual(releaseProblems(ROOT, { tag: `v${pkg.version}`, repository }), []);
  assert.deepEqual(releaseProblems(ROOT, { tag: `v${pkg.version}.1`, repository }), [`the tag v${pkg.version}.1 is not v${pkg.version} (package.json's version)`]);
  assert.deepEqual(releaseProblems(ROOT, { tag: `v${pkg.version}`, repository: 'someone/fork' }), [
    `package.json's repository is ${repository}, the workflow runs in someone/fork`,
  ]);
});
