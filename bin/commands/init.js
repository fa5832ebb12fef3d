'use strict';
// `mongodb-sequence init <name> [--start] [--step] [--min] [--max] [--cycle]`: create a counter.

const seq = require('../../lib/native.js');
const { LATE, integer, sequenceName, shownName } = require('../../lib/cli.js');

module.exports = {
  args: ['name'],
  options: {
    start: { type: 'string' },
    step: { type: 'string' },
    min: { type: 'string' },
    max: { type: 'string' },
    cycle: { type: 'boolean' },
  },
  summary: 'Create a counter (never overwrites one): first value --start, and --step, --min, --max, --cycle.',
  example: 'mongodb-sequence init tickets --start 1000 --max 9999 --cycle',

  /** The name and the counter's configuration. */
  parse({ values, positionals }) {
    const config = {};
    for (const [flag, key] of [
      ['start', 'start'],
      ['step', 'step'],
      ['min', 'minValue'],
      ['max', 'maxValue'],
    ]) {
      if (values[flag] !== undefined) config[key] = integer(`--${flag}`, values[flag]);
    }
    if (values.cycle) config.cycle = true;
    return { name: sequenceName(positionals[0]), config };
  },

  /** Creates the counter unless it exists; resolves with `{ text, json }`. */
  async run({ name, config }, session) {
    const db = await session.database();
    session.working('creating the counter', LATE.write);
    const created = await seq.sequence(db, name, session.options).init(config);
    return { text: created ? `created ${shownName(name)}` : `${shownName(name)} exists already (unchanged)`, json: { name, created } };
  },
};
