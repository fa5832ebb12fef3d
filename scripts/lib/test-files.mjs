// The test files of the suite, as paths relative to the project root. `node --test` is
// given files, not a folder: from Node 21 on a folder argument fails ("Cannot find
// module"). Every `*.test.mjs` under __test__/ except fixtures and node_modules.
import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { ROOT } from './python-env.mjs';

export const TEST_DIR = join(ROOT, '__test__');
const SKIPPED = new Set(['fixtures', 'node_modules']);

/** Every test file of the suite, sorted, as `__test__/<group>/<name>.test.mjs`. */
export function testFiles() {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && !SKIPPED.has(entry.name)) walk(join(dir, entry.name));
      else if (entry.isFile() && entry.name.endsWith('.test.mjs')) found.push(relative(ROOT, join(dir, entry.name)).split(sep).join('/'));
    }
  };
  walk(TEST_DIR);
  if (found.length === 0) throw new Error('no *.test.mjs under __test__/');
  return found.sort();
}
