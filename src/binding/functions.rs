//! The drop-in functions: `getNextSequenceValue`, `getNextSequenceBatch`,
//! `getNextSequenceRange`.

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::db_target::{read_db, DbTarget};
use crate::binding::js_read::{describe, number, string};
use crate::binding::options::read_options;
use crate::binding::output::Output;
use crate::binding::spawn::promise;
use crate::engine::allocate::IdRange;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::options::SequenceOptions;
use crate::engine::reserve::reserve;
use crate::engine::validate::{check_count, MAX_BATCH_COUNT, MAX_RANGE_COUNT};

/// One call, its arguments read and checked.
struct Call {
    target: DbTarget,
    name: String,
    count: i64,
    options: SequenceOptions,
}

impl Call {
    fn read(
        env: &Env,
        db: &Unknown,
        name: &Unknown,
        count: Option<(&Unknown, i64)>,
        options: Option<&Unknown>,
    ) -> SeqResult<Call> {
        let options = read_options(options)?;
        let name_str = string(name).ok_or_else(|| {
            SeqError::invalid_argument(format!(
                "sequence name must be a string; got {}",
                describe(name)
            ))
        })?;
        let counter = options.counter(&name_str)?;
        let count = match count {
            None => 1,
            Some((value, max)) => {
                let n = number(value).ok_or_else(|| {
                    SeqError::invalid_argument(format!(
                        "count must be a number; got {}",
                        describe(value)
                    ))
                })?;
                check_count(n, max)?
            }
        };
        let target = read_db(env, db, options.uri.as_deref())?;
        Ok(Call {
            target,
            name: counter.name,
            count,
            options,
        })
    }

    async fn run(self) -> SeqResult<(String, IdRange, bool)> {
        let (handle, database) = self.target.resolve().await?;
        let range = reserve(&handle, &database, &self.name, self.count, &self.options).await?;
        Ok((self.name, range, self.options.bigint))
    }
}

/// Reads a call that reserves `count` values (at most `max`) and runs it.
fn spawn_counted<'env>(
    env: &'env Env,
    [db, name, count]: [&Unknown; 3],
    options: Option<&Unknown>,
    max: i64,
    shape: fn(&str, IdRange, bool) -> SeqResult<Output>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    let call = Call::read(env, db, name, Some((count, max)), options);
    spawn_call(env, call, shape)
}

fn spawn_call<'env>(
    env: &'env Env,
    call: SeqResult<Call>,
    shape: fn(&str, IdRange, bool) -> SeqResult<Output>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise(env, async move {
        let (name, range, bigint) = call?.run().await?;
        shape(&name, range, bigint)
    })
}

/// Returns the next value of sequence `name`: a drop-in for the documented helper
/// `getNextSequenceValue(db, sequenceName)`, which runs
/// `findOneAndUpdate({ _id: name }, { $inc: { sequence_value: 1 } }, { returnDocument: 'after' })`
/// on the `counters` collection.
///
/// `db` is a Node driver `Db` (v6 or v7), `mongoose.connection.db`, or a `SequenceDb` from
/// `connect(uri)`. Rejects with an `Error` whose `code` is `SEQUENCE_NOT_FOUND` (message
/// `Sequence '<name>' not found. Please initialize it.`), `INVALID_ARGUMENT`,
/// `INVALID_COUNTER`, `SEQUENCE_OVERFLOW`, `CONNECTION`, `SERVER` (with `serverCode`),
/// `CLIENT_CLOSED`, `UNSUPPORTED_CLIENT` or `CONTENTION`.
#[napi(
    ts_generic_types = "O extends SequenceOptions = SequenceOptions",
    ts_args_type = "db: SequenceDbLike, name: string, options?: O",
    ts_return_type = "Promise<O extends { bigint: true } ? bigint : number>"
)]
pub fn get_next_sequence_value<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    let call = Call::read(env, &db, &name, None, options.as_ref());
    spawn_call(env, call, Output::single)
}

/// Reserves `count` contiguous values of sequence `name` in one round trip
/// (`$inc: count`) and resolves with them ascending, as an array (at most 1,000,000;
/// use `getNextSequenceRange` for more). Same `db`, options and errors as
/// `getNextSequenceValue`.
#[napi(
    ts_generic_types = "O extends SequenceOptions = SequenceOptions",
    ts_args_type = "db: SequenceDbLike, name: string, count: number, options?: O",
    ts_return_type = "Promise<Array<O extends { bigint: true } ? bigint : number>>"
)]
pub fn get_next_sequence_batch<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    count: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    spawn_counted(
        env,
        [&db, &name, &count],
        options.as_ref(),
        MAX_BATCH_COUNT,
        Output::values,
    )
}

/// Reserves `count` contiguous values (up to 2^31 - 1) in one round trip and resolves
/// with their bounds `{ first, last, count }`, without allocating an array. Same `db`,
/// options and errors as `getNextSequenceValue`.
#[napi(
    ts_generic_types = "O extends SequenceOptions = SequenceOptions",
    ts_args_type = "db: SequenceDbLike, name: string, count: number, options?: O",
    ts_return_type = "Promise<{ first: O extends { bigint: true } ? bigint : number; last: O extends { bigint: true } ? bigint : number; count: number }>"
)]
pub fn get_next_sequence_range<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    count: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    spawn_counted(
        env,
        [&db, &name, &count],
        options.as_ref(),
        MAX_RANGE_COUNT,
        Output::range,
    )
}
