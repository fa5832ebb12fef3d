//! Results as JavaScript values: reserved values as numbers, BigInts, arrays, ranges or
//! strings, as the call asked, and the results of the other calls.

use crate::engine::counter::capacity::{Capacity, StoredType};
use napi::bindgen_prelude::{BigInt, Env, JsObjectValue, Object, ToNapiValue};
use napi::sys;

use mongodb::bson::Bson;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::call_options::CallOptions;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::SeqResult;
use crate::engine::text::format::now_millis;

/// What a call resolves with.
pub enum Output {
    /// One value.
    Single(Value),
    /// Every value of a block, in the counter's direction.
    Values(Vec<Value>),
    /// One business number.
    Text(String),
    /// A business number per value of a block.
    Texts(Vec<String>),
    /// A yes/no answer.
    Flag(bool),
    /// Nothing (`undefined`).
    Nothing,
    /// Counters as `[{ name, value, step?, minValue?, maxValue?, cycle? }]`.
    Listing(Vec<Listed>),
    /// A block as `{ first, last, count, step }`.
    Range {
        /// First value.
        first: Value,
        /// Last value.
        last: Value,
        /// Number of values.
        count: f64,
        /// Distance between values.
        step: f64,
    },
}

/// One counter of a listing.
pub struct Listed {
    /// Its `_id`.
    pub id: Bson,
    /// The last value handed out.
    pub value: Value,
    /// Step, limits and cycle, for a configured counter.
    pub config: Option<SequenceConfig>,
    /// Whether values are BigInts.
    pub bigint: bool,
    /// The type its value is stored as.
    pub stored: StoredType,
    /// The range it lives in and how much of it is used.
    pub capacity: Capacity,
    /// The same for a reader of JavaScript numbers (ends at most at 2^53 - 1).
    pub capacity_as_number: Capacity,
}

/// A limit or step as a number when it is a safe integer (and `bigint` is off), else as
/// a BigInt: never an error, never rounded.
fn exact(v: i64, bigint: bool) -> Value {
    let safe = v.unsigned_abs() <= crate::engine::text::validate::MAX_SAFE_INTEGER as u64;
    Value::of(v, bigint || !safe)
}

/// One value, as a number or a BigInt.
#[derive(Clone, Copy)]
pub enum Value {
    /// A safe integer.
    Number(f64),
    /// Any 64-bit integer.
    BigInt(i64),
}

impl Value {
    /// `v` as a BigInt or, when it is safe, a number (`SEQUENCE_OVERFLOW` otherwise): for
    /// values no call reserved (a counter's value read, a start, a listing), which the
    /// engine has not checked.
    pub fn checked(name: &str, v: i64, bigint: bool) -> SeqResult<Value> {
        if !bigint {
            IdRange::contiguous(v, v).check_safe_for_numbers(name)?;
        }
        Ok(Value::of(v, bigint))
    }

    /// `v` as a BigInt or a number, unchecked: for a value known to fit, such as one a
    /// call reserved (the engine refuses a call's values past 2^53 - 1 when they are
    /// returned as numbers).
    pub fn of(v: i64, bigint: bool) -> Value {
        if bigint {
            Value::BigInt(v)
        } else {
            Value::Number(v as f64)
        }
    }
}

impl Output {
    /// The first (only) value of a block, formatted when the options say so.
    pub fn single(range: IdRange, options: &CallOptions) -> Output {
        if let Some(pattern) = &options.format {
            return Output::Text(pattern.format(range.first, now_millis()));
        }
        Output::Single(Value::of(range.first, options.bigint))
    }

    /// Every value of a block, formatted when the options say so.
    pub fn values(range: IdRange, options: &CallOptions) -> Output {
        if let Some(pattern) = &options.format {
            let now = now_millis();
            return Output::Texts(range.values().map(|v| pattern.format(v, now)).collect());
        }
        let bigint = options.bigint;
        Output::Values(range.values().map(|v| Value::of(v, bigint)).collect())
    }

    /// A block as bounds (`format` does not apply; refused before any I/O).
    pub fn range(range: IdRange, options: &CallOptions) -> Output {
        let bigint = options.bigint;
        Output::Range {
            first: Value::of(range.first, bigint),
            last: Value::of(range.last, bigint),
            count: range.count() as f64,
            step: range.step as f64,
        }
    }
}

impl ToNapiValue for Value {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        match value {
            Value::Number(n) => f64::to_napi_value(env, n),
            Value::BigInt(b) => BigInt::to_napi_value(env, BigInt::from(b)),
        }
    }
}

impl ToNapiValue for Output {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        match value {
            Output::Single(v) => Value::to_napi_value(env, v),
            Output::Text(text) => String::to_napi_value(env, text),
            Output::Flag(flag) => bool::to_napi_value(env, flag),
            Output::Nothing => <()>::to_napi_value(env, ()),
            Output::Listing(entries) => {
                let env_ref = Env::from_raw(env);
                let mut items = Vec::with_capacity(entries.len());
                for listed in entries {
                    let mut item = Object::new(&env_ref)?;
                    item.set_named_property("name", JsId(listed.id))?;
                    item.set_named_property("value", listed.value)?;
                    if let Some(config) = listed.config {
                        item.set_named_property("step", exact(config.step, listed.bigint))?;
                        item.set_named_property("minValue", exact(config.min, listed.bigint))?;
                        item.set_named_property("maxValue", exact(config.max, listed.bigint))?;
                        item.set_named_property("cycle", config.cycle)?;
                    }
                    item.set_named_property("storedType", listed.stored.as_str())?;
                    let capacity = listed.capacity;
                    item.set_named_property("rangeEnd", exact(capacity.end, listed.bigint))?;
                    item.set_named_property("rangeKind", capacity.kind.as_str())?;
                    item.set_named_property("usedPercent", capacity.used_percent)?;
                    let as_number = listed.capacity_as_number;
                    item.set_named_property(
                        "rangeEndAsNumber",
                        exact(as_number.end, listed.bigint),
                    )?;
                    item.set_named_property("rangeKindAsNumber", as_number.kind.as_str())?;
                    item.set_named_property("usedPercentAsNumber", as_number.used_percent)?;
                    items.push(item);
                }
                Vec::<Object>::to_napi_value(env, items)
            }
            Output::Texts(texts) => Vec::<String>::to_napi_value(env, texts),
            Output::Values(values) => Vec::<Value>::to_napi_value(env, values),
            Output::Range {
                first,
                last,
                count,
                step,
            } => {
                let env_ref = Env::from_raw(env);
                let mut object = Object::new(&env_ref)?;
                object.set_named_property("first", first)?;
                object.set_named_property("last", last)?;
                object.set_named_property("count", count)?;
                object.set_named_property("step", step)?;
                Object::to_napi_value(env, object)
            }
        }
    }
}

/// A counter `_id` as JavaScript: a string, or an object of its scalar fields.
struct JsId(Bson);

impl ToNapiValue for JsId {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        match value.0 {
            Bson::String(s) => String::to_napi_value(env, s),
            Bson::Int32(i) => f64::to_napi_value(env, f64::from(i)),
            Bson::Int64(i) => f64::to_napi_value(env, i as f64),
            Bson::Double(d) => f64::to_napi_value(env, d),
            Bson::Boolean(b) => bool::to_napi_value(env, b),
            Bson::Document(doc) => {
                let env_ref = Env::from_raw(env);
                let mut object = Object::new(&env_ref)?;
                for (key, field) in doc {
                    object.set_named_property(&key, JsId(field))?;
                }
                Object::to_napi_value(env, object)
            }
            other => String::to_napi_value(env, other.to_string()),
        }
    }
}
