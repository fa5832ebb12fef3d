'use strict';
// `mongodb-sequence sync <name> --from <collection>.<field>`: move a counter past imported data.

const seq = require('../../lib/native.js');
const { LATE, UsageError, sequenceName, show } = require('../../lib/cli.js');

module.exports = {
  args: ['name'],
  options: { from: { type: 'string' } },
  summary: 'Move the counter past every value of --from <collection>.<field> (a dotted path allowed; never moves it back).',
  example: 'mongodb-sequence sync orders --from orders.orderNo',

  /** The name and --from, split at its first dot. */
  parse({ values, positionals }) {
    const name = sequenceName(positionals[0]);
    const from = values.from ?? '';
    const dot = from.indexOf('.');
    if (dot <= 0 || dot === from.length - 1) throw new UsageError('sync needs --from <collection>.<field>');
    return { name, collection: from.slice(0, dot), field: from.slice(dot + 1) };
  },

  /** Raises the counter; resolves with `{ text, json }`. */
  async run({ name, collection, field }, session) {
    const db = await session.database();
    session.working('syncing the counter', LATE.write);
    const value = await seq.syncToMax(db, collection, field, name, session.options);
    return { text: show(value), json: { name, value } };
  },
};
