//! Counters found by fields other than `_id` (mongoose-sequence's `{ id, reference_value }`
//! documents): `counterAt` gives a `Sequence` handle on one, `setCountersWhere` sets every
//! counter matching some of those fields (mongoose-sequence's `counterReset`).

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::boundary::{promise_call, sync_call};
use crate::binding::error::OrThrow;
use crate::binding::exports::sequence_handle::Sequence;
use crate::binding::output::{Output, Value};
use crate::binding::read::db::read_db;
use crate::binding::read::kinds::{read_fields, read_integer};
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::read::option_reader::{read_located_options, read_used_options};
use crate::binding::read::options::SetCountersTable;
use crate::binding::reserve::prepare::open;
use crate::binding::spawn::promise;
use crate::engine::counter::locator::{FieldsLocator, Locator};
use crate::engine::error::SeqResult;
use crate::engine::management;
use crate::engine::option_rules::label_of;

/// Reads a locator argument (`what` names it in messages) for a counter counting in
/// `field`: a plain object of 1 to 8 equality fields.
pub fn read_locator(value: &Unknown, what: &str, field: &str) -> SeqResult<FieldsLocator> {
    FieldsLocator::new(read_fields(what, value)?, field)
}

/// A `Sequence` handle on the counter document found by equality on `locator`'s fields
/// (instead of by `_id`), e.g. mongoose-sequence's `{ id: 'invoice', reference_value:
/// null }` in its `counters` collection with `field: 'seq'`. Values may be any BSON value
/// (ObjectIds, dates, nested objects). Creating such a counter first makes sure of a
/// unique index over exactly these fields (named as MongoDB names it, e.g.
/// `id_1_reference_value_1`), so that two processes can never create it twice. Options:
/// those of `sequence()`, and `step` (default 1): the distance between the values of a
/// plain counter, its `$inc` per value (not stored with the counter).
#[napi(
    ts_generic_types = "O extends LocatedOptions = {}",
    ts_args_type = "db: SequenceDbLike, locator: Record<string, unknown>, options?: O",
    ts_return_type = "SequenceOf<O>"
)]
pub fn counter_at<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    locator: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<Sequence> {
    sync_call(env, "counterAt", || {
        let read = || -> SeqResult<NamedCounter> {
            let mut options = read_located_options(options.as_ref())?;
            let located = read_locator(&locator, "locator", &options.field)?;
            let name = label_of(&located)?;
            options.locator = Locator::ByFields(located);
            NamedCounter::from_parts(env, &db, name, options)
        };
        let counter = read().or_throw(env)?;
        Ok(Sequence::new(counter))
    })
}

/// Sets the counter field of every plain counter document matching `fields` (equality on
/// each) in `options.collection` to `value`, so that each hands out `value + step` next;
/// resolves with how many matched. mongoose-sequence's `counterReset`: `{ id }` resets
/// the counters of every reference value, `{ id, reference_value }` one of them. Counters
/// that do not exist stay absent. Options: `collection`, `field`, `uri`, `writeConcern`.
#[napi(
    ts_args_type = "db: SequenceDbLike, fields: Record<string, unknown>, value: number | bigint, options?: SetCountersOptions",
    ts_return_type = "Promise<number>"
)]
pub fn set_counters_where<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    fields: Unknown<'env>,
    value: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    promise_call(env, "setCountersWhere", || {
        let read = (|| -> SeqResult<_> {
            let options = read_used_options::<SetCountersTable>(options.as_ref())?;
            // The same rules as a locator's fields.
            let located = read_locator(&fields, "fields", &options.field)?;
            let value = read_integer("value", &value)?;
            let target = read_db(env, &db, options.uri.as_deref())?;
            let counter = options.counter(&label_of(&located)?)?;
            let fields = located.into_fields();
            Ok((target, options, counter, fields, value))
        })();
        promise(env, async move {
            let (target, options, counter, fields, value) = read?;
            let concern = target
                .write_concern(options.write_concern.as_ref())
                .cloned();
            let (handle, database) = open(target).await?;
            let label = counter.label.clone();
            let matched =
                management::set_counters_where(handle, database, concern, counter, fields, value)
                    .await?;
            Ok(Output::Single(Value::checked(
                &label,
                i64::try_from(matched).unwrap_or(i64::MAX),
                false,
            )?))
        })
    })
}
