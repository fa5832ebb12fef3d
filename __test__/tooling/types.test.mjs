// Type tests: `tsc --noEmit --strict` over __test__/types/, whose `@ts-expect-error`
// lines must fail to compile (tsc reports an unused expectation otherwise), so the
// typings are held to what the calls resolve with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const project = fileURLToPath(new URL('../types/', import.meta.url));

test('the typings give the types the calls resolve with (tsc --strict)', () => {
  const run = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
});
