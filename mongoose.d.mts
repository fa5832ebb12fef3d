// ESM typings of `mongodb-sequence/mongoose` (mongoose.mjs): the factory is the default
// export, with named exports beside it. The types are those of the CommonJS typings.
import AutoIncrementFactory from './mongoose.js';

export type AutoIncrementOptions = AutoIncrementFactory.AutoIncrementOptions;
export type CachedNumberingOptions = AutoIncrementFactory.CachedNumberingOptions;
export type SchemaLike = AutoIncrementFactory.SchemaLike;
export type AutoIncrementPlugin = AutoIncrementFactory.AutoIncrementPlugin;
export type CounterResetResult = AutoIncrementFactory.CounterResetResult;
export type SequenceDocument = AutoIncrementFactory.SequenceDocument;
export type SequenceModel = AutoIncrementFactory.SequenceModel;
export type RaisedCounter = AutoIncrementFactory.RaisedCounter;
export type TakeOverOptions = AutoIncrementFactory.TakeOverOptions;

/** Moves a model's counter(s) past every number among its documents (down, for a descending counter). */
export declare const syncCounterToMax: typeof AutoIncrementFactory.syncCounterToMax;
/** Continues numbering after another plugin's counter. */
export declare const takeOverCounter: typeof AutoIncrementFactory.takeOverCounter;

export { AutoIncrementFactory };
export default AutoIncrementFactory;
