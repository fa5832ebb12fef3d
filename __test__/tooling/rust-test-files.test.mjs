// One convention for Rust unit tests: a file's tests are its `tests` module, written at its
// end, or, once they would make it long, in `<file>_tests.rs` beside it, brought in with
// `#[cfg(test)] #[path = "<file>_tests.rs"] mod tests;` (a folder's `mod.rs` counts as a
// file named after the folder). Tests of a folder as a whole (`model_tests.rs`,
// `layer_tests.rs`) are `<subject>_tests.rs` modules of that folder. So no file is named
// `tests.rs`, and every `*_tests.rs` is compiled for tests only, by exactly one
// declaration. Needs no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function rustFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return rustFiles(path);
    return entry.name.endsWith('.rs') ? [path] : [];
  });
}

/** The `*_tests.rs` files that `source` (a file's text, in folder `dir`) declares, each with whether the declaration is under `#[cfg(test)]`. */
export function declaredTestFiles(source, dir) {
  const found = [];
  const declaration = /((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g;
  for (const [, attributes, name] of source.matchAll(declaration)) {
    const path = /#\[path\s*=\s*"([^"]+)"\]/.exec(attributes);
    const file = path ? path[1] : `${name}.rs`;
    if (!file.endsWith('_tests.rs')) continue;
    found.push({ file: join(dir, file), testOnly: /#\[cfg\(test\)\]/.test(attributes) });
  }
  return found;
}

test('the check reads declarations as the compiler does', () => {
  const source = '#[cfg(test)]\n#[path = "handle_tests.rs"]\nmod tests;\nmod model_tests;\n#[cfg(test)]\npub(crate) mod layer_tests;\nmod plain;';
  assert.deepEqual(declaredTestFiles(source, 'src/x'), [
    { file: join('src/x', 'handle_tests.rs'), testOnly: true },
    { file: join('src/x', 'model_tests.rs'), testOnly: false },
    { file: join('src/x', 'layer_tests.rs'), testOnly: true },
  ]);
});

test('Rust unit tests follow one convention: no tests.rs, each *_tests.rs declared once, for tests only', () => {
  const files = rustFiles(join(ROOT, 'src'));
  const named = files.filter((f) => basename(f) === 'tests.rs').map((f) => relative(ROOT, f));
  assert.deepEqual(named, [], 'a file named tests.rs: name it <file>_tests.rs and bring it in with #[path]');
  const declared = new Map();
  for (const file of files) {
    for (const { file: target, testOnly } of declaredTestFiles(readFileSync(file, 'utf8'), dirname(file))) {
      const key = relative(ROOT, target);
      assert.ok(testOnly, `${key}, declared in ${relative(ROOT, file)}, must be under #[cfg(test)]`);
      declared.set(key, (declared.get(key) ?? 0) + 1);
    }
  }
  for (const file of files.filter((f) => basename(f).endsWith('_tests.rs'))) {
    assert.equal(declared.get(relative(ROOT, file)), 1, `${relative(ROOT, file)}: declared once`);
  }
});
