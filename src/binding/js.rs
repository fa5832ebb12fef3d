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
        ValueType::String if string_units(value).is_some_and(|n| n > MAX_STRING_UNITS) => {
            "a string longer than 16777216 characters"
        }
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

/// Longest string read from JavaScript, in UTF-16 units: longer ones are refused
/// before any copy (no name, option or BSON string can be this long).
pub const MAX_STRING_UNITS: usize = 16 * 1024 * 1024;

/// The length of a string in UTF-16 units, without copying it.
fn string_units(value: &Unknown) -> Option<usize> {
    let mut length = 0usize;
    // SAFETY: N-API length query (null buffer) on a live string of this env.
    let status = unsafe {
        napi::sys::napi_get_value_string_utf16(
            value.value().env,
            value.raw(),
            std::ptr::null_mut(),
            0,
            &mut length,
        )
    };
    (status == napi::sys::Status::napi_ok).then_some(length)
}

/// A string read whole into `buffer`: `None` for a value that is not a string,
/// `Some(None)` for a string the buffer may have cut (the caller reads it another way).
fn short_utf8(
    env: napi::sys::napi_env,
    value: napi::sys::napi_value,
    buffer: &mut [u8],
) -> Option<Option<&str>> {
    let mut written = 0usize;
    // SAFETY: N-API read of a live value of this env into a buffer that outlives the
    // call, which NUL-terminates within it; fails for anything not a string.
    let status = unsafe {
        napi::sys::napi_get_value_string_utf8(
            env,
            value,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &mut written,
        )
    };
    if status != napi::sys::Status::napi_ok {
        return None;
    }
    // Shorter than the buffer by more than one character: nothing was cut.
    let whole = written + 4 < buffer.len();
    Some(
        whole
            .then(|| std::str::from_utf8(&buffer[..written]).ok())
            .flatten(),
    )
}

/// A string of at most [`MAX_STRING_UNITS`], or `None` for any other value. Short
/// strings (names, options) are read in one call through a stack buffer.
pub fn string(value: &Unknown) -> Option<String> {
    let mut buffer = [0u8; 256];
    match short_utf8(value.value().env, value.raw(), &mut buffer)? {
        Some(short) => Some(short.to_string()),
        None => string_units(value)
            .is_some_and(|n| n <= MAX_STRING_UNITS)
            .then(|| convert::<String>(value))
            .flatten(),
    }
}

/// A string argument, or `INVALID_ARGUMENT`: `<what> must be a string; got <type>`.
pub fn required_string(what: &str, value: &Unknown) -> SeqResult<String> {
    string(value).ok_or_else(|| {
        SeqError::invalid_argument(format!("{what} must be a string; got {}", describe(value)))
    })
}

/// A number, or `None` for any other type.
pub fn number(value: &Unknown) -> Option<f64> {
    let mut out = 0.0;
    // SAFETY: N-API read of a live value of this env; fails for anything not a number.
    let status =
        unsafe { napi::sys::napi_get_value_double(value.value().env, value.raw(), &mut out) };
    (status == napi::sys::Status::napi_ok).then_some(out)
}

/// A boolean, or `None` for any other type.
pub fn boolean(value: &Unknown) -> Option<bool> {
    let mut out = false;
    // SAFETY: N-API read of a live value of this env; fails for anything not a boolean.
    let status =
        unsafe { napi::sys::napi_get_value_bool(value.value().env, value.raw(), &mut out) };
    (status == napi::sys::Status::napi_ok).then_some(out)
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

/// The value at `path` from the global object (`["Object", "isExtensible"]`), when every
/// step can be read.
pub(crate) fn global_path(
    env: napi::sys::napi_env,
    path: &[&std::ffi::CStr],
) -> Option<napi::sys::napi_value> {
    use napi::sys;
    let mut at = std::ptr::null_mut();
    // SAFETY: N-API reads on the current env, from handles it made.
    unsafe {
        if sys::napi_get_global(env, &mut at) != sys::Status::napi_ok {
            return None;
        }
        for name in path {
            let mut next = std::ptr::null_mut();
            if sys::napi_get_named_property(env, at, name.as_ptr(), &mut next)
                != sys::Status::napi_ok
            {
                return None;
            }
            at = next;
        }
    }
    Some(at)
}

/// Calls the built-in at `path` with `this` and `args`, for a boolean answer. `None` when
/// the call threw (a Proxy's trap; the exception stays pending for the boundary).
fn builtin_bool(
    env: napi::sys::napi_env,
    path: &[&std::ffi::CStr],
    this: napi::sys::napi_value,
    args: &[napi::sys::napi_value],
) -> Option<bool> {
    use napi::sys;
    let function = global_path(env, path)?;
    let mut answer = std::ptr::null_mut();
    let mut yes = false;
    // SAFETY: N-API calls on the current env with handles it made.
    unsafe {
        (sys::napi_call_function(env, this, function, args.len(), args.as_ptr(), &mut answer)
            == sys::Status::napi_ok
            && sys::napi_get_value_bool(env, answer, &mut yes) == sys::Status::napi_ok)
            .then_some(yes)
    }
}

/// `Object.prototype.toString.call(value)` (`"[object RegExp]"`), which answers alike for a
/// value made in any realm (a Jest test file, a `vm` context), where `instanceof` against
/// this realm's globals answers false. `None` when it threw (a Proxy's trap).
pub fn string_tag(value: &Unknown) -> Option<String> {
    use napi::sys;
    let env = value.value().env;
    let function = global_path(env, &[c"Object", c"prototype", c"toString"])?;
    let mut answer = std::ptr::null_mut();
    // SAFETY: N-API call on the current env with handles it made.
    let called = unsafe {
        sys::napi_call_function(env, value.raw(), function, 0, std::ptr::null(), &mut answer)
    } == sys::Status::napi_ok;
    if !called {
        return None;
    }
    // SAFETY: `answer` is a live value of this env.
    let answer = unsafe { Unknown::from_napi_value(env, answer) }.ok()?;
    string(&answer)
}

/// `Object.isExtensible(object)`: whether properties can be added to it (false for a
/// frozen, sealed or `Object.preventExtensions` object). `None` when asking threw (a
/// Proxy's trap; the exception stays pending for the boundary).
pub fn is_extensible(object: &Object) -> Option<bool> {
    let env = object.value().env;
    let class = global_path(env, &[c"Object"])?;
    builtin_bool(env, &[c"Object", c"isExtensible"], class, &[object.raw()])
}

/// Whether `key` is an own enumerable property of `object`, the only kind the Node
/// driver serializes (`Object.prototype.propertyIsEnumerable`). `None` when asking threw.
pub fn is_own_enumerable(object: &Object, key: &str) -> Option<bool> {
    let env = object.value().env;
    let mut name = std::ptr::null_mut();
    // SAFETY: N-API string creation on the current env.
    let made = unsafe {
        napi::sys::napi_create_string_utf8(env, key.as_ptr().cast(), key.len() as isize, &mut name)
    } == napi::sys::Status::napi_ok;
    if !made {
        return None;
    }
    builtin_bool(
        env,
        &[c"Object", c"prototype", c"propertyIsEnumerable"],
        object.raw(),
        &[name],
    )
}

/// `key in object`: own or inherited. `None` when asking threw.
pub fn has_property(object: &Object, key: &str) -> Option<bool> {
    let env = object.value().env;
    let key = std::ffi::CString::new(key).ok()?;
    let mut yes = false;
    // SAFETY: N-API call on a live object of this env; `key` is NUL-terminated.
    (unsafe { napi::sys::napi_has_named_property(env, object.raw(), key.as_ptr(), &mut yes) }
        == napi::sys::Status::napi_ok)
        .then_some(yes)
}

/// How many distinct values `array` holds (`new Set(array).size`). `None` when it threw.
pub fn distinct_count(array: &Object) -> Option<u32> {
    use napi::sys;
    let env = array.value().env;
    let class = global_path(env, &[c"Set"])?;
    let mut set = std::ptr::null_mut();
    let mut size = std::ptr::null_mut();
    let mut count = 0u32;
    // SAFETY: N-API calls on the current env with handles it made.
    unsafe {
        (sys::napi_new_instance(env, class, 1, [array.raw()].as_ptr(), &mut set)
            == sys::Status::napi_ok
            && sys::napi_get_named_property(env, set, c"size".as_ptr(), &mut size)
                == sys::Status::napi_ok
            && sys::napi_get_value_uint32(env, size, &mut count) == sys::Status::napi_ok)
            .then_some(count)
    }
}

/// Sets `object[key] = value`, then reads it back: whether the object kept exactly that
/// value (`===`). A frozen object, a setter or a Proxy can refuse a write silently;
/// `Err` when setting or reading threw (the exception stays pending for the boundary).
pub fn set_and_check(object: &Object, key: &str, value: &Unknown) -> napi::Result<bool> {
    use napi::sys;
    let env = object.value().env;
    let key = std::ffi::CString::new(key)
        .map_err(|_| napi::Error::new(napi::Status::InvalidArg, "a field name holds NUL"))?;
    let mut read = std::ptr::null_mut();
    let mut equal = false;
    // SAFETY: N-API calls on live values of this env; `key` is NUL-terminated.
    unsafe {
        napi::check_status!(sys::napi_set_named_property(
            env,
            object.raw(),
            key.as_ptr(),
            value.raw()
        ))?;
        napi::check_status!(sys::napi_get_named_property(
            env,
            object.raw(),
            key.as_ptr(),
            &mut read
        ))?;
        napi::check_status!(sys::napi_strict_equals(env, read, value.raw(), &mut equal))?;
    }
    Ok(equal)
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

/// The length of an array, or `None` for any other value.
pub fn array_length(value: &Unknown) -> Option<u32> {
    if !value.is_array().unwrap_or(false) {
        return None;
    }
    let mut length = 0u32;
    // SAFETY: N-API array access on a live array of this env.
    let status =
        unsafe { napi::sys::napi_get_array_length(value.value().env, value.raw(), &mut length) };
    (status == napi::sys::Status::napi_ok).then_some(length)
}

/// Element `index` of an array (`undefined` past its end), or `None` when reading it
/// failed (a getter or Proxy trap threw).
pub fn element<'a>(value: &Unknown<'a>, index: u32) -> Option<Unknown<'a>> {
    let env = value.value().env;
    let mut item = std::ptr::null_mut();
    // SAFETY: N-API element read on a live object of this env.
    unsafe {
        (napi::sys::napi_get_element(env, value.raw(), index, &mut item)
            == napi::sys::Status::napi_ok)
            .then(|| Unknown::from_raw_unchecked(env, item))
    }
}

/// The elements of an array of at most `max` elements (checked before anything is
/// allocated); `None` for any other value, a longer array, or an element that cannot be
/// read.
pub fn array_items<'a>(value: &Unknown<'a>, max: u32) -> Option<Vec<Unknown<'a>>> {
    let length = array_length(value).filter(|n| *n <= max)?;
    (0..length).map(|index| element(value, index)).collect()
}

/// Most own properties read from an options-like object.
pub const MAX_OWN_KEYS: u32 = 1024;

/// Calls `each(key, value)` for every own enumerable string-keyed property of `object`
/// (as `Object.keys` lists them),
/// in order, reading each key into a stack buffer (no allocation for keys up to 63
/// bytes) and each value by its key, as the hot paths of every call need. Refuses an
/// object with more than [`MAX_OWN_KEYS`] keys; a key or value that cannot be read (a
/// Proxy trap that throws) stops with `INVALID_ARGUMENT`.
pub fn for_each_property<'a>(
    object: &Object<'a>,
    what: &str,
    mut each: impl FnMut(&str, Unknown<'a>) -> SeqResult<()>,
) -> SeqResult<()> {
    use napi::sys;
    let env = object.value().env;
    let unreadable = || SeqError::invalid_argument(format!("cannot read the keys of {what}"));
    let mut names = std::ptr::null_mut();
    let mut length = 0u32;
    // SAFETY: N-API calls on a live object of this env.
    unsafe {
        if sys::napi_get_all_property_names(
            env,
            object.raw(),
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut names,
        ) != sys::Status::napi_ok
            || sys::napi_get_array_length(env, names, &mut length) != sys::Status::napi_ok
        {
            return Err(unreadable());
        }
    }
    if length > MAX_OWN_KEYS {
        return Err(SeqError::invalid_argument(format!(
            "{what} has {length} keys; at most {MAX_OWN_KEYS} are read"
        )));
    }
    let mut buffer = [0u8; 64];
    for index in 0..length {
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            if sys::napi_get_element(env, names, index, &mut key) != sys::Status::napi_ok
                || sys::napi_get_property(env, object.raw(), key, &mut value)
                    != sys::Status::napi_ok
            {
                return Err(unreadable());
            }
        }
        // SAFETY: `value` is a live value of this env.
        let value = unsafe { Unknown::from_raw_unchecked(env, value) };
        match short_utf8(env, key, &mut buffer).ok_or_else(unreadable)? {
            Some(short) => each(short, value)?,
            None => {
                // SAFETY: `key` is a live string of this env.
                let key = unsafe { Unknown::from_raw_unchecked(env, key) };
                each(&string(&key).ok_or_else(unreadable)?, value)?;
            }
        }
    }
    Ok(())
}
