'use strict';
// How the mongoose side reads what decides a counter write (a counter's seed, an old
// counter's conversion, the numbers in use, another plugin's counter): on the primary,
// where the counter is written, and its latest (`local`), whatever the connection or its
// `Db` reads from and how. A secondary, or a `majority` read, may be behind a number
// written a moment ago with `w: 1`, and the counter would be placed short of it.

/** Options of a Node driver read that decides a counter write. */
const LATEST = Object.freeze({ readPreference: 'primary', readConcern: Object.freeze({ level: 'local' }) });

module.exports = { LATEST };
