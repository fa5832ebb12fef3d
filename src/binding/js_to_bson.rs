//! JavaScript documents as BSON, for the inserts this package runs itself (gapless mode):
//! the types the Node driver's BSON library writes for plain values, plus its `ObjectId`,
//! `Long`, `Int32`, `Double`, `Decimal128` and `Binary` wrappers, `Date`, `RegExp`,
//! BigInt and Buffers. Anything else is refused with `INVALID_ARGUMENT`.

use mongodb::bson::{oid::ObjectId, spec::BinarySubtype, Binary, Bson, Document, Regex};
use napi::bindgen_prelude::{BigInt, Buffer, FromNapiValue, JsObjectValue, Object, Unknown};
use napi::{sys, JsValue, ValueType};

use crate::binding::js_read::{
    array_items, describe, number, object_or_array, property, string, type_of,
};
use crate::engine::error::{SeqError, SeqResult};

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 100;

fn unsupported(path: &str, what: &str) -> SeqError {
    SeqError::invalid_argument(format!(
        "field '{path}' holds {what}, which this package cannot write itself (gapless mode)"
    ))
}

/// A plain JavaScript object as a BSON document.
pub fn to_document(value: &Unknown) -> SeqResult<Document> {
    match to_bson(value, "", 0)? {
        Bson::Document(doc) => Ok(doc),
        _ => Err(SeqError::invalid_argument(format!(
            "a document must be a plain object; got {}",
            describe(value)
        ))),
    }
}

fn is_date(value: &Unknown) -> Option<f64> {
    let env = value.value().env;
    let mut yes = false;
    let mut ms = 0.0;
    // SAFETY: N-API queries on a live value of its env.
    unsafe {
        (sys::napi_is_date(env, value.raw(), &mut yes) == sys::Status::napi_ok
            && yes
            && sys::napi_get_date_value(env, value.raw(), &mut ms) == sys::Status::napi_ok)
            .then_some(ms)
    }
}

/// The `[key, value]` pairs of a `Map` (as `Array.from(map)` gives them), which the
/// Node driver stores as a document; `None` for anything else.
fn map_entries<'a>(value: &Unknown<'a>) -> Option<Vec<Unknown<'a>>> {
    let env = value.value().env;
    let named = |object: sys::napi_value, name: &std::ffi::CStr| {
        let mut out = std::ptr::null_mut();
        // SAFETY: N-API property read on a live object of this env.
        let ok = unsafe { sys::napi_get_named_property(env, object, name.as_ptr(), &mut out) }
            == sys::Status::napi_ok;
        ok.then_some(out)
    };
    let mut global = std::ptr::null_mut();
    // SAFETY: N-API calls on the current env with handles it made.
    unsafe {
        if sys::napi_get_global(env, &mut global) != sys::Status::napi_ok {
            return None;
        }
        let map = named(global, c"Map")?;
        let mut is_map = false;
        if sys::napi_instanceof(env, value.raw(), map, &mut is_map) != sys::Status::napi_ok
            || !is_map
        {
            return None;
        }
        let array = named(global, c"Array")?;
        let from = named(array, c"from")?;
        let mut pairs = std::ptr::null_mut();
        let args = [value.raw()];
        if sys::napi_call_function(env, array, from, 1, args.as_ptr(), &mut pairs)
            != sys::Status::napi_ok
        {
            return None;
        }
        let pairs = Unknown::from_napi_value(env, pairs).ok()?;
        array_items(&pairs)
    }
}

fn is_buffer(value: &Unknown) -> bool {
    let mut yes = false;
    // SAFETY: as above.
    unsafe {
        sys::napi_is_buffer(value.value().env, value.raw(), &mut yes) == sys::Status::napi_ok && yes
    }
}

fn to_bson(value: &Unknown, path: &str, depth: usize) -> SeqResult<Bson> {
    if depth > MAX_DEPTH {
        return Err(unsupported(path, "nesting deeper than 100 levels"));
    }
    Ok(match type_of(value) {
        ValueType::Null | ValueType::Undefined => Bson::Null,
        ValueType::Boolean => {
            Bson::Boolean(crate::binding::js_read::boolean(value).unwrap_or(false))
        }
        ValueType::String => Bson::String(string(value).unwrap_or_default()),
        ValueType::Number => {
            let n = number(value).unwrap_or(f64::NAN);
            if n.fract() == 0.0
                && n >= f64::from(i32::MIN)
                && n <= f64::from(i32::MAX)
                && !(n == 0.0 && n.is_sign_negative())
            {
                Bson::Int32(n as i32)
            } else {
                Bson::Double(n)
            }
        }
        ValueType::BigInt => {
            // SAFETY: type checked above.
            let big = unsafe { BigInt::from_napi_value(value.value().env, value.raw()) }
                .map_err(|_| unsupported(path, "an unreadable bigint"))?;
            let (v, lossless) = big.get_i64();
            if !lossless {
                return Err(unsupported(path, "a bigint beyond 64 bits"));
            }
            Bson::Int64(v)
        }
        ValueType::Object => object_to_bson(value, path, depth)?,
        _ => return Err(unsupported(path, describe(value))),
    })
}

fn object_to_bson(value: &Unknown, path: &str, depth: usize) -> SeqResult<Bson> {
    if let Some(ms) = is_date(value) {
        return Ok(Bson::DateTime(mongodb::bson::DateTime::from_millis(
            ms as i64,
        )));
    }
    if is_buffer(value) {
        // SAFETY: checked to be a Buffer.
        let buffer = unsafe { Buffer::from_napi_value(value.value().env, value.raw()) }
            .map_err(|_| unsupported(path, "an unreadable Buffer"))?;
        return Ok(Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: buffer.to_vec(),
        }));
    }
    if let Some(pairs) = map_entries(value) {
        let mut doc = Document::new();
        for pair in pairs {
            let items = array_items(&pair).unwrap_or_default();
            let (Some(key), Some(item)) = (items.first().and_then(string), items.get(1)) else {
                return Err(unsupported(path, "a Map with a key that is not a string"));
            };
            let field = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            doc.insert(key, to_bson(item, &field, depth + 1)?);
        }
        return Ok(Bson::Document(doc));
    }
    if let Some(items) = array_items(value) {
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(to_bson(item, &format!("{path}.{i}"), depth + 1)?);
        }
        return Ok(Bson::Array(out));
    }
    let obj = object_or_array(value).ok_or_else(|| unsupported(path, describe(value)))?;
    if let Some(kind) = property(&obj, "_bsontype").ok().as_ref().and_then(string) {
        return bson_wrapper(&obj, &kind, path);
    }
    if is_regexp(value) {
        let pattern = property(&obj, "source")
            .ok()
            .as_ref()
            .and_then(string)
            .unwrap_or_default();
        let flags = property(&obj, "flags")
            .ok()
            .as_ref()
            .and_then(string)
            .unwrap_or_default();
        let mut options: Vec<char> = flags.chars().filter(|c| "imsux".contains(*c)).collect();
        options.sort_unstable();
        return Ok(Bson::RegularExpression(Regex {
            pattern,
            options: options.into_iter().collect(),
        }));
    }
    let keys = Object::keys(&obj).map_err(|_| unsupported(path, "an unreadable object"))?;
    let mut doc = Document::new();
    for key in keys {
        let field = property(&obj, &key)?;
        let child = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        if matches!(type_of(&field), ValueType::Function | ValueType::Symbol) {
            continue;
        }
        doc.insert(key, to_bson(&field, &child, depth + 1)?);
    }
    Ok(Bson::Document(doc))
}

/// `value instanceof RegExp`, with the global `RegExp`.
fn is_regexp(value: &Unknown) -> bool {
    let env = value.value().env;
    let mut global = std::ptr::null_mut();
    let mut ctor = std::ptr::null_mut();
    let mut yes = false;
    // SAFETY: N-API calls on live values of this env; the name is NUL-terminated.
    unsafe {
        sys::napi_get_global(env, &mut global) == sys::Status::napi_ok
            && sys::napi_get_named_property(env, global, c"RegExp".as_ptr(), &mut ctor)
                == sys::Status::napi_ok
            && sys::napi_instanceof(env, value.raw(), ctor, &mut yes) == sys::Status::napi_ok
            && yes
    }
}

fn wrapped_number(obj: &Object, key: &str) -> Option<f64> {
    property(obj, key).ok().as_ref().and_then(number)
}

fn bson_wrapper(obj: &Object, kind: &str, path: &str) -> SeqResult<Bson> {
    let call_string = |method: &str| -> Option<String> {
        let f: napi::bindgen_prelude::Function<(), String> = obj.get_named_property(method).ok()?;
        f.apply(obj, ()).ok()
    };
    match kind {
        "ObjectId" | "ObjectID" => {
            let hex = call_string("toHexString")
                .ok_or_else(|| unsupported(path, "an unreadable ObjectId"))?;
            Ok(Bson::ObjectId(
                ObjectId::parse_str(&hex).map_err(|_| unsupported(path, "an invalid ObjectId"))?,
            ))
        }
        "Long" => {
            let text =
                call_string("toString").ok_or_else(|| unsupported(path, "an unreadable Long"))?;
            Ok(Bson::Int64(
                text.parse()
                    .map_err(|_| unsupported(path, "a Long beyond 64 bits"))?,
            ))
        }
        "Int32" => Ok(Bson::Int32(
            wrapped_number(obj, "value").unwrap_or(0.0) as i32
        )),
        "Double" => Ok(Bson::Double(
            wrapped_number(obj, "value").unwrap_or(f64::NAN),
        )),
        "Decimal128" => {
            let text = call_string("toString")
                .ok_or_else(|| unsupported(path, "an unreadable Decimal128"))?;
            Ok(Bson::Decimal128(
                text.parse()
                    .map_err(|_| unsupported(path, "an invalid Decimal128"))?,
            ))
        }
        other => Err(unsupported(path, &format!("a BSON {other}"))),
    }
}
