// Sides taking turns: the test servers slow down as a run goes on, so a benchmark that
// runs one side after the other favours whoever goes first. Each round runs every side
// once; over 2 × (number of sides) rounds every side runs twice in every position (see
// `roundOrder`), since a side's place in the round moves its p50 by
// more than the differences measured here (on a loaded machine, the last side of a round
// came out 30–40 % slower than when the same code ran first). Each side keeps its best
// round (lowest p50), and ratios are also taken round by round (paired).
import { performance } from 'node:perf_hooks';

/** The value at quantile `q` (0..1) of `sorted` (ascending). */
export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/**
 * The median of `values`: the middle one, or the mean of the two middle ones when their
 * number is even (`quantile(…, 0.5)` takes the upper of the two, which leans towards one
 * kind of round when the rounds alternate).
 */
export function median(values) {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  if (n === 0) return NaN;
  return n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/**
 * The order of `names` in round `round`: rotated by the round's number, and reversed in
 * every other block of `names.length` rounds. Over `2 * names.length` rounds each side runs
 * in every position twice, and as often right after a given neighbour as right before it.
 */
export function roundOrder(names, round) {
  const n = names.length;
  const shift = round % n;
  const rotated = [...names.slice(shift), ...names.slice(0, shift)];
  return Math.floor(round / n) % 2 === 0 ? rotated : rotated.reverse();
}

/**
 * Latencies (ms) of `calls` awaited calls of `call`, one after another, and the round's
 * throughput (calls per second): `{ p10, p50, p90, perSecond }`.
 */
export async function sequentialRound(call, calls) {
  const times = new Float64Array(calls);
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await call();
    times[i] = performance.now() - start;
  }
  const total = performance.now() - t0;
  times.sort();
  return { p10: quantile(times, 0.1), p50: quantile(times, 0.5), p90: quantile(times, 0.9), perSecond: (calls / total) * 1000 };
}

/**
 * Runs `sides` (`{ name: () => Promise }`) for `rounds` rounds (in the orders of
 * `roundOrder`; a multiple of twice the number of sides balances the positions) of `calls`
 * sequential calls each, after `warmup` untimed calls per side. Resolves with each
 * side's best round, `{ name: { p10, p50, p90, perSecond, ratio } }`, where `ratio` maps
 * each other side to the median over rounds of (its p50 / this side's p50 in the same
 * round): a paired comparison that a server slowing down during the run does not skew,
 * where best rounds would favour whoever went first in the first round.
 */
export async function takeTurns(sides, { calls = 200, rounds = 6, warmup = 20, progress = () => {} } = {}) {
  const names = Object.keys(sides);
  for (const name of names) for (let i = 0; i < warmup; i++) await sides[name]();
  const best = {};
  const all = [];
  for (let round = 0; round < rounds; round++) {
    const order = roundOrder(names, round);
    const got = {};
    for (const name of order) {
      got[name] = await sequentialRound(sides[name], calls);
      if (!best[name] || got[name].p50 < best[name].p50) best[name] = { ...got[name] };
    }
    all.push(got);
    progress(`round ${round + 1}/${rounds}: ${names.map((n) => `${n} ${got[n].p50.toFixed(3)}`).join(', ')}`);
  }
  for (const name of names) {
    best[name].ratio = {};
    for (const other of names) {
      best[name].ratio[other] = median(all.map((got) => got[other].p50 / got[name].p50));
    }
  }
  return best;
}

/** A markdown table of `best` (from `takeTurns`), ratios against the side `baseline`. */
export function latencyTable(best, baseline) {
  const lines = [
    `| case | p10 ms | p50 ms | p90 ms | calls/s | p50 / ${baseline}, median of rounds | p50 / ${baseline}, best rounds | throughput / ${baseline}, best rounds |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const base = best[baseline];
  for (const [name, r] of Object.entries(best)) {
    lines.push(
      `| ${name} | ${r.p10.toFixed(3)} | ${r.p50.toFixed(3)} | ${r.p90.toFixed(3)} | ${r.perSecond.toFixed(0)} | ` +
        `${base ? base.ratio[name].toFixed(3) : '-'} | ${base ? (r.p50 / base.p50).toFixed(3) : '-'} | ` +
        `${base ? (r.perSecond / base.perSecond).toFixed(3) : '-'} |`,
    );
  }
  return lines.join('\n');
}
