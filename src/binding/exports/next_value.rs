//! The drop-in functions: `getNextSequenceValue`, `getNextSequenceBatch`,
//! `getNextSequenceRange`.

use crate::binding::boundary::promise_call;
use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::output::Output;
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::reserve::values::{function_promise, read_count};
use crate::engine::option_rules::refuse_format;
use crate::engine::text::validate::{MAX_BATCH_COUNT, MAX_RANGE_COUNT};

/// Returns the next value of sequence `name`: a drop-in for the documented helper
/// `getNextSequenceValue(db, sequenceName)`, which runs
/// `findOneAndUpdate({ _id: name }, { $inc: { sequence_value: 1 } }, { returnDocument: 'after' })`
/// on the `counters` collection.
///
/// `db` is a Node driver `Db` (v6 or v7), `mongoose.connection.db`, or a `SequenceDb` from
/// `connect(uri)`. Rejects with an `Error` whose `code` is `SEQUENCE_NOT_FOUND` (message
/// `Sequence '<name>' not found. Please initialize it.`), `INVALID_ARGUMENT`,
/// `INVALID_COUNTER`, `SEQUENCE_OVERFLOW`, `CONNECTION`, `SERVER` (with `serverCode`),
/// `CLIENT_CLOSED`, `UNSUPPORTED_CLIENT`, `CONTENTION`, `SEQUENCE_EXHAUSTED` (a configured
/// counter at its limit) or `INTERNAL` (a bug, reported without taking the process down).
/// It never throws: argument errors reject the promise too.
#[napi(
    ts_generic_types = "O extends SequenceOptions = {}",
    ts_args_type = "db: SequenceDbLike, name: string | Record<string, string | number | boolean | bigint>, options?: O",
    ts_return_type = "Promise<SequenceValue<O>>"
)]
pub fn get_next_sequence_value<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise_call(env, "getNextSequenceValue", || {
        function_promise(env, &db, &name, options.as_ref(), |_| Ok(1), Output::single)
    })
}

/// Reserves the next `count` values of sequence `name` in one round trip (`$inc`) and
/// resolves with them in the order the counter hands them out, as an array: ascending by
/// 1 on a plain counter, `step` apart on a configured one (descending for a negative
/// `step`: `[-1, -3, -5]` for `step: -2`). At most 1,000,000 values: use
/// `getNextSequenceRange` for more. Same `db`, options and errors as
/// `getNextSequenceValue`.
#[napi(
    ts_generic_types = "O extends SequenceOptions = {}",
    ts_args_type = "db: SequenceDbLike, name: string | Record<string, string | number | boolean | bigint>, count: number, options?: O",
    ts_return_type = "Promise<Array<SequenceValue<O>>>"
)]
pub fn get_next_sequence_batch<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    count: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise_call(env, "getNextSequenceBatch", || {
        let count = |_: &NamedCounter| read_count(&count, MAX_BATCH_COUNT);
        function_promise(env, &db, &name, options.as_ref(), count, Output::values)
    })
}

/// Reserves the next `count` values (up to 2^31 - 1) in one round trip and resolves with
/// their bounds `{ first, last, count, step }`, without allocating an array: the values
/// run from `first` to `last`, `step` apart (1 on a plain counter; the counter's `step`
/// on a configured one, negative when descending). Same `db`, options and errors as
/// `getNextSequenceValue`.
#[napi(
    ts_generic_types = "O extends SequenceOptions = {}",
    ts_args_type = "db: SequenceDbLike, name: string | Record<string, string | number | boolean | bigint>, count: number, options?: O & NoFormat<O>",
    ts_return_type = "Promise<{ first: SequenceNumber<O>; last: SequenceNumber<O>; count: number; step: number }>"
)]
pub fn get_next_sequence_range<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    count: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise_call(env, "getNextSequenceRange", || {
        let count = |named: &NamedCounter| {
            refuse_format(&named.options)?;
            read_count(&count, MAX_RANGE_COUNT)
        };
        function_promise(env, &db, &name, options.as_ref(), count, Output::range)
    })
}
