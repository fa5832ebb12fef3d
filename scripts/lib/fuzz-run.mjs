// Runs the boundary fuzzer's worker in a child process against a server and reports:
// the worker's summary, or how it died (a signal: an abort) with the inputs of the batch
// it was running.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('../../__test__/fixtures/fuzz-worker.mjs', import.meta.url));

/**
 * Resolves with `{ summary, exit: { code, signal }, lastBatch, stderr }`; `summary` is the
 * worker's JSON line, or null when it died before printing one.
 */
export function runFuzzWorker({ uri, db, calls, seed }) {
  const dir = mkdtempSync(join(tmpdir(), 'mseq-fuzz-'));
  const log = join(dir, 'batch.txt');
  const child = spawn(process.execPath, ['--max-old-space-size=8192', WORKER], {
    env: { ...process.env, FUZZ_URI: uri, FUZZ_DB: db, FUZZ_CALLS: String(calls), FUZZ_SEED: String(seed), FUZZ_LOG: log },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-8000)));
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      const line = stdout.trim().split('\n').pop();
      let summary = null;
      try {
        summary = JSON.parse(line);
      } catch {}
      let lastBatch = '';
      try {
        lastBatch = readFileSync(log, 'utf8');
      } catch {}
      rmSync(dir, { recursive: true, force: true });
      resolve({ summary, exit: { code, signal }, lastBatch, stderr });
    });
  });
}

/** One line for people: calls, outcomes, aborts, hangs, time. */
export function describeRun({ summary, exit }) {
  if (!summary) return `fuzz worker died (code ${exit.code}, signal ${exit.signal}) before reporting`;
  const codes = Object.entries(summary.rejected)
    .sort((a, b) => b[1] - a[1])
    .map(([c, n]) => `${c} ${n}`)
    .join(', ');
  return `fuzz seed ${summary.seed}: ${summary.calls} calls in ${(summary.ms / 1000).toFixed(1)} s; resolved ${summary.resolved}; rejected ${codes}; aborts ${exit.signal ? 1 : 0}; hangs ${summary.hangs}`;
}
