'use strict';
// `mongodb-sequence set <name> <value>`: the next value follows <value> (PostgreSQL's setval).

const seq = require('../../lib/native.js');
const { LATE, integer, sequenceName, shownName } = require('../../lib/cli.js');

module.exports = {
  args: ['name', 'value'],
  options: {},
  summary: "Set the counter so that the next value follows <value> (like PostgreSQL's setval).",
  example: 'mongodb-sequence set orders 50000',

  /** The name and the value (a 64-bit integer). */
  parse({ positionals }) {
    return { name: sequenceName(positionals[0]), value: integer('<value>', positionals[1]) };
  },

  /** Sets the counter; resolves with `{ text, json }`. */
  async run({ name, value }, session) {
    const db = await session.database();
    session.working('setting the counter', LATE.write);
    await seq.sequence(db, name, session.options).set(value);
    return { text: `${shownName(name)} set to ${value}`, json: { name, value } };
  },
};
