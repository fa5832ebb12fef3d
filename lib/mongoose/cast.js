'use strict';
// Plain objects (documents to insert, an upsert's values, reference values) cast with a
// model's schema, and the discriminator they name.

const { codedError } = require('../coded-error.js');
const { PLUGIN } = require('./options.js');
const { isDocument } = require('./paths.js');
const { countersOf } = require('./registry.js');

/** The discriminator of `Model` that `plain` names (by the discriminator key), as mongoose picks it; else `Model`. */
function discriminatorOf(Model, plain) {
  const key = Model.schema && Model.schema.options && Model.schema.options.discriminatorKey;
  const name = key ? plain[key] : undefined;
  if (name === undefined || name === null || !Model.discriminators) return Model;
  return Model.discriminators[name] || Object.values(Model.discriminators).find((d) => d.discriminatorMapping && d.discriminatorMapping.value === name) || Model;
}

/**
 * `source` (a plain object: a document to insert, an upsert's values, reference values) as
 * a document of `Model`, so its values are cast, set and defaulted by the schema exactly as
 * `save` would store them. Keys starting with `$` are left out. Documents are returned as
 * they are; without a model (or when the schema refuses the object outright) the object
 * itself is read.
 */
function asCast(Model, source) {
  if (isDocument(source) || !source || typeof source !== 'object' || typeof Model !== 'function') return source;
  const plain = {};
  for (const [key, value] of Object.entries(source)) if (!key.startsWith('$')) plain[key] = value;
  try {
    return new (discriminatorOf(Model, plain))(plain);
  } catch {
    return source;
  }
}

/**
 * Refuses a write through `Model` (a base model) of a document that is, or names by the
 * discriminator key, a discriminator with counters of its own schema: `Model`'s hooks
 * are its own schema's, so those counters would give it no number. `takes(counter,
 * Child)` says whether the write would take a number of that counter.
 */
function checkDiscriminator(Model, source, takes) {
  if (!source || typeof source !== 'object') return;
  const Child = isDocument(source) ? source.constructor : discriminatorOf(Model, source);
  if (typeof Child !== 'function' || Child === Model) return;
  const inherited = countersOf(Model);
  const missing = countersOf(Child).find((c) => !inherited.includes(c) && !c.options.disable_hooks && takes(c, Child));
  if (missing) {
    throw codedError(
      'INVALID_ARGUMENT',
      `${PLUGIN}: a ${Child.modelName} document is numbered by counter '${missing.options.id}' of its own schema, which a write through ${Model.modelName} does not run: write it through the model ${Child.modelName} (no number was taken)`,
    );
  }
}

module.exports = { discriminatorOf, asCast, checkDiscriminator };
