// Typings of `mongodb-sequence/mongoose/typegoose`, the drop-in for
// @typegoose/auto-increment 5: the same names and option types as that package's.

import type { CachedNumberingOptions } from '../../mongoose.js';

/** Options of `AutoIncrementSimple`: one field, or several as an array. */
export interface AutoIncrementOptionsSimple {
  /** Which field to increment on save. */
  field: string;
  /** How much to add on each save. Default `1`. */
  incrementBy?: number | bigint;
}

export type AutoIncrementSimplePluginOptions = AutoIncrementOptionsSimple | AutoIncrementOptionsSimple[];

/** Options of `AutoIncrementID`, with typegoose's defaults, and `cache` (not one of its options). */
export interface AutoIncrementIDOptions extends CachedNumberingOptions {
  /** Distance between numbers (not 0). Default `1`. */
  incrementBy?: number | bigint;
  /** The numbered field, a Number or BigInt path of the schema. Default `'_id'`. */
  field?: string;
  /** Collection of the counter documents `{ modelName, field, count }`. Default `'identitycounters'`. */
  trackerCollection?: string;
  /** Accepted for compatibility; the drop-in registers no tracker model. Default `'identitycounter'`. */
  trackerModelName?: string;
  /** The first number of a new counter (ignored when the counter exists). Default `0`. */
  startAt?: number | bigint;
  /**
   * The `modelName` of the counter document: a string (one counter shared by the models
   * that name it), or a function of the model's name and the model. Default the model's name.
   */
  overwriteModelName?: string | OverwriteModelNameFunction;
}

/** Names the counter of a model (a non-empty string, else the save rejects with `INVALID_ARGUMENT`). */
export type OverwriteModelNameFunction = (modelName: string, model: any) => string;

/** A counter document, as typegoose and the drop-in store it. */
export interface AutoIncrementIDTrackerSpec {
  modelName: string;
  field: string;
  /** The last number handed out. */
  count: bigint;
}

/**
 * Set to `true` on a document, or on a connection for every document written through it,
 * and the document takes no number.
 */
export declare const AutoIncrementIDSkipSymbol: unique symbol;

/**
 * Numbers `field` of new documents from the counter `{ modelName, field, count }`:
 * `save`, `Model.create` (single and array), `insertMany`, `bulkWrite` inserts and
 * upserts. Throws `INVALID_ARGUMENT` (a `TypeError` with `code`) for bad options or a
 * field that is not a Number or BigInt path; writes reject with coded errors.
 */
export declare function AutoIncrementID(schema: any, options?: AutoIncrementIDOptions): void;

/** Adds `incrementBy` to each field on every save of a document that is not new. */
export declare function AutoIncrementSimple(schema: any, options: AutoIncrementSimplePluginOptions): void;

/** Whether `value` is `null` or `undefined`. */
export declare function isNullOrUndefined(value: unknown): value is null | undefined;
