//! The `name` argument: a string, or a plain object of scalar fields (a scoped name).

use crate::engine::text::quote::quoted;
use napi::bindgen_prelude::{Object, Unknown};

use crate::binding::js::{bigint_i64, boolean, describe, number, object, property, string};
use crate::binding::read::bson::bson_type;
use crate::engine::counter::counter_name::{CounterName, Scalar, MAX_SCOPE_FIELDS};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::MAX_SAFE_INTEGER;

/// Reads a sequence name. Anything else than a string or a plain object of strings,
/// numbers, booleans and BigInts is refused, so no value can turn `{ _id: name }` into a
/// query operator.
pub fn read_counter_name(value: &Unknown) -> SeqResult<CounterName> {
    if let Some(text) = string(value) {
        return CounterName::text(&text);
    }
    let Some(fields) = object(value) else {
        return Err(SeqError::invalid_argument(format!(
            "sequence name must be a string or a plain object of scalar fields; got {}",
            describe(value)
        )));
    };
    if let Some(kind) = bson_type(&fields) {
        // A BSON value (or a look-alike) is not a scope: its fields are the library's.
        return Err(SeqError::invalid_argument(format!(
            "sequence name must be a string or a plain object of scalar fields; got a BSON \
             {} (an object with _bsontype)",
            quoted(&kind)
        )));
    }
    let keys = Object::keys(&fields)
        .map_err(|e| SeqError::invalid_argument(format!("cannot read the name: {e}")))?;
    if keys.len() > MAX_SCOPE_FIELDS {
        return Err(SeqError::invalid_argument(format!(
            "a scoped sequence name needs 1 to {MAX_SCOPE_FIELDS} fields; got {}",
            keys.len()
        )));
    }
    let mut scoped = Vec::with_capacity(keys.len());
    for key in keys {
        let v = property(&fields, &key)?;
        scoped.push((key.clone(), read_scalar(&key, &v)?));
    }
    CounterName::scoped(scoped)
}

fn read_scalar(key: &str, value: &Unknown) -> SeqResult<Scalar> {
    if let Some(text) = string(value) {
        return Ok(Scalar::Text(text));
    }
    if let Some(flag) = boolean(value) {
        return Ok(Scalar::Bool(flag));
    }
    if let Some(n) = number(value) {
        if n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER as f64 {
            return Ok(Scalar::Int(n as i64));
        }
        return Ok(Scalar::Double(n));
    }
    if let Some(n) = bigint_i64(value) {
        return Ok(Scalar::Int(n));
    }
    Err(SeqError::invalid_argument(format!(
        "field {} of a scoped sequence name must be a string, number, boolean or \
         bigint; got {}",
        quoted(key),
        describe(value)
    )))
}
