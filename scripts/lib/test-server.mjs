// Starts a MongoDB-compatible server on a free loopback port and stops it by PID.
// With MONGODB_URI set, no server is started and that server is used instead.
//
// Kinds (MONGO_SEQUENCE_SERVER picks the default):
//   mongoeco  mongoeco's wire server, memory engine, through our corrections launcher
//   secantus  SecantusDB: a single-node replica set on WiredTiger (in memory, or on disk
//             with `storagePath`, which survives a restart on the same port)
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { ensureVenv, ROOT } from './python-env.mjs';
import { watchForStall } from './stall-watch.mjs';

const STARTUP_TIMEOUT_MS = 60_000;
export const SERVER_KINDS = ['mongoeco', 'secantus'];

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

function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

const KINDS = {
  mongoeco: {
    command: (python, port) => [python, [join(ROOT, 'scripts', 'servers', 'mongoeco_server.py'), '--port', String(port)]],
    uri: (port) => `mongodb://127.0.0.1:${port}/?directConnection=true`,
    readyLine: 'READY ',
  },
  secantus: {
    // Through our launcher, which corrects the server's stall on a collection created
    // while another connection writes into it (see the launcher).
    command: (python, port, { storagePath = ':memory:' } = {}) => [
      python,
      [
        join(ROOT, 'scripts', 'servers', 'secantus_server.py'),
        '--config',
        join(ROOT, 'scripts', 'servers', 'secantusd.toml'),
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--storage-path',
        storagePath,
        '--log-level',
        'WARNING',
        // Test servers only: failpoints (configureFailPoint) for the retry tests, and
        // durable commits so that a killed server keeps every acknowledged write.
        '--enable-test-commands',
        '--sync-on-commit',
      ],
    ],
    uri: (port) => `mongodb://127.0.0.1:${port}/?directConnection=true`,
    readyLine: null,
    // Its stall is detected, not waited out (scripts/lib/stall-watch.mjs).
    watched: true,
  },
};

/**
 * Starts a server of `kind` (default: $MONGO_SEQUENCE_SERVER or 'mongoeco'), on `port`
 * when given (a restart), else on a free one. Resolves with
 * `{ uri, kind, pid, port, stop(), kill() }`: `stop()` ends it gently and waits, `kill()`
 * ends it with SIGKILL (an outage) and waits.
 */
export async function startServer({ kind = process.env.MONGO_SEQUENCE_SERVER || 'mongoeco', port, storagePath, log = () => {} } = {}) {
  if (process.env.MONGODB_URI) {
    return { uri: process.env.MONGODB_URI, kind: 'external', pid: null, stop: async () => {}, kill: async () => {} };
  }
  const spec = KINDS[kind];
  if (!spec) throw new Error(`unknown test server kind '${kind}' (known: ${SERVER_KINDS.join(', ')})`);
  const python = ensureVenv({ log });
  for (let attempt = 1; ; attempt++) {
    const chosen = port ?? (await freePort());
    try {
      return await launch(kind, spec, python, chosen, { storagePath }, log);
    } catch (e) {
      if (port !== undefined || attempt >= 3) throw e;
      log(`[servers] ${kind} on port ${chosen} failed (${e.message}); trying another port`);
    }
  }
}

function launch(kind, spec, python, port, options, log) {
  const started = Date.now();
  const [command, args] = spec.command(python, port, options);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let watch = null;
  const end = async (signal) => {
    watch?.stop();
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const server = {
    uri: spec.uri(port),
    kind,
    pid: child.pid,
    port,
    stop: () => end('SIGTERM'),
    kill: () => end('SIGKILL'),
  };
  child.stderr.on('data', (d) => (output += d));
  child.stdout.on('data', (d) => (output += d));
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      if (!error) {
        log(`[servers] ${kind} (pid ${child.pid}) on 127.0.0.1:${port} in ${Date.now() - started} ms`);
        if (spec.watched) watch = watchForStall(server);
        resolve(server);
      } else {
        end('SIGKILL').then(() => reject(new Error(`${error.message}\n${output.slice(-2000)}`)));
      }
    };
    const timer = setTimeout(() => finish(new Error(`${kind} did not start within ${STARTUP_TIMEOUT_MS} ms`)), STARTUP_TIMEOUT_MS);
    const poll = setInterval(async () => {
      if (spec.readyLine ? output.includes(spec.readyLine) : await accepts(port)) finish();
    }, 100);
    child.once('exit', (code, signal) => finish(new Error(`${kind} exited early (code ${code}, signal ${signal})`)));
  });
}
