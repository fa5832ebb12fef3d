// The maps of the repository hold: every path that ARCHITECTURE.md, the testing guide
// (docs/contributing/testing.md), the test files' map (docs/contributing/test-files.md)
// and the contributors' commands (docs/contributing/README.md) name exists, and every
// file under src/, lib/, bin/, scripts/ and __test__/ is named in ARCHITECTURE.md, the
// testing guide or the test files' map, so that a newcomer finds each file's place and a
// file added without its line fails here. Needs no server.
//
// What counts as a path: a word of a `code span` (or of a sh/text block) whose first
// segment is a top-level entry of the repository (`src/engine/`, `index.d.ts`), or a bare
// file name with a source extension (`counter_state.rs`). A bare name resolves at the
// root or in the folder of the section it is listed under: a heading that is one code
// span naming a folder (### `src/engine/alloc/`) opens that folder's section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The documents whose paths must exist. */
const MAPS = ['ARCHITECTURE.md', 'docs/contributing/testing.md', 'docs/contributing/test-files.md', 'docs/contributing/README.md'];
/** The documents that name the files. */
const NAMING = ['ARCHITECTURE.md', 'docs/contributing/testing.md', 'docs/contributing/test-files.md'];
/** The folders whose every file must be named. */
const NAMED_FOLDERS = ['src', 'lib', 'bin', 'scripts', '__test__'];

const BARE = /^[\w.-]+\.(?:rs|js|mjs|cjs|ts|mts|py|toml|json|md|txt|svg|ya?ml)$/;
const WORD = /^[\w.@+-]+(?:\/[\w.@+-]*)*$/;

/**
 * The paths a Markdown text names, each with the folder of its section:
 * `[{ word, folder, line }]`. `top` is the set of the repository's top-level entries.
 */
export function namedPaths(markdown, top) {
  const found = [];
  let folder = '';
  let fence = null;
  const lines = markdown.split('\n');
  const consider = (text, line) => {
    for (const raw of text.split(/[\s=,;()[\]]+/)) {
      const word = raw.replace(/^['"]|['".:]$/g, '');
      if (!word || !WORD.test(word)) continue;
      const first = word.split('/')[0];
      if (word.includes('/') ? top.has(first) : BARE.test(word)) found.push({ word, folder, line });
    }
  };
  lines.forEach((text, i) => {
    const line = i + 1;
    const opening = /^\s*(```|~~~)\s*([\w-]*)/.exec(text);
    if (fence !== null) {
      if (/^\s*(```|~~~)\s*$/.test(text)) fence = null;
      else if (['sh', 'bash', 'shell', 'text', ''].includes(fence)) consider(text, line);
      return;
    }
    if (opening) {
      fence = opening[2];
      return;
    }
    const heading = /^#{1,6}\s+(.*)$/.exec(text);
    if (heading) {
      const only = /^`([^`]+\/)`$/.exec(heading[1].trim());
      folder = only ? only[1] : '';
      if (only) found.push({ word: only[1], folder: '', line });
      return;
    }
    for (const m of text.matchAll(/`([^`\n]+)`/g)) consider(m[1], line);
  });
  return found;
}

/** Resolves the named paths against `exists(path)`: `{ resolved: Set, missing: [] }`. */
export function resolvePaths(named, exists) {
  const resolved = new Set();
  const missing = [];
  for (const { word, folder, line } of named) {
    const candidates = word.includes('/') ? [word] : [word, ...(folder ? [folder + word] : [])];
    const hit = candidates.find((p) => exists(p.replace(/\/$/, '')));
    if (hit) resolved.add(hit.replace(/\/$/, ''));
    else missing.push(`${word} (line ${line}${folder && !word.includes('/') ? `, under ${folder}` : ''})`);
  }
  return { resolved, missing };
}

/** The files of `files` that no resolved path names. */
export function unnamed(files, resolved) {
  return files.filter((f) => !resolved.has(f));
}

const exists = (p) => existsSync(join(ROOT, p));
const read = (p) => readFileSync(join(ROOT, p), 'utf8');

/** The top-level entries of the repository (tracked or not, build output aside). */
function topLevel() {
  return new Set(readdirSync(ROOT).filter((n) => !['node_modules', 'target', '.git'].includes(n)));
}

/** Files under the named folders: tracked, or new and not ignored. */
function filesToName() {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', ...NAMED_FOLDERS], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return [...new Set(out.split('\n').filter(Boolean))].filter((f) => exists(f) && statSync(join(ROOT, f)).isFile()).sort();
}

test('the check itself: a missing path, an unnamed file and a bare name outside its folder are caught', () => {
  const top = new Set(['src', 'README.md']);
  const files = new Set(['src/a/x.rs', 'src/a/y.rs', 'src/b/z.rs']);
  const has = (p) => files.has(p) || ['src', 'src/a', 'src/b'].includes(p);
  const markdown = ['See `src/b/z.rs` and `src/gone.rs`.', '### `src/a/`', '- `x.rs`: one.', '- `z.rs`: not in this folder.', '```sh', 'node src/missing.mjs --flag', '```'].join(
    '\n',
  );
  const { resolved, missing } = resolvePaths(namedPaths(markdown, top), has);
  assert.deepEqual(missing, ['src/gone.rs (line 1)', 'z.rs (line 4, under src/a/)', 'src/missing.mjs (line 6)']);
  assert.deepEqual(unnamed([...files], resolved), ['src/a/y.rs']);
});

test("every path ARCHITECTURE.md, the testing guide, the test files' map and the contributors' commands name exists", () => {
  const top = topLevel();
  const problems = [];
  let checked = 0;
  for (const doc of MAPS) {
    const named = namedPaths(read(doc), top);
    checked += named.length;
    for (const m of resolvePaths(named, exists).missing) problems.push(`${doc}: ${m}`);
  }
  assert.ok(checked > 100, `only ${checked} paths found: the extraction is broken`);
  assert.deepEqual(problems, []);
});

test("every file of src/, lib/, bin/, scripts/ and __test__/ is named in ARCHITECTURE.md, the testing guide or the test files' map", () => {
  const top = topLevel();
  const resolved = new Set();
  for (const doc of NAMING) for (const p of resolvePaths(namedPaths(read(doc), top), exists).resolved) resolved.add(p);
  const files = filesToName();
  assert.ok(files.length > 100, `only ${files.length} files found under ${NAMED_FOLDERS.join(', ')}`);
  assert.deepEqual(unnamed(files, resolved), [], 'files without a line (give each one in the section of its folder)');
});
