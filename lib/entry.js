'use strict';
// The package's entry: the native exports of the generated loader (index.js), with each
// public asynchronous call published on the `tracing:mongodb-sequence:call:*` channels of
// `diagnostics_channel.tracingChannel('mongodb-sequence:call')` (start, end, asyncStart,
// asyncEnd, error), synchronously on the caller's thread, so that AsyncLocalStorage-based
// tracers see the caller's store. While nobody subscribes, a wrapped call costs one look
// at `hasSubscribers` and goes straight to the native function.
//
// The context object of a call: `{ operation, counter?, database?, collection? }` (then
// `result` or `error`, as tracingChannel sets them). Never the URI or any option besides
// these names.
//
// The classes stay the native ones (instances come from the addon): their asynchronous
// methods are wrapped on their prototypes.

const native = require('./native.js');
const { codedError } = require('./coded-error.js');

const dc = process.getBuiltinModule?.('node:diagnostics_channel') ?? require('node:diagnostics_channel');
const channel = typeof dc.tracingChannel === 'function' ? dc.tracingChannel('mongodb-sequence:call') : null;
// Bun's TracingChannel has no `hasSubscribers` getter (undefined): there, whether any of
// its five channels has subscribers.
const ownGetter = channel !== null && typeof channel.hasSubscribers === 'boolean';
const anySubscribed = () =>
  channel.start.hasSubscribers || channel.end.hasSubscribers || channel.asyncStart.hasSubscribers || channel.asyncEnd.hasSubscribers || channel.error.hasSubscribers;

/**
 * Text of a call's context as messages show it: the credentials of any connection string
 * in it masked (a counter named after a URI, as a mistaken argument order gives), since
 * tracers copy the context into spans and logs.
 */
const masked = (text) => (typeof text === 'string' && typeof native.redactConnectionStrings === 'function' ? native.redactConnectionStrings(text) : text);

/** A counter name as shown in messages: the string, or a scope's fields as JSON; masked. */
function label(name) {
  if (typeof name === 'string') return masked(name);
  if (name === null || typeof name !== 'object') return undefined;
  try {
    return masked(JSON.stringify(name, (_, v) => (typeof v === 'bigint' ? v.toString() : v)));
  } catch {
    return undefined;
  }
}

/** A database's name when `db` looks like one (a Node driver `Db` or a `SequenceDb`). */
function databaseOf(db) {
  try {
    const name = db?.databaseName;
    return typeof name === 'string' ? masked(name) : undefined;
  } catch {
    return undefined;
  }
}

/** The counters collection named by an options object (`collection` or `counterCollection`/`counters`). */
function countersOf(options, key) {
  if (options === null || typeof options !== 'object') return 'counters';
  const named = options[key] ?? (key === 'counterCollection' ? options.counters : undefined);
  return typeof named === 'string' ? masked(named) : 'counters';
}

// Registered symbols, the same in every evaluation of this file (a require cache cleared
// per test file, as jest does, evaluates it again over the same native classes).
/** On a wrapper: the native function it wraps. */
const ORIGINAL = Symbol.for('mongodb-sequence.original');
/** On the native `Sequence` class: the WeakMap of each handle's database and collection. */
const ORIGINS = Symbol.for('mongodb-sequence.origins');

/**
 * `fn` traced as `operation`; `describe(args, self)` builds the context's names. Arity
 * and name stay the native function's. A context that cannot be built (a throwing
 * getter, a revoked Proxy) is `{ operation }`: the call fails as it does untraced.
 */
function traced(fn, operation, describe) {
  if (channel === null) return fn;
  const root = fn[ORIGINAL] ?? fn;
  const wrapper = {
    [fn.name]() {
      if (!(ownGetter ? channel.hasSubscribers : anySubscribed())) return fn.apply(this, arguments);
      const args = Array.prototype.slice.call(arguments);
      let context;
      try {
        context = { operation, ...describe(args, this) };
      } catch {
        context = { operation };
      }
      return channel.tracePromise(fn, context, this, ...args);
    },
  }[fn.name];
  Object.defineProperty(wrapper, 'length', { value: fn.length });
  Object.defineProperty(wrapper, ORIGINAL, { value: root });
  return wrapper;
}

/**
 * `fn.apply(self, args)` for a native method that returns a promise, made to reject
 * rather than throw: V8 refuses a receiver that is no handle (`[1, 2].map(h.next)`
 * detaches the method) with a TypeError before the addon runs, and the package's
 * promise-returning calls never throw (docs/errors.md).
 */
function callRejecting(fn, method, self, args, owner = 'a sequence handle') {
  try {
    return fn.apply(self, args);
  } catch (error) {
    // V8's receiver check throws a TypeError without a code; anything else is rejected as it is.
    if (!(error instanceof TypeError) || error.code !== undefined) return Promise.reject(error);
    const message = `${method}() must be called on ${owner} (h.${method}(), or h.${method}.bind(h) to pass it on)`;
    return Promise.reject(codedError('INVALID_ARGUMENT', message, { cause: error }));
  }
}

/** `fn`, a native method of `owner`s that returns a promise, rejecting where V8 would throw (`callRejecting`). */
function rejecting(fn, method, owner) {
  const wrapper = {
    [fn.name]() {
      return callRejecting(fn, method, this, arguments, owner);
    },
  }[fn.name];
  Object.defineProperty(wrapper, 'length', { value: fn.length });
  Object.defineProperty(wrapper, ORIGINAL, { value: fn });
  return wrapper;
}

/** On the native `Sequence` class: the WeakMap of each handle's taker (`taker()`). */
const TAKERS = Symbol.for('mongodb-sequence.takers');

/**
 * A handle's `next()` (`nativeNext`) that takes a value its block cache holds through the
 * addon's synchronous `Sequence.takeCached(taker)` and returns it in a promise made here:
 * a promise made by the addon, and a method call on a native handle, each cost more than
 * the rest of a cached call. The addon decides everything (which value, its order behind
 * waiting calls, statistics, the prefetch); a call it cannot serve at once, and a `this`
 * that is not a handle, go to `nativeNext` untouched (`takeCached` did nothing then).
 * The takers are kept in a WeakMap on the native class, as `origins` are: a frozen
 * handle is served too, an object made from a handle (`Object.create(h)`) is not one, and
 * every evaluation of this file finds the takers the others made.
 */
function servedNow(nativeNext, Class) {
  const takerMethod = Class.prototype.taker;
  const takeCached = Class.takeCached;
  if (typeof takerMethod !== 'function' || typeof takeCached !== 'function') return nativeNext;
  if (!Object.prototype.hasOwnProperty.call(Class, TAKERS)) Object.defineProperty(Class, TAKERS, { value: new WeakMap() });
  const takers = Class[TAKERS];
  const next = {
    next() {
      let taker = takers.get(this);
      if (taker === undefined) {
        try {
          taker = takerMethod.call(this);
        } catch {
          return callRejecting(nativeNext, 'next', this, []);
        }
        takers.set(this, taker);
      }
      let now;
      try {
        now = takeCached(taker);
      } catch (error) {
        // A panic in the addon (INTERNAL): next() rejects, it never throws.
        return Promise.reject(error);
      }
      if (now === undefined) return callRejecting(nativeNext, 'next', this, []);
      // A value is a number, a BigInt or a string; an object is the call's error, made by
      // the addon in its own realm (so not `instanceof Error` of a Jest file or `vm`
      // context that evaluated this file).
      return typeof now === 'object' && now !== null ? Promise.reject(now) : Promise.resolve(now);
    },
  }.next;
  Object.defineProperty(next, 'length', { value: nativeNext.length });
  Object.defineProperty(next, ORIGINAL, { value: nativeNext });
  return next;
}

const byName = ([db, name, ...rest], at = 1) => {
  const options = rest[at - 1];
  return { counter: label(name), database: databaseOf(db), collection: countersOf(options, 'collection') };
};

const fns = {
  getNextSequenceValue: (a) => byName(a, 1),
  getNextSequenceBatch: (a) => byName(a, 2),
  getNextSequenceRange: (a) => byName(a, 2),
  syncToMax: ([db, , , name, options]) => ({ counter: label(name), database: databaseOf(db), collection: countersOf(options, 'collection') }),
  insertOne: ([db, collection, , options]) => ({
    counter: label(options?.name ?? options?.sequence ?? collection),
    database: databaseOf(db),
    collection: countersOf(options, 'counterCollection'),
    target: typeof collection === 'string' ? masked(collection) : undefined,
  }),
  listSequences: ([db, options]) => ({ database: databaseOf(db), collection: countersOf(options, 'collection') }),
  setCountersWhere: ([db, , , options]) => ({ database: databaseOf(db), collection: countersOf(options, 'collection') }),
  // Never the URI: it may hold credentials.
  connect: () => ({}),
  closeSharedClients: () => ({}),
};
fns.insertMany = fns.insertOne;

const out = {};
for (const key of Object.keys(native)) out[key] = native[key];
for (const [key, describe] of Object.entries(fns)) {
  if (typeof native[key] === 'function') out[key] = traced(native[key], key, describe);
}

/**
 * Wraps the asynchronous methods of a native class in place, rejecting where V8 would
 * throw (`rejecting`), a handle's `next()` served through `servedNow`, each traced. Idempotent: a method already wrapped (by an
 * earlier evaluation of this file) is wrapped again from its native function, never on
 * top of the earlier wrapper.
 */
function wrapMethods(Class, methods, describe) {
  if (typeof Class !== 'function') return;
  const proto = Class.prototype;
  for (const method of methods) {
    const own = Object.getOwnPropertyDescriptor(proto, method);
    if (!own || typeof own.value !== 'function') continue;
    const original = own.value[ORIGINAL] ?? own.value;
    const owner = Class === native.Sequence ? 'a sequence handle' : `a ${Class.name}`;
    const base = Class === native.Sequence && method === 'next' ? servedNow(original, Class) : rejecting(original, method, owner);
    Object.defineProperty(proto, method, { ...own, value: traced(base, method, describe) });
  }
}

// The database and collection a handle was made for (`sequence(db, name, options)`,
// `counterAt(db, locator, options)`), read once when it is made (an options object
// changed afterwards does not change them): one WeakMap entry per handle, nothing per
// call. The map is kept on the native class, shared by every evaluation of this file.
const origins = (() => {
  const Class = native.Sequence;
  if (typeof Class !== 'function') return new WeakMap();
  // An own property, not `instanceof WeakMap`: an evaluation in another realm (each Jest
  // test file, a `vm` context) has another `WeakMap`, and the map it finds was made by the
  // first realm. It works the same; defining it again would throw (non-configurable).
  if (!Object.prototype.hasOwnProperty.call(Class, ORIGINS)) Object.defineProperty(Class, ORIGINS, { value: new WeakMap() });
  return Class[ORIGINS];
})();
function originOf(args) {
  const origin = {};
  try {
    origin.database = databaseOf(args[0]);
    origin.collection = countersOf(args[2], 'collection');
  } catch {
    // options that cannot be read: the handle's calls are traced without them
  }
  return origin;
}
function remembered(fn) {
  if (channel === null || typeof fn !== 'function') return fn;
  const wrapper = {
    [fn.name]() {
      const handle = fn.apply(this, arguments);
      if (handle !== null && typeof handle === 'object') origins.set(handle, originOf(arguments));
      return handle;
    },
  }[fn.name];
  Object.defineProperty(wrapper, 'length', { value: fn.length });
  return wrapper;
}
out.sequence = remembered(native.sequence);
out.counterAt = remembered(native.counterAt);

// A handle's context: its counter name (`name` is a native getter; read only while
// traced), and the database and collection it was made for.
wrapMethods(native.Sequence, ['next', 'nextBatch', 'nextRange', 'current', 'init', 'set', 'raiseTo', 'syncToMax', 'reset', 'drop', 'release'], (_, handle) => {
  const names = {};
  try {
    names.counter = masked(handle.name);
  } catch {
    // a handle whose name cannot be read is still traced
  }
  const origin = origins.get(handle);
  if (origin !== undefined) {
    names.database = origin.database;
    names.collection = origin.collection;
  }
  return names;
});
wrapMethods(native.SequenceClient, ['close'], () => ({}));

// Named one by one, so that `import { … } from 'mongodb-sequence'` finds them (Node reads
// CommonJS exports statically for ESM).
module.exports.Sequence = out.Sequence;
module.exports.SequenceClient = out.SequenceClient;
module.exports.SequenceDb = out.SequenceDb;
module.exports.closeSharedClients = out.closeSharedClients;
module.exports.connect = out.connect;
module.exports.counterAt = out.counterAt;
module.exports.counterStateCount = out.counterStateCount;
module.exports.defaultDatabase = out.defaultDatabase;
module.exports.ErrorCode = out.ErrorCode;
module.exports.formatSequence = out.formatSequence;
module.exports.getNextSequenceBatch = out.getNextSequenceBatch;
module.exports.getNextSequenceRange = out.getNextSequenceRange;
module.exports.getNextSequenceValue = out.getNextSequenceValue;
module.exports.insertMany = out.insertMany;
module.exports.insertOne = out.insertOne;
module.exports.listSequences = out.listSequences;
module.exports.redactConnectionStrings = out.redactConnectionStrings;
module.exports.sequence = out.sequence;
module.exports.setCountersWhere = out.setCountersWhere;
module.exports.sharedClientCount = out.sharedClientCount;
module.exports.stats = out.stats;
module.exports.syncToMax = out.syncToMax;
module.exports.__napiBindingTarget = out.__napiBindingTarget;
// Anything else the binding exports, as it is.
for (const key of Object.keys(out)) if (!(key in module.exports)) module.exports[key] = out[key];
