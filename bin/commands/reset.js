'use strict';
// `mongodb-sequence reset <name>`: the next value is the counter's start.

const seq = require('../../lib/native.js');
const { LATE, sequenceName, show, shownName } = require('../../lib/cli.js');

module.exports = {
  args: ['name'],
  options: {},
  summary: 'Put the counter back so that the next value is its start.',
  example: 'mongodb-sequence reset tickets',

  /** The sequence name. */
  parse({ positionals }) {
    return { name: sequenceName(positionals[0]) };
  },

  /** Resets the counter; resolves with `{ text, json }`. */
  async run({ name }, session) {
    const db = await session.database();
    session.working('resetting the counter', LATE.write);
    const start = await seq.sequence(db, name, session.options).reset();
    return { text: `${shownName(name)} reset; next value ${show(start)}`, json: { name, next: start } };
  },
};
