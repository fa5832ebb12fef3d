'use strict';
// `mongodb-sequence next <name> [--count N] [--upsert]`: take values.

const seq = require('../../lib/native.js');
const { LATE, UsageError, integer, sequenceName, show } = require('../../lib/cli.js');

/** Values printed one per line at most; more are printed as a range. */
const LISTED_AT_MOST = 1000n;

module.exports = {
  args: ['name'],
  options: { count: { type: 'string' }, upsert: { type: 'boolean' } },
  summary: 'Take the next value (or --count N values: up to 1000 printed one per line, more as a range); --upsert creates a missing counter.',
  example: `mongodb-sequence next '{"type":"invoice","year":2026}' --upsert`,

  /** The name, `--count` (1 to 2^31 - 1, default 1) and `--upsert`. */
  parse({ values, positionals }) {
    const name = sequenceName(positionals[0]);
    const count = values.count === undefined ? 1n : integer('--count', values.count);
    if (count < 1n || count > 2n ** 31n - 1n) throw new UsageError('--count must be from 1 to 2147483647');
    return { name, count, upsert: Boolean(values.upsert) };
  },

  /** Takes the values; resolves with `{ text, json }`. */
  async run({ name, count, upsert }, session) {
    const handle = seq.sequence(await session.database(), name, { ...session.options, upsert });
    session.working('taking values', LATE.values);
    if (count === 1n) {
      const value = await handle.next();
      return { text: show(value), json: { name, value } };
    }
    if (count <= LISTED_AT_MOST) {
      const batch = await handle.nextBatch(Number(count));
      return { text: batch.map(show).join('\n'), json: { name, values: batch } };
    }
    const range = await handle.nextRange(Number(count));
    return { text: `${show(range.first)}..${show(range.last)} (${range.count} values, step ${range.step})`, json: { name, ...range } };
  },
};
