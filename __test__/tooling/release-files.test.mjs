// The files that CI and publishing read, checked where they can be without GitHub: the
// lockfile installs on every platform the workflows run on, and (below) the package
// metadata npm needs to publish.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
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

test('the package names its repository, homepage, issues and licence, as npm provenance needs', () => {
  const pkg = json('package.json');
  // npm refuses a provenance statement (E422) when package.json names no repository, or
  // another one than the repository the workflow ran in (scripts/check-release.mjs).
  const repo = /^git\+https:\/\/github\.com\/([\w.-]+\/[\w.-]+)\.git$/.exec(pkg.repository?.url ?? '');
  assert.ok(repo, `repository.url: ${pkg.repository?.url}`);
  assert.equal(pkg.homepage, `https://github.com/${repo[1]}#readme`);
  assert.equal(pkg.bugs?.url, `https://github.com/${repo[1]}/issues`);
  assert.equal(pkg.license, 'MIT');
  assert.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright \(c\) \d{4} /);
  // Deno reads a .js file outside node_modules as ESM unless package.json says otherwise.
  assert.equal(pkg.type, 'commonjs');
});

test('each platform package is what `napi create-npm-dirs` makes from package.json', () => {
  const pkg = json('package.json');
  const shared = ['version', 'description', 'keywords', 'homepage', 'license', 'engines', 'repository', 'bugs'];
  const platforms = readdirSync(join(ROOT, 'npm')).sort();
  assert.equal(platforms.length, pkg.napi.targets.length, platforms.join(', '));
  for (const platform of platforms) {
    const sub = json(`npm/${platform}/package.json`);
    assert.equal(sub.name, `${pkg.name}-${platform}`);
    assert.equal(sub.main, `${pkg.napi.binaryName}.${platform}.node`);
    assert.deepEqual(sub.files, [sub.main]);
    for (const key of shared) assert.deepEqual(sub[key], pkg[key], `npm/${platform}/package.json: ${key} (run npx napi create-npm-dirs)`);
  }
});
