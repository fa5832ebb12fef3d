// The relay of latency-breakdown.mjs seen from a benchmark: starts it in front of a server
// and turns its timestamps into the median of each hop of a call.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { quantile } from './turns.mjs';

/**
 * Starts the relay (`latency-breakdown.mjs --relay`) in front of `address`; resolves
 * with `{ port, take(), stop() }`, `take()` giving the `[request seen, reply seen]`
 * hrtime stamps of the findAndModify commands since the last take.
 */
export async function startRelay(address) {
  const script = fileURLToPath(new URL('./latency-breakdown.mjs', import.meta.url));
  const child = fork(script, ['--relay', address], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  return {
    port,
    take: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m.stamps.map(([a, b]) => [BigInt(a), BigInt(b)])));
        child.send('take');
      }),
    stop: () => child.kill(),
  };
}

/**
 * The median of each hop of `calls` (`[sent, settled]` hrtime stamps, in call order) and
 * the relay's `stamps` for them (`[request seen, reply seen]`), in ms: `total`, `out`
 * (call to request), `server` (request to reply), `in` (reply to settled).
 */
export function hopMedians(calls, stamps) {
  if (stamps.length !== calls.length) throw new Error(`relay saw ${stamps.length} findAndModify for ${calls.length} calls`);
  const ms = (a, b) => Number(b - a) / 1e6;
  const parts = { total: [], out: [], server: [], in: [] };
  calls.forEach(([t0, t3], i) => {
    const [t1, t2] = stamps[i];
    parts.total.push(ms(t0, t3));
    parts.out.push(ms(t0, t1));
    parts.server.push(ms(t1, t2));
    parts.in.push(ms(t2, t3));
  });
  return Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, quantile(Float64Array.from(v).sort(), 0.5)]));
}
