// The mongoose-plugin-autoinc drop-in's typings; the lines marked @ts-expect-error must
// NOT compile.
import { Schema, model } from 'mongoose';
import { autoIncrement, plugin, type AutoIncFunctions } from 'mongodb-sequence/mongoose/plugin-autoinc';

const schema = new Schema({ shop: String, no: Number });
schema.plugin(autoIncrement, 'Order');
schema.plugin(plugin, { model: 'Order', field: 'no', groupingField: 'shop', startAt: 1, outputFilter: (n: number) => n * 10 });
// @ts-expect-error model is required
schema.plugin(autoIncrement, { field: 'no' });
// @ts-expect-error outputFilter maps a number to a number
schema.plugin(autoIncrement, { model: 'Order', outputFilter: 'x' });
schema.plugin(autoIncrement, { model: 'Order', field: 'no', cache: 100 });
// @ts-expect-error cache is a number
schema.plugin(autoIncrement, { model: 'Order', cache: true });

const Order = model('Order', schema) as unknown as AutoIncFunctions;
const next: Promise<number> = Order.nextCount('north');
const reset: Promise<number> = Order.resetCount();
void [next, reset];
