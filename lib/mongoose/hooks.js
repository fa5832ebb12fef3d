'use strict';
// The schema hooks of a counter: numbering on save, insertMany, bulkWrite and upserts,
// and forgetting a number once it is stored or refused.

const { gaplessRefusal } = require('./options.js');
const { isDocument } = require('./paths.js');
const { checkDiscriminator } = require('./cast.js');
const { BULK_UPSERTS, checkUpsert, upsertPlan, upsertValues } = require('./upserts.js');
const { takesNumber, BATCH } = require('./rule.js');

/** The operations that may upsert, and whether each one's update is a replacement. */
const UPSERTING = [
  ['findOneAndUpdate', false],
  ['updateOne', false],
  ['updateMany', false],
  ['replaceOne', true],
  ['findOneAndReplace', true],
];

function arrayArgument(args) {
  return args.find((a) => Array.isArray(a));
}

/**
 * Whether the current mongoose runs parallel pre hooks (`schema.pre(name, true, fn)`,
 * mongoose ≤ 8); mongoose 9 runs every pre hook in series.
 */
function parallelPreHooks(schema) {
  const Hooks = schema && schema.s && schema.s.hooks && schema.s.hooks.constructor;
  if (typeof Hooks !== 'function') return false;
  try {
    const probe = new Hooks();
    probe.pre('probe', true, () => {});
    const pres = probe._pres && probe._pres.get('probe');
    return Boolean(pres && pres.numAsync === 1);
  } catch {
    return false;
  }
}

/** Refuses `doc`, written through `Model`, when it is a discriminator numbered by counters of its own schema. */
function checkBatchDiscriminator(Model, doc) {
  checkDiscriminator(Model, doc, (c, Child) => takesNumber(c, doc, BATCH, Child));
}

/** Adds the hooks that number new documents, batches and upserts. */
function addHooks(schema, counter) {
  const numberOnSave = async (doc) => {
    if (!doc.isNew) return;
    if (counter.options.gapless) throw gaplessRefusal('doc.save() of a new document');
    await counter.numberOnSave(doc);
  };
  if (counter.options.parallel_hooks && parallelPreHooks(schema)) {
    // mongoose 8 runs parallel pre hooks, as mongoose-sequence registers its own by
    // default: the next pre('save') hooks start before the number is set; the insert
    // waits for it.
    schema.pre('save', true, function numberNewDocumentInParallel(next, done) {
      next();
      numberOnSave(this).then(
        () => done(),
        (error) => done(error),
      );
    });
  } else {
    schema.pre('save', async function numberNewDocument() {
      await numberOnSave(this);
    });
  }

  // A number refused by a unique index on inc_field (numbers imported past the counter,
  // say) is not kept for a retry of the save: the retry takes the next number, as with
  // mongoose-sequence, instead of failing on the same one forever.
  schema.post('save', function forgetRefusedNumber(error, doc, next) {
    if (error && error.code === 11000 && this && this.isNew && counter.refused(this, error)) counter.forget(this);
    next(error);
  });

  // Once saved, a number is the stored document's, not this object's: the same object
  // inserted again as a new document (isNew set back, a new _id) is numbered again.
  schema.post('save', function forgetSavedDocument(doc) {
    counter.stored(doc);
  });
  schema.post('insertMany', function forgetInsertedDocuments(docs) {
    if (Array.isArray(docs)) for (const doc of docs) if (isDocument(doc)) counter.stored(doc);
  });

  // Declared parameters: mongoose 8 passes (next, docs, options) to hooks that declare
  // any (none otherwise), mongoose 9 (docs, options); either way the promise settles it.
  // Plain objects are numbered as copies, never written to (one object given twice must
  // take two numbers): mongoose 9 takes the copies as the hook's new arguments; mongoose
  // 8 cannot, so there they replace the objects in the array, which is the insertMany
  // static's own copy of the caller's (see addCreate in ./statics.js).
  schema.pre('insertMany', async function numberInsertMany(first, second, third) {
    if (counter.options.gapless) return undefined; // numbered by the insertMany static itself
    const given = [first, second, third].slice(0, arguments.length);
    const overwrite = this.base && typeof this.base.overwriteMiddlewareArguments === 'function' ? this.base.overwriteMiddlewareArguments : null;
    const docs = arrayArgument(given);
    if (!docs) return undefined;
    for (const doc of docs) checkBatchDiscriminator(this, doc);
    await counter.raiseToGiven(
      docs.filter((doc) => !takesNumber(counter, doc, BATCH, this)),
      this,
    );
    const numbered = await counter.numberAll(docs, this);
    if (numbered.every((d, i) => d === docs[i])) return undefined;
    if (overwrite && given[0] === docs) return overwrite(numbered, ...given.slice(1));
    numbered.forEach((d, i) => {
      if (d !== docs[i]) docs[i] = d;
    });
    return undefined;
  });

  schema.pre('bulkWrite', async function numberBulkWrite(first, second, third) {
    const ops = arrayArgument([first, second, third]);
    if (!ops) return;
    // What takes a number, in operation order: insertOne documents and upserts. mongoose
    // replaces each operation's document or update by its cast copy; ours (a numbered
    // copy) takes the caller's object's place there first.
    const work = [];
    // What keeps a number the caller gave: insertOne documents, the values of upserts.
    const given = [];
    for (const op of ops) {
      if (!op || typeof op !== 'object') continue;
      const doc = op.insertOne && op.insertOne.document;
      if (doc && counter.options.gapless) throw gaplessRefusal('a bulkWrite insertOne');
      if (doc) checkBatchDiscriminator(this, doc);
      if (doc && takesNumber(counter, doc, BATCH, this)) {
        work.push({ source: doc, place: (number) => (op.insertOne.document = counter.withNumber(doc, number)) });
      } else if (doc) given.push(doc);
      for (const [kind, key] of Object.entries(BULK_UPSERTS)) {
        const spec = op[kind];
        const upsert = spec && spec.upsert && spec[key] && typeof spec[key] === 'object';
        if (upsert) checkUpsert(this, spec.filter, spec[key], kind === 'replaceOne');
        const plan = upsert ? upsertPlan(counter, this, spec.filter, spec[key], kind === 'replaceOne') : null;
        if (upsert && !Array.isArray(spec[key])) given.push(upsertValues(spec.filter, spec[key], kind === 'replaceOne'));
        if (plan) work.push({ source: plan.source, place: (number) => (op[kind] = { ...spec, [key]: plan.place(number && number.value) }) });
      }
    }
    await counter.raiseToGiven(given, this);
    const reserved = work.filter((w) => w.source !== null);
    const numbers = await counter.reserve(
      reserved.map((w) => w.source),
      this,
    );
    reserved.forEach((w, i) => w.place(numbers[i]));
    for (const w of work) if (w.source === null) w.place(null);
  });

  for (const [operation, replace] of UPSERTING) {
    schema.pre(operation, async function numberUpsert() {
      if (!this.getOptions().upsert) return;
      checkUpsert(this.model, this.getFilter(), this.getUpdate() || {}, replace);
      const plan = upsertPlan(counter, this.model, this.getFilter(), this.getUpdate() || {}, replace);
      const update = this.getUpdate() || {};
      if (!Array.isArray(update)) await counter.raiseToGiven([upsertValues(this.getFilter(), update, replace)], this.model);
      if (!plan) return;
      const [number] = plan.source === null ? [null] : await counter.reserve([plan.source], this.model);
      this.setUpdate(plan.place(number && number.value));
    });
  }
}

module.exports = { addHooks, parallelPreHooks };
