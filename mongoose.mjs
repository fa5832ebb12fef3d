// ESM entry of `mongodb-sequence/mongoose` (the plugin itself is mongoose.js).
import AutoIncrementFactory from './mongoose.js';

export default AutoIncrementFactory;
export { AutoIncrementFactory };
export const { syncCounterToMax, takeOverCounter } = AutoIncrementFactory;
