'use strict';
// Which counters the mongoose plugin defined: by id in this process, and by schema. The
// plugin registers them; its hooks, statics and the migration helpers look them up here.

const { codedError } = require('./coded-error.js');

/** Every counter defined in this process, by id (mongoose-sequence keeps one registry too). */
const registry = new Map();
/** The counters each schema numbers with. */
const schemaCounters = new WeakMap();

/** The counters `Model`'s schema registered (none for anything else). */
function countersOf(Model) {
  return (Model && Model.schema && schemaCounters.get(Model.schema)) || [];
}

/** Records that `schema` numbers with `counter`. */
function addToSchema(schema, counter) {
  if (!schemaCounters.has(schema)) schemaCounters.set(schema, []);
  schemaCounters.get(schema).push(counter);
}

/**
 * The counter of `id` for `Model`: the one its schema registered (on its own connection:
 * with `exclusive: false` several connections each have a counter of that id), else the
 * one registered first in this process; or an error as mongoose-sequence words it.
 */
function registered(id, verb, Model) {
  const counter = countersOf(Model).find((c) => c.options.id === String(id)) || registry.get(String(id));
  if (!counter) throw codedError('INVALID_ARGUMENT', `Trying to ${verb} a wrong sequence using the id ${id}`);
  return counter;
}

/** Whether `counter` numbers documents of `Model` (its schema registered it). */
function numbersFor(counter, Model) {
  return countersOf(Model).includes(counter);
}

/** The counter `Model` numbers with: the one of `id`, or its only one. */
function counterOf(Model, id) {
  const counters = countersOf(Model);
  if (id !== undefined) {
    const found = counters.find((c) => c.options.id === String(id));
    if (!found) throw codedError('INVALID_ARGUMENT', `Model ${Model && Model.modelName} has no counter with id "${id}"`);
    return found;
  }
  if (counters.length !== 1) {
    throw codedError('INVALID_ARGUMENT', `Model ${Model && Model.modelName} has ${counters.length} counters: name one with its id`);
  }
  return counters[0];
}

module.exports = { registry, countersOf, addToSchema, registered, numbersFor, counterOf };
