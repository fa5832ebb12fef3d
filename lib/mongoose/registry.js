'use strict';
// Which counters the mongoose plugin defined: by id in this process, and by schema. The
// plugin registers them; its hooks, statics and the migration helpers look them up here.

const { codedError } = require('../coded-error.js');

/** Every counter defined in this process, by id (mongoose-sequence keeps one registry too). */
const registry = new Map();
/** The counters each schema numbers with. */
const schemaCounters = new WeakMap();
/** The counters of models compiled from a copy of a schema that registered them: model → counters. */
const modelCounters = new WeakMap();

/**
 * The counters `Model` numbers with: those its schema registered, and for a discriminator
 * those of its base model, which it shares with the base and every other child, each
 * once (none for anything else).
 */
function countersOf(Model) {
  if (!Model || !Model.schema) return [];
  const own = schemaCounters.get(Model.schema) || modelCounters.get(Model) || [];
  const base = baseModelOf(Model);
  // A discriminator compiled from a copy of the base schema (`base.clone()`) registered
  // the base's counters as its own too: each counter once.
  return base ? [...new Set([...countersOf(base), ...own])] : own;
}

/** The base model of a discriminator `Model`; `null` for any other model. */
function baseModelOf(Model) {
  const name = Model.baseModelName;
  if (typeof name !== 'string' || name === Model.modelName || !Model.db || !Model.db.models) return null;
  return Model.db.models[name] || null;
}

/**
 * The model whose documents `counter` numbers, asked through `Model`: the base model when
 * `Model` is a discriminator and the counter its base's (it numbers every document of the
 * collection), else `Model` itself.
 */
function numberedModel(Model, counter) {
  const base = baseModelOf(Model);
  return base && countersOf(base).includes(counter) ? numberedModel(base, counter) : Model;
}

/** Records that `schema` numbers with `counter`. */
function addToSchema(schema, counter) {
  if (!schemaCounters.has(schema)) {
    schemaCounters.set(schema, []);
    // mongoose compiles a discriminator (and, with `cloneSchemas`, any model) from a copy of
    // the schema it is given; the copy's `init` event, emitted as the model is made,
    // bubbles up to this schema.
    if (typeof schema.on === 'function') {
      schema.on('init', (model) => {
        if (typeof model === 'function' && model.schema && model.schema !== schema) modelCounters.set(model, schemaCounters.get(schema));
      });
    }
  }
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

module.exports = { registry, countersOf, addToSchema, registered, numbersFor, counterOf, numberedModel };
