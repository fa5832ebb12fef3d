// `mongodb-sequence check` held to the Monitoring Plugins guidelines rule by rule: each
// threshold range form of -w and -c (N, N:, ~:N, N:M, @N:M) graded as the guidelines
// define it and written back as given in the performance data; anything else refused
// (UNKNOWN); -V/--version; a printed share on the same side of every threshold as the share
// itself; nothing to check (a mistyped --db, --collection or --field) UNKNOWN, not OK; and
// every counter its own series in the text, the performance data, JSON and OpenMetrics
// when two names show the same. The output is read by the parsers of
// __test__/fixtures/plugin-output.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setup, seq } from '../helpers.mjs';
import { STATES, runCli, parsePerfdata, exceeds, assertStatusLine, parseOpenMetrics } from '../fixtures/plugin-output.mjs';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const INT32_MAX = 2 ** 31 - 1;

let env;
before(async () => {
  env = await setup('guidelines');
});
after(async () => {
  await seq.closeSharedClients();
  await env?.close();
});

/** Runs the CLI on the test database (see `runCli`). */
const cli = (args, { uri = env.uri, db = env.dbName } = {}) => runCli(args, { uri, db });

/**
 * Configured counters of `collection`, each from 1 to 10,000: the value `v` has used
 * exactly v / 100 % of its range.
 */
async function configured(collection, values) {
  for (const [name, value] of Object.entries(values)) {
    const counter = seq.sequence(env.db, name, { collection });
    await counter.init({ minValue: 1, maxValue: 10_000 });
    await counter.set(value);
  }
}

// ------------------------------------------------------------ the range forms

const onShares = ['--collection', 'shares'];
let shares;
/** Four counters at exactly 10, 50, 80 and 90 % of their range. */
const sharesReady = () => (shares ??= configured('shares', { p10: 1000, p50: 5000, p80: 8000, p90: 9000 }));

/**
 * The check of the shares with `args`, in text and as JSON: asserts that the exit code
 * is `code`, that each counter's state is the one `expected` gives it, and that the
 * performance data carry the thresholds as given (`warn`, `crit`) and grade each printed
 * share, read by the guidelines' rules, as the check did.
 */
async function assertGraded(args, { warn, crit }, code, expected) {
  await sharesReady();
  const r = await cli(['check', ...onShares, ...args]);
  assertStatusLine(r, args.join(' '));
  assert.equal(r.code, code, r.stdout);
  const json = JSON.parse((await cli(['check', ...onShares, ...args, '--json'])).stdout);
  assert.deepEqual(Object.fromEntries(json.counters.map((c) => [c.name, c.state])), expected);
  assert.deepEqual([json.warn, json.critical], [warn, crit], 'the JSON carries the ranges as given');
  const perf = new Map(parsePerfdata(r.stdout).map((e) => [e.label, e]));
  for (const c of json.counters) {
    const e = perf.get(c.name);
    assert.deepEqual([e.warnText, e.critText], [warn, crit], `${c.name}: the thresholds as given`);
    const state = exceeds(e.crit, e.value) ? 'CRITICAL' : exceeds(e.warn, e.value) ? 'WARNING' : 'OK';
    assert.equal(state, c.state, `${c.name} at ${e.text} % with ${warn};${crit}`);
  }
  return r;
}

test('-w N alerts above N (outside 0..N): a share of exactly N is OK', async () => {
  await assertGraded(['-w', '50'], { warn: '50', crit: '95' }, 1, { p10: 'OK', p50: 'OK', p80: 'WARNING', p90: 'WARNING' });
});

test('-w N: alerts below N (outside N..infinity)', async () => {
  await assertGraded(['-w', '50:'], { warn: '50:', crit: '95' }, 1, { p10: 'WARNING', p50: 'OK', p80: 'OK', p90: 'OK' });
});

test('-w ~:N alerts above N (outside -infinity..N)', async () => {
  await assertGraded(['-w', '~:50'], { warn: '~:50', crit: '95' }, 1, { p10: 'OK', p50: 'OK', p80: 'WARNING', p90: 'WARNING' });
});

test('-w N:M alerts outside N..M, both ends in the range', async () => {
  await assertGraded(['-w', '10:80'], { warn: '10:80', crit: '95' }, 1, { p10: 'OK', p50: 'OK', p80: 'OK', p90: 'WARNING' });
  await assertGraded(['-w', '20:85'], { warn: '20:85', crit: '95' }, 1, { p10: 'WARNING', p50: 'OK', p80: 'OK', p90: 'WARNING' });
});

test('-w @N:M alerts inside N..M, both ends included', async () => {
  await assertGraded(['-w', '@50:80'], { warn: '@50:80', crit: '95' }, 1, { p10: 'OK', p50: 'WARNING', p80: 'WARNING', p90: 'OK' });
});

test('-c takes the same range forms, and CRITICAL wins over WARNING', async () => {
  await assertGraded(['-w', '50:', '-c', '20:'], { warn: '50:', crit: '20:' }, 2, { p10: 'CRITICAL', p50: 'OK', p80: 'OK', p90: 'OK' });
  await assertGraded(['-w', '~:50', '-c', '@90:90'], { warn: '~:50', crit: '@90:90' }, 2, { p10: 'OK', p50: 'OK', p80: 'WARNING', p90: 'CRITICAL' });
  await assertGraded(['--warning', '@0:100', '--critical', '10:85'], { warn: '@0:100', crit: '10:85' }, 2, { p10: 'WARNING', p50: 'WARNING', p80: 'WARNING', p90: 'CRITICAL' });
});

test('the status line says in words when each threshold alerts', async () => {
  await sharesReady();
  for (const [args, words] of [
    [[], 'warning: over 80 %, critical: over 95 %'],
    [['-w', '50:', '-c', '~:90'], 'warning: under 50 %, critical: over 90 %'],
    [['-w', '10:80', '-c', '@90:95'], 'warning: under 10 % or over 80 %, critical: from 90 to 95 %'],
    // No share is above 100 % or below 0 %: `@80:100` is 80 % and over, as check_postgres grades.
    [['-w', '@80:100', '-c', '@0:10'], 'warning: at or over 80 %, critical: at or under 10 %'],
    [['-w', '100', '-c', '@~:'], 'warning: never, critical: always'],
  ]) {
    const r = await cli(['check', ...onShares, ...args]);
    assert.match(assertStatusLine(r, args.join(' ')), new RegExp(`^SEQUENCES \\w+: \\d of 4 counter\\(s\\) alerting \\(${words.replace(/[()]/g, '\\$&')}\\) \\| `), args.join(' '));
  }
});

// ------------------------------------------------------------ refusals

/** Asserts that the check refuses `args` as a usage error: UNKNOWN (exit 3), the reason on the status line. */
async function assertRefused(args, message) {
  const r = await cli(['check', ...onShares, ...args]);
  assert.equal(r.code, 3, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
  const first = assertStatusLine(r, args.join(' '));
  assert.match(first, /^SEQUENCES UNKNOWN: USAGE: /);
  assert.match(first, message, args.join(' '));
  const json = await cli(['check', ...onShares, ...args, '--json']);
  assert.equal(json.code, 3);
  assert.equal(JSON.parse(json.stdout).error.code, 'USAGE');
}

test('a hexadecimal threshold is refused, not read as its value (0x50 is not 80)', async () => {
  for (const [flag, label] of [
    ['-w', '--warning'],
    ['-c', '--critical'],
    ['--warn', '--warn'],
  ]) {
    await assertRefused([flag, '0x50'], new RegExp(`^SEQUENCES UNKNOWN: USAGE: ${label} must be a threshold range: .*; got "0x50"$`));
  }
  await assertRefused(['-w', '0x10:0x50'], /--warning must be a threshold range: .*; got "0x10:0x50"$/);
});

test('a threshold in exponent notation is refused, not read as its value (1e1 is not 10)', async () => {
  for (const text of ['1e1', '8E1', '~:1e1', '@1e1:9e1', '5e-1']) await assertRefused(['-w', text], new RegExp(`--warning must be a threshold range: .*; got "${text}"$`));
});

test('anything but a plain decimal or a range form of them is refused', async () => {
  for (const text of ['', ' 80', '80 ', '+80', '80%', '.5', '5.', 'Infinity', 'NaN', ':80', '80::90', '@', '~', '@~', '~80', '80:~', '@:80', '80,90', '٨٠', 'lots']) {
    await assertRefused(['-w', text], new RegExp(`--warning must be a threshold range: N, N:, ~:N, N:M or @N:M`));
  }
});

test('a range that starts above its end is refused', async () => {
  await assertRefused(['-w', '80:70'], /^SEQUENCES UNKNOWN: USAGE: --warning must not start above its end; got "80:70"$/);
  await assertRefused(['-c', '@95:90'], /--critical must not start above its end; got "@95:90"$/);
});

test('a bound outside 0..100 is refused: the thresholds are percentages', async () => {
  for (const text of ['101', '50:101', '@~:100.5', '150:'])
    await assertRefused(['-w', text], new RegExp(`^SEQUENCES UNKNOWN: USAGE: --warning must hold percentages from 0 to 100; got "${text.replace(/[.~]/g, '\\$&')}"$`));
  await assertRefused(['--warn=-5'], /^SEQUENCES UNKNOWN: USAGE: --warn must hold percentages from 0 to 100; got "-5"$/);
  // Digits enough to be Infinity to Number(): still a bound out of range, not an open end.
  for (const text of [`1${'0'.repeat(400)}`, `${'9'.repeat(400)}:`]) {
    await assertRefused(['-w', text], /^SEQUENCES UNKNOWN: USAGE: --warning must hold percentages from 0 to 100; got /);
  }
});

// ------------------------------------------------------------ version

test('-V and --version print the version and exit 0, as the guidelines ask of every plugin', async () => {
  for (const args of [['check', '-V'], ['check', '--version'], ['-V'], ['list', '--version'], ['check', '-w', '80', '-V']]) {
    const r = await cli(args, { uri: null, db: null });
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.equal(r.stdout, `${version}\n`, args.join(' '));
    assert.equal(r.stderr, '');
  }
  const help = await cli(['check', '--help'], { uri: null, db: null });
  assert.match(help.stdout, /-V, --version/);
});

// ------------------------------------------------------------ printed as graded

test('the printed share is on the same side of every threshold as the share itself', async () => {
  // With the default thresholds (80, 95): 94.96 % rounded to one decimal would print
  // 95.0, on the critical threshold while below it; 95.04 % would print 95.0, not above
  // it while CRITICAL.
  await configured('near', { under80: 7999, at80: 8000, over80: 8004, almost: 9496, at95: 9500, over95: 9504 });
  const r = await cli(['check', '--collection', 'near']);
  assert.equal(r.code, 2, r.stdout);
  const { counters } = JSON.parse((await cli(['check', '--collection', 'near', '--json'])).stdout);
  const perf = new Map(parsePerfdata(r.stdout).map((e) => [e.label, e]));
  for (const c of counters) {
    const e = perf.get(c.name);
    for (const bound of [80, 95]) assert.equal(Math.sign(e.value - bound), Math.sign(c.usedPercent - bound), `${c.name}: ${e.text} printed for ${c.usedPercent} against ${bound}`);
    const state = exceeds(e.crit, e.value) ? 'CRITICAL' : exceeds(e.warn, e.value) ? 'WARNING' : 'OK';
    assert.equal(state, c.state, `${c.name} at ${e.text} %`);
    assert.match(e.text, /^\d+\.\d+$/, 'one decimal at least, no exponent');
    // The line of text shows the figure of the performance data.
    if (c.state !== 'OK') assert.ok(r.stdout.includes(`\n${c.state} ${c.name}: ${e.text} % used`), `${c.name}: ${r.stdout}`);
  }
  // Graded as the guidelines read `80` and `95`: above them, not at them.
  const expected = { under80: 'OK', at80: 'OK', over80: 'WARNING', almost: 'WARNING', at95: 'WARNING', over95: 'CRITICAL' };
  assert.deepEqual(Object.fromEntries(counters.map((c) => [c.name, c.state])), expected);
  assert.equal(perf.get('almost').text, '94.96');
  assert.equal(perf.get('at80').text, '80.0', 'one decimal when it grades the same');
});

test('a share near 0 prints 0.0 when no threshold is written at 0, and its digits when one is', async () => {
  // 0.01 % of the range: `80` is 0..80, but no share is below its unwritten 0, so 0.0
  // grades as 0.01 does; `-w 0` alerts above 0, where 0.0 would read OK.
  await configured('tiny', { tiny: 1 });
  const plain = await cli(['check', '--collection', 'tiny']);
  assert.equal(plain.code, 0, plain.stdout);
  assert.equal(parsePerfdata(plain.stdout)[0].text, '0.0');
  const zero = await cli(['check', '--collection', 'tiny', '-w', '0']);
  assert.equal(zero.code, 1, zero.stdout);
  assert.equal(parsePerfdata(zero.stdout)[0].text, '0.01');
});

// ------------------------------------------------------------ nothing to check

test('a database with no such collection (a mistyped --db) is UNKNOWN, named, not OK', async () => {
  await sharesReady();
  const db = `${env.dbName}_typo`;
  const r = await cli(['check', ...onShares], { db });
  assert.equal(r.code, 3, r.stdout);
  assert.equal(
    assertStatusLine(r, '--db typo'),
    `SEQUENCES UNKNOWN: USAGE: no counters to check: no document of collection "shares" in database "${db}" holds an integer "sequence_value" (a mistyped --db, --collection or --field?)`,
  );
  const json = await cli(['check', ...onShares, '--json'], { db });
  assert.equal(json.code, 3);
  assert.equal(JSON.parse(json.stdout).status, 'UNKNOWN');
  assert.match(JSON.parse(json.stdout).error.message, new RegExp(`database "${db}"`));
  // OpenMetrics: no metrics to move into place, the reason on stderr.
  const metrics = await cli(['check', ...onShares, '--format', 'openmetrics'], { db });
  assert.equal(metrics.code, 3);
  assert.equal(metrics.stdout, '');
  assert.match(metrics.stderr, /^error USAGE: no counters to check: .*database "/);
});

test('a missing collection (a mistyped --collection), or one with no counter in --field, is UNKNOWN, named, not OK', async () => {
  await sharesReady();
  const r = await cli(['check', '--collection', 'shraes']);
  assert.equal(r.code, 3, r.stdout);
  assert.match(
    assertStatusLine(r, '--collection typo'),
    /^SEQUENCES UNKNOWN: USAGE: no counters to check: no document of collection "shraes" in database "[^"]+" holds an integer "sequence_value"/,
  );
  const field = await cli(['check', ...onShares, '--field', 'sequence_valeu']);
  assert.equal(field.code, 3, field.stdout);
  assert.match(assertStatusLine(field, '--field typo'), /no document of collection "shares" in database "[^"]+" holds an integer "sequence_valeu"/);
});

// ------------------------------------------------------------ one series per counter

const onDuplicates = ['--collection', 'duplicates'];
let duplicates;
/**
 * Names that show the same once masked or escaped: two connection strings with different
 * passwords (and a name that is the first one's ordinal already), a string equal to a
 * scoped name's JSON, a name equal to another's `remaining` label, and `=` beside the
 * escape it is written as. Each with a value of its own, to tell them apart.
 */
const DUPLICATES = [
  ['mongodb://app:first@h/x', 10],
  ['mongodb://app:second@h/x', 20],
  ['mongodb://****@h/x #2', 30],
  ['{"type":"invoice","year":2026}', 40],
  [{ type: 'invoice', year: 2026 }, 50],
  ['x', 60],
  ['x remaining', 70],
  ['a=b', 80],
  ['a\\u003db', 90],
];
/**
 * The label of each value: the name as shown, and for a later counter (in the listing's
 * order, by _id) whose name would show as an earlier one's, or give a performance data
 * label an earlier one has, ` #2` (` #3`…), the first ordinal unused.
 */
const LABELS = new Map([
  [80, 'a=b'],
  [90, 'a\\u003db #2'],
  [30, 'mongodb://****@h/x #2'],
  [10, 'mongodb://****@h/x'],
  [20, 'mongodb://****@h/x #3'],
  [60, 'x'],
  [70, 'x remaining #2'],
  [40, '{"type":"invoice","year":2026}'],
  [50, '{"type":"invoice","year":2026} #2'],
]);
const duplicatesReady = () => (duplicates ??= env.db.collection('duplicates').insertMany(DUPLICATES.map(([_id, sequence_value]) => ({ _id, sequence_value }))));
/** A label as the performance data write it (these names hold no control character). */
const perfLabel = (text) => text.replace(/[=|]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

test('duplicates in JSON: every counter has a label of its own, and `over` names each once', async () => {
  await duplicatesReady();
  const r = await cli(['check', ...onDuplicates, '-w', '0', '--json']);
  assert.equal(r.code, 1, r.stdout);
  const json = JSON.parse(r.stdout);
  assert.ok(!r.stdout.includes('first') && !r.stdout.includes('second'), 'masked');
  assert.equal(json.counters.length, DUPLICATES.length);
  assert.deepEqual(new Map(json.counters.map((c) => [c.value, c.label])), LABELS);
  assert.equal(new Set(json.over).size, DUPLICATES.length, 'each counter once in over');
  assert.deepEqual(new Set(json.over), new Set(LABELS.values()));
});

test('duplicates in the performance data and the text: no label twice, each counter its own', async () => {
  await duplicatesReady();
  const r = await cli(['check', ...onDuplicates, '-w', '0']);
  assert.equal(STATES[r.code], 'WARNING', r.stdout);
  const entries = parsePerfdata(r.stdout);
  assert.equal(new Set(entries.map((e) => e.label)).size, entries.length, 'labels are unique');
  assert.equal(entries.length, 2 * DUPLICATES.length);
  for (const [value, label] of LABELS) {
    const left = entries.filter((e) => e.label === `${perfLabel(label)} remaining`);
    assert.equal(left.length, 1, `${label} remaining`);
    assert.equal(Number(left[0].text), INT32_MAX - value, label);
    assert.equal(entries.filter((e) => e.label === perfLabel(label)).length, 1, label);
  }
  const lines = r.stdout.trimEnd().split('\n').slice(1);
  assert.equal(new Set(lines.map((l) => l.slice(0, l.indexOf(': ')))).size, DUPLICATES.length, 'a line per counter, each named apart');
});

test('duplicates in OpenMetrics: no label set twice in a family, each counter its own', async () => {
  await duplicatesReady();
  const r = await cli(['check', ...onDuplicates, '--format', 'openmetrics']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const families = parseOpenMetrics(r.stdout);
  const values = families.get('mongodb_sequence_value');
  assert.equal(values.samples.length, DUPLICATES.length);
  assert.deepEqual(new Map(values.samples.map((s) => [Number(s.text), s.labels.name])), LABELS);
  for (const family of families.values()) assert.equal(new Set(family.samples.map((s) => s.labels.name)).size, DUPLICATES.length, family.name);
});
