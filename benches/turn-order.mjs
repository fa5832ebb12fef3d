// Does a side's place in a round move its p50? latency.mjs's counter sides (helper,
// function form, handle, and a fourth side), where the fourth is `coalesce: false` or,
// as a control, the function form again (identical code, the document latency.mjs's
// `coalesce: false` side uses). Prints the fourth side's paired p50 ratio to the function
// form: the upper median (as turns.mjs took it before) and the true median, and the
// medians of even and odd rounds (with ORDER=old: the rounds where the fourth side ran
// last, and first).
//   [ORDER=old] [SWAP=1] node benches/turn-order.mjs mongoeco|secantus function|direct [rounds]
import { createRequire } from 'node:module';
import { MongoClient } from 'mongodb';
import { startServer } from '../scripts/lib/test-server.mjs';
import { helperGetNextSequenceValue } from '../scripts/lib/documented-helper.mjs';
import { sequentialRound, quantile, roundOrder } from './turns.mjs';
const require = createRequire(import.meta.url);
const seq = require('../index.js');
const [kind, fourth, rounds] = [process.argv[2], process.argv[3], Number(process.argv[4] || 12)];
const server = await startServer({ kind });
const client = await new MongoClient(server.uri).connect();
const db = client.db(`pos_${process.pid}`);
await db.collection('counters').insertMany(['helper', 'function', 'handle', 'direct', 'save_helper'].map((_id) => ({ _id, sequence_value: 0 })));
const handle = seq.sequence(db, 'handle');
// SWAP=1: the function form on the document of the fourth side and the other way round.
const swap = process.env.SWAP === '1';
const other = swap ? 'function' : 'direct';
const sides = {
  helper: () => helperGetNextSequenceValue(db, 'helper'),
  function: () => seq.getNextSequenceValue(db, swap ? 'direct' : 'function'),
  handle: () => handle.next(),
  fourth: fourth === 'direct' ? () => seq.getNextSequenceValue(db, other, { coalesce: false }) : () => seq.getNextSequenceValue(db, other),
};
const names = Object.keys(sides);
for (const n of names) for (let i = 0; i < 20; i++) await sides[n]();
const even = [],
  odd = [],
  all = [];
for (let r = 0; r < rounds; r++) {
  const got = {};
  for (const n of process.env.ORDER === 'old' ? (r % 2 === 0 ? names : [...names].reverse()) : roundOrder(names, r)) got[n] = (await sequentialRound(sides[n], 200)).p50;
  const ratio = got.fourth / got.function;
  (r % 2 === 0 ? even : odd).push(ratio);
  all.push(ratio);
}
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const upper = (xs) => quantile(Float64Array.from(xs).sort(), 0.5);
console.log(
  `order=${process.env.ORDER || 'balanced'}${swap ? ' swapped documents' : ''} ${kind} 4th=${fourth} rounds=${rounds}: 4th/function upper median (as turns.mjs took it before) ${upper(all).toFixed(3)} true median ${med(all).toFixed(3)} | even rounds (old order: 4th last) median ${med(even).toFixed(3)} | odd rounds (old order: 4th first) median ${med(odd).toFixed(3)}`,
);
await client.close();
await seq.closeSharedClients();
await server.stop();
