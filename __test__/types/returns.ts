// Return types follow the options, for the functions and for sequence() handles; lines
// marked @ts-expect-error must NOT compile (tsc fails if they do).
import { getNextSequenceBatch, getNextSequenceRange, getNextSequenceValue, sequence, type SequenceDbLike, type SequenceOptions } from '../../index.js';

declare const db: SequenceDbLike;

export async function functions(): Promise<void> {
  const plain: number = await getNextSequenceValue(db, 'x');
  const withUpsert: number = await getNextSequenceValue(db, 'x', { upsert: true });
  const big: bigint = await getNextSequenceValue(db, 'x', { bigint: true });
  const formatted: string = await getNextSequenceValue(db, 'x', { format: 'N{seq:6}' });
  const batch: bigint[] = await getNextSequenceBatch(db, 'x', 3, { bigint: true });
  const range = await getNextSequenceRange(db, 'x', 10);
  const first: number = range.first;
  const bigRange = await getNextSequenceRange(db, 'x', 10, { bigint: true });
  const bigLast: bigint = bigRange.last;
  // @ts-expect-error a number is not a bigint
  const notBig: bigint = await getNextSequenceValue(db, 'x');
  // @ts-expect-error a formatted value is a string
  const notNumber: number = await getNextSequenceValue(db, 'x', { format: 'N{seq}' });
  // A SequenceOptions variable could hold format or bigint: the type must not collapse.
  const wide: SequenceOptions = { upsert: true };
  const either = await getNextSequenceValue(db, 'x', wide);
  // @ts-expect-error wide options give number | bigint | string
  const collapsed: number = either;
  const accepted: number | bigint | string = either;
  // @ts-expect-error unknown options are refused
  await getNextSequenceValue(db, 'x', { colection: 'typo' });
  // @ts-expect-error a range is two numbers: no format
  await getNextSequenceRange(db, 'x', 3, { format: 'X{seq}' });
  // Options typed as a whole (they may lack format) are taken, and shape the result.
  const shared: SequenceOptions = { collection: 'c' };
  const sharedRange = await getNextSequenceRange(db, 'x', 3, shared);
  const sharedFirst: number | bigint = sharedRange.first;
  const bigOnly = await getNextSequenceRange(db, 'x', 3, { bigint: true, collection: 'c' });
  const bigFirst: bigint = bigOnly.first;
  void [sharedFirst, bigFirst];
  void [plain, withUpsert, big, formatted, batch, first, bigLast, notBig, notNumber, collapsed, accepted];
}

export async function handles(): Promise<void> {
  const numbers = sequence(db, 'x');
  const n: number = await numbers.next();
  const c: number = await numbers.current();
  const plainRange: number = (await numbers.nextRange(3)).last;
  const bigs = sequence(db, 'x', { bigint: true, cache: 100 });
  const b: bigint = await bigs.next();
  const bb: bigint[] = await bigs.nextBatch(5);
  const br: bigint = (await bigs.nextRange(5)).first;
  // @ts-expect-error a bigint handle does not give numbers
  const bn: number = await bigs.next();
  const invoices = sequence(db, 'inv', { format: 'INV{YYYY}{seq:5}' });
  const text: string = await invoices.next();
  const stored: number = await invoices.current();
  // @ts-expect-error a formatted handle gives strings
  const notText: number = await invoices.next();
  // @ts-expect-error a formatted handle has no ranges
  await invoices.nextRange(3);
  const name: string = numbers.name;
  const created: boolean = await numbers.init({ start: 10, maxValue: 99, cycle: true });
  // @ts-expect-error init takes no unknown option
  await numbers.init({ stop: 5 });
  void [n, c, plainRange, b, bb, br, bn, text, stored, notText, name, created];
}
