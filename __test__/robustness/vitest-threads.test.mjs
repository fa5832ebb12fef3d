// Vitest's `threads` pool (issue: a worker pool broke the shared clients). Six test files
// run in worker threads of their own, at most two at a time, and the Vitest main thread
// never loads the addon: napi-rs ends its async runtime whenever the last thread that
// loaded the addon ends, and every later file must still be served, with no value twice.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
import { startServer } from '../../scripts/lib/test-server.mjs';
import { withQuery } from '../fixtures/uri.mjs';

const require = createRequire(import.meta.url);
const fixture = fileURLToPath(new URL('../fixtures/vitest-threads/', import.meta.url));
const dbName = `mseq_vitest_${randomBytes(4).toString('hex')}`;
let server;
let scratch;
before(async () => {
  server = await startServer();
  scratch = mkdtempSync(join(tmpdir(), 'mseq-vitest-'));
});
after(async () => {
  const client = new MongoClient(server.uri);
  await client
    .db(dbName)
    .dropDatabase()
    .catch(() => {});
  await client.close();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

function runVitest(env) {
  const cli = require.resolve('vitest/vitest.mjs');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, 'run', '--root', fixture, '--config', join(fixture, 'vitest.config.mjs'), '--reporter', 'dot'], {
      env: { ...process.env, ...env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code) => resolve({ code, output }));
  });
}

test('six test files in Vitest threads, every call served, no value twice', { timeout: 240_000 }, async () => {
  const out = join(scratch, 'values.jsonl');
  const { code, output } = await runVitest({ VT_URI: server.uri, VT_URI_OPTION: withQuery(server.uri, 'serverSelectionTimeoutMS=5000'), VT_DB: dbName, VT_OUT: out });
  assert.equal(code, 0, `vitest passed:\n${output.slice(-4000)}`);
  const reports = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(reports.map((r) => r.file).sort(), ['file1', 'file2', 'file3', 'file4', 'file5', 'file6']);
  for (const key of ['derived', 'uri', 'inserted']) {
    const all = reports.flatMap((r) => r.values[key]).sort((a, b) => a - b);
    assert.deepEqual(
      all,
      Array.from({ length: 30 }, (_, i) => i + 1),
      `${key}: exactly 1..30 across the files`,
    );
  }
});
