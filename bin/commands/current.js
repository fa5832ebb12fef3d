'use strict';
// `mongodb-sequence current <name>`: the last value handed out, without taking one.

const seq = require('../../lib/native.js');
const { sequenceName, show } = require('../../lib/cli.js');

module.exports = {
  args: ['name'],
  options: {},
  summary: 'Print the last value handed out, without taking one.',
  example: 'mongodb-sequence current invoices',

  /** The sequence name. */
  parse({ positionals }) {
    return { name: sequenceName(positionals[0]) };
  },

  /** Reads the counter; resolves with `{ text, json }`. */
  async run({ name }, session) {
    const db = await session.database();
    session.working('reading the counter');
    const value = await seq.sequence(db, name, session.options).current();
    return { text: show(value), json: { name, value } };
  },
};
