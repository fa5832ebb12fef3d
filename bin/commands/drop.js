'use strict';
// `mongodb-sequence drop <name> [--yes]`: delete a counter, after a confirmation.

const seq = require('../../lib/native.js');
const { LATE, UsageError, sequenceName, shownName, printable, confirm } = require('../../lib/cli.js');

module.exports = {
  args: ['name'],
  options: { yes: { type: 'boolean', short: 'y' } },
  summary: 'Delete the counter. Asks for confirmation on a terminal unless --yes; elsewhere requires --yes.',
  example: 'mongodb-sequence drop old-counter --yes',

  /** The name; without --yes, a terminal to ask on. */
  parse({ values, positionals }) {
    if (!values.yes && !process.stdin.isTTY) throw new UsageError('drop needs --yes when not run on a terminal');
    return { name: sequenceName(positionals[0]), confirmed: Boolean(values.yes) };
  },

  /** Asks (unless --yes), then deletes the counter; resolves with `{ text, json }`. */
  async run({ name, confirmed }, session) {
    if (!confirmed) {
      const where = printable(`${session.db}.${session.options.collection ?? 'counters'}`);
      if (!(await confirm(`Drop sequence ${shownName(name)} from ${where}? [y/N] `))) {
        return { text: 'cancelled', json: { name, dropped: false, cancelled: true } };
      }
    }
    const db = await session.database();
    session.working('dropping the counter', LATE.write);
    const dropped = await seq.sequence(db, name, session.options).drop();
    return { text: dropped ? `dropped ${shownName(name)}` : `${shownName(name)} did not exist`, json: { name, dropped } };
  },
};
