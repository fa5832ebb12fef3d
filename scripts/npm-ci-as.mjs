// `node scripts/npm-ci-as.mjs <os> <cpu>`, e.g. `darwin arm64`: runs `npm ci
// --ignore-scripts` from a copy of package.json and package-lock.json in a scratch folder
// as npm would on that platform (npm itself made to report it; `--os`/`--cpu` alone only
// choose optional packages), to show that the workflows' `npm ci` passes on runners this
// machine is not (macOS arm64, Linux arm64, Windows). Prints npm's last lines; exits with
// npm's status.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './lib/python-env.mjs';

const [os, cpu] = process.argv.slice(2);
if (!os || !cpu) {
  console.error('usage: node scripts/npm-ci-as.mjs <os> <cpu>   (e.g. darwin arm64)');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const scratch = mkdtempSync(join(tmpdir(), `mseq-npm-ci-${os}-${cpu}-`));
try {
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(scratch, file));
  const preload = require.resolve('./lib/report-platform.cjs');
  const run = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', `--os=${os}`, `--cpu=${cpu}`], {
    cwd: scratch,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: `--require ${preload}`, MSEQ_AS_PLATFORM: os, MSEQ_AS_ARCH: cpu },
  });
  const lines = `${run.stdout}${run.stderr}`.split('\n').filter((l) => l && !l.includes('EBADENGINE'));
  console.log(`[npm ci as ${os} ${cpu}] ${run.status === 0 ? 'passed' : 'FAILED'}`);
  for (const line of lines.slice(-6)) console.log(`  ${line}`);
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
