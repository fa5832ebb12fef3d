// The documentation's shape: the README stays short (what it is, install, quick start, the
// API table, the guarantees, links), so does every users' page of docs/ (one topic each;
// contributors' pages, in docs/contributing/, may be longer), and every relative link in the top-level *.md files
// (README.md, ARCHITECTURE.md, CHANGELOG.md), docs/ and docs/contributing/ points at a
// file that exists and, when it names a heading (`#anchor`), at a heading of that file.
// Needs no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The markdown files a user or contributor reads. */
function docFiles() {
  const inFolder = (dir) =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith('.md'))
          .map((f) => join(dir, f))
      : [];
  return [...inFolder(ROOT), ...inFolder(join(ROOT, 'docs')), ...inFolder(join(ROOT, 'docs', 'contributing'))];
}

/** The text outside fenced code blocks (a link inside a code block is code, not a link). */
function prose(markdown) {
  let inFence = false;
  return markdown
    .split('\n')
    .filter((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return false;
      }
      return !inFence;
    })
    .join('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file offers (repeated headings get -1, -2, … as on GitHub). */
function anchors(markdown) {
  const seen = new Map();
  const out = new Set();
  for (const line of prose(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative link targets of a markdown file: `[text](target)` and `![alt](target)`. */
function links(markdown) {
  const text = prose(markdown).replace(/`[^`\n]*`/g, (code) => (code.includes('](') ? '' : code));
  return [...text.matchAll(/!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
}

test('README.md is at most 15 KB', () => {
  const size = statSync(join(ROOT, 'README.md')).size;
  assert.ok(size <= 15 * 1024, `README.md is ${size} bytes; the rest belongs in docs/`);
});

/** The largest users' page of docs/, in bytes: a longer one mixes topics and is split. */
export const USERS_PAGE_LIMIT = 15_000;

/** The users' pages of `dir` (its *.md files, not those of its subfolders) over `limit` bytes, as `name: size`. */
export function oversized(dir, limit = USERS_PAGE_LIMIT) {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => [e.name, statSync(join(dir, e.name)).size])
    .filter(([, size]) => size > limit)
    .map(([name, size]) => `${name}: ${size} bytes`);
}

test('the check itself: a page over the limit is named, docs/contributing/ is not looked into', () => {
  const dir = mkdtempSync(join(tmpdir(), 'docs-size-'));
  try {
    writeFileSync(join(dir, 'short.md'), 'x'.repeat(USERS_PAGE_LIMIT));
    writeFileSync(join(dir, 'long.md'), 'x'.repeat(15_353));
    mkdirSync(join(dir, 'contributing'));
    writeFileSync(join(dir, 'contributing', 'long.md'), 'x'.repeat(40_000));
    assert.deepEqual(oversized(dir), ['long.md: 15353 bytes']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`every users' page of docs/ is at most ${USERS_PAGE_LIMIT} bytes`, () => {
  assert.ok(readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).length > 10, "no users' page found");
  assert.deepEqual(oversized(join(ROOT, 'docs')), [], 'split a page by topic (reference apart from narrative), and fix the links to its sections');
});

test('every relative link in the top-level *.md files, docs/ and docs/contributing/ resolves', () => {
  const broken = [];
  let checked = 0;
  for (const file of docFiles()) {
    const here = relative(ROOT, file);
    for (const target of links(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked += 1;
      const [path, anchor] = target.split('#');
      const resolved = path ? join(dirname(file), decodeURIComponent(path)) : file;
      if (!existsSync(resolved)) {
        broken.push(`${here}: ${target} (no such file)`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md')) {
        if (!anchors(readFileSync(resolved, 'utf8')).has(anchor)) {
          broken.push(`${here}: ${target} (no such heading in ${relative(ROOT, resolved)})`);
        }
      }
    }
  }
  assert.ok(checked > 0, 'no relative link found: the extraction is broken');
  assert.deepEqual(broken, []);
});
