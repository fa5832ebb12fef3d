// CommonJS typings of `mongodb-sequence/mongoose`, the mongoose plugin (a drop-in for
// mongoose-sequence 6): `module.exports` is the factory, so this file says `export =`
// (`import F = require('mongodb-sequence/mongoose')` and `const F = require(...)` both give
// the factory). The ESM entry has its own typings, mongoose.d.mts.

/**
 * The factory: `require('mongodb-sequence/mongoose')(mongoose)` (or a connection) returns
 * the plugin. Throws unless called with exactly one argument.
 *
 * Every error the plugin raises has a `code` from the package's `ErrorCode` table. A
 * document saved (or inserted) before the connection opens is numbered once it opens,
 * as mongoose buffers it: the plugin waits up to `bufferTimeoutMS` (not at all with
 * `bufferCommands: false`), then rejects with `CONNECTION`.
 *
 * Upserts (`updateOne`, `updateMany`, `findOneAndUpdate`, `replaceOne`,
 * `findOneAndReplace`, and bulkWrite's) are numbered when they insert. Refused with
 * `INVALID_ARGUMENT` before a number is taken (and, in `bulkWrite`, before any operation
 * is sent, ordered or not): an aggregation-pipeline upsert (it cannot tell an insert
 * from a match: use an update document with `$setOnInsert`); a replace upsert whose
 * number is not given by the replacement or by the filter's equality (it would renumber
 * a document it matches); an upsert writing a reference field with an operator other
 * than `$set` / `$setOnInsert` (`$inc`, `$max`, `$rename`…); and, through a
 * discriminator's base model, a document of a discriminator whose own schema has
 * counters (write it through that discriminator).
 */
declare function AutoIncrementFactory(mongooseOrConnection: unknown): AutoIncrementFactory.AutoIncrementPlugin;

declare namespace AutoIncrementFactory {
  /** Options of the plugin: those of mongoose-sequence 6, with the same defaults, and `cache`. */
  export interface AutoIncrementOptions extends CachedNumberingOptions {
    /** Field that receives the number. Default `'_id'`. */
    inc_field?: string;
    /** Counter id (the `id` of its counter documents). Default: `inc_field`; required with `reference_fields`. */
    id?: string;
    /**
     * Fields (dot paths allowed) whose values scope the counter: one counter per combination
     * of their values, cast with the schema on every path and compared as exact BSON values.
     */
    reference_fields?: string | string[];
    /** First value of a new counter. Default `1`. */
    start_seq?: number;
    /** Distance between values. Default `1`. */
    inc_amount?: number;
    /** Collection of the counter documents. Default `'counters'`. */
    collection_name?: string;
    /** Number only through `setNext`, never in hooks. Default `false`. */
    disable_hooks?: boolean;
    /**
     * `true` (default): on mongoose 8 the numbering `pre('save')` hook runs in parallel with
     * the hooks after it (as mongoose-sequence's), which then do not see the number yet;
     * mongoose 9 runs every pre hook in series. `false`: in series on both.
     */
    parallel_hooks?: boolean;
    /**
     * `true` (default): a second plugin with the same `id` throws `Counter already defined
     * for field "<id>"` (then the remedy), the same options too. `false`: it shares the
     * counter documents. `'reuse'`: the same options registered again (hot reload) reuse the
     * counter; different options still throw, naming them.
     */
    exclusive?: boolean | 'reuse';
    /**
     * Number and insert new documents in one transaction (`Model.create()` and
     * `Model.insertMany()`), so a failed insert gives its numbers back. Needs a replica set.
     * `doc.save()` of a new document, bulkWrite inserts and upserts then reject with code
     * `GAPLESS_UNSUPPORTED_OPERATION`. Default `false`.
     */
    gapless?: boolean;
    /**
     * A connection string for the counters, for a mongoose connection with a setting the
     * core cannot carry over (its saves then reject with `UNSUPPORTED_CLIENT`, naming the
     * setting). The counters stay in the connection's database. Default: the counters use
     * the mongoose connection's own settings.
     */
    uri?: string;
  }

  /**
   * The `cache` option, shared by the plugin and the three drop-ins
   * (`mongodb-sequence/mongoose/typegoose`, `/auto-increment`, `/plugin-autoinc`), whose
   * options extend this interface: one description for all four
   * (docs/mongoose-cache.md).
   */
  export interface CachedNumberingOptions {
    /**
     * The core's `cache` option (`SequenceOptions.cache` of `mongodb-sequence`) for the
     * counter the plugin numbers new documents from, so that most saves make no counter
     * round trip. As the core says: Reserve blocks of this many values per process and serve calls from them, fetching
     * the next block before the current one runs out (like PostgreSQL's `CACHE n`).
     * Values stay unique across processes; within one they follow the counter's
     * direction (ascending, descending for a negative step), but not across processes.
     * The unused tail of the cached blocks is given back by `release()` or a graceful
     * close when the counter was not moved since this process's last fetch (never for a
     * cycling counter); otherwise, and when the process exits without a close, those
     * values are lost (gaps). Batch calls larger than a block bypass the cache. From 1
     * to 1,000,000. See docs/caching-and-gaps.md.
     * In the plugins a graceful close is `mongoose.disconnect()` (the package's client
     * closes with the mongoose connection's; not one made for the `uri` option) or
     * `closeSharedClients()`, and a batch write (`insertMany`, `create([...])`, bulkWrite
     * inserts) of more than `n` documents is such a batch call. Default (absent or
     * `null`): no cache. Not with the mongoose plugin's `gapless`; not an option of the
     * plugins the drop-ins stand in for.
     */
    cache?: number | null;
  }

  /** Anything with mongoose's `Schema#plugin` shape. */
  export interface SchemaLike {
    plugin(fn: (schema: any, options?: any) => void, options?: any): unknown;
    [key: string]: any;
  }

  /** The plugin: `schema.plugin(AutoIncrement, options)`. */
  export type AutoIncrementPlugin = (schema: SchemaLike | any, options?: AutoIncrementOptions) => void;

  /** What `counterReset` resolves with. */
  export interface CounterResetResult {
    acknowledged: boolean;
    /** Counter documents matched (and set). */
    matchedCount: number;
    modifiedCount: number;
  }

  /** Methods the plugin adds to documents. */
  export interface SequenceDocument {
    /**
     * Takes the next value of counter `id` for this document, sets it and saves; resolves
     * with the saved document. Rejects with `INVALID_ARGUMENT`, taking no number, when the
     * document is saved and its inc_field cannot change (`_id`, or declared `immutable`).
     */
    setNext(id: string): Promise<this>;
    setNext(id: string, callback: (error: Error | null, document?: this) => void): void;
  }

  /** Statics the plugin adds to models. */
  export interface SequenceModel {
    /**
     * Resets counter `id` (of every reference value, or of the one `referenceValues`
     * gives, cast with this model's schema) so that its next value is
     * `start_seq - 1 + inc_amount` (`inc_amount` when `start_seq` is 0, as mongoose-sequence).
     * The counter is in the database of the connection the factory was given: a schema used
     * on two connections (a database per tenant) shares it, and a reset through either
     * model resets both. Make a factory and a schema per connection for a counter each.
     */
    counterReset(id: string, referenceValues?: Record<string, unknown>): Promise<CounterResetResult>;
    counterReset(id: string, callback: (error: Error | null, result?: CounterResetResult) => void): void;
    counterReset(id: string, referenceValues: Record<string, unknown>, callback: (error: Error | null, result?: CounterResetResult) => void): void;
  }

  /** A counter raised by `syncCounterToMax`. */
  export interface RaisedCounter {
    /** `null`, or the reference fields' values of a counter with reference_fields. */
    reference_value: Record<string, unknown> | null;
    /** The counter's value afterwards. */
    value: number | bigint;
  }

  /**
   * Moves the counter(s) of `Model` (the one of `id`, or its only one) past every inc_field
   * among its documents (per combination with reference_fields): up to the largest, or for
   * a descending counter (negative inc_amount) down to the smallest. Never moves a counter
   * back over numbers it handed out.
   */
  export function syncCounterToMax(Model: unknown, id?: string): Promise<RaisedCounter[]>;

  /** Options of `takeOverCounter`. */
  export interface TakeOverOptions {
    /** Which of the model's counters (needed when it has several). */
    id?: string;
    /** Collection of the other plugin's counters. Default `'identitycounters'`. */
    collection?: string;
    /** Model name the other plugin used. Default the model's. */
    modelName?: string;
    /** Field the other plugin numbered. Default the counter's inc_field. */
    field?: string;
  }

  /**
   * Continues numbering after the counter @typegoose/auto-increment (`'typegoose'`) or
   * mongoose-auto-increment kept for the model; resolves with the counter's value afterwards.
   * Rejects a descending counter with code `INVALID_ARGUMENT`.
   */
  export function takeOverCounter(Model: unknown, from: 'typegoose' | 'mongoose-auto-increment', options?: TakeOverOptions): Promise<number | bigint>;

  /** The factory itself (`module.exports.AutoIncrementFactory`). */
  export { AutoIncrementFactory };
  /** The factory itself (`module.exports.default`, for transpiled default imports). */
  export { AutoIncrementFactory as default };
}

export = AutoIncrementFactory;
