// The typegoose drop-in's typings, used as @typegoose/auto-increment's are; the lines
// marked @ts-expect-error must NOT compile.
import { Schema } from 'mongoose';
import { AutoIncrementID, AutoIncrementIDSkipSymbol, AutoIncrementSimple, type AutoIncrementIDOptions } from 'mongodb-sequence/mongoose/typegoose';

const schema = new Schema({ _id: Number, rev: Number });
schema.plugin(AutoIncrementID, { startAt: 1, incrementBy: 1n, trackerCollection: 'identitycounters' });
schema.plugin(AutoIncrementID, { overwriteModelName: (name: string) => `${name}s` });
const options: AutoIncrementIDOptions = { field: '_id', startAt: 10n };
schema.plugin(AutoIncrementID, options);
// @ts-expect-error startAt is a number or a bigint
schema.plugin(AutoIncrementID, { startAt: '1' });
// @ts-expect-error unknown option (a typo)
schema.plugin(AutoIncrementID, { strtAt: 1 });
schema.plugin(AutoIncrementID, { startAt: 1, cache: 100 });
// @ts-expect-error cache is a number
schema.plugin(AutoIncrementID, { cache: 100n });
schema.plugin(AutoIncrementSimple, [{ field: 'rev' }, { field: 'rev', incrementBy: 2 }]);
// @ts-expect-error a field is required
schema.plugin(AutoIncrementSimple, { incrementBy: 2 });
const doc: Record<symbol, unknown> = {};
doc[AutoIncrementIDSkipSymbol] = true;
