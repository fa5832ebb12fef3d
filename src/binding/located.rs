//! Counters found by fields other than `_id` (mongoose-sequence's `{ id, reference_value }`
//! documents): `counterAt` gives a `Sequence` handle on one, `setCountersWhere` sets every
//! counter matching some of those fields (mongoose-sequence's `counterReset`).

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::calls::NamedCounter;
use crate::binding::db_target::read_db;
use crate::binding::guard::{promise_call, sync_call};
use crate::binding::js_error::to_js_error;
use crate::binding::js_read::{describe, is_nullish, object};
use crate::binding::js_to_bson::to_document;
use crate::binding::option_specs::{self, Kind, Spec};
use crate::binding::options::{read_integer, read_options_from};
use crate::binding::output::{Output, Value};
use crate::binding::sequence_handle::Sequence;
use crate::binding::spawn::promise;
use crate::engine::call_options::CallOptions;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::locator::{FieldsLocator, Locator};
use crate::engine::error::{SeqError, SeqResult};

/// Options `counterAt` takes besides the common ones (`LocatedOptions`).
pub const LOCATED: Spec = &[("step", Kind::Integer)];

/// Reads a locator argument (`what` names it in messages) for a counter counting in
/// `field`: a plain object of 1 to 8 equality fields.
pub fn read_locator(value: &Unknown, what: &str, field: &str) -> SeqResult<FieldsLocator> {
    if is_nullish(value) || object(value).is_none() {
        return Err(SeqError::invalid_argument(format!(
            "{what} must be an object of fields, e.g. {{ id: 'invoice', reference_value: null }}; got {}",
            describe(value)
        )));
    }
    FieldsLocator::new(to_document(value)?, field)
}

/// The name shown in messages for a counter found by `located`.
fn label_of(located: &FieldsLocator) -> SeqResult<CounterName> {
    CounterName::text(&located.label())
}

/// Reads `options` (the common ones and `step`).
fn read_located_options(options: Option<&Unknown>) -> SeqResult<CallOptions> {
    let (mut read, extra) = read_options_from(options, &[LOCATED], &["step"])?;
    for (key, value) in extra {
        read.step = read_integer(&key, &value)?;
    }
    Ok(read)
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
        let counter = read().map_err(|e| to_js_error(env, e))?;
        Ok(Sequence::new(counter))
    })
}

/// Sets the counter field of every plain counter document matching `fields` (equality on
/// each) in `options.collection` to `value`, so that each hands out `value + step` next;
/// resolves with how many matched. mongoose-sequence's `counterReset`: `{ id }` resets
/// the counters of every reference value, `{ id, reference_value }` one of them. Counters
/// that do not exist stay absent. Options: `collection`, `field`, `uri`, `writeConcern`.
#[napi(
    ts_args_type = "db: SequenceDbLike, fields: Record<string, unknown>, value: number | bigint, options?: Pick<SequenceOptions, 'collection' | 'field' | 'uri' | 'writeConcern'>",
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
            let options = crate::binding::options::read_used_options(
                options.as_ref(),
                "setCountersWhere",
                option_specs::SET_WHERE_USES,
            )?;
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
            let (handle, database) = target.resolve().await?;
            let store = handle
                .driver(&database)?
                .with_write_concern(options.write_concern.map(|w| w.to_driver()));
            let matched = store.set_where(&counter, fields, value).await?;
            Ok(Output::Single(Value::checked(
                &counter.label,
                i64::try_from(matched).unwrap_or(i64::MAX),
                false,
            )?))
        })
    })
}
