'use strict';
// A map that keeps at most a fixed number of entries, dropping the least recently used
// one first: for handles the plugin can make again at any time.

/** A least-recently-used map of at most `capacity` entries. */
class BoundedCache {
  /** An empty cache that keeps at most `capacity` (a positive integer) entries. */
  constructor(capacity) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer; got ${String(capacity)}`);
    this.capacity = capacity;
    this.entries = new Map();
  }

  /** The value of `key` (now the most recently used), or `undefined`. */
  get(key) {
    if (!this.entries.has(key)) return undefined;
    const value = this.entries.get(key);
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** Stores `value` under `key` as the most recently used; drops the least recently used beyond the capacity. */
  set(key, value) {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value);
    return this;
  }

  /** Drops `key`; returns whether it was kept. */
  delete(key) {
    return this.entries.delete(key);
  }

  /** How many entries are kept. */
  get size() {
    return this.entries.size;
  }

  /** The keys, least recently used first. */
  keys() {
    return [...this.entries.keys()];
  }
}

module.exports = { BoundedCache };
