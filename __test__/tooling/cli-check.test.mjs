// `mongodb-sequence check` as a monitoring plugin (the Monitoring Plugins guidelines, as
// Nagios, Icinga and check_postgres read them): a status line first on stdout on every
// exit code, performance data read by a parser of the guidelines' grammar, -w/-c beside
// --warn/--critical, --timeout bounding the whole check (a server that never answers, one
// that freezes at the listing), and the OpenMetrics output read by a parser of the
// exposition format (both parsers in __test__/fixtures/plugin-output.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Long } from 'mongodb';
import { setup } from '../helpers.mjs';
import { silentServer, freezingProxy } from '../fixtures/stalled-server.mjs';
import { STATES, runCli, parsePerfdata, exceeds, unescapeLabel, nameText, assertStatusLine, parseOpenMetrics } from '../fixtures/plugin-output.mjs';

const INT32_MAX = 2 ** 31 - 1;

let env;
before(async () => {
  env = await setup('check');
});
after(async () => {
  await env?.close();
});

/** Runs the CLI on the test database (see `runCli`). */
const cli = (args, { uri = env.uri, db = env.dbName, killAfterMs } = {}) => runCli(args, { uri, db, killAfterMs });

// ------------------------------------------------------------ the counters checked

const on = ['--collection', 'plugin'];
/** Names and what they need, with the values left before the end of each one's range. */
const ODD = "o'brien = a|b";
const SCOPED = { type: 'invoice', year: 2026 };
const TWO_LINES = 'two\nlines';
const BIG = 8_800_000_000_000_000n;
// A name that is a connection string: shown with its credentials masked, every other
// name whole (a pass over the whole output would mask up to its last '@').
const SECRET = 'PW-s3cr3t';
const WITH_PASSWORD = `mongodb://app:${SECRET}@host.example/shop`;
const MASKED = 'mongodb://****@host.example/shop';

async function seed() {
  const counters = env.db.collection('plugin');
  await counters.insertMany([
    { _id: 'low', sequence_value: 5 },
    // 81.0 % of the Int32 range.
    { _id: 'orders', sequence_value: Math.floor(INT32_MAX * 0.81) + 1 },
    { _id: ODD, sequence_value: 10 },
    { _id: SCOPED, sequence_value: 3 },
    { _id: TWO_LINES, sequence_value: 1 },
    { _id: WITH_PASSWORD, sequence_value: 7 },
    { _id: 'zz@example', sequence_value: 8 },
    // 97.7 % of 2^53 - 1 (read as numbers), far from 2^63 - 1 (as BigInts).
    { _id: 'big', sequence_value: Long.fromBigInt(BIG) },
  ]);
  const ok = async (args) => {
    const r = await cli([...args, ...on]);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  };
  await ok(['init', 'tickets', '--max', '100']);
  await ok(['set', 'tickets', '96']);
  await ok(['init', 'rounds', '--max', '100', '--cycle']);
  await ok(['set', 'rounds', '100']);
  await ok(['init', 'evens', '--start', '2', '--step', '2', '--max', '100']);
  await ok(['set', 'evens', '50']);
  await ok(['init', 'countdown', '--start', '10', '--step=-1', '--min', '1', '--max', '10']);
  await ok(['next', 'countdown']);
}

/** Values each counter can still hand out before the end of its range (`bigint`: a reader of BigInts). */
function expectedRemaining(bigint) {
  return new Map([
    ['low', BigInt(INT32_MAX - 5)],
    ['orders', BigInt(INT32_MAX - (Math.floor(INT32_MAX * 0.81) + 1))],
    [ODD, BigInt(INT32_MAX - 10)],
    [nameText(SCOPED), BigInt(INT32_MAX - 3)],
    [TWO_LINES, BigInt(INT32_MAX - 1)],
    [MASKED, BigInt(INT32_MAX - 7)],
    ['zz@example', BigInt(INT32_MAX - 8)],
    ['big', (bigint ? 2n ** 63n - 1n : 2n ** 53n - 1n) - BIG],
    // 97..100 left of a maximum of 100.
    ['tickets', 4n],
    // 100 of 100: it starts over next, but no value is left before the end.
    ['rounds', 0n],
    // 52, 54, ..., 100.
    ['evens', 25n],
    // 10 handed out, 9 down to 1 left.
    ['countdown', 9n],
  ]);
}

let seeded;
const ready = () => (seeded ??= seed());

// ------------------------------------------------------------ tests

test('check prints a status line first on stdout for every exit code, 0 to 3', async () => {
  await ready();
  const runs = [
    ['OK', ['check', ...on, '--warn', '99', '--critical', '99.5']],
    ['WARNING', ['check', ...on, '--warn', '50', '--critical', '99']],
    ['CRITICAL', ['check', ...on]],
    ['UNKNOWN', ['check', ...on, '--warn', '90', '--critical', '80']],
    ['UNKNOWN', ['check', ...on, '--bogus']],
    ['UNKNOWN', ['check', ...on, '--warn', 'lots']],
    ['UNKNOWN', ['check', ...on, '--timeout', '0']],
    // Refused by the package once connected (INVALID_ARGUMENT), not by the command line.
    ['UNKNOWN', ['check', '--collection', 'a$b']],
  ];
  for (const [state, args] of runs) {
    const r = await cli(args);
    assert.equal(STATES[r.code], state, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assertStatusLine(r, args.join(' '));
  }
  // No server: UNKNOWN, with the reason on stdout and no password.
  const unreachable = await cli(['check', '--timeout', '5'], { uri: 'mongodb://operator:s3cr3t-pw@127.0.0.1:9/shop', db: null });
  assert.equal(unreachable.code, 3, unreachable.stdout + unreachable.stderr);
  assert.match(assertStatusLine(unreachable, 'unreachable'), /^SEQUENCES UNKNOWN: CONNECTION: /);
  assert.equal(unreachable.stdout.trimEnd().split('\n').length, 1, 'one line');
  assert.ok(!(unreachable.stdout + unreachable.stderr).includes('s3cr3t'), unreachable.stdout);
  // No connection string at all is a usage error of the check: UNKNOWN too.
  const none = await cli(['check'], { uri: null, db: null });
  assert.match(assertStatusLine(none, 'no uri'), /^SEQUENCES UNKNOWN: USAGE: no connection string/);
  const usage = await cli(['check', ...on, '--warn', '90', '--critical', '80']);
  assert.equal(usage.stdout, 'SEQUENCES UNKNOWN: USAGE: --warn (90) must not be above --critical (80)\n');
  // --json stays JSON, with the state and the reason.
  const json = await cli(['check', ...on, '--warn', '90', '--critical', '80', '--json']);
  assert.equal(json.code, 3);
  assert.deepEqual(JSON.parse(json.stdout), { status: 'UNKNOWN', error: { code: 'USAGE', message: '--warn (90) must not be above --critical (80)' } });
});

test("check: performance data per counter, read by a parser of the guidelines' grammar", async () => {
  await ready();
  for (const [args, warn, crit] of [
    [[], 80, 95],
    [['-w', '50', '-c', '99'], 50, 99],
    [['--warning', '96.5', '--critical', '97.5'], 96.5, 97.5],
    [['-w', '30', '--critical', '99.5'], 30, 99.5],
  ]) {
    const r = await cli(['check', ...on, ...args]);
    const first = assertStatusLine(r, args.join(' '));
    assert.ok(!r.stdout.includes(SECRET), r.stdout);
    assert.ok(first.includes(' | '), `perfdata on the status line: ${first}`);
    const asJson = await cli(['check', ...on, ...args, '--json']);
    assert.ok(!asJson.stdout.includes(SECRET), asJson.stdout);
    const { counters } = JSON.parse(asJson.stdout);
    const entries = parsePerfdata(r.stdout);
    const byLabel = new Map(entries.map((e) => [e.label, e]));
    assert.equal(byLabel.size, entries.length, 'labels are unique');
    const remaining = expectedRemaining(false);
    assert.equal(entries.length, 2 * counters.length, 'two entries per counter');
    assert.equal(counters.length, remaining.size);
    let worst = 0;
    for (const c of counters) {
      const shown = nameText(c.name);
      const used = [...byLabel.keys()].find((label) => unescapeLabel(label) === shown);
      assert.ok(used !== undefined, `no entry for ${JSON.stringify(shown)} in ${first}`);
      const e = byLabel.get(used);
      assert.doesNotMatch(used, /[=|\u0000-\u001f\u007f]/, 'no =, | or control character in a label');
      assert.equal(e.uom, '%', shown);
      assert.ok(Math.abs(e.value - c.usedPercent) <= 0.05, `${shown}: ${e.text} vs ${c.usedPercent}`);
      assert.deepEqual([e.min, e.max], [0, 100]);
      const wraps = c.cycle && c.rangeKind === 'limit';
      if (wraps) {
        // Not graded: no thresholds to compare with.
        assert.deepEqual([e.warn, e.crit], [null, null], shown);
      } else {
        assert.deepEqual(e.warn, { inside: false, start: 0, end: warn });
        assert.deepEqual(e.crit, { inside: false, start: 0, end: crit });
        // The fixture keeps every share more than 0.05 from a threshold, so the state the
        // thresholds give the printed value is the state the check gave.
        assert.ok(Math.abs(c.usedPercent - warn) > 0.05 && Math.abs(c.usedPercent - crit) > 0.05, `fixture: ${shown} at ${c.usedPercent} % is too near a threshold`);
        const state = exceeds(e.crit, e.value) ? 'CRITICAL' : exceeds(e.warn, e.value) ? 'WARNING' : 'OK';
        assert.equal(state, c.state, `${shown} at ${e.text} %`);
        worst = Math.max(worst, STATES.indexOf(state));
      }
      const left = byLabel.get(`${used} remaining`);
      assert.ok(left, `no remaining entry for ${JSON.stringify(shown)}`);
      assert.equal(left.uom, '');
      assert.equal(BigInt(left.text), remaining.get(shown), `${shown} remaining`);
      assert.equal(left.min, 0);
      assert.equal(left.warn, null);
      assert.equal(BigInt(c.remaining), remaining.get(shown), `${shown}: remaining in --json`);
    }
    assert.equal(r.code, worst, `${args.join(' ')}: the exit code is the worst counter's state`);
  }
  // Exact past 2^53 with --bigint.
  const wide = await cli(['check', ...on, '--bigint']);
  const big = parsePerfdata(wide.stdout).find((e) => e.label === 'big remaining');
  assert.equal(big.text, String(2n ** 63n - 1n - BIG));
  assert.match((await cli(['check', ...on, '--bigint', '--json'])).stdout, new RegExp(`"name":"big",[^}]*"remaining":${2n ** 63n - 1n - BIG}\\b`));
  // The long text: no line but the first holds a '|' (it would start performance data).
  for (const line of (await cli(['check', ...on, '-w', '0'])).stdout.trimEnd().split('\n').slice(1)) assert.ok(!line.includes('|'), line);
});

test('check: -w/--warning and -c/--critical beside --warn; two spellings of one threshold are refused', async () => {
  await ready();
  const short = await cli(['check', ...on, '-w', '50', '-c', '99']);
  const long = await cli(['check', ...on, '--warning', '50', '--critical', '99']);
  const old = await cli(['check', ...on, '--warn', '50', '--critical', '99']);
  assert.equal(short.code, 1, short.stdout);
  assert.equal(short.stdout, long.stdout);
  assert.equal(short.stdout, old.stdout);
  for (const args of [
    ['-w', '50', '--warn', '60'],
    ['--warning', '50', '--warn', '50'],
  ]) {
    const both = await cli(['check', ...on, ...args]);
    assert.equal(both.code, 3);
    assert.match(assertStatusLine(both, args.join(' ')), /^SEQUENCES UNKNOWN: USAGE: .*--warn.*--warning/);
  }
  const help = await cli(['check', '--help'], { uri: null, db: null });
  assert.match(help.stdout, /-w, --warning <range>/);
  assert.match(help.stdout, /-c, --critical <range>/);
});

test('check --timeout bounds the whole check: UNKNOWN in time from a server that never answers', async (t) => {
  const silent = await silentServer();
  try {
    const r = await cli(['check', '--timeout', '2'], { uri: `mongodb://127.0.0.1:${silent.port}/shop?directConnection=true`, db: null, killAfterMs: 2000 + 10_000 });
    assert.ok(!r.killed, `still running ${r.ms} ms after a --timeout of 2 s`);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assertStatusLine(r, 'silent server');
    t.diagnostic(`--timeout 2: exit 3 after ${r.ms} ms: ${r.stdout.trim()}`);
    assert.ok(silent.connections() > 0, 'the check reached the server');
  } finally {
    await silent.close();
  }
});

test('check --timeout bounds the whole check: UNKNOWN in time from a server that freezes at the listing', async (t) => {
  await ready();
  for (const format of [[], ['--json'], ['--format', 'openmetrics']]) {
    const proxy = await freezingProxy(env.address);
    try {
      const r = await cli(['check', ...on, '-t', '2', ...format], { uri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`, killAfterMs: 2000 + 10_000 });
      assert.ok(!r.killed, `${format}: still running ${r.ms} ms after a --timeout of 2 s`);
      assert.equal(r.code, 3, r.stdout + r.stderr);
      assert.ok(proxy.held() > 0, 'the listing reached the frozen server');
      t.diagnostic(`--timeout 2 ${format.join(' ') || '(text)'}: exit 3 after ${r.ms} ms`);
      if (format[0] === '--json') {
        assert.equal(JSON.parse(r.stdout).status, 'UNKNOWN');
        assert.equal(JSON.parse(r.stdout).error.code, 'TIMEOUT');
      } else if (format[0] === '--format') {
        assert.equal(r.stdout, '', 'no metrics');
        assert.match(r.stderr, /^error TIMEOUT: /);
      } else {
        assert.match(assertStatusLine(r, 'frozen'), /^SEQUENCES UNKNOWN: TIMEOUT: no answer within --timeout \(2 s\) while listing the counters/);
      }
    } finally {
      await proxy.close();
    }
  }
});

// ------------------------------------------------------------ OpenMetrics

test('check --format openmetrics: per counter the share used, the values left and the value, for the textfile collector', async () => {
  await ready();
  for (const bigint of [false, true]) {
    const flags = bigint ? ['--bigint'] : [];
    const r = await cli(['check', ...on, '--format', 'openmetrics', ...flags]);
    // CRITICAL counters and all: the metrics were written, so exit 0 (alerting is Prometheus's).
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stderr, '');
    assert.ok(!r.stdout.includes(SECRET), r.stdout);
    const families = parseOpenMetrics(r.stdout);
    const { counters } = JSON.parse((await cli(['check', ...on, '--json', ...flags])).stdout);
    const used = families.get('mongodb_sequence_capacity_used_ratio');
    const left = families.get('mongodb_sequence_capacity_remaining_values');
    const value = families.get('mongodb_sequence_value');
    const cycling = families.get('mongodb_sequence_cycling');
    for (const f of [used, left, value, cycling]) {
      assert.ok(f, `families: ${[...families.keys()]}`);
      assert.equal(f.type, 'gauge');
      assert.ok(f.help, `${f.name} has help`);
      assert.equal(f.samples.length, counters.length);
    }
    assert.equal(used.unit, 'ratio');
    const remaining = expectedRemaining(bigint);
    const of = (f, shown) => {
      const found = f.samples.filter((s) => s.labels.name === shown);
      assert.equal(found.length, 1, `${f.name}{name=${JSON.stringify(shown)}}`);
      assert.deepEqual({ ...found[0].labels, name: undefined }, { database: env.dbName, collection: 'plugin', name: undefined });
      return found[0].text;
    };
    for (const c of counters) {
      const shown = nameText(c.name);
      assert.equal(Number(of(used, shown)), c.usedPercent / 100, shown);
      assert.equal(BigInt(of(left, shown)), remaining.get(shown), shown);
      assert.equal(of(value, shown), String(c.value), shown);
      assert.equal(of(cycling, shown), c.cycle && c.rangeKind === 'limit' ? '1' : '0', shown);
    }
    // The escapes: the name holding a line feed is one label value, on one line.
    assert.ok(r.stdout.includes('name="two\\nlines"'), 'a line feed as \\n');
  }
  // Cannot check: nothing on stdout (no file to move into place), the reason on stderr, exit 3.
  const unreachable = await cli(['check', '--format', 'openmetrics', '--timeout', '5'], { uri: 'mongodb://127.0.0.1:9/shop', db: null });
  assert.equal(unreachable.code, 3);
  assert.equal(unreachable.stdout, '');
  assert.match(unreachable.stderr, /^error CONNECTION: /);
  // Formats: text (the default), json (as --json) and openmetrics; nothing else.
  const bad = await cli(['check', ...on, '--format', 'xml']);
  assert.equal(bad.code, 3);
  assert.match(assertStatusLine(bad, '--format xml'), /USAGE: --format must be text, json or openmetrics/);
  assert.equal((await cli(['check', ...on, '--format', 'json'])).stdout, (await cli(['check', ...on, '--json'])).stdout);
});
