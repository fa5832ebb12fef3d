// Typings of `mongodb-sequence/mongoose/plugin-autoinc`, the drop-in for
// mongoose-plugin-autoinc 1: the same names and option types as that package's.
// `module.exports` is the plugin itself, with the names on it, so this file says
// `export =`: `require(...)`, `import x = require(...)` and, in an ES module, a default
// import (Node gives it `module.exports`) are the plugin; `{ autoIncrement, plugin }` are
// named imports too.

import type { CachedNumberingOptions } from '../../mongoose.js';

/** The plugin. Throws `INVALID_ARGUMENT` for bad options. */
declare function autoIncrement(schema: any, options?: autoIncrement.AutoIncOptions): void;

declare namespace autoIncrement {
  /** The settings of mongoose-plugin-autoinc, and `cache` (not one of its options). */
  export type AutoIncSettings = {
    /** Number every saved document without a number too (for a migration process). Default `false`. */
    migrate?: boolean;
    /** The counter's model name (required). */
    model: string;
    /** The numbered field. Default `'_id'`. */
    field?: string;
    /** A counter per value of this field (not with `_id`). Default `''`: one counter. */
    groupingField?: string;
    /** The first number of a new counter. Default `0`. */
    startAt?: number;
    /** Distance between numbers (not 0). Default `1`. */
    incrementBy?: number;
    /** A unique index on the field (with the grouping field). Default `true`. */
    unique?: boolean;
    /** What a document receives for each number, in every write that numbers it. */
    outputFilter?: (count: number) => number;
  } & CachedNumberingOptions;

  export type AutoIncOptions = AutoIncSettings | string;

  /** `nextCount` and `resetCount`, both as methods of documents and as statics of models. */
  export interface AutoIncFunctions {
    /**
     * The next number of the counter of `group` (default `''`); `startAt` before the first.
     * Not passed through `outputFilter`, as mongoose-plugin-autoinc's. With `cache`, this process's unused reserved numbers of that counter are given back
     * first (or dropped as a gap when another process moved the counter since), so it is
     * the number this process's next new document of the group gets.
     */
    nextCount(group?: string): Promise<number>;
    /** Sets the counter of `group` back so its next number is `startAt`; resolves with `startAt`. */
    resetCount(group?: string): Promise<number>;
  }

  /** Alias of `autoIncrement`. */
  export function plugin(schema: any, options: AutoIncOptions): void;
  /** Does nothing (deprecated by mongoose-plugin-autoinc). */
  export function initialize(): void;

  /** The plugin itself (`module.exports.autoIncrement`). */
  export { autoIncrement };
  /** The plugin itself (`module.exports.default`, for transpiled default imports). */
  export { autoIncrement as default };
}

export = autoIncrement;
