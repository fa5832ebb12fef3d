// The mongoose plugin's typings against mongoose's own; lines marked @ts-expect-error
// must NOT compile.
import mongoose, { Schema, model } from 'mongoose';
import AutoIncrementFactory, { type SequenceDocument, type SequenceModel } from '../../mongoose.js';

const AutoIncrement = AutoIncrementFactory(mongoose);
const schema = new Schema({ no: Number, shop: String });
schema.plugin(AutoIncrement, { id: 'order_no', inc_field: 'no', reference_fields: ['shop'], start_seq: 100, exclusive: 'reuse' });
// @ts-expect-error unknown option (a typo)
schema.plugin(AutoIncrement, { inc_feild: 'no' });
// @ts-expect-error start_seq is a number
schema.plugin(AutoIncrement, { start_seq: '1' });
// @ts-expect-error exclusive is a boolean or 'reuse'
schema.plugin(AutoIncrement, { exclusive: 'yes' });
schema.plugin(AutoIncrement, { id: 'with_uri', inc_field: 'n', uri: 'mongodb://localhost/app' });
// @ts-expect-error uri is a connection string
schema.plugin(AutoIncrement, { uri: 27017 });
schema.plugin(AutoIncrement, { id: 'with_cache', inc_field: 'n', cache: 100 });
// @ts-expect-error cache is a number
schema.plugin(AutoIncrement, { cache: '100' });

interface Order {
  no?: number;
  shop: string;
}
const Order = model<Order, mongoose.Model<Order> & SequenceModel>('Order', schema);

export async function use(): Promise<void> {
  const reset = await Order.counterReset('order_no', { shop: 'a' });
  const matched: number = reset.matchedCount;
  Order.counterReset('order_no', (error) => void error);
  const doc = (await Order.create({ shop: 'a' })) as unknown as SequenceDocument & Order;
  const saved = await doc.setNext('order_no');
  const no: number | undefined = saved.no;
  // @ts-expect-error counterReset wants the counter id
  await Order.counterReset();
  void [matched, no];
}
