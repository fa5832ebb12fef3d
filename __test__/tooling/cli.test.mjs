// The command line, run as operators run it (`node bin/mongodb-sequence.js ...`, not a
// TTY) against the test server: every command, --json shapes, exit codes (0 done, 1
// error, 2 usage), bad arguments, a scoped name, a value past 2^53, the confirmation
// rule of `drop`, and no password in any output.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { Long } from 'mongodb';
import { setup, seq } from '../helpers.mjs';
import { toJson } from '../../lib/json.js';
import { findPython } from '../../scripts/lib/python-env.mjs';

const require = createRequire(import.meta.url);

const CLI = fileURLToPath(new URL('../../bin/mongodb-sequence.js', import.meta.url));
const ON_A_TERMINAL = fileURLToPath(new URL('../fixtures/on-a-terminal.py', import.meta.url));

let env;
before(async () => {
  env = await setup('cli');
});
after(async () => {
  await env?.close();
});

/** Runs the CLI; resolves with { code, stdout, stderr }. */
function cli(args, { uri = env.uri, db = env.dbName, extraEnv = {} } = {}) {
  const withConnection = [...args, ...(uri ? ['--uri', uri] : []), ...(db ? ['--db', db] : [])];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...withConnection], {
      env: { ...process.env, MONGODB_URI: '', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI did not finish: ${args.join(' ')}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function ok(args, options) {
  const r = await cli(args, options);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trimEnd();
}

test('help and version', async () => {
  const help = await ok(['--help'], { uri: null, db: null });
  for (const command of ['list', 'check', 'current', 'next', 'init', 'set', 'reset', 'drop', 'sync']) assert.match(help, new RegExp(`\\n {2}${command} `));
  const nextHelp = await ok(['next', '--help'], { uri: null, db: null });
  assert.match(nextHelp, /Example:\n {2}mongodb-sequence next/);
  assert.match(await ok(['--version'], { uri: null, db: null }), /^\d+\.\d+\.\d+$/);
});

test('help recommends MONGODB_URI over --uri and says why; no example puts a connection string on the command line', async () => {
  const help = await ok(['--help'], { uri: null, db: null });
  assert.match(help, /MONGODB_URI/);
  assert.match(help, /ps\b[^]*history|history[^]*\bps\b/);
  for (const command of ['list', 'check', 'current', 'next', 'init', 'set', 'reset', 'drop', 'sync']) {
    const text = await ok([command, '--help'], { uri: null, db: null });
    const example = text.slice(text.indexOf('Example'));
    assert.doesNotMatch(example, /--uri/, command);
    assert.match(text, /MONGODB_URI[^]*ps/, command);
  }
  assert.doesNotMatch(help.slice(help.indexOf('Example')), /--uri/);
});

test('usage errors exit 2 with one line on stderr', async () => {
  const cases = [
    [['frobnicate'], /unknown command/],
    // A name of Object.prototype is no command (it used to fail as INTERNAL, exit 1).
    [['constructor'], /unknown command "constructor"/],
    [['toString', 'x'], /unknown command "toString"/],
    [['current'], /current takes <name>/],
    [['next', 'x', '--count', 'ten'], /--count must be an integer/],
    [['next', 'x', '--count', '0'], /--count must be from 1/],
    [['next', 'x', '--bogus'], /Unknown option '--bogus'/],
    [['next', '{"type":'], /scoped name must be a JSON object/],
    [['set', 'x', '1.5'], /<value> must be an integer/],
    [['init', 'x', '--max', '99999999999999999999'], /outside the 64-bit range/],
    [['sync', 'x', '--from', 'orders'], /--from <collection>.<field>/],
    [['drop', 'x'], /drop needs --yes when not run on a terminal/],
    [['next', 'x', '--timeout', '-1'], /--timeout/],
    // 0 seconds would give up before connecting: refused, and the message says what is accepted.
    [['next', 'x', '--timeout', '0'], /^error USAGE: --timeout must be a number of seconds greater than 0 and at most 86400; got "0"\n$/],
    [['next', 'x', '--timeout', '86401'], /greater than 0 and at most 86400; got "86401"/],
  ];
  for (const [args, pattern] of cases) {
    const r = await cli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^error USAGE: /);
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1);
    assert.equal(r.stdout, '');
  }
  const noUri = await cli(['list'], { uri: null });
  assert.equal(noUri.code, 2);
  assert.match(noUri.stderr, /set MONGODB_URI/);
  const json = await cli(['current', '--json']);
  assert.equal(json.code, 2);
  assert.equal(JSON.parse(json.stdout).error.code, 'USAGE');
});

test('init, next, current, set, reset, list and drop, as text and as JSON', async () => {
  assert.equal(await ok(['init', 'tickets', '--start', '1000', '--max', '1005', '--cycle', '--min', '1000']), 'created tickets');
  assert.match(await ok(['init', 'tickets']), /exists already/);
  assert.equal(await ok(['next', 'tickets']), '1000');
  assert.equal(await ok(['next', 'tickets', '--count', '3']), '1001\n1002\n1003');
  assert.deepEqual(JSON.parse(await ok(['next', 'tickets', '--json'])), { name: 'tickets', value: 1004 });
  assert.equal(await ok(['current', 'tickets']), '1004');
  assert.equal(await ok(['set', 'tickets', '1001']), 'tickets set to 1001');
  assert.equal(await ok(['next', 'tickets']), '1002');
  assert.equal(await ok(['reset', 'tickets']), 'tickets reset; next value 1000');
  assert.equal(await ok(['next', 'tickets']), '1000');
  // Many values come back as a range.
  assert.equal(await ok(['next', 'bulk', '--upsert', '--count', '5000']), '1..5000 (5000 values, step 1)');
  assert.deepEqual(JSON.parse(await ok(['next', 'bulk', '--count', '2000', '--json'])), { name: 'bulk', first: 5001, last: 7000, count: 2000, step: 1 });

  const table = (await ok(['list'])).split('\n');
  assert.match(table[0], /^NAME\s+VALUE\s+STEP\s+MIN\s+MAX\s+CYCLE\s+USED\s+RANGE$/);
  const columnsAt = (line) => [...line.matchAll(/\S+/g)].map((m) => m.index + m[0].length);
  const tickets = table.find((l) => l.startsWith('tickets'));
  assert.match(tickets, /^tickets\s+1000\s+1\s+1000\s+1005\s+yes\s+16\.7%\s+limit$/);
  const bulk = table.find((l) => l.startsWith('bulk'));
  assert.match(bulk, /^bulk\s+7000\s+1\s+-\s+-\s+no\s+0\.0%\s+int32$/);
  assert.deepEqual(columnsAt(tickets).slice(1, 2), columnsAt(bulk).slice(1, 2), 'values right-aligned in one column');
  const listed = JSON.parse(await ok(['list', '--json']));
  const capacity = ['storedType', 'rangeEnd', 'rangeKind', 'usedPercent', 'rangeEndAsNumber', 'rangeKindAsNumber', 'usedPercentAsNumber'];
  const withoutCapacity = (s) => Object.fromEntries(Object.entries(s).filter(([k]) => !capacity.includes(k)));
  assert.deepEqual(withoutCapacity(listed.find((s) => s.name === 'tickets')), { name: 'tickets', value: 1000, step: 1, minValue: 1000, maxValue: 1005, cycle: true });
  assert.deepEqual(withoutCapacity(listed.find((s) => s.name === 'bulk')), { name: 'bulk', value: 7000 });
  assert.equal(listed.find((s) => s.name === 'bulk').rangeKind, 'int32');

  assert.equal(await ok(['drop', 'tickets', '--yes']), 'dropped tickets');
  assert.equal(await ok(['drop', 'tickets', '--yes']), 'tickets did not exist');
  const missing = await cli(['current', 'tickets']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, "error SEQUENCE_NOT_FOUND: Sequence 'tickets' not found. Please initialize it.\n");
  const missingJson = await cli(['next', 'tickets', '--json']);
  assert.equal(missingJson.code, 1);
  assert.deepEqual(JSON.parse(missingJson.stdout), {
    error: { code: 'SEQUENCE_NOT_FOUND', message: "Sequence 'tickets' not found. Please initialize it." },
  });
});

test('check: a counter at 81 % warns (exit 1), one at 96 % is critical (exit 2), else OK (exit 0)', async () => {
  const counters = env.db.collection('capacity_check');
  const on = ['--collection', 'capacity_check'];
  await counters.insertOne({ _id: 'low', sequence_value: 5 });
  const fine = await cli(['check', ...on]);
  assert.equal(fine.code, 0, fine.stderr);
  assert.match(fine.stdout, /^SEQUENCES OK: 0 of 1 counter\(s\) alerting \(warning: over 80 %, critical: over 95 %\)/);
  await counters.insertOne({ _id: 'orders', sequence_value: Math.floor((2 ** 31 - 1) * 0.81) + 1 });
  const warned = await cli(['check', ...on, '--warn', '80', '--critical', '95']);
  assert.equal(warned.code, 1, warned.stderr);
  assert.match(warned.stdout, /^SEQUENCES WARNING: 1 of 2/);
  assert.match(warned.stdout, /^WARNING orders: 81\.0 % used \(1739461755 of 2147483647, int32\)$/m);
  await ok(['init', 'tickets', '--max', '100', ...on]);
  await ok(['set', 'tickets', '96', ...on]);
  const critical = await cli(['check', ...on, '--warn', '80', '--critical', '95']);
  assert.equal(critical.code, 2, critical.stderr);
  const lines = critical.stdout.trim().split('\n');
  assert.equal(lines.length, 3, 'a line per counter over a threshold');
  assert.match(lines[1], /^CRITICAL tickets: 96\.0 % used \(96 of 100, limit\)$/);
  assert.match(lines[2], /^WARNING orders/);
  const json = JSON.parse((await cli(['check', ...on, '--json'])).stdout);
  assert.equal(json.status, 'CRITICAL');
  assert.deepEqual(json.over, ['tickets', 'orders']);
  assert.equal(json.counters.find((c) => c.name === 'low').state, 'OK');
  // A long far below 2^63 is graded against 2^53 - 1 unless the application reads BigInts.
  await counters.insertOne({ _id: 'big', sequence_value: Long.fromString('8800000000000000') });
  const asNumbers = await cli(['check', ...on, '--warn', '85', '--critical', '97']);
  assert.match(asNumbers.stdout, /CRITICAL big: 97\.7 % used \(8800000000000000 of 9007199254740991, number\)/);
  const asBigInts = await cli(['check', ...on, '--warn', '85', '--critical', '97', '--bigint']);
  assert.doesNotMatch(asBigInts.stdout, /big:/);
  const usage = await cli(['check', ...on, '--warn', '90', '--critical', '80']);
  assert.equal(usage.code, 3, 'UNKNOWN when the check cannot be made');
  // Monitoring shows only stdout: the reason is there, as the plugin's status line.
  assert.equal(usage.stdout, 'SEQUENCES UNKNOWN: USAGE: --warn (90) must not be above --critical (80)\n');
  const unreachable = await cli(['check', '--timeout', '1'], { uri: 'mongodb://127.0.0.1:9/shop', db: null });
  assert.equal(unreachable.code, 3);
  assert.match(unreachable.stdout, /^SEQUENCES UNKNOWN: /);
});

test('check: a cycling counter at its limit is not graded (it starts over), unless numbers run out first', async () => {
  const on = ['--collection', 'capacity_cycle'];
  await ok(['init', 'rounds', '--max', '100', '--cycle', ...on]);
  await ok(['set', 'rounds', '100', ...on]);
  await ok(['init', 'laps', '--max', '100', '--cycle', ...on]);
  await ok(['set', 'laps', '96', ...on]);
  const text = await cli(['check', ...on]);
  assert.equal(text.code, 0, text.stdout + text.stderr);
  // The status line, then performance data after the '|' (their own test: cli-check.test.mjs).
  assert.equal(
    text.stdout.trim().split(' | ')[0],
    'SEQUENCES OK: 0 of 2 counter(s) alerting (warning: over 80 %, critical: over 95 %); 2 cycling counter(s) that would alert not graded: they start over at their limit',
  );
  assert.equal(text.stdout.trim().split('\n').length, 1, 'no counter over a threshold: one line');
  const json = JSON.parse((await cli(['check', ...on, '--json'])).stdout);
  assert.equal(json.status, 'OK');
  assert.deepEqual(json.over, []);
  const rounds = json.counters.find((c) => c.name === 'rounds');
  assert.deepEqual(
    { state: rounds.state, cycle: rounds.cycle, usedPercent: rounds.usedPercent, rangeKind: rounds.rangeKind },
    { state: 'OK', cycle: true, usedPercent: 100, rangeKind: 'limit' },
    'the share is still shown: the counter starts over at its next value',
  );
  assert.equal(await ok(['next', 'rounds', ...on]), '1', 'it did not run out');
  // A cycling counter whose limit lies beyond 2^53 - 1 fails for a reader of numbers
  // before it cycles: graded as any other, except for a reader of BigInts.
  await ok(['init', 'wide', '--cycle', ...on]);
  await ok(['set', 'wide', '9000000000000000', ...on]);
  const wide = await cli(['check', ...on]);
  assert.equal(wide.code, 2, wide.stdout);
  assert.match(wide.stdout, /^CRITICAL wide: 99\.9 % used \(9000000000000000 of 9007199254740991, number\)$/m);
  const wideJson = JSON.parse((await cli(['check', ...on, '--json'])).stdout);
  assert.deepEqual(wideJson.over, ['wide']);
  assert.equal(wideJson.counters.find((c) => c.name === 'wide').cycle, true);
  const asBigInts = await cli(['check', ...on, '--bigint']);
  assert.equal(asBigInts.code, 0, asBigInts.stdout);
  // rounds started over (1 of 100) and wide is far from 2^63 - 1: only laps is named.
  assert.match(asBigInts.stdout, /^SEQUENCES OK: 0 of 3 .*; 1 cycling counter\(s\) that would alert not graded/);
  const higher = await cli(['check', ...on, '--warn', '97', '--critical', '99', '--bigint']);
  assert.equal(higher.code, 0);
  assert.doesNotMatch(higher.stdout, /not graded/, 'none that would alert: nothing to explain');
  const plain = JSON.parse((await cli(['check', '--collection', 'capacity_check', '--json'])).stdout);
  assert.ok(
    plain.counters.every((c) => c.cycle === false),
    'every entry says whether it cycles',
  );
});

test('values past 2^53 print exactly, in text and in JSON', async () => {
  assert.equal((await cli(['set', 'big', '9007199254740993'])).code, 1, 'set without an existing counter fails');
  await ok(['init', 'big']);
  assert.equal(await ok(['set', 'big', '9007199254740993']), 'big set to 9007199254740993');
  assert.equal(await ok(['current', 'big']), '9007199254740993');
  assert.equal(await ok(['next', 'big']), '9007199254740994');
  assert.equal(await ok(['next', 'big', '--json']), '{"name":"big","value":9007199254740995}');
  assert.match(await ok(['list', '--json']), /"name":"big","value":9007199254740995/);
});

test('JSON output: a name that looks like a marker stays a string; numbers of any size are JSON numbers', async () => {
  // The old writer marked BigInts as "@@big:<digits>" strings and unquoted every such
  // string afterwards, a user's string included.
  const name = '{"k":"@@big:5"}';
  assert.equal(await ok(['next', name, '--upsert', '--json']), '{"name":{"k":"@@big:5"},"value":1}');
  assert.deepEqual(JSON.parse(await ok(['list', '--json'])).find((s) => s.name?.k !== undefined)?.name, { k: '@@big:5' });
  await ok(['init', 'huge']);
  await ok(['set', 'huge', '9223372036854775806']);
  assert.equal(await ok(['current', 'huge', '--json']), '{"name":"huge","value":9223372036854775806}');
});

test('toJson writes what JSON.stringify writes, with BigInts as their exact digits', () => {
  // Oracle: JSON.stringify of the same value with each BigInt replaced by a unique
  // placeholder string (absent from the value), then each quoted placeholder by the digits.
  const leaf = fc.oneof(fc.string(), fc.double(), fc.integer(), fc.bigInt(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.date({ noInvalidDate: true }));
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('value'), { maxKeys: 4 })),
  }));
  fc.assert(
    fc.property(value, fc.uuid(), (v, nonce) => {
      const digits = [];
      const marked = JSON.stringify(v, (_, x) => {
        if (typeof x !== 'bigint') return x;
        digits.push(x.toString());
        return `${nonce}:${digits.length - 1}`;
      });
      fc.pre(!JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? 0 : x))?.includes(nonce));
      const expected = marked?.replace(new RegExp(`"${nonce}:(\\d+)"`, 'g'), (_, i) => digits[Number(i)]);
      assert.equal(toJson(v), expected);
    }),
    { numRuns: 2000 },
  );
});

/** Characters a terminal acts on (C0 but the line feed between lines, DEL, C1, bidi controls). */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
/** `text` as the command line shows it: each such character, the line feed too, as `\uXXXX`. */
const escapedText = (text) => text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

test('names holding terminal controls are shown escaped in text and errors; JSON keeps them exact', async () => {
  // A title change, a screen clear, a colour, a CR LF that would forge a table row, an
  // 8-bit CSI (C1), DEL and a right-to-left override.
  const name = 'evil\u001b]0;pwned\u0007\u001b[2J\u001b[31m\r\nforged  999  1\u009b31m\u202eend\u007f';
  const shown = escapedText(name);
  const on = ['--collection', 'escapes'];
  const run = async (args) => {
    const r = await cli([...args, ...on]);
    for (const [stream, text] of [
      ['stdout', r.stdout],
      ['stderr', r.stderr],
    ]) {
      assert.doesNotMatch(text, RAW_CONTROL, `${stream} of ${escapedText(args.join(' '))}: ${escapedText(text)}`);
    }
    return r;
  };
  const text = async (args) => {
    const r = await run(args);
    assert.equal(r.code, 0, escapedText(r.stderr));
    return r.stdout.trimEnd();
  };
  assert.equal(await text(['init', name, '--start', '5']), `created ${shown}`);
  assert.equal(await text(['init', name]), `${shown} exists already (unchanged)`);
  assert.equal(await text(['next', name]), '5');
  assert.equal(await text(['current', name]), '5');
  assert.equal(await text(['set', name, '7']), `${shown} set to 7`);
  assert.equal(await text(['next', name, '--count', '2']), '8\n9');
  const table = (await text(['list'])).split('\n');
  assert.equal(table.length, 2, 'a header and one row');
  assert.match(table[1], /\s9\s+1\s+-\s+-\s+no\s/);
  assert.ok(table[1].startsWith(`${shown} `), table[1]);
  const checked = await run(['check', '-w', '0', '-c', '100']);
  assert.equal(checked.code, 1, checked.stdout);
  assert.ok(checked.stdout.includes(`WARNING ${shown}: `), checked.stdout);
  assert.equal(await text(['reset', name]), `${shown} reset; next value 5`);
  await env.db.collection('orders_escapes').insertOne({ no: 40 });
  assert.equal(await text(['sync', name, '--from', 'orders_escapes.no']), '40');

  // JSON: valid, the exact name back, and no character a terminal acts on.
  assert.deepEqual(JSON.parse(await text(['next', name, '--json'])), { name, value: 41 });
  assert.deepEqual(JSON.parse(await text(['current', name, '--json'])), { name, value: 41 });
  assert.equal(JSON.parse(await text(['list', '--json']))[0].name, name);
  assert.equal(JSON.parse(await text(['check', '-w', '99', '-c', '100', '--json'])).counters[0].name, name);

  // Errors that quote the name, from the addon: text escaped, JSON exact.
  const missing = `${name}-missing`;
  const error = await run(['current', missing]);
  assert.equal(error.code, 1);
  assert.equal(error.stderr, `error SEQUENCE_NOT_FOUND: Sequence '${escapedText(missing)}' not found. Please initialize it.\n`);
  const errorJson = await run(['current', missing, '--json']);
  assert.equal(JSON.parse(errorJson.stdout).error.message, `Sequence '${missing}' not found. Please initialize it.`);
  // Usage errors that quote what was typed.
  const typed = '\u009b2J\u202e\u001b[31m';
  const usage = await run(['next', name, '--count', typed]);
  assert.equal(usage.code, 2);
  assert.equal(usage.stderr, `error USAGE: --count must be an integer; got "${escapedText(typed)}"\n`);
  const unknown = await run([`x${typed}`]);
  assert.equal(unknown.code, 2);
  assert.ok(unknown.stderr.startsWith(`error USAGE: unknown command "x${escapedText(typed)}"`), unknown.stderr);
  assert.equal(await text(['drop', name, '--yes']), `dropped ${shown}`);
  assert.equal(await text(['drop', name, '--yes']), `${shown} did not exist`);
});

test('scoped names, other collections and fields, and sync', async () => {
  const scoped = '{"type":"invoice","year":2026}';
  assert.equal(await ok(['next', scoped, '--upsert']), '1');
  assert.equal(await ok(['next', scoped]), '2');
  assert.match(await ok(['list']), /^\{"type":"invoice","year":2026\}\s+2\s/m);
  assert.equal(await ok(['next', 'other', '--upsert', '--collection', 'ctr', '--field', 'seq']), '1');
  const stored = await env.db.collection('ctr').findOne({ _id: 'other' });
  assert.equal(stored.seq, 1);
  await env.db.collection('orders').insertMany([{ no: 41 }, { no: 977 }, { no: 12 }]);
  assert.equal(await ok(['sync', 'orders', '--from', 'orders.no']), '977');
  assert.equal(await ok(['next', 'orders']), '978');
});

test('a connection that cannot be made fails within --timeout, without the password', async () => {
  const started = Date.now();
  const r = await cli(['list', '--timeout', '1'], { uri: 'mongodb://operator:s3cr%40t-pw@127.0.0.1:9/shop', db: null });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^error CONNECTION: /);
  assert.ok(!r.stderr.includes('s3cr'), r.stderr);
  assert.ok(Date.now() - started < 30_000);
  const bad = await cli(['list'], { uri: 'mongodb://u:%zz@h/db', db: null });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /^error INVALID_ARGUMENT: /);
  assert.ok(!bad.stderr.includes('%zz'));
});

test('an @ in the query never makes a piece of it the database', async () => {
  // mongodb://host/<db>?appName=ops@corp.example/<other>: the last '@' is the query's, and
  // reading the path after it would write to <other>. The database is read by the parser
  // that connects (the query starts at the first '?'), so it is <db>.
  const base = new URL(env.uri);
  const other = `${env.dbName}_other`;
  const uri = `${base.protocol}//${base.host}/${env.dbName}?appName=ops@corp.example/${other}`;
  assert.equal(await ok(['next', 'at_in_query', '--upsert'], { uri, db: null }), '1');
  const written = await env.client.db(other).collection('counters').countDocuments();
  assert.equal(written, 0, `a counter was written to ${other}`);
  assert.equal((await env.db.collection('counters').findOne({ _id: 'at_in_query' }))?.sequence_value, 1);
  // Named with --db, the same string works.
  assert.equal(await ok(['next', 'at_in_query', '--upsert'], { uri, db: env.dbName }), '2');
  // A plain string still names its database.
  assert.equal(await ok(['current', 'at_in_query'], { uri: `${base.protocol}//${base.host}/${env.dbName}`, db: null }), '2');
  // A string that names none asks for --db.
  const none = await cli(['current', 'at_in_query'], { uri: `${base.protocol}//${base.host}/?appName=x`, db: null });
  assert.equal(none.code, 2, none.stderr);
  assert.match(none.stderr, /^error USAGE: no database/);
});

test('the database is the one the connection string names, as the Node driver reads it', () => {
  // The CLI takes it from the engine (defaultDatabase); where the Node driver's parser
  // accepts a string, both name the same database.
  const { default: ConnectionString } = require('mongodb-connection-string-url');
  const text = (chars) => fc.array(fc.constantFrom(...chars), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
  const userInfo = fc.option(
    fc.tuple(
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.option(
        fc.string({ maxLength: 8 }).map((p) => `Pw7!${p}`),
        { nil: '' },
      ),
    ),
    { nil: undefined },
  );
  const database = fc.option(text([...'abcXYZ019_-+ $.&é/?@:%#']), { nil: undefined });
  const query = fc.option(fc.constantFrom('w=1', 'appName=ops', 'appName=a@b', 'retryWrites=false&w=majority', 'directConnection=true'), { nil: undefined });
  fc.assert(
    fc.property(userInfo, fc.constantFrom('h', 'h:27017', 'a:1,b:2', '127.0.0.1'), fc.boolean(), database, query, (user, hosts, slash, db, q) => {
      // The Node parser is a URL parser: it drops a path of '.' or '..' (a dot segment).
      fc.pre(db !== '.' && db !== '..');
      const auth = user ? `${encodeURIComponent(user[0])}${user[1] ? `:${encodeURIComponent(user[1])}` : ''}@` : '';
      const path = db === undefined ? (slash ? '/' : '') : `/${encodeURIComponent(db)}`;
      const uri = `mongodb://${auth}${hosts}${path}${q === undefined ? '' : `${path ? '' : '/'}?${q}`}`;
      let expected;
      try {
        expected = decodeURIComponent(new ConnectionString(uri).pathname.slice(1)) || null;
      } catch {
        return;
      }
      let ours;
      try {
        ours = seq.defaultDatabase(uri);
      } catch (e) {
        // The engine refuses a database name MongoDB refuses (with '/', ' ', '$'…), never
        // showing the password.
        assert.equal(e.code, 'INVALID_ARGUMENT', uri);
        if (user?.[1]) assert.ok(!e.message.includes(encodeURIComponent(user[1])), e.message);
        assert.ok(/[/\\. "$]/.test(expected), `${uri}: ${e.message}`);
        return;
      }
      assert.equal(ours, expected, uri);
    }),
    { numRuns: 500 },
  );
});

const noTerminal = process.platform === 'win32' ? 'needs a pseudo-terminal (Python pty), which Windows lacks' : false;
test('drop asks for confirmation on a terminal', { skip: noTerminal }, async () => {
  // Any Python 3.9 or later will do (the script uses only os, pty and sys, and
  // os.waitstatus_to_exitcode): no test servers needed, so against MONGODB_URI the
  // system's python3 does (Ubuntu 24.04's 3.12, Alpine's).
  const python = findPython([3, 9]);
  const onTerminal = (answer, name) =>
    new Promise((resolve) => {
      const child = spawn(python, [ON_A_TERMINAL, answer, process.execPath, CLI, 'drop', name, '--uri', env.uri, '--db', env.dbName], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.once('exit', (code) => resolve({ code, out }));
    });
  await ok(['next', 'asked', '--upsert']);
  const no = await onTerminal('n', 'asked');
  assert.equal(no.code, 0, no.out);
  assert.match(no.out, /Drop sequence asked from mseq_cli_\w+\.counters\? \[y\/N\]/);
  assert.match(no.out, /cancelled/);
  assert.equal(await ok(['current', 'asked']), '1', 'kept');
  const yes = await onTerminal('y', 'asked');
  assert.equal(yes.code, 0, yes.out);
  assert.match(yes.out, /dropped asked/);
  assert.equal((await cli(['current', 'asked'])).code, 1, 'gone');
  // Ctrl-D is a no; Ctrl-C interrupts the tool, as it would anywhere else.
  await ok(['next', 'kept', '--upsert']);
  const eof = await onTerminal('^D', 'kept');
  assert.equal(eof.code, 0, eof.out);
  assert.match(eof.out, /cancelled/);
  const interrupted = await onTerminal('^C', 'kept');
  assert.equal(interrupted.code, 130, interrupted.out);
  assert.doesNotMatch(interrupted.out, /dropped/);
  assert.equal(await ok(['current', 'kept']), '1', 'kept');
});

test('output cut short by its reader (| head) ends the tool quietly', async () => {
  // More than a pipe holds (64 KiB), so that the tool is still writing when the reader goes.
  const many = Array.from({ length: 800 }, (_, i) => ({ _id: `cut-${String(i).padStart(4, '0')}-${'x'.repeat(60)}`, sequence_value: i }));
  await env.db.collection('cut_short').insertMany(many);
  const { code, stderr } = await new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'list', '--json', '--collection', 'cut_short', '--db', env.dbName], {
      env: { ...process.env, MONGODB_URI: env.uri, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.stdout.once('data', () => child.stdout.destroy());
    child.once('close', (exitCode) => resolve({ code: exitCode, stderr: err }));
  });
  assert.equal(stderr, '', 'nothing on stderr');
  assert.equal(code, 0);
});
