// insertOne/insertMany results and the options listSequences/syncToMax take; lines
// marked @ts-expect-error must NOT compile (tsc fails if they do).
import { insertMany, insertOne, listSequences, syncToMax, type InsertOptions, type SequenceDbLike } from '../../index.js';

declare const db: SequenceDbLike;

interface Invoice {
  total: number;
}

export async function inserts(): Promise<void> {
  // The sequence fills _id by default: the id is the number (or what the options give).
  const one = await insertOne(db, 'invoices', { total: 1 });
  const id: number = one.insertedId;
  const ok: boolean = one.acknowledged;
  const big = await insertOne(db, 'invoices', { total: 1 }, { bigint: true, gapless: true });
  const bigId: bigint = big.insertedId;
  const text = await insertOne(db, 'invoices', { total: 1 }, { field: '_id', format: 'INV{seq:5}' });
  const textId: string = text.insertedId;
  // @ts-expect-error a formatted id is a string
  const notNumber: number = text.insertedId;
  // Another field: the id is the document's own _id.
  const own = await insertOne(db, 'invoices', { _id: 'a', total: 1 }, { field: 'number' });
  const ownId: string = own.insertedId;
  // @ts-expect-error the document's _id is a string here, not the sequence number
  const ownNumber: number = own.insertedId;
  // Interfaces are accepted as documents.
  const invoice: Invoice = { total: 3 };
  const typed = await insertOne(db, 'invoices', invoice);
  const typedId: number = typed.insertedId;
  // A wide InsertOptions variable: the id could be anything.
  const wide: InsertOptions = { field: 'number' };
  const unsure = await insertOne(db, 'invoices', { total: 1 }, wide);
  // @ts-expect-error with wide options the id is not known to be a number
  const unsureNumber: number = unsure.insertedId;

  const many = await insertMany(db, 'invoices', [{ total: 1 }, { total: 2 }]);
  const count: number = many.insertedCount;
  const firstId: number = many.insertedIds[0];
  const bigMany = await insertMany(db, 'invoices', [invoice], { bigint: true });
  const bigFirst: bigint = bigMany.insertedIds[0];
  // @ts-expect-error insertOne results have no insertedIds
  void one.insertedIds;
  // @ts-expect-error insertMany takes an array
  await insertMany(db, 'invoices', { total: 1 });
  // @ts-expect-error insertOne refuses collection (counters names the counter collection)
  await insertOne(db, 'invoices', { total: 1 }, { collection: 'counters' });
  void [id, ok, bigId, textId, notNumber, ownId, ownNumber, typedId, unsureNumber, count, firstId, bigFirst];
}

export async function admin(): Promise<void> {
  const all = await listSequences(db);
  const value: number | bigint = all[0].value;
  const bigs = await listSequences(db, { bigint: true, collection: 'ids' });
  const bigValue: bigint = bigs[0].value;
  const bigStep: bigint | undefined = bigs[0].step;
  // @ts-expect-error a BigInt listing gives no numbers
  const numberValue: number = bigs[0].value;
  // @ts-expect-error listSequences does not use cache
  await listSequences(db, { cache: 10 });
  // @ts-expect-error listSequences does not use upsert
  await listSequences(db, { upsert: true });
  const synced: number = await syncToMax(db, 'orders', 'orderNo', 'orders', { writeConcern: { w: 1 } });
  const bigSynced: bigint = await syncToMax(db, 'orders', 'orderNo', 'orders', { bigint: true });
  // @ts-expect-error syncToMax does not use format
  await syncToMax(db, 'orders', 'orderNo', 'orders', { format: 'N{seq}' });
  void [value, bigValue, bigStep, numberValue, synced, bigSynced];
}
