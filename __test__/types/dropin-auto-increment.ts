// The mongoose-auto-increment drop-in's typings; the lines marked @ts-expect-error must
// NOT compile.
import mongoose, { Schema, model } from 'mongoose';
import { initialize, plugin, removeDuplicateCounters, type AutoIncrementFunctions, type RemovedDuplicate } from 'mongodb-sequence/mongoose/auto-increment';

initialize(mongoose.connection);
initialize(mongoose);
const removed: Promise<RemovedDuplicate[]> = removeDuplicateCounters();
void removeDuplicateCounters(mongoose.connection);
void removed;
const schema = new Schema({ name: String });
schema.plugin(plugin, 'User');
schema.plugin(plugin, { model: 'User', field: 'userId', startAt: 1, incrementBy: 2, unique: false });
// @ts-expect-error model is required
schema.plugin(plugin, { field: 'userId' });
// @ts-expect-error startAt is a number
schema.plugin(plugin, { model: 'User', startAt: '1' });
schema.plugin(plugin, { model: 'User', cache: 100 });
// @ts-expect-error cache is a number
schema.plugin(plugin, { model: 'User', cache: '100' });

const User = model('User', schema) as unknown as AutoIncrementFunctions;
const next: Promise<number> = User.nextCount();
User.resetCount((error, startAt) => {
  const n: number | undefined = startAt;
  void [error, n];
});
void next;
