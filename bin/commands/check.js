'use strict';
// `mongodb-sequence check`: how close each counter is to the end of its range, as a
// monitoring plugin (the Monitoring Plugins guidelines that Nagios and Icinga follow, as
// check_postgres's sequence check reports it): exit 0 (OK), 1 (WARNING), 2 (CRITICAL) or 3
// (UNKNOWN: it cannot tell), a status line first on stdout with performance data after a
// `|`, then one line per counter that alerts. The thresholds are the guidelines' ranges
// (`-w 80`: an alert over 80 %). Cycling counters are not graded on the limit they start
// over at. `--format openmetrics` writes the same figures for Prometheus (the node
// exporter's textfile collector), `--format json` (or `--json`) as JSON.

const seq = require('../../lib/native.js');
const { quote, redacted, UsageError, show, printable, nameText, toJson } = require('../../lib/cli.js');

/** Exit codes of a monitoring plugin. */
const OK = 0;
const WARNING = 1;
const CRITICAL = 2;
const UNKNOWN = 3;
const STATES = ['OK', 'WARNING', 'CRITICAL', 'UNKNOWN'];

const FORMATS = ['text', 'json', 'openmetrics'];

/** A number of a threshold: plain decimal digits (Number() would also read 0x50 and 1e1). */
const BOUND = String.raw`-?\d+(?:\.\d+)?`;
/** A threshold range as the Monitoring Plugins guidelines write it: `[@][start:][end]`. */
const RANGE = new RegExp(`^(@)?(?:(~|${BOUND}):)?(${BOUND})?$`);

/**
 * A threshold of `label` (`text`, else `fallback`) as the Monitoring Plugins guidelines
 * read it: `{ text, inside, start, end, written }`, an alert when the share used is
 * outside start..end, or inside it with `@`, both ends in the range. `N` is 0..N (an
 * alert above N), `N:` N..infinity (below N), `~:N` -infinity..N, `N:M` and `@N:M` as
 * written. Every bound a percentage from 0 to 100; `text` is kept to be written back as
 * given, `written` holds the bounds it names.
 */
function threshold(label, text, fallback) {
  if (text === undefined) text = fallback;
  const m = RANGE.exec(text);
  if (!m || (m[2] === undefined && m[3] === undefined)) {
    throw new UsageError(`${label} must be a threshold range: N, N:, ~:N, N:M or @N:M, with N and M plain decimal percentages (80, 99.5); got ${quote(text)}`);
  }
  const start = m[2] === undefined ? 0 : m[2] === '~' ? -Infinity : Number(m[2]);
  const end = m[3] === undefined ? Infinity : Number(m[3]);
  // A written bound is checked as written: a long digit string is Infinity to Number().
  const writtenBounds = [m[2] === '~' ? undefined : m[2], m[3]].filter((b) => b !== undefined).map(Number);
  if (writtenBounds.some((b) => !Number.isFinite(b) || b < 0 || b > 100)) throw new UsageError(`${label} must hold percentages from 0 to 100; got ${quote(text)}`);
  if (start > end) throw new UsageError(`${label} must not start above its end; got ${quote(text)}`);
  const written = [m[2], m[3]].filter((b) => b !== undefined && b !== '~').map(Number);
  return { text, inside: m[1] === '@', start, end, written };
}

/** Whether `share` raises the alert of `range`. */
const alerts = (range, share) => (range.inside ? share >= range.start && share <= range.end : share < range.start || share > range.end);

/** Whether `range` alerts above its end and nowhere else (`N`, `~:N`, `0:N`): shares are never below 0. */
const alertsAbove = (range) => !range.inside && range.start <= 0 && Number.isFinite(range.end);

/**
 * When `range` alerts, in words: `over 80 %`, `under 10 % or over 90 %`, `at or over 80 %`
 * (`@80:100`). A bound at 0 or 100 or past them leaves no share beyond it to mention.
 */
function described({ inside, start, end }) {
  const low = start > 0;
  const high = end < 100;
  if (inside) {
    if (!low) return high ? `at or under ${end} %` : 'always';
    return high ? `from ${start} to ${end} %` : `at or over ${start} %`;
  }
  const sides = [...(low ? [`under ${start} %`] : []), ...(high ? [`over ${end} %`] : [])];
  return sides.length ? sides.join(' or ') : 'never';
}

/**
 * `share` as the text prints it: one decimal, or as many more as keep it on the same side
 * of every bound written in `ranges` as the share itself (94.96 would print 95.0, on a
 * threshold of 95 while below it), so that a reader of the performance data grades the
 * printed figure as the check graded the share.
 */
function printedShare(share, ranges) {
  // Not the 0 that `N` starts at unwritten: no share is below it, and 0.0 for 0.00005
  // grades the same against it; a 0 written (`-w 0`: an alert above 0) counts.
  const bounds = ranges.flatMap((r) => r.written);
  for (let digits = 1; digits < 100; digits++) {
    const text = share.toFixed(digits);
    if (bounds.every((b) => Math.sign(Number(text) - b) === Math.sign(share - b))) return text;
  }
  return share.toFixed(100);
}

/** A name as the output shows it: a scoped name as its JSON, credentials masked. */
const named = (name) => redacted(nameText(name));

/** A name for the JSON output, credentials masked: a string, or a scoped name's fields. */
const maskedName = (name) =>
  typeof name === 'string' ? redacted(name) : Object.fromEntries(Object.entries(name).map(([k, v]) => [redacted(k), typeof v === 'string' ? redacted(v) : v]));

/** A counter's label in the status text: `|` (it would start performance data) and terminal controls escaped. */
const shown = (text) => printable(text, '|');

/**
 * A performance data label: `text` (and `suffix`) in single quotes, a quote in it
 * doubled, `=`, `|` and terminal controls (which a label cannot hold) escaped; a text
 * with no other character than spaces as its JSON string.
 */
function label(text, suffix = '') {
  let escaped = printable(text, '=|');
  if (!/\S/.test(escaped)) escaped = JSON.stringify(escaped);
  return `'${`${escaped}${suffix}`.replace(/'/g, "''")}'`;
}

/**
 * A label per counter of `names` (as shown: masked, a scoped name as its JSON), each its
 * own in every output, as OpenMetrics and the performance data require (a consumer
 * drops or merges a series seen twice): the name, or for a counter whose labels an
 * earlier one has, the name and ` #2` (` #3`…), the first ordinal that is free. Two
 * connection strings masked alike, a string equal to a scoped name's JSON, `a=b` beside
 * `a\u003db`, or `x` beside `x remaining` would otherwise share one. In the listing's
 * order (by _id), so the same counters get the same labels from one run to the next.
 */
function uniqueLabels(names) {
  // The performance data labels are the narrowest: escaping and the ' remaining' entries
  // make names collide there that differ everywhere else, never the other way round.
  const taken = new Set();
  // The ordinal each text tries next: a thousand names masked alike take a thousand
  // tries, not half a million.
  const next = new Map();
  return names.map((text) => {
    for (let n = next.get(text) ?? 1; ; n++) {
      const candidate = n === 1 ? text : `${text} #${n}`;
      const labels = [label(candidate), label(candidate, ' remaining')];
      if (labels.some((l) => taken.has(l))) continue;
      for (const l of labels) taken.add(l);
      next.set(text, n + 1);
      return candidate;
    }
  });
}

/** An OpenMetrics label value: `\`, `"` and line feeds escaped. */
const labelValue = (text) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/**
 * Values a counter can still hand out before the end of its range: the steps from its
 * value to `rangeEnd` (a plain counter steps by 1, or -1 when its value is negative), 0
 * once there.
 */
function remainingValues(s, rangeEnd) {
  const value = BigInt(s.value);
  const step = s.step !== undefined ? BigInt(s.step) : value < 0n ? -1n : 1n;
  const left = (BigInt(rangeEnd) - value) / step;
  return left < 0n ? 0n : left;
}

/** The output format from `--format` and `--json`. */
function formatOf(values) {
  const format = values.format ?? (values.json ? 'json' : 'text');
  if (!FORMATS.includes(format)) throw new UsageError(`--format must be text, json or openmetrics; got ${quote(format)}`);
  if (values.json && format !== 'json') throw new UsageError(`--json and --format ${format} disagree: give one`);
  return format;
}

/** The output format a command line asks for, read before (or without) parsing it. */
function formatIn(argv) {
  let format;
  argv.forEach((arg, i) => {
    if (arg === '--format') format = argv[i + 1];
    else if (arg.startsWith('--format=')) format = arg.slice('--format='.length);
  });
  if (argv.includes('--json') || format === 'json') return 'json';
  return format === 'openmetrics' ? 'openmetrics' : 'text';
}

/** The OpenMetrics text of `graded` counters of `collection` in `database`, ending with `# EOF`. */
function openMetrics(graded, database, collection) {
  const where = `database="${labelValue(redacted(database))}",collection="${labelValue(redacted(collection))}"`;
  const labels = (g) => `{${where},name="${labelValue(g.label)}"}`;
  const family = (name, help, unit, value) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} gauge`,
    ...(unit ? [`# UNIT ${name} ${unit}`] : []),
    ...graded.map((g) => `${name}${labels(g)} ${value(g)}`),
  ];
  return [
    ...family('mongodb_sequence_capacity_used_ratio', 'Share of its range a counter has used, from 0 to 1.', 'ratio', (g) => String(g.usedPercent / 100)),
    ...family('mongodb_sequence_capacity_remaining_values', 'Values a counter can still hand out before the end of its range.', '', (g) => show(g.remaining)),
    ...family('mongodb_sequence_value', 'Current value of a counter.', '', (g) => show(g.value)),
    ...family('mongodb_sequence_cycling', '1 when a counter starts over at the end of its range (check does not grade it), else 0.', '', (g) => (g.wraps ? '1' : '0')),
    '# EOF',
  ].join('\n');
}

module.exports = {
  args: [],
  options: {
    warn: { type: 'string' },
    warning: { type: 'string', short: 'w' },
    critical: { type: 'string', short: 'c' },
    timeout: { type: 'string', short: 't' },
    format: { type: 'string' },
    bigint: { type: 'boolean' },
  },
  /** What `check --help` says of each option. */
  optionHelp: {
    warn: ['<range>', 'the same as -w/--warning'],
    warning: [
      '<range>',
      'WARNING when the share of its range a counter has used meets this threshold, a range of percentages as the Monitoring Plugins guidelines write one: N (an alert over N), N: (under N), ~:N (over N), N:M (outside N..M) or @N:M (inside N..M, ends included); default 80',
    ],
    critical: ['<range>', 'CRITICAL when the share meets this threshold (the same forms); default 95'],
    timeout: ['<seconds>', 'bounds the whole check (connecting and listing): UNKNOWN after it (default 10)'],
    format: [
      '<format>',
      'text: a status line with performance data, then a line per counter that alerts (the default); json: as --json; openmetrics: for the textfile collector of the Prometheus node exporter, exit 0 once written',
    ],
    bigint: ['', 'grade against the range of an application reading BigInts (default: JavaScript numbers)'],
  },
  summary:
    'Check how much of its range each counter has used, as a monitoring plugin: exit 0 OK, 1 when a share meets the -w threshold (default 80: over 80 %), 2 the -c one (default 95), 3 when it cannot tell.',
  example: 'MONGODB_URI=mongodb://localhost:27017/shop mongodb-sequence check -w 80 -c 95',

  /** The thresholds (the warning not above the critical one when both alert above a share), `--bigint` and the format. */
  parse({ values }) {
    if (values.warn !== undefined && values.warning !== undefined) throw new UsageError('give the warning threshold once: --warn or -w/--warning');
    const warnLabel = values.warning !== undefined ? '--warning' : '--warn';
    const warn = threshold(warnLabel, values.warning ?? values.warn, '80');
    const critical = threshold('--critical', values.critical, '95');
    // Other forms may rightly overlap or nest (WARNING under 20 %, CRITICAL over 95 %).
    if (alertsAbove(warn) && alertsAbove(critical) && warn.end > critical.end) {
      throw new UsageError(`${warnLabel} (${warn.text}) must not be above --critical (${critical.text})`);
    }
    return { warn, critical, bigint: values.bigint === true, format: formatOf(values) };
  },

  /** Exit code when the check cannot be made (usage, connection, timeout): UNKNOWN. */
  failureExitCode: UNKNOWN,

  /**
   * What a failure prints, in the format `argv` asks for: the plugin's status line on
   * stdout (`SEQUENCES UNKNOWN: CODE: message`, monitoring shows only stdout), with
   * `--json` `{ status: 'UNKNOWN', error: { code, message } }`, and with `--format
   * openmetrics` nothing on stdout (no metrics to move into place), the error on stderr.
   */
  failure(code, message, argv) {
    const format = formatIn(argv);
    if (format === 'json') return { stdout: toJson({ status: 'UNKNOWN', error: { code, message } }) };
    if (format === 'openmetrics') return { stderr: `error ${code}: ${printable(message)}` };
    return { stdout: `SEQUENCES UNKNOWN: ${code}: ${printable(message, '|')}` };
  },

  /**
   * Lists the counters and grades them against the range an application reading values
   * as JavaScript numbers has (`--bigint`: as BigInts); a cycling counter whose range
   * ends at its own limit is shown but not graded (it starts over there). Resolves with
   * `{ text, json, exitCode, masked }`; rejects with a usage error (UNKNOWN) when it finds
   * no counter.
   */
  async run({ warn, critical, bigint, format }, session) {
    const db = await session.database();
    session.working('listing the counters');
    const all = await seq.listSequences(db, session.options);
    const collection = session.options.collection ?? 'counters';
    if (all.length === 0) {
      // Nothing to grade is no OK: a mistyped --db or --collection would be green for ever.
      // A missing database, a missing collection and one without counters read alike here
      // (MongoDB makes both on the first write; the package lists counters only).
      const field = session.options.field ?? 'sequence_value';
      throw new UsageError(
        `no counters to check: no document of collection ${quote(collection)} in database ${quote(session.db)} holds an integer ${quote(field)} (a mistyped --db, --collection or --field?)`,
      );
    }
    const labels = uniqueLabels(all.map((s) => named(s.name)));
    const graded = all.map((s, i) => {
      const used = bigint ? s.usedPercent : s.usedPercentAsNumber;
      const rangeKind = bigint ? s.rangeKind : s.rangeKindAsNumber;
      const rangeEnd = bigint ? s.rangeEnd : s.rangeEndAsNumber;
      const cycle = s.cycle === true;
      // A cycling counter starts over at its limit instead of running out: not graded,
      // unless the reader's numbers end before that limit (rangeKind 'number').
      const wraps = cycle && rangeKind === 'limit';
      const state = wraps ? 'OK' : alerts(critical, used) ? 'CRITICAL' : alerts(warn, used) ? 'WARNING' : 'OK';
      return { name: s.name, label: labels[i], value: s.value, rangeEnd, rangeKind, usedPercent: used, cycle, state, remaining: remainingValues(s, rangeEnd), wraps };
    });
    // Every output is `masked`: each name in it masked on its own (a pass over the whole
    // text would mask from one name's credentials to the last '@' of the text, dropping
    // the counters in between).
    if (format === 'openmetrics') return { text: openMetrics(graded, session.db, collection), exitCode: OK, masked: true };
    const counters = graded.map(({ wraps, ...g }) => ({ ...g, name: maskedName(g.name) }));
    const wrapping = graded.filter((g) => g.wraps && (alerts(warn, g.usedPercent) || alerts(critical, g.usedPercent))).length;
    const over = graded.filter((g) => g.state !== 'OK').sort((a, b) => b.usedPercent - a.usedPercent);
    const exitCode = over.some((g) => g.state === 'CRITICAL') ? CRITICAL : over.length ? WARNING : OK;
    const status = STATES[exitCode];
    const json = { status, warn: warn.text, critical: critical.text, counters, over: over.map((g) => g.label) };
    if (format === 'json') return { text: toJson(json), json, exitCode, masked: true };
    const skipped = wrapping ? `; ${wrapping} cycling counter(s) that would alert not graded: they start over at their limit` : '';
    // Per counter: the share used, with the thresholds as given (the guidelines' ranges;
    // none for a counter not graded), and the values left.
    const printed = new Map(graded.map((g) => [g, printedShare(g.usedPercent, g.wraps ? [] : [warn, critical])]));
    const perfdata = graded.map((g) => {
      const thresholds = g.wraps ? ';;' : `;${warn.text};${critical.text}`;
      return `${label(g.label)}=${printed.get(g)}%${thresholds};0;100 ${label(g.label, ' remaining')}=${g.remaining};;;0`;
    });
    const head = `SEQUENCES ${status}: ${over.length} of ${all.length} counter(s) alerting (warning: ${described(warn)}, critical: ${described(critical)})${skipped}`;
    const lines = over.map((g) => `${g.state} ${shown(g.label)}: ${printed.get(g)} % used (${show(g.value)} of ${show(g.rangeEnd)}, ${g.rangeKind})`);
    return {
      text: [`${head} | ${perfdata.join(' ')}`, ...lines].join('\n'),
      json,
      exitCode,
      masked: true,
    };
  },
};
