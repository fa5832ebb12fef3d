// The installs of npm test's newest-versions pass (scripts/lib/newest-peers.mjs) against a
// registry on this machine: one that cannot be reached makes the pass skipped with the
// reason, one that answers but has no such package fails it. Needs no test server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const INSTALLER = new URL('../../scripts/lib/newest-peers.mjs', import.meta.url).href;

/** Runs prepareNewestPeers with `registry`; resolves with its printout and result. */
function prepareWith(registry) {
  const scratch = mkdtempSync(join(tmpdir(), 'mseq-newest-'));
  const script = `import(${JSON.stringify(INSTALLER)}).then(async (m) => {
    const r = await m.prepareNewestPeers(${JSON.stringify(scratch)});
    console.log('RESULT ' + JSON.stringify({ skipped: r.skipped, failed: r.failed, versions: r.peers.map((p) => p.version ?? null) }));
  });`;
  return new Promise((resolve, reject) => {
    // loglevel silent, as `npm test -s` passes it down: the installer's npm must still say why.
    const env = { ...process.env, npm_config_registry: registry, npm_config_loglevel: 'silent' };
    const child = spawn(process.execPath, ['-e', script], { env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (status) => {
      rmSync(scratch, { recursive: true, force: true });
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (status !== 0 || !line) return reject(new Error(`installer exited with ${status}: ${out}`));
      resolve({ out, ...JSON.parse(line.slice('RESULT '.length)) });
    });
  });
}

function listen(handler) {
  const server = createServer(handler);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('a registry that cannot be reached: the pass is skipped, with the reason', { timeout: 120_000 }, async () => {
  const server = await listen(() => {});
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve)); // nothing listens there now
  const r = await prepareWith(`http://127.0.0.1:${port}/`);
  assert.deepEqual(r.versions, [null, null, null, null]);
  assert.equal(r.failed, null);
  assert.match(r.skipped, /^registry unreachable \(npm install mongodb@latest: .*ECONNREFUSED.*; 3 more installs failed so\)$/);
  assert.match(r.out, /mongoose-v8: mongoose@8 +not installed, registry unreachable: npm install mongoose@8: /);
});

test('a registry that answers without the package: the pass fails', { timeout: 120_000 }, async () => {
  const server = await listen((req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"Not found"}');
  });
  try {
    const { port } = server.address();
    const r = await prepareWith(`http://127.0.0.1:${port}/`);
    assert.deepEqual(r.versions, [null, null, null, null]);
    assert.equal(r.skipped, null);
    assert.match(r.failed, /^npm install mongodb@latest exited with 1: 404 /);
    assert.match(r.out, /mongodb-v6: mongodb@6 +FAILED: npm install mongodb@6 exited with 1/);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
