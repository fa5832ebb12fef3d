// Sides taking turns: the test servers slow down as a run goes on, so a benchmark that
// runs one side after the other favours whoever goes first. Each round runs every side
// once, in an order that alternates (A B C, C B A, A B C, ...), and each side keeps its
// best round (lowest p50).
import { performance } from 'node:perf_hooks';

/** The value at quantile `q` (0..1) of `sorted` (ascending). */
export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
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
 * Runs `sides` (`{ name: () => Promise }`) for `rounds` alternating rounds of `calls`
 * sequential calls each, after `warmup` untimed calls per side. Resolves with each
 * side's best round: `{ name: { p10, p50, p90, perSecond } }`.
 */
export async function takeTurns(sides, { calls = 200, rounds = 6, warmup = 20, progress = () => {} } = {}) {
  const names = Object.keys(sides);
  for (const name of names) for (let i = 0; i < warmup; i++) await sides[name]();
  const best = {};
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const got = await sequentialRound(sides[name], calls);
      if (!best[name] || got.p50 < best[name].p50) best[name] = got;
    }
    progress(`round ${round + 1}/${rounds}: ${names.map((n) => `${n} ${best[n].p50.toFixed(3)}`).join(', ')}`);
  }
  return best;
}

/** A markdown table of `best` (from `takeTurns`), ratios against the side `baseline`. */
export function latencyTable(best, baseline) {
  const lines = [
    `| case | p10 ms | p50 ms | p90 ms | calls/s | p50 / ${baseline} | throughput / ${baseline} |`,
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  const base = best[baseline];
  for (const [name, r] of Object.entries(best)) {
    lines.push(
      `| ${name} | ${r.p10.toFixed(3)} | ${r.p50.toFixed(3)} | ${r.p90.toFixed(3)} | ${r.perSecond.toFixed(0)} | ` +
        `${base ? (r.p50 / base.p50).toFixed(3) : '-'} | ${base ? (r.perSecond / base.perSecond).toFixed(3) : '-'} |`,
    );
  }
  return lines.join('\n');
}
