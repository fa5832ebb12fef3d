'use strict';
// `mongodb-sequence list`: the counters of a collection, as a table or JSON.

const seq = require('../../lib/native.js');
const { show, shownName, table } = require('../../lib/cli.js');

module.exports = {
  args: [],
  options: {},
  summary: 'List the counters: name, value, step, min, max, cycle, share of the range used.',
  example: 'MONGODB_URI=mongodb://localhost:27017/shop mongodb-sequence list',

  /** No arguments of its own. */
  parse() {
    return {};
  },

  /** Lists every counter; resolves with `{ text, json }`. */
  async run(_input, session) {
    const db = await session.database();
    session.working('listing the counters');
    const all = await seq.listSequences(db, session.options);
    // USED and RANGE as an application reading the values as JavaScript numbers sees them.
    const rows = all.map((s) => [
      shownName(s.name),
      show(s.value),
      show(s.step ?? 1),
      s.minValue === undefined ? '-' : show(s.minValue),
      s.maxValue === undefined ? '-' : show(s.maxValue),
      s.cycle ? 'yes' : 'no',
      `${s.usedPercentAsNumber.toFixed(1)}%`,
      s.rangeKindAsNumber,
    ]);
    const text = rows.length ? table(rows, ['NAME', 'VALUE', 'STEP', 'MIN', 'MAX', 'CYCLE', 'USED', 'RANGE'], [1, 2, 3, 4, 6]) : '(no sequences)';
    return { text, json: all };
  },
};
