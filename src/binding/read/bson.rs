//! JavaScript documents as BSON, for the inserts this package runs itself (gapless mode)
//! and for locators: the types the Node driver's BSON library writes for plain values,
//! plus its `ObjectId`, `Long`, `Int32`, `Double` and `Decimal128` wrappers, `Date`,
//! `RegExp`, BigInt and Buffers. Anything else is refused with `INVALID_ARGUMENT`.
//!
//! A wrapper is an instance of the BSON library, as the Node driver checks it: an object
//! with a string `_bsontype` that also answers `Symbol.for('@@mdb.bson.version')` with
//! the library's major version. A look-alike (`JSON.parse('{"_bsontype":"Int32",…}')`,
//! which the driver refuses with `BSONVersionError`) is refused, and a wrapper whose
//! value does not fit its type is refused rather than cut to fit.

use mongodb::bson::{oid::ObjectId, spec::BinarySubtype, Binary, Bson, Document, Regex};
use napi::bindgen_prelude::{BigInt, Buffer, FromNapiValue, JsObjectValue, Object, Unknown};
use napi::{sys, JsValue, ValueType};

use crate::binding::js::{
    array_items, array_length, describe, global_path, number, object_or_array, property, string,
    string_tag, type_of,
};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::quote::quoted;

/// Deepest nesting accepted (MongoDB's limit).
pub const MAX_DEPTH: usize = 100;
/// Largest document accepted, in BSON bytes (MongoDB's limit).
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// What a conversion has used so far: its BSON size, counted as it goes so that no
/// array, string or shared subtree can make it allocate more than a document can hold,
/// and the objects on the path to the current value, to name circular references.
struct Conversion {
    bytes: usize,
    path_objects: Vec<sys::napi_value>,
    /// How the Node client would write what JSON has no type for.
    rules: DocumentRules,
}

/// The Node client's settings for what JSON has no type for, which a document written
/// by this package follows as the Node driver's insert would.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocumentRules {
    /// `ignoreUndefined`: object fields holding `undefined` are left out instead of
    /// written as `null` (array elements that are `undefined` are still `null`, as the
    /// driver writes them).
    pub ignore_undefined: bool,
    /// `serializeFunctions`: the driver would store a function field as BSON Code, which
    /// this package does not write, so such a field is refused (without it, a function
    /// field is left out, as the driver leaves it out).
    pub serialize_functions: bool,
}

impl Conversion {
    /// Counts `more` bytes; refuses once the document outgrows [`MAX_DOCUMENT_BYTES`].
    fn spend(&mut self, path: &str, more: usize) -> SeqResult<()> {
        self.bytes = self.bytes.saturating_add(more);
        if self.bytes > MAX_DOCUMENT_BYTES {
            return Err(SeqError::invalid_argument(format!(
                "document is larger than MongoDB's 16 MiB limit (at field {})",
                quoted(path)
            )));
        }
        Ok(())
    }

    /// Bytes left before the limit.
    fn left(&self) -> usize {
        MAX_DOCUMENT_BYTES.saturating_sub(self.bytes)
    }
}

fn unsupported(path: &str, what: &str) -> SeqError {
    SeqError::invalid_argument(format!(
        "field {} holds {what}, which this package cannot write itself (gapless mode)",
        quoted(path)
    ))
}

/// A plain JavaScript object as a BSON document, with `undefined` fields as `null` (as
/// the Node driver writes them by default).
pub fn to_document(value: &Unknown) -> SeqResult<Document> {
    to_document_with(value, DocumentRules::default())
}

/// [`to_document`], following the Node client's `rules`.
pub fn to_document_with(value: &Unknown, rules: DocumentRules) -> SeqResult<Document> {
    let mut conversion = Conversion {
        bytes: 5,
        path_objects: Vec::new(),
        rules,
    };
    match to_bson(value, "", 0, &mut conversion)? {
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

/// The array of `[key, value]` pairs of a `Map` (as `Array.from(map)` gives them), which the
/// Node driver stores as a document; `None` for anything else.
fn map_entries<'a>(value: &Unknown<'a>) -> Option<Unknown<'a>> {
    let env = value.value().env;
    // By its tag, as the Node driver's BSON library tells a Map: a Map of another realm
    // (a Jest test file) is no `instanceof` this realm's `Map`.
    if string_tag(value)? != "[object Map]" {
        return None;
    }
    // SAFETY: N-API calls on the current env with handles it made.
    unsafe {
        let array = global_path(env, &[c"Array"])?;
        let from = global_path(env, &[c"Array", c"from"])?;
        let mut pairs = std::ptr::null_mut();
        let args = [value.raw()];
        if sys::napi_call_function(env, array, from, 1, args.as_ptr(), &mut pairs)
            != sys::Status::napi_ok
        {
            return None;
        }
        Unknown::from_napi_value(env, pairs).ok()
    }
}

fn is_buffer(value: &Unknown) -> bool {
    let mut yes = false;
    // SAFETY: as above.
    unsafe {
        sys::napi_is_buffer(value.value().env, value.raw(), &mut yes) == sys::Status::napi_ok && yes
    }
}

/// `parent.key` (or `key` at the top).
fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The bytes a value of this BSON type takes beyond its own content.
fn fixed_size(value: &Bson) -> usize {
    match value {
        Bson::Boolean(_) => 1,
        Bson::Int32(_) => 4,
        Bson::Double(_) | Bson::Int64(_) | Bson::DateTime(_) => 8,
        Bson::ObjectId(_) => 12,
        Bson::Decimal128(_) => 16,
        _ => 0,
    }
}

fn to_bson(value: &Unknown, path: &str, depth: usize, conv: &mut Conversion) -> SeqResult<Bson> {
    if depth > MAX_DEPTH {
        let circular = conv.path_objects.iter().any(|seen| same(value, *seen));
        return Err(unsupported(
            path,
            if circular {
                "a circular reference"
            } else {
                "nesting deeper than 100 levels"
            },
        ));
    }
    let bson = match type_of(value) {
        ValueType::Null | ValueType::Undefined => Bson::Null,
        ValueType::Boolean => Bson::Boolean(crate::binding::js::boolean(value).unwrap_or(false)),
        ValueType::String => {
            let text = string(value).ok_or_else(|| unsupported(path, describe(value)))?;
            conv.spend(path, text.len() + 5)?;
            Bson::String(text)
        }
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
        ValueType::Object => {
            conv.path_objects.push(value.raw());
            let converted = object_to_bson(value, path, depth, conv);
            conv.path_objects.pop();
            converted?
        }
        _ => return Err(unsupported(path, describe(value))),
    };
    conv.spend(path, fixed_size(&bson))?;
    Ok(bson)
}

/// Whether `value` is the very object `other` (`===`).
fn same(value: &Unknown, other: sys::napi_value) -> bool {
    let mut equal = false;
    // SAFETY: N-API comparison of live values of this env.
    unsafe {
        sys::napi_strict_equals(value.value().env, value.raw(), other, &mut equal)
            == sys::Status::napi_ok
            && equal
    }
}

/// The elements of an array that fits in what is left of the document: each element
/// takes at least its type byte, a key and its terminator, so a longer array is refused
/// before anything is read or allocated.
fn bounded_items<'a>(
    value: &Unknown<'a>,
    path: &str,
    conv: &Conversion,
) -> SeqResult<Vec<Unknown<'a>>> {
    let length = array_length(value).unwrap_or(0) as usize;
    if length.saturating_mul(3) > conv.left() {
        return Err(SeqError::invalid_argument(format!(
            "field {} holds an array of {length} elements, more than a 16 MiB document \
             can hold",
            quoted(path)
        )));
    }
    array_items(value, length as u32).ok_or_else(|| unsupported(path, "an unreadable array"))
}

fn object_to_bson(
    value: &Unknown,
    path: &str,
    depth: usize,
    conv: &mut Conversion,
) -> SeqResult<Bson> {
    if let Some(ms) = is_date(value) {
        return Ok(Bson::DateTime(mongodb::bson::DateTime::from_millis(
            ms as i64,
        )));
    }
    if is_buffer(value) {
        // SAFETY: checked to be a Buffer.
        let buffer = unsafe { Buffer::from_napi_value(value.value().env, value.raw()) }
            .map_err(|_| unsupported(path, "an unreadable Buffer"))?;
        conv.spend(path, buffer.len() + 5)?;
        return Ok(Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: buffer.to_vec(),
        }));
    }
    conv.spend(path, 5)?;
    if let Some(pairs) = map_entries(value) {
        let pairs = bounded_items(&pairs, path, conv)?;
        let mut doc = Document::new();
        for pair in pairs {
            let items = array_items(&pair, 2).unwrap_or_default();
            let (Some(key), Some(item)) = (items.first().and_then(string), items.get(1)) else {
                return Err(unsupported(path, "a Map with a key that is not a string"));
            };
            if conv.rules.ignore_undefined && type_of(item) == ValueType::Undefined {
                continue;
            }
            let field = child_path(path, &key);
            conv.spend(&field, key.len() + 2)?;
            let converted = to_bson(item, &field, depth + 1, conv)?;
            doc.insert(key, converted);
        }
        return Ok(Bson::Document(doc));
    }
    if array_length(value).is_some() {
        let items = bounded_items(value, path, conv)?;
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let key = i.to_string();
            conv.spend(path, key.len() + 2)?;
            out.push(to_bson(item, &child_path(path, &key), depth + 1, conv)?);
        }
        return Ok(Bson::Array(out));
    }
    let obj = object_or_array(value).ok_or_else(|| unsupported(path, describe(value)))?;
    if let Some(kind) = bson_type(&obj) {
        if !is_bson_instance(&obj) {
            return Err(look_alike(path, &kind));
        }
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
        conv.spend(path, pattern.len() + flags.len() + 2)?;
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
        match type_of(&field) {
            ValueType::Function if conv.rules.serialize_functions => {
                return Err(unsupported(
                    &child_path(path, &key),
                    "a function, which the client's serializeFunctions would store as BSON \
                     Code",
                ))
            }
            ValueType::Function | ValueType::Symbol => continue,
            ValueType::Undefined if conv.rules.ignore_undefined => continue,
            _ => {}
        }
        let child = child_path(path, &key);
        conv.spend(&child, key.len() + 2)?;
        let converted = to_bson(&field, &child, depth + 1, conv)?;
        doc.insert(key, converted);
    }
    Ok(Bson::Document(doc))
}

/// The `_bsontype` of an object that claims to be a BSON wrapper (a string there), real
/// or not: [`is_bson_instance`] tells.
pub fn bson_type(obj: &Object) -> Option<String> {
    property(obj, "_bsontype").ok().as_ref().and_then(string)
}

/// The key of the symbol by which the BSON library's values give its major version
/// (`Symbol.for('@@mdb.bson.version')`), as the Node driver checks them.
const BSON_VERSION_KEY: &str = "@@mdb.bson.version";

/// Whether `obj` is a value of the BSON library (of any major version since the symbol
/// exists): its `Symbol.for('@@mdb.bson.version')` property is a whole number. JSON and
/// object literals cannot make such a property by accident.
pub fn is_bson_instance(obj: &Object) -> bool {
    let env = obj.value().env;
    let version = || -> Option<f64> {
        let symbols = global_path(env, &[c"Symbol"])?;
        let symbol_for = global_path(env, &[c"Symbol", c"for"])?;
        let mut key = std::ptr::null_mut();
        let mut symbol = std::ptr::null_mut();
        let mut version = std::ptr::null_mut();
        let mut n = 0.0;
        // SAFETY: N-API calls on the current env with handles it made; the key's bytes
        // and length are those of a live `&str`.
        unsafe {
            (sys::napi_create_string_utf8(
                env,
                BSON_VERSION_KEY.as_ptr().cast(),
                BSON_VERSION_KEY.len() as isize,
                &mut key,
            ) == sys::Status::napi_ok
                && sys::napi_call_function(
                    env,
                    symbols,
                    symbol_for,
                    1,
                    [key].as_ptr(),
                    &mut symbol,
                ) == sys::Status::napi_ok
                && sys::napi_get_property(env, obj.raw(), symbol, &mut version)
                    == sys::Status::napi_ok
                && sys::napi_get_value_double(env, version, &mut n) == sys::Status::napi_ok)
                .then_some(n)
        }
    };
    version().is_some_and(|v| v.fract() == 0.0 && v >= 1.0)
}

/// The refusal of an object that has a `_bsontype` but is no value of the BSON library.
fn look_alike(path: &str, kind: &str) -> SeqError {
    SeqError::invalid_argument(format!(
        "field {} holds an object with _bsontype {} that is not a value of the BSON \
         library (a look-alike, e.g. from JSON.parse, which the Node driver refuses too); \
         use the driver's own classes (Int32, Long, ObjectId…)",
        quoted(path),
        quoted(kind)
    ))
}

/// Whether `value` is a regular expression of any realm: `instanceof RegExp` or tagged
/// `[object RegExp]`, as the Node driver's BSON library tells one.
fn is_regexp(value: &Unknown) -> bool {
    let env = value.value().env;
    let mut yes = false;
    // SAFETY: N-API calls on live values of this env.
    let here = unsafe {
        global_path(env, &[c"RegExp"]).is_some_and(|ctor| {
            sys::napi_instanceof(env, value.raw(), ctor, &mut yes) == sys::Status::napi_ok && yes
        })
    };
    here || string_tag(value).is_some_and(|tag| tag == "[object RegExp]")
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
        "Int32" => match wrapped_number(obj, "value") {
            // Exactly, never cut to fit: a whole number within the 32-bit range.
            Some(n) if n.fract() == 0.0 && n >= f64::from(i32::MIN) && n <= f64::from(i32::MAX) => {
                Ok(Bson::Int32(n as i32))
            }
            _ => Err(unsupported(
                path,
                "an Int32 whose value is not a 32-bit integer",
            )),
        },
        "Double" => wrapped_number(obj, "value")
            .map(Bson::Double)
            .ok_or_else(|| unsupported(path, "a Double without a number value")),
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
