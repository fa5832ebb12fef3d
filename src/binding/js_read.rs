//! Reading loosely typed JavaScript values, with engine errors for the wrong type.

use napi::bindgen_prelude::{BigInt, FromNapiValue, JsObjectValue, Object, Unknown};
use napi::{JsValue, ValueType};

use crate::engine::error::{SeqError, SeqResult};

/// The value's JavaScript type (`Unknown` when napi cannot tell).
pub fn type_of(value: &Unknown) -> ValueType {
    value.get_type().unwrap_or(ValueType::Unknown)
}

/// `undefined` or `null`.
pub fn is_nullish(value: &Unknown) -> bool {
    matches!(type_of(value), ValueType::Undefined | ValueType::Null)
}

/// How a value is described in an error message.
pub fn describe(value: &Unknown) -> &'static str {
    match type_of(value) {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "a boolean",
        ValueType::Number => "a number",
        ValueType::String => "a string",
        ValueType::Symbol => "a symbol",
        ValueType::Object if value.is_array().unwrap_or(false) => "an array",
        ValueType::Object => "an object",
        ValueType::Function => "a function",
        ValueType::BigInt => "a bigint",
        _ => "an unsupported value",
    }
}

fn convert<T: FromNapiValue>(value: &Unknown) -> Option<T> {
    // SAFETY: callers check the JavaScript type before converting.
    unsafe { T::from_napi_value(value.value().env, value.raw()).ok() }
}

/// A string, or `None` for any other type.
pub fn string(value: &Unknown) -> Option<String> {
    (type_of(value) == ValueType::String)
        .then(|| convert::<String>(value))
        .flatten()
}

/// A number, or `None` for any other type.
pub fn number(value: &Unknown) -> Option<f64> {
    (type_of(value) == ValueType::Number)
        .then(|| convert::<f64>(value))
        .flatten()
}

/// A boolean, or `None` for any other type.
pub fn boolean(value: &Unknown) -> Option<bool> {
    (type_of(value) == ValueType::Boolean)
        .then(|| convert::<bool>(value))
        .flatten()
}

/// A BigInt that fits in 64 bits, or `None`.
pub fn bigint_i64(value: &Unknown) -> Option<i64> {
    if type_of(value) != ValueType::BigInt {
        return None;
    }
    let (v, lossless) = convert::<BigInt>(value)?.get_i64();
    lossless.then_some(v)
}

/// A plain object (not an array, not a function), or `None`.
pub fn object<'a>(value: &Unknown<'a>) -> Option<Object<'a>> {
    if type_of(value) != ValueType::Object || value.is_array().unwrap_or(true) {
        return None;
    }
    convert::<Object>(value)
}

/// An object or an array as an `Object`, or `None`.
pub fn object_or_array<'a>(value: &Unknown<'a>) -> Option<Object<'a>> {
    (type_of(value) == ValueType::Object)
        .then(|| convert::<Object>(value))
        .flatten()
}

/// Property `key` of `object` (`undefined` when absent).
pub fn property<'a>(object: &Object<'a>, key: &str) -> SeqResult<Unknown<'a>> {
    object
        .get_named_property::<Unknown>(key)
        .map_err(|e| SeqError::invalid_argument(format!("cannot read property '{key}': {e}")))
}

/// Property `key` as a string when it is one.
pub fn string_property(object: &Object, key: &str) -> Option<String> {
    property(object, key).ok().as_ref().and_then(string)
}

/// Property `key` as an object when it is one.
pub fn object_property<'a>(object: &Object<'a>, key: &str) -> Option<Object<'a>> {
    property(object, key).ok().as_ref().and_then(self::object)
}

/// The elements of an array, or `None` for any other value.
pub fn array_items<'a>(value: &Unknown<'a>) -> Option<Vec<Unknown<'a>>> {
    if !value.is_array().unwrap_or(false) {
        return None;
    }
    let env = value.value().env;
    let mut length = 0u32;
    // SAFETY: N-API array access on a live array of this env.
    unsafe {
        if napi::sys::napi_get_array_length(env, value.raw(), &mut length)
            != napi::sys::Status::napi_ok
        {
            return None;
        }
        let mut items = Vec::with_capacity(length as usize);
        for index in 0..length {
            let mut item = std::ptr::null_mut();
            if napi::sys::napi_get_element(env, value.raw(), index, &mut item)
                != napi::sys::Status::napi_ok
            {
                return None;
            }
            items.push(Unknown::from_raw_unchecked(env, item));
        }
        Some(items)
    }
}
