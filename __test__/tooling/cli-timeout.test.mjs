// `--timeout` bounds every command of the command line, not only connecting: behind a
// proxy that passes the handshake and then freezes (a server that stopped answering
// mid-command), each command exits within its --timeout plus a margin, exit code 1, with
// `error TIMEOUT:` naming the bound and the stage, and for a write what may still become
// of it. A command answered before the server froze still exits in time, and the clock
// runs from the start of connecting whatever the command waits for. `check` is held to
// the same in cli-check.test.mjs (exit 3, as a plugin).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { setup } from '../helpers.mjs';
import { freezingProxy, pastHandshake } from '../fixtures/stalled-server.mjs';
import { runCli } from '../fixtures/plugin-output.mjs';

const { session, withinTimeout, LATE: SAID, TimeoutError } = createRequire(import.meta.url)('../../lib/cli.js');

const TIMEOUT_SECONDS = 2;
// What the command may take past --timeout, measured from the spawn: starting Node and
// the addon before the clock starts, and leaving after it, on a loaded machine.
const MARGIN_MS = 2500;
// Far past the bound, so that a command that hangs fails an assertion of its own
// instead of running into the test runner's timeout.
const KILL_AFTER_MS = 30_000;

let env;
before(async () => {
  env = await setup('timeout');
});
after(async () => {
  await env?.close();
});

/** What the message says of a call given up on, by what the command does. */
const LATE = {
  read: null,
  values: /if the server applies it later, its values are left unused \(a gap: no value is handed out twice\)$/,
  write: /the write may still be applied: read the counter before trying it again$/,
};

/**
 * Runs `args` with --timeout 2 through a proxy that freezes at the first command past the
 * handshake, and checks that it gave up in time, as a TIMEOUT of its stage; resolves
 * with the run.
 */
async function stalled(t, args, late) {
  const proxy = await freezingProxy(env.address, pastHandshake);
  try {
    const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`;
    const r = await runCli([...args, '--timeout', String(TIMEOUT_SECONDS)], { uri, db: env.dbName, killAfterMs: KILL_AFTER_MS });
    const shown = args.join(' ');
    assert.ok(!r.killed, `${shown}: still running ${r.ms} ms after a --timeout of ${TIMEOUT_SECONDS} s`);
    t.diagnostic(`${shown} --timeout ${TIMEOUT_SECONDS}: exit ${r.code} after ${r.ms} ms: ${(r.stdout + r.stderr).trim()}`);
    assert.ok(proxy.held() > 0, `${shown}: the command reached the frozen server`);
    assert.ok(r.ms <= TIMEOUT_SECONDS * 1000 + MARGIN_MS, `${shown}: exited ${r.ms} ms after it started, past --timeout ${TIMEOUT_SECONDS} s + ${MARGIN_MS} ms`);
    assert.equal(r.code, 1, `${shown}: ${r.stdout}${r.stderr}`);
    const json = args.includes('--json');
    const message = json ? JSON.parse(r.stdout).error.message : r.stderr.replace(/^error TIMEOUT: /, '').trimEnd();
    if (json) {
      assert.equal(JSON.parse(r.stdout).error.code, 'TIMEOUT');
      assert.equal(r.stderr, '');
    } else {
      assert.match(r.stderr, /^error TIMEOUT: /);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, 'one line');
      assert.equal(r.stdout, '');
    }
    // Connected, so stuck at the command's own stage.
    assert.match(message, new RegExp(`^no answer within --timeout \\(${TIMEOUT_SECONDS} s\\) while (?!connecting)\\w`));
    if (LATE[late]) assert.match(message, LATE[late]);
    else assert.doesNotMatch(message, /applied|unused/, 'a read changes nothing');
    return r;
  } finally {
    await proxy.close();
  }
}

test('next: TIMEOUT within --timeout from a server that freezes; its values at worst a gap', async (t) => {
  await stalled(t, ['next', 'stalled', '--upsert'], 'values');
  await stalled(t, ['next', 'stalled', '--count', '5'], 'values');
});

test('current: TIMEOUT within --timeout from a server that freezes', async (t) => {
  await stalled(t, ['current', 'stalled'], 'read');
});

test('set: TIMEOUT within --timeout from a server that freezes; the write may still be applied', async (t) => {
  await stalled(t, ['set', 'stalled', '50'], 'write');
  await stalled(t, ['set', 'stalled', '50', '--json'], 'write');
});

test('init: TIMEOUT within --timeout from a server that freezes; the write may still be applied', async (t) => {
  await stalled(t, ['init', 'stalled', '--start', '10'], 'write');
});

test('drop: TIMEOUT within --timeout from a server that freezes; the write may still be applied', async (t) => {
  await stalled(t, ['drop', 'stalled', '--yes'], 'write');
});

test('reset: TIMEOUT within --timeout from a server that freezes; the write may still be applied', async (t) => {
  await stalled(t, ['reset', 'stalled'], 'write');
});

test('sync: TIMEOUT within --timeout from a server that freezes; the write may still be applied', async (t) => {
  await stalled(t, ['sync', 'stalled', '--from', 'orders.no'], 'write');
});

test('list: TIMEOUT within --timeout from a server that freezes', async (t) => {
  await stalled(t, ['list'], 'read');
  await stalled(t, ['list', '--json'], 'read');
});

test('a server that freezes once it answered: the answer printed, the exit within --timeout', async (t) => {
  await env.db.collection('counters').insertOne({ _id: 'answered', sequence_value: 5 });
  // The command's one call passes; what follows it (the driver's goodbye on closing) is held.
  let past = 0;
  const proxy = await freezingProxy(env.address, (command) => pastHandshake(command) && ++past > 1);
  try {
    const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`;
    const r = await runCli(['current', 'answered', '--timeout', String(TIMEOUT_SECONDS)], { uri, db: env.dbName, killAfterMs: KILL_AFTER_MS });
    assert.ok(!r.killed, `still running ${r.ms} ms after a --timeout of ${TIMEOUT_SECONDS} s`);
    t.diagnostic(`current --timeout ${TIMEOUT_SECONDS}: exit ${r.code} after ${r.ms} ms`);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '5\n');
    assert.ok(proxy.held() > 0, 'closing reached the frozen server');
    assert.ok(r.ms <= TIMEOUT_SECONDS * 1000 + MARGIN_MS, `exited ${r.ms} ms after it started, past --timeout ${TIMEOUT_SECONDS} s + ${MARGIN_MS} ms`);
  } finally {
    await proxy.close();
  }
});

test("the command's own clock: from the start of connecting, whatever the call it waits for", async () => {
  const connection = { uri: env.uri, db: env.dbName, timeoutMs: TIMEOUT_SECONDS * 1000, options: {} };
  // A wait the client's call timeout does not bound (not a call of the addon): only the
  // clock of --timeout ends it.
  const work = session(connection);
  const hanging = (async () => {
    await work.database();
    work.working('writing', SAID.write);
    await new Promise(() => {});
  })();
  const started = Date.now();
  await assert.rejects(withinTimeout(hanging, work), (e) => {
    assert.ok(e instanceof TimeoutError, String(e));
    assert.equal(e.message, `no answer within --timeout (${TIMEOUT_SECONDS} s) while writing; ${SAID.write}`);
    return true;
  });
  assert.ok(Date.now() - started < TIMEOUT_SECONDS * 1000 + MARGIN_MS, `${Date.now() - started} ms`);
  await work.close();
  // Before connecting (drop's question on a terminal), the clock has not started.
  const asked = session(connection);
  const answered = (async () => {
    await sleep(TIMEOUT_SECONDS * 1000 + 500);
    await asked.database();
    return 'done';
  })();
  assert.equal(await withinTimeout(answered, asked), 'done');
  await asked.close();
});
