'use strict';
// `mongodb-sequence check`: how close each counter is to the end of its range, as the
// monitoring plugins operators already use (check_postgres's sequence check) report it:
// exit 0 (OK), 1 (WARNING) or 2 (CRITICAL), one line per counter over a threshold.
// Cycling counters are not graded on the limit they start over at.

const seq = require('../../index.js');
const { quote, UsageError, show, nameText, table } = require('../../lib/cli.js');

/** Exit codes of a monitoring plugin. */
const OK = 0;
const WARNING = 1;
const CRITICAL = 2;

/** A percentage threshold from 0 to 100. */
function percent(label, text, fallback) {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (String(text).trim() === '' || !Number.isFinite(value) || value < 0 || value > 100) {
    throw new UsageError(`${label} must be a percentage from 0 to 100; got ${quote(text)}`);
  }
  return value;
}

module.exports = {
  args: [],
  options: {
    warn: { type: 'string' },
    critical: { type: 'string' },
    bigint: { type: 'boolean' },
  },
  summary: 'Check how much of its range each counter has used: exit 0 OK, 1 at --warn % (default 80), 2 at --critical % (default 95), 3 when it cannot tell.',
  example: 'MONGODB_URI=mongodb://localhost:27017/shop mongodb-sequence check --warn 80 --critical 95',

  /** `--warn` and `--critical` as percentages, the warning not above the critical one. */
  parse({ values }) {
    const warn = percent('--warn', values.warn, 80);
    const critical = percent('--critical', values.critical, 95);
    if (warn > critical) throw new UsageError(`--warn (${warn}) must not be above --critical (${critical})`);
    return { warn, critical, bigint: values.bigint === true };
  },

  /** Exit code when the check cannot be made (usage, connection): UNKNOWN. */
  failureExitCode: 3,

  /**
   * Lists the counters and grades them against the range an application reading values
   * as JavaScript numbers has (`--bigint`: as BigInts); a cycling counter whose range
   * ends at its own limit is shown but not graded (it starts over there). Resolves with
   * `{ text, json, exitCode }`.
   */
  async run({ warn, critical, bigint }, session) {
    const all = await seq.listSequences(await session.database(), session.options);
    const graded = all.map((s) => {
      const used = bigint ? s.usedPercent : s.usedPercentAsNumber;
      const rangeKind = bigint ? s.rangeKind : s.rangeKindAsNumber;
      const rangeEnd = bigint ? s.rangeEnd : s.rangeEndAsNumber;
      const cycle = s.cycle === true;
      // A cycling counter starts over at its limit instead of running out: not graded,
      // unless the reader's numbers end before that limit (rangeKind 'number').
      const wraps = cycle && rangeKind === 'limit';
      const state = wraps ? 'OK' : used >= critical ? 'CRITICAL' : used >= warn ? 'WARNING' : 'OK';
      return { name: s.name, value: s.value, rangeEnd, rangeKind, usedPercent: used, cycle, state, wraps };
    });
    const wrapping = graded.filter((g) => g.wraps && g.usedPercent >= warn).length;
    for (const g of graded) delete g.wraps;
    const over = graded.filter((g) => g.state !== 'OK').sort((a, b) => b.usedPercent - a.usedPercent);
    const exitCode = over.some((g) => g.state === 'CRITICAL') ? CRITICAL : over.length ? WARNING : OK;
    const status = ['OK', 'WARNING', 'CRITICAL'][exitCode];
    const skipped = wrapping ? `; ${wrapping} cycling counter(s) at or over ${warn} % not graded: they start over at their limit` : '';
    const head = `SEQUENCES ${status}: ${over.length} of ${all.length} counter(s) at or over ${warn} % of their range (critical: ${critical} %)${skipped}`;
    const lines = over.map((g) => `${g.state} ${nameText(g.name)}: ${g.usedPercent.toFixed(1)} % used (${show(g.value)} of ${show(g.rangeEnd)}, ${g.rangeKind})`);
    return {
      text: [head, ...lines].join('\n'),
      json: { status, warn, critical, counters: graded, over: over.map((g) => nameText(g.name)) },
      exitCode,
    };
  },
};
