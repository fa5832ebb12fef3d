// Give-backs interleaved with management writes across processes: 2–3 worker processes
// draw from one counter (found by a locator) with and without a cache, release their
// cached values, close gracefully or with the give-back stalled behind a proxy (delivered
// late, at a random later step, or never), while this process, as the operator, resets,
// sets, renumbers (`setCountersWhere`), drops and raises (`raiseTo`, `syncToMax`) the
// counter. The test decides every step from a seeded random source; the oracle cuts the
// history into epochs at each operator write that moves the counter anywhere: within an
// epoch no value is handed out twice, every value lies past the epoch's start, and the
// counter document, read after every step, is never behind the start, a raise, or a
// value handed out in the epoch. Each process's cached values are released or closed
// before such a write (a process that keeps handing out a block across a backward move
// repeats values by design: docs/caching-and-gaps.md). The held requests of a stalled
// close are read for its give-back, so the test can bring the counter exactly back to the
// tail's end after a move and deliver it then: the case only the fetch's token decides.
// A failure names its seed and step
// and lists the history; replay with GIVE_BACK_SEEDS=1,2,3 (a few seeds check the property
// only, not the figures that show it was exercised), GIVE_BACK_STEPS=n cuts each history
// after n steps, GIVE_BACK_LOG=1 prints the steps as they go.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { BSON } from 'mongodb';
import { setup, seq } from '../helpers.mjs';
import { holdingProxy } from '../fixtures/holding-proxy.mjs';
import { lineWorker } from '../fixtures/line-worker.mjs';

const SEEDS = (process.env.GIVE_BACK_SEEDS ?? '101,202,303,404,505,606,707,808,909,1010,1111,1212,1313,1414,1515,1616').split(',').map(Number);
const STEPS = Number(process.env.GIVE_BACK_STEPS ?? 40);
const WORKER = fileURLToPath(new URL('../fixtures/interleaving-worker.cjs', import.meta.url));
const COLLECTION = 'interleaved';
const FIELD = 'sequence_value';
/** The filter key of a give-back's guard on its fetch's token. */
const TOKEN = `_mseq_marks.${FIELD}.cached`;
/** The time limit of a close whose give-back stalls. */
const STALLED_CLOSE_MS = 500;

let env;
const workers = [];
before(async () => {
  env = await setup('interleavings');
  for (let i = 0; i < 3; i += 1) workers.push(lineWorker(WORKER));
});
after(async () => {
  await Promise.all(workers.map((w) => w.ask({ cmd: 'exit' }).then(() => w.exited)));
  await seq.closeSharedClients();
  await env?.close();
});

/** A seeded random source (mulberry32). */
function randomSource(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    below: (n) => Math.floor(next() * n),
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    /** A key of `weights` ({ key: weight }), drawn by weight. */
    weighted(weights) {
      const entries = Object.entries(weights).filter(([, w]) => w > 0);
      let x = next() * entries.reduce((a, [, w]) => a + w, 0);
      for (const [key, w] of entries) if ((x -= w) < 0) return key;
      return entries.at(-1)[0];
    },
  };
}

/** The OP_MSG commands in `bytes` (whole messages only), each as `{ body, sequences }`. */
function commandsIn(bytes) {
  const found = [];
  for (let at = 0; at + 16 <= bytes.length;) {
    const length = bytes.readInt32LE(at);
    if (length < 16 || at + length > bytes.length) break;
    if (bytes.readInt32LE(at + 12) === 2013) {
      const message = bytes.subarray(at, at + length);
      const end = length - (message.readUInt32LE(16) & 1 ? 4 : 0);
      let body = null;
      const sequences = {};
      for (let p = 20; p < end;) {
        if (message[p] === 0) {
          const size = message.readInt32LE(p + 1);
          body = BSON.deserialize(message.subarray(p + 1, p + 1 + size));
          p += 1 + size;
        } else {
          const size = message.readInt32LE(p + 1);
          const nul = message.indexOf(0, p + 5);
          const id = message.toString('utf8', p + 5, nul);
          const docs = (sequences[id] = []);
          for (let d = nul + 1; d < p + 1 + size; d += message.readInt32LE(d)) docs.push(BSON.deserialize(message.subarray(d, d + message.readInt32LE(d))));
          p += 1 + size;
        }
      }
      if (body) found.push({ body, sequences });
    }
    at += length;
  }
  return found;
}

/**
 * A holding proxy to `address` (see the fixture) that reads the give-backs in what it
 * holds: `deliver()` sends the held requests on late, each on its own server connection,
 * and waits for the answers to those carrying a give-back.
 */
async function stallingProxy(address) {
  const proxy = await holdingProxy(address);
  /**
   * The give-backs among `bytes`: writes that put the counter back from `last` to `before`,
   * guarded on the token of a cache's fetch.
   */
  const giveBacksIn = (bytes) =>
    commandsIn(bytes).flatMap(({ body, sequences }) => {
      const writes = body.findAndModify === COLLECTION ? [{ q: body.query, u: body.update }] : body.update === COLLECTION ? (body.updates ?? sequences.updates ?? []) : [];
      return writes
        .filter((w) => w.q?.[TOKEN] !== undefined && w.u?.$set?.[FIELD] !== undefined)
        .map((w) => ({ last: Number(w.q[FIELD]?.$eq ?? w.q[FIELD]), before: Number(w.u.$set[FIELD]) }));
    });
  return {
    uri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true&serverSelectionTimeoutMS=3000`,
    stall: proxy.stall,
    /** The give-backs held. */
    giveBacks: () => [...proxy.heldBy().values()].flatMap(giveBacksIn),
    /**
     * Sends the held requests on; waits (up to 2 s) for the server to answer those that
     * carry a give-back. Returns how many give-backs reached an open server connection.
     */
    async deliver() {
      const answered = [];
      let sent = 0;
      for (const [upstream, bytes] of proxy.heldBy()) {
        if (upstream.destroyed) continue;
        const giveBacks = giveBacksIn(bytes).length;
        if (giveBacks) {
          sent += giveBacks;
          answered.push(new Promise((resolve) => (upstream.once('data', resolve), upstream.once('close', resolve), setTimeout(resolve, 2000))));
        }
        upstream.write(bytes);
      }
      proxy.forget();
      await Promise.all(answered);
      return sent;
    },
    close: proxy.close,
  };
}

/** Figures over all histories, to show the property was not checked in vain. */
const totals = {
  histories: 0,
  values: 0,
  epochs: 0,
  epochsWithValues: 0,
  stalledCloses: 0,
  stalledGiveBacks: 0,
  deliveredLate: 0,
  historiesDeliveredLate: 0,
  appliedLate: 0,
  decidedByToken: 0,
  historiesDecidedByToken: 0,
};

async function runHistory(seed) {
  const r = randomSource(seed);
  const name = `h${seed}`;
  const locator = { hist: name };
  const on = { collection: COLLECTION };
  const op = seq.counterAt(env.db, locator, { ...on, upsert: true });
  const docs = env.db.collection(COLLECTION);
  const source = env.db.collection(`source_${name}`);
  const log = [];
  // GIVE_BACK_LOG=1 prints each step as it goes.
  if (process.env.GIVE_BACK_LOG) log.push = (...lines) => (console.log(...lines), Array.prototype.push.apply(log, lines));
  const active = workers.slice(0, 2 + r.below(2)).map((worker, i) => ({ worker, i, session: null }));
  /** Stalled closes whose requests the proxy holds: `{ proxy, giveBacks, epoch, deliverAt, label }`. */
  const pending = [];
  const seen = { deliveredLate: 0, decidedByToken: 0 };
  let epoch = { index: 0, start: 0, floor: 0, values: new Map() };
  let step = 0;

  const fail = (message) => assert.fail(`seed ${seed} (replay: GIVE_BACK_SEEDS=${seed}), step ${step}: ${message}\n${log.join('\n')}`);
  const read = async () => {
    const doc = await docs.findOne(locator);
    return doc ? Number(doc[FIELD]) : null;
  };
  /** The counter document is never behind the epoch's start, a raise, or a value handed out. */
  const check = async (what) => {
    const stored = await read();
    if (stored === null ? epoch.floor > 0 : stored < epoch.floor) {
      fail(
        `after ${what} the counter is ${stored}, behind ${epoch.floor} (epoch ${epoch.index} starts at ${epoch.start}, handed out up to ${Math.max(0, ...epoch.values.keys())})`,
      );
    }
    return stored;
  };
  const ask = async (p, command) => {
    const answer = await p.worker.ask(command);
    if (answer.error) fail(`worker ${p.i} ${command.cmd} failed: ${answer.error}`);
    return answer;
  };
  const handOut = (values, label) => {
    for (const v of values) {
      if (!(v > epoch.start)) fail(`${label} handed out ${v}, not past the epoch's start ${epoch.start}`);
      if (epoch.values.has(v)) fail(`${v} handed out twice in epoch ${epoch.index}: by ${epoch.values.get(v)}, then by ${label}`);
      epoch.values.set(v, label);
      epoch.floor = Math.max(epoch.floor, v);
    }
    totals.values += values.length;
  };
  const newEpoch = (start) => {
    totals.epochs += 1;
    if (epoch.values.size) totals.epochsWithValues += 1;
    epoch = { index: epoch.index + 1, start, floor: start, values: new Map() };
  };

  const open = async (p) => {
    if (p.session) return;
    const proxy = await stallingProxy(env.address);
    const cache = 1 + r.below(12);
    const coalesce = r.chance(0.5);
    await ask(p, { cmd: 'open', uri: proxy.uri, db: env.dbName, collection: COLLECTION, locator, cache, coalesce });
    p.session = { proxy, cache, cachedSince: false };
    log.push(`${step}: worker ${p.i} opens (cache ${cache}${coalesce ? '' : ', coalesce false'})`);
  };
  const take = async (p, kind = r.chance(0.6) ? 'cached' : 'plain', counts = null) => {
    await open(p);
    counts ??= Array.from({ length: 1 + r.below(4) }, () => (r.chance(0.7) ? 1 : 2 + r.below(5)));
    const together = 1 + r.below(3);
    if (kind === 'cached') p.session.cachedSince = true;
    const { values } = await ask(p, { cmd: 'take', kind, counts, together });
    const label = `step ${step} worker ${p.i} ${kind}`;
    log.push(`${step}: worker ${p.i} ${kind} ${JSON.stringify(counts)} → ${values.join(' ')}`);
    return () => handOut(values, label);
  };
  const release = async (p) => {
    const out = await ask(p, { cmd: 'release' });
    p.session.cachedSince = false;
    log.push(`${step}: worker ${p.i} release → returned ${out.returned}, abandoned ${out.abandoned}`);
  };
  const close = async (p) => {
    const out = await ask(p, { cmd: 'close', timeoutMS: 5000 });
    await p.session.proxy.close();
    p.session = null;
    log.push(`${step}: worker ${p.i} closes → given back ${out.givenBack}, abandoned ${out.abandoned}`);
  };
  const stalledClose = async (p) => {
    const { proxy } = p.session;
    proxy.stall();
    const out = await ask(p, { cmd: 'close', timeoutMS: STALLED_CLOSE_MS });
    p.session = null;
    const giveBacks = proxy.giveBacks();
    if (out.givenBack !== 0) fail(`a stalled close of worker ${p.i} claims ${out.givenBack} values given back`);
    const tails = giveBacks.reduce((n, g) => n + g.last - g.before, 0);
    if (out.abandoned < tails) fail(`a stalled close of worker ${p.i} abandoned ${out.abandoned} values, its held give-backs carry ${tails}`);
    const deliverAt = r.chance(0.2) ? Infinity : step + 1 + r.below(8);
    const label = `worker ${p.i}'s close at step ${step}`;
    pending.push({ proxy, giveBacks, epoch: epoch.index, deliverAt, label });
    totals.stalledCloses += 1;
    if (giveBacks.length) totals.stalledGiveBacks += 1;
    log.push(
      `${step}: worker ${p.i} closes, stalled (${out.ms} ms) → abandoned ${out.abandoned}, held ${JSON.stringify(giveBacks)}, delivered ${deliverAt === Infinity ? 'never' : `at step ${deliverAt}`}`,
    );
  };
  /** Delivers a stalled close's held requests; `alone` when nothing else runs meanwhile. */
  const deliver = async (p, alone) => {
    pending.splice(pending.indexOf(p), 1);
    const stored = alone ? await read() : null;
    const sent = await p.proxy.deliver();
    await p.proxy.close();
    let outcome = '';
    if (sent > 0) {
      seen.deliveredLate += 1;
      totals.deliveredLate += 1;
      if (alone) {
        // Only the token tells this give-back from a valid one: the counter stands
        // exactly where its fetch left it, but a write moved it anywhere since.
        if (p.epoch !== epoch.index && p.giveBacks.some((g) => g.last === stored)) {
          seen.decidedByToken += 1;
          totals.decidedByToken += 1;
          outcome += ', the counter back at its tail end after a move';
        }
        const now = await check(`${p.label} delivered`);
        if (now !== stored && p.giveBacks.some((g) => g.before === now)) {
          totals.appliedLate += 1;
          outcome += ', applied';
        }
      }
    }
    log.push(`${step}: ${p.label} delivered${alone ? '' : ' during the takes'} (${sent} give-backs${outcome}), counter was ${stored}`);
  };
  /** Before a write that moves the counter anywhere: no process keeps cached values. */
  const drain = async () => {
    await Promise.all(
      active
        .filter((p) => p.session?.cachedSince)
        .map((p) => {
          const how = r.weighted({ release: 2, close: 1, stalled: 1 });
          return how === 'release' ? release(p) : how === 'close' ? close(p) : stalledClose(p);
        }),
    );
  };
  /** A held give-back to bring the counter back to the end of: `{ p, last }`, or null. */
  const heldTarget = () => {
    const tails = pending.filter((p) => p.deliverAt !== Infinity).flatMap((p) => p.giveBacks.map((g) => ({ p, last: g.last })));
    return tails.length ? r.pick(tails) : null;
  };
  const move = async (kind, value) => {
    await drain();
    let start = null;
    try {
      if (kind === 'reset') start = Number(await op.reset()) - 1;
      else if (kind === 'set') {
        await op.set(value);
        start = value;
      } else if (kind === 'where') {
        if ((await seq.setCountersWhere(env.db, locator, value, on)) === 1) start = value;
      } else {
        await op.drop();
        start = 0;
      }
    } catch (e) {
      if (e.code !== 'SEQUENCE_NOT_FOUND') throw e;
    }
    log.push(`${step}: operator ${kind}${kind === 'set' || kind === 'where' ? ` ${value}` : ''} → ${start === null ? 'no counter' : `epoch ${epoch.index + 1} from ${start}`}`);
    if (start !== null) newEpoch(start);
  };

  try {
    await play();
  } finally {
    // Also when it failed: no proxy and no session outlives its history.
    for (const p of pending.splice(0)) await p.proxy.close();
    for (const p of active) if (p.session) await close(p).catch(() => {});
  }
  totals.histories += 1;
  if (seen.deliveredLate) totals.historiesDeliveredLate += 1;
  if (seen.decidedByToken) totals.historiesDecidedByToken += 1;

  async function play() {
    for (step = 0; step < STEPS; step += 1) {
      const due = pending.filter((p) => p.deliverAt <= step);
      const stored = await read();
      const target = heldTarget();
      const withSession = active.filter((p) => p.session);
      const action = r.weighted({
        take: 4,
        burst: 2,
        release: withSession.some((p) => p.session.cachedSince) ? 1 : 0,
        close: withSession.length ? 1 : 0,
        stalled: withSession.some((p) => p.session.cachedSince) ? 3 : withSession.length ? 0.5 : 0,
        move: 2,
        raise: 1,
        bringBack: target !== null ? 6 : 0,
      });
      const takes = action === 'take' || action === 'burst';
      const alongside = takes && due.length > 0 && r.chance(0.4);
      for (const p of due) if (!alongside || p.alone) await deliver(p, true);
      if (takes) {
        const who = action === 'take' ? [r.pick(active)] : active.filter((_, i) => i === 0 || r.chance(0.7));
        const work = Promise.all(who.map((p) => take(p)));
        if (alongside) await Promise.all(due.filter((p) => !p.alone).map((p) => deliver(p, false)));
        for (const record of await work) record();
      } else if (action === 'release') {
        await release(r.pick(withSession.filter((p) => p.session.cachedSince)));
      } else if (action === 'close') {
        await close(r.pick(withSession));
      } else if (action === 'stalled') {
        const caching = withSession.filter((p) => p.session.cachedSince);
        await stalledClose(r.pick(caching.length ? caching : withSession));
      } else if (action === 'move') {
        const kind = r.weighted({ reset: 3, set: 3, where: 3, drop: 1 });
        const value = target !== null && r.chance(0.5) ? Math.max(0, target.last - r.below(4)) : r.below((stored ?? 0) + 15);
        await move(kind, value);
      } else if (action === 'raise') {
        let value = Math.max(1, (stored ?? 0) + r.below(17) - 8);
        if (r.chance(0.5)) await op.raiseTo(value);
        else {
          // syncToMax raises to the largest value the source holds, from this step or before.
          await source.insertOne({ n: value });
          value = (await source.find().sort({ n: -1 }).limit(1).next()).n;
          await op.syncToMax(source.collectionName, 'n');
        }
        epoch.floor = Math.max(epoch.floor, value);
        log.push(`${step}: operator raises to ${value}`);
      } else {
        // Bring the counter exactly to the last value of a held give-back, by numbering up
        // to it with uncached calls, after moving it below it when it is past.
        const { p: held, last } = target;
        let at = stored ?? 0;
        if (at >= last) {
          const kind = r.weighted({ reset: 1, set: 2, where: 2 });
          await move(kind, Math.max(0, last - r.below(6)));
          at = (await read()) ?? 0;
        }
        if (at < last && last - at <= 80) {
          const p = r.pick(active);
          const n = last - at;
          const counts = Array.from({ length: Math.ceil(n / 10) }, (_, i) => Math.min(10, n - i * 10));
          (await take(p, 'plain', counts))();
        }
        // Mostly delivered next, while the counter stands there.
        if (r.chance(0.7)) Object.assign(held, { deliverAt: step + 1, alone: true });
      }
      await check(`step ${step}`);
    }
    // The end: what is still held is delivered (or dropped, when never), every session closes.
    step = STEPS;
    for (const p of [...pending]) {
      if (p.deliverAt === Infinity) {
        pending.splice(pending.indexOf(p), 1);
        await p.proxy.close();
      } else await deliver(p, true);
      await check('a late delivery');
    }
    for (const p of active) if (p.session) await close(p);
    await check('the closes');
    newEpoch(0);
  }
}

test('give-backs stalled, delivered late, interleaved with resets, sets and renumbering: no value twice', { timeout: 600_000 }, async () => {
  const started = Date.now();
  for (const seed of SEEDS) await runHistory(seed);
  const summary = { seeds: SEEDS.join(','), ms: Date.now() - started, ...totals };
  console.log(`give-back interleavings: ${JSON.stringify(summary)}`);
  // Not in vain: values in many epochs, stalled give-backs delivered late in most
  // histories, and some found the counter back at their tail end after a move.
  const runs = SEEDS.length;
  if (runs < 8) return;
  assert.ok(totals.epochsWithValues >= runs * 2, `${totals.epochsWithValues} epochs with values`);
  assert.ok(totals.stalledGiveBacks >= runs, `${totals.stalledGiveBacks} stalled closes held a give-back`);
  assert.ok(totals.historiesDeliveredLate >= Math.ceil(runs * 0.6), `${totals.historiesDeliveredLate} of ${runs} histories delivered a stalled give-back late`);
  assert.ok(totals.historiesDecidedByToken >= Math.ceil(runs / 3), `${totals.historiesDecidedByToken} of ${runs} histories had a late give-back find its tail end after a move`);
});
