// Watches a test server for a stall: the server process alive and not stopped, but no
// answer to a command that needs its storage. SecantusDB can stall that way for good (one
// core spinning, every read and write waiting, `ping` and `hello` still answered), so the
// probe is `listDatabases`, which waits on the same lock as the stalled work. A stalled
// server is killed, so that the test that met it fails at once with connection errors
// instead of waiting out its timeout, and the reason is printed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { BSON } from 'mongodb';

const PROBE_EVERY_MS = 5_000;
const PROBE_TIMEOUT_MS = 4_000;
// Consecutive unanswered probes before the server counts as stalled (about 60 s): far
// above any single command of the suite on a loaded 2-core machine.
const STALLED_AFTER = 12;

/** Whether every thread of process `pid` is stopped (SIGSTOP: a test freezing it on purpose). */
function stopped(pid) {
  const tasks = `/proc/${pid}/task`;
  if (!existsSync(tasks)) return false;
  return readdirSync(tasks).every((thread) => {
    try {
      const stat = readFileSync(`${tasks}/${thread}/stat`, 'utf8');
      return /^[Tt]/.test(stat.slice(stat.lastIndexOf(')') + 2));
    } catch {
      return true;
    }
  });
}

/** One OP_MSG `listDatabases` on a connection of its own, unref'd: resolves when a reply arrives. */
function listDatabases(uri, timeoutMs) {
  const { hostname, port } = new URL(uri.replace(/^mongodb:/, 'http:'));
  const body = BSON.serialize({ listDatabases: 1, nameOnly: true, $db: 'admin' });
  const message = Buffer.alloc(21 + body.length);
  message.writeInt32LE(message.length, 0);
  message.writeInt32LE(1, 4); // requestID
  message.writeInt32LE(2013, 12); // OP_MSG; flagBits 0, then a kind-0 section
  body.copy(message, 21);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.unref();
    let received = 0;
    let timer;
    const done = (error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve();
    };
    timer = setTimeout(() => done(new Error('no answer')), timeoutMs);
    timer.unref();
    socket.on('connect', () => socket.write(message));
    socket.on('data', (chunk) => {
      received += chunk.length;
      if (received >= 16) done();
    });
    socket.on('error', done);
    socket.on('close', () => done(new Error('closed')));
  });
}

/**
 * Probes `server` (`{ uri, pid, kind, kill() }`) until the returned `stop()` is called;
 * calls `onStall(message)` (default: print it to stderr) and kills the server when it
 * stalls. Timers are unref'd: the watch never keeps a process alive.
 */
export function watchForStall(
  server,
  { onStall = (m) => process.stderr.write(`${m}\n`), probeEveryMs = PROBE_EVERY_MS, probeTimeoutMs = PROBE_TIMEOUT_MS, stalledAfter = STALLED_AFTER } = {},
) {
  let unanswered = 0;
  let probing = false;
  let ended = false;
  const probe = async () => {
    if (probing || ended) return;
    probing = true;
    try {
      await listDatabases(server.uri, probeTimeoutMs);
      unanswered = 0;
    } catch {
      if (ended || stopped(server.pid)) return;
      unanswered += 1;
      if (unanswered >= stalledAfter) {
        ended = true;
        clearInterval(timer);
        onStall(
          `[servers] ${server.kind} (pid ${server.pid}) stalled: no answer to listDatabases for ${(unanswered * probeEveryMs) / 1000} s ` +
            'while its process runs; killed, so that the test meeting it fails now (a server defect, not a test of this package)',
        );
        await server.kill();
      }
    } finally {
      probing = false;
    }
  };
  const timer = setInterval(probe, probeEveryMs);
  timer.unref();
  return {
    stop() {
      ended = true;
      clearInterval(timer);
    },
  };
}
