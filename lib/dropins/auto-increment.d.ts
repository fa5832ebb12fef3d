// Typings of `mongodb-sequence/mongoose/auto-increment`, the drop-in for
// mongoose-auto-increment 5.

import type { CachedNumberingOptions } from '../../mongoose.js';

/** Options of `plugin`, with mongoose-auto-increment's defaults, and `cache` (not one of its options). */
export interface AutoIncrementOptions extends CachedNumberingOptions {
  /** The counter's model name (required). */
  model: string;
  /** The numbered field, added to the schema as a Number. Default `'_id'`. */
  field?: string;
  /** The first number of a new counter. Default `0`. */
  startAt?: number;
  /** Distance between numbers (not 0). Default `1`. */
  incrementBy?: number;
  /** A unique index on `field` (not `_id`). Default `true`. */
  unique?: boolean;
}

/** `nextCount` and `resetCount`, both as methods of documents and as statics of models. */
export interface AutoIncrementFunctions {
  /**
   * The number the next new document will get (`startAt` before the first), when nothing
   * else numbers one meanwhile. With `cache`, this process's unused reserved numbers are
   * given back first (or dropped as a gap when another process moved the counter since).
   */
  nextCount(): Promise<number>;
  nextCount(callback: (error: Error | null, count?: number) => void): void;
  /** Sets the counter back so the next new document gets `startAt`; resolves with `startAt`. */
  resetCount(): Promise<number>;
  resetCount(callback: (error: Error | null, startAt?: number) => void): void;
}

/** The connection holding the counters (every later `plugin`'s). */
export declare function initialize(connection: any): void;

/** The plugin: a model name, or options. Throws `INVALID_ARGUMENT` before `initialize` or for bad options. */
export declare function plugin(schema: any, options: string | AutoIncrementOptions): void;

/** What `removeDuplicateCounters` did to one counter stored more than once. */
export interface RemovedDuplicate {
  model: string;
  field: string;
  /** The count kept (the largest). */
  kept: number;
  /** The counts of the documents deleted. */
  removed: number[];
}

/**
 * Keeps, of each counter stored more than once in `identitycounters` (default: on the
 * connection given to `initialize`), the document with the largest `count` and deletes
 * the others, so the unique index `{ field: 1, model: 1 }` can be made.
 */
export declare function removeDuplicateCounters(connection?: any): Promise<RemovedDuplicate[]>;
