// The benchmarks' turn order (benches/turns.mjs): a side's place in a round moves its
// latency, so every side must run equally often in every place, and the paired ratio must
// be a true median.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { roundOrder, median } from '../../benches/turns.mjs';

test('over 2 × sides rounds, every side runs twice in every position', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 3 }), (n, blocks) => {
      const names = Array.from({ length: n }, (_, i) => `s${i}`);
      const seen = new Map();
      for (let round = 0; round < 2 * n * blocks; round++) {
        const order = roundOrder(names, round);
        assert.deepEqual([...order].sort(), [...names].sort(), 'each side once per round');
        order.forEach((name, position) => seen.set(`${name}@${position}`, (seen.get(`${name}@${position}`) ?? 0) + 1));
      }
      assert.equal(seen.size, n * n);
      for (const count of seen.values()) assert.equal(count, 2 * blocks);
    }),
  );
});

test('median of an even number of values is the mean of the middle two', () => {
  assert.equal(median([1, 4, 2, 3]), 2.5);
  assert.equal(median([3, 1, 2]), 2);
  assert.ok(Number.isNaN(median([])));
  fc.assert(
    fc.property(fc.array(fc.double({ min: 0, max: 10, noNaN: true }), { minLength: 1, maxLength: 40 }), (values) => {
      const m = median(values);
      const below = values.filter((v) => v < m).length;
      const above = values.filter((v) => v > m).length;
      assert.ok(below <= values.length / 2 && above <= values.length / 2, `${m} splits ${values}`);
    }),
  );
});
