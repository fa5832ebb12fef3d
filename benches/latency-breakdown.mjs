// Where the time of one awaited counter call goes, for the documented helper on the Node
// driver and for our calls, seen from outside both drivers: a TCP relay in a child
// process stands between the clients and the server and stamps each findAndModify
// request and its reply as they pass. With process.hrtime (one monotonic clock for every
// process of the machine) each call splits into
//   out:    JS call -> request bytes reach the relay (argument reading, task hops,
//           pool checkout, server selection, session, encoding, the socket write)
//   server: request at the relay -> reply at the relay (relay -> server -> relay)
//   in:     reply at the relay -> the awaiting code runs again (decoding, the hop back
//           to the JavaScript thread, settling the promise)
// The relay adds the same hop to every side. Sides take turns; each keeps its best round.
// With the example `driver_round_trip` built (`cargo build --release --example
// driver_round_trip`), a side 'Rust driver alone' runs the engine's fast-path
// findAndModify from a plain Rust program: the driver without napi, the engine or any
// thread hop of ours.
//   node benches/latency-breakdown.mjs [--server mongoeco|secantus] [--calls N] [--rounds R]
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, connect } from 'node:net';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const FIND_AND_MODIFY = Buffer.from('findAndModify');
const now = () => process.hrtime.bigint();

if (process.argv[2] === '--relay') {
  // The relay: forwards bytes both ways and stamps findAndModify requests and replies.
  const [host, port] = process.argv[3].split(':');
  const stamps = [];
  const server = createServer((client) => {
    const upstream = connect({ host, port: Number(port) });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const asked = new Map(); // requestID -> index in stamps
    // Wire messages may span chunks: stamp when a message's first bytes pass (the header
    // is there), which is when the peer wrote it.
    const frame = (onMessage) => {
      let pending = 0; // bytes of the current message still to come
      return (chunk, at) => {
        let offset = 0;
        while (offset < chunk.length) {
          if (pending === 0) {
            if (chunk.length - offset < 16) return; // (never split here on loopback)
            pending = chunk.readInt32LE(offset);
            onMessage(chunk, offset, at);
          }
          const take = Math.min(pending, chunk.length - offset);
          pending -= take;
          offset += take;
        }
      };
    };
    const fromClient = frame((chunk, offset, at) => {
      const end = Math.min(chunk.length, offset + 200);
      if (chunk.subarray(offset, end).includes(FIND_AND_MODIFY)) {
        asked.set(chunk.readInt32LE(offset + 4), stamps.length);
        stamps.push([at, 0n]);
      }
    });
    const fromServer = frame((chunk, offset, at) => {
      const index = asked.get(chunk.readInt32LE(offset + 8));
      if (index !== undefined) {
        stamps[index][1] = at;
        asked.delete(chunk.readInt32LE(offset + 8));
      }
    });
    client.on('data', (chunk) => {
      const at = now();
      upstream.write(chunk);
      fromClient(chunk, at);
    });
    upstream.on('data', (chunk) => {
      const at = now();
      client.write(chunk);
      fromServer(chunk, at);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('message', (message) => {
    if (message === 'take') process.send({ stamps: stamps.splice(0).map(([a, b]) => [String(a), String(b)]) });
  });
} else {
  const require = createRequire(import.meta.url);
  const seq = require('../index.js');
  const { MongoClient } = await import('mongodb');
  const { startServer } = await import('../scripts/lib/test-server.mjs');
  const { helperGetNextSequenceValue } = await import('../scripts/lib/documented-helper.mjs');
  const { quantile } = await import('./turns.mjs');
  const { startRelay, hopMedians } = await import('./relay-stamps.mjs');

  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const CALLS = Number(arg('calls', 200));
  const ROUNDS = Number(arg('rounds', 4));
  const progress = (msg) => process.stderr.write(`[breakdown] ${msg}\n`);

  /** The example program, when built: runs CALLS calls, resolves with their [before, after]. */
  const target = process.env.CARGO_TARGET_DIR || join(fileURLToPath(new URL('..', import.meta.url)), 'target');
  const example = join(target, 'release', 'examples', 'driver_round_trip');
  const rustDriver = (uri, dbName) => async () =>
    execFileSync(example, [uri, dbName, String(CALLS)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((line) => line.split(' ').map(BigInt));

  /** One round of `side`: per call [JS call, request at relay, reply at relay, settled]. */
  async function round(relay, call) {
    await relay.take(); // drop stamps of anything before
    let calls = [];
    if (call.wholeRound) {
      calls = await call();
    } else {
      for (let i = 0; i < CALLS; i++) {
        const t0 = now();
        await call();
        calls.push([t0, now()]);
      }
    }
    // A whole-round side warms up in the same process: its first requests are not timed.
    const stamps = (await relay.take()).slice(-calls.length);
    return hopMedians(calls, stamps);
  }

  // The thread hops alone: a promise of ours that does no I/O (closeSharedClients with no
  // client open) goes JS thread -> runtime worker -> JS thread, after 1 ms of idling as
  // between counter calls (the threads are asleep), and back to back.
  const { setTimeout: sleep } = await import('node:timers/promises');
  const hops = async (idle) => {
    const times = new Float64Array(1000);
    for (let i = 0; i < times.length; i++) {
      if (idle) await sleep(1);
      const t0 = now();
      await seq.closeSharedClients();
      times[i] = Number(now() - t0) / 1e6;
    }
    return quantile(times.sort(), 0.5);
  };
  const [idleHops, busyHops] = [await hops(true), await hops(false)];
  console.log(
    `\nJS thread -> runtime -> JS thread, no I/O (closeSharedClients, no client open), p50: ${idleHops.toFixed(3)} ms after 1 ms idle, ${busyHops.toFixed(3)} ms back to back`,
  );

  const kinds = arg('server') ? [arg('server')] : ['mongoeco', 'secantus'];
  for (const kind of kinds) {
    const server = await startServer({ kind, log: progress });
    const address = server.uri.slice('mongodb://'.length).split(/[/?]/)[0];
    const relay = await startRelay(address);
    const uri = `mongodb://127.0.0.1:${relay.port}/?directConnection=true`;
    const client = await new MongoClient(uri).connect();
    const db = client.db(`mseq_breakdown_${process.pid}`);
    try {
      await db.collection('counters').insertMany(['helper', 'function', 'direct', 'handle'].map((_id) => ({ _id, sequence_value: 0 })));
      const handle = seq.sequence(db, 'handle');
      const plugin = seq.counterAt(db, { id: 'plugin', reference_value: null }, { collection: 'plugin_counters', field: 'seq', upsert: true });
      const sides = {
        helper: () => helperGetNextSequenceValue(db, 'helper'),
        function: () => seq.getNextSequenceValue(db, 'function'),
        'coalesce: false': () => seq.getNextSequenceValue(db, 'direct', { coalesce: false }),
        handle: () => handle.next(),
        "counterAt (the plugin's counter)": () => plugin.next(),
      };
      const names = Object.keys(sides);
      for (const name of names) for (let i = 0; i < 20; i++) await sides[name]();
      if (existsSync(example)) {
        sides['Rust driver alone'] = Object.assign(rustDriver(uri, db.databaseName), { wholeRound: true });
        names.push('Rust driver alone');
      } else {
        progress(`${example} not built: no 'Rust driver alone' side`);
      }
      const best = {};
      for (let r = 0; r < ROUNDS; r++) {
        for (const name of r % 2 === 0 ? names : [...names].reverse()) {
          const got = await round(relay, sides[name]);
          if (!best[name] || got.total < best[name].total) best[name] = got;
        }
        progress(`${kind}: round ${r + 1}/${ROUNDS}`);
      }
      console.log(`\n${kind}, p50 of ${CALLS} awaited calls per round, best of ${ROUNDS} rounds (ms; the parts are p50s of their own, so they need not add up exactly):`);
      console.log('| case | total | out: call -> request on the wire | server (through the relay) | in: reply -> promise settled | out + in |');
      console.log('|---|---:|---:|---:|---:|---:|');
      for (const [name, b] of Object.entries(best)) {
        console.log(`| ${name} | ${b.total.toFixed(3)} | ${b.out.toFixed(3)} | ${b.server.toFixed(3)} | ${b.in.toFixed(3)} | ${(b.out + b.in).toFixed(3)} |`);
      }
    } finally {
      await db.dropDatabase();
      await client.close();
      await seq.closeSharedClients();
      relay.stop();
      await server.stop();
    }
  }
}
