// Starts a MongoDB-compatible server on a free loopback port and stops it by PID.
// With MONGODB_URI set, no server is started and that server is used instead.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ensureVenv, ROOT } from './python-env.mjs';

const STARTUP_TIMEOUT_MS = 60_000;

/** A free TCP port on 127.0.0.1 (asked of the OS, never a fixed one). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const KINDS = {
  mongoeco: (python, port) => [python, [join(ROOT, 'scripts', 'servers', 'mongoeco_server.py'), '--port', String(port)]],
};

/**
 * Starts a server of `kind` (default: $MONGO_SEQUENCE_SERVER or 'mongoeco').
 * Resolves with `{ uri, kind, pid, stop() }`; `stop()` ends the process and waits for it.
 */
export async function startServer({ kind = process.env.MONGO_SEQUENCE_SERVER || 'mongoeco', log = () => {} } = {}) {
  if (process.env.MONGODB_URI) {
    return { uri: process.env.MONGODB_URI, kind: 'external', pid: null, stop: async () => {} };
  }
  const make = KINDS[kind];
  if (!make) throw new Error(`unknown test server kind '${kind}' (known: ${Object.keys(KINDS).join(', ')})`);
  const python = ensureVenv({ log });
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await launch(kind, ...make(python, port), port, log);
    } catch (e) {
      if (attempt >= 3) throw e;
      log(`[servers] ${kind} on port ${port} failed (${e.message}); trying another port`);
    }
  }
}

function launch(kind, command, args, port, log) {
  const started = Date.now();
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${kind} did not start within ${STARTUP_TIMEOUT_MS} ms`)), STARTUP_TIMEOUT_MS);
    const fail = (error) => {
      clearTimeout(timer);
      stop().then(() => reject(new Error(`${error.message}\n${output.slice(-2000)}`)));
    };
    child.stderr.on('data', (d) => (output += d));
    child.stdout.on('data', (d) => {
      output += d;
      if (output.includes('READY ')) {
        clearTimeout(timer);
        log(`[servers] ${kind} (pid ${child.pid}) on 127.0.0.1:${port} in ${Date.now() - started} ms`);
        resolve({ uri: `mongodb://127.0.0.1:${port}/?directConnection=true`, kind, pid: child.pid, port, stop });
      }
    });
    child.once('exit', (code, signal) => fail(new Error(`${kind} exited early (code ${code}, signal ${signal})`)));
  });
}
