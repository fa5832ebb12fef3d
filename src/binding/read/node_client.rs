//! A Node driver client's effective options (`client.options`) as engine values, without
//! what the driver itself put there: options this package does not know that hold what the
//! same driver gives a client made from a bare connection string (see `node_options`).

use napi::bindgen_prelude::{Env, Object, Unknown};
use napi::{sys, JsValue, ValueType};

use crate::binding::boundary::take_exception;
use crate::binding::js::{
    array_items, boolean, for_each_property, number, object, object_or_array, property, string,
    type_of,
};
use crate::binding::read::file_copies;
use crate::engine::client::connection::tls_file_copies;
use crate::engine::client::node_options::{
    file_copy_candidates, rule, unknown_keys, without_driver_defaults, NodeOptions, NodeValue, Rule,
};
use crate::engine::error::SeqResult;

/// The connection string the reference client is made from: it names no option, and a
/// driver's constructor only parses it (it connects on `connect()` or a first operation).
const BARE_URI: &str = "mongodb://localhost";
/// The class whose constructor makes the reference client. Only the driver's own class is
/// used, never a subclass, whose constructor might do anything (connect, say).
const DRIVER_CLASS: &str = "MongoClient";
/// The parent class of the driver's `MongoClient` (drivers 6 and 7).
const DRIVER_BASE: &str = "TypedEventEmitter";
/// How far up the prototype chain the driver's class is looked for.
const MAX_PROTOTYPES: usize = 8;

/// `client.options` (read as `options`) as the derivation reads it: what the user set, and
/// the options this package knows.
pub fn effective_options(env: &Env, client: &Object, options: &Object) -> SeqResult<NodeOptions> {
    let mut read = read_options(options)?;
    without_file_copies(env, options, &mut read);
    if unknown_keys(&read).next().is_none() {
        return Ok(read);
    }
    let defaults = driver_defaults(env, client, options, &read);
    Ok(without_driver_defaults(read, &defaults))
}

/// Removes from `read` the options (`ca`, `cert`, `key`) that hold the Node driver's own
/// copy of a TLS file: when it connects, the driver reads `tlsCAFile` into `ca` and
/// `tlsCertificateKeyFile` into `cert` and `key` (each only when unset) and keeps that copy,
/// also after the file is rewritten (a certificate rotated in place). A `Buffer` is taken
/// for that copy once it has been seen holding what its file holds, and from then on for
/// as long as it lives ([`file_copies`]): the derived client then reads the file itself
/// when it opens. A `Buffer` never seen equal to its file stays, and is refused by the
/// derivation: it was given in memory (the Node driver presents it, not the file), or it
/// is the copy of a file rewritten before this client's first counter call, which cannot
/// be told apart.
fn without_file_copies(env: &Env, options: &Object, read: &mut NodeOptions) {
    let candidates = file_copy_candidates(read);
    if candidates.is_empty() {
        return;
    }
    let equal_now = tls_file_copies(read);
    for key in candidates {
        let Ok(value) = property(options, key) else {
            // Whatever threw (a getter) must not fail the call here: the value stays compared.
            take_exception(env);
            continue;
        };
        if equal_now.contains(&key) {
            file_copies::remember(env, &value);
            read.remove(key);
        } else if file_copies::seen(env, &value) {
            read.remove(key);
        }
    }
}

/// For each key of `read` the table does not know, what a client of the same driver made
/// from [`BARE_URI`] holds there (a function only when it is the very function the user's
/// client holds). Empty when no such client can be made: then every set unknown key is
/// refused, as before drivers were compared.
fn driver_defaults(
    env: &Env,
    client: &Object,
    options: &Object,
    read: &NodeOptions,
) -> NodeOptions {
    let Some(bare) = bare_client_options(env, client) else {
        // Whatever threw (a getter, the constructor) must not fail the call here.
        take_exception(env);
        return NodeOptions::new();
    };
    let mut defaults = NodeOptions::new();
    for key in unknown_keys(read) {
        let (Ok(user), Ok(default)) = (property(options, key), property(&bare, key)) else {
            take_exception(env);
            continue;
        };
        let default = match (type_of(&user), type_of(&default)) {
            (ValueType::Function, ValueType::Function) if same_value(env, &user, &default) => {
                NodeValue::Function
            }
            (ValueType::Function, _) => NodeValue::Other,
            _ => node_value(&default),
        };
        defaults.insert(key.to_string(), default);
    }
    defaults
}

/// `new MongoClient(BARE_URI).options`, with the driver class found on `client`'s
/// prototype chain.
fn bare_client_options<'a>(env: &Env, client: &Object<'a>) -> Option<Object<'a>> {
    let class = driver_class(client)?;
    let uri = env.create_string(BARE_URI).ok()?;
    let mut instance = std::ptr::null_mut();
    // SAFETY: N-API construction with a live function and argument of this env.
    let made = unsafe {
        sys::napi_new_instance(env.raw(), class.raw(), 1, &uri.raw(), &mut instance)
            == sys::Status::napi_ok
    };
    if !made {
        return None;
    }
    // SAFETY: `instance` is a live value of this env just returned by N-API.
    let instance = unsafe { Unknown::from_raw_unchecked(env.raw(), instance) };
    let instance = object(&instance)?;
    object(&property(&instance, "options").ok()?)
}

/// The driver's own class on `client`'s prototype chain: a constructor named
/// [`DRIVER_CLASS`] whose parent class is named [`DRIVER_BASE`], as in drivers 6 and 7. A
/// subclass, even one named `MongoClient`, has another parent and is never constructed; an
/// object that merely names its constructor so is not a driver client.
fn driver_class<'a>(client: &Object<'a>) -> Option<Unknown<'a>> {
    let env = client.value().env;
    let mut current = client.raw();
    let mut candidate: Option<Unknown<'a>> = None;
    for _ in 0..MAX_PROTOTYPES {
        let mut prototype = std::ptr::null_mut();
        // SAFETY: N-API prototype read of a live object of this env.
        let ok = unsafe {
            sys::napi_get_prototype(env, current, &mut prototype) == sys::Status::napi_ok
        };
        if !ok {
            return None;
        }
        // SAFETY: as above; `prototype` is a live value of this env.
        let as_value = unsafe { Unknown::from_raw_unchecked(env, prototype) };
        let prototype_object = object(&as_value)?;
        let class = property(&prototype_object, "constructor").ok()?;
        let name = (type_of(&class) == ValueType::Function)
            .then(|| function_name(&class))
            .flatten();
        if candidate.is_some() && name.as_deref() == Some(DRIVER_BASE) {
            return candidate;
        }
        candidate = (name.as_deref() == Some(DRIVER_CLASS)).then_some(class);
        current = prototype;
    }
    None
}

/// A function's `name`.
fn function_name(function: &Unknown) -> Option<String> {
    let env = function.value().env;
    let mut name = std::ptr::null_mut();
    // SAFETY: N-API property read on a live function of this env.
    unsafe {
        let key = c"name";
        (sys::napi_get_named_property(env, function.raw(), key.as_ptr(), &mut name)
            == sys::Status::napi_ok)
            .then(|| string(&Unknown::from_raw_unchecked(env, name)))
            .flatten()
    }
}

/// `a === b`.
fn same_value(env: &Env, a: &Unknown, b: &Unknown) -> bool {
    let mut equal = false;
    // SAFETY: N-API comparison of two live values of this env.
    unsafe {
        sys::napi_strict_equals(env.raw(), a.raw(), b.raw(), &mut equal) == sys::Status::napi_ok
            && equal
    }
}

/// How deep option values are read (`readPreference.tags[0].dc` is three levels).
const MAX_DEPTH: usize = 4;
/// Longest buffer read from an option (a certificate bundle is a few kilobytes).
const MAX_BYTES: usize = 1 << 20;

/// The effective options of a Node driver client (`client.options`, where the driver
/// merged its connection string and options object), read key by key.
fn read_options(options: &Object) -> SeqResult<NodeOptions> {
    let mut out = NodeOptions::new();
    for_each_property(options, "the MongoClient's options", |key, value| {
        // Values of options that cannot matter are not converted (logger settings, driver
        // metadata, pkFactory…): only their presence is kept.
        let value = match rule(key) {
            Some(Rule::Irrelevant(_)) => NodeValue::Other,
            _ => node_value(&value),
        };
        out.insert(key.to_string(), value);
        Ok(())
    })?;
    Ok(out)
}

/// A value read as an option of the client is (depth, size and type limits alike).
pub fn node_value(value: &Unknown) -> NodeValue {
    node_value_at(value, 0)
}

fn node_value_at(value: &Unknown, depth: usize) -> NodeValue {
    match type_of(value) {
        ValueType::Undefined => NodeValue::Undefined,
        ValueType::Null => NodeValue::Null,
        ValueType::Boolean => boolean(value).map_or(NodeValue::Other, NodeValue::Bool),
        ValueType::Number => number(value).map_or(NodeValue::Other, NodeValue::number),
        ValueType::String => string(value).map_or(NodeValue::Other, NodeValue::Text),
        ValueType::Function => NodeValue::Function,
        ValueType::Object if depth >= MAX_DEPTH => NodeValue::Other,
        ValueType::Object => {
            if value.is_buffer().unwrap_or(false) || value.is_typedarray().unwrap_or(false) {
                return bytes(value).map_or(NodeValue::Other, NodeValue::Bytes);
            }
            if value.is_promise().unwrap_or(false) {
                return NodeValue::Other;
            }
            if value.is_array().unwrap_or(false) {
                return array_items(value, 1024).map_or(NodeValue::Other, |items| {
                    NodeValue::List(items.iter().map(|v| node_value_at(v, depth + 1)).collect())
                });
            }
            let Some(obj) = object_or_array(value) else {
                return NodeValue::Other;
            };
            let mut map = std::collections::BTreeMap::new();
            let read = for_each_property(&obj, "an option", |key, v| {
                map.insert(key.to_string(), node_value_at(&v, depth + 1));
                Ok(())
            });
            read.map_or(NodeValue::Other, |_| NodeValue::Map(map))
        }
        _ => NodeValue::Other,
    }
}

/// The bytes of a `Buffer` or `Uint8Array` (up to [`MAX_BYTES`]).
fn bytes(value: &Unknown) -> Option<Vec<u8>> {
    let env = value.value().env;
    let mut kind = sys::TypedarrayType::uint8_array;
    let mut length = 0usize;
    let mut data = std::ptr::null_mut();
    let mut array_buffer = std::ptr::null_mut();
    let mut offset = 0usize;
    // SAFETY: N-API typed array read of a live value of this env (a Buffer is a
    // Uint8Array); the data pointer is valid for `length` elements during this call.
    unsafe {
        if sys::napi_get_typedarray_info(
            env,
            value.raw(),
            &mut kind,
            &mut length,
            &mut data,
            &mut array_buffer,
            &mut offset,
        ) != sys::Status::napi_ok
            || kind != sys::TypedarrayType::uint8_array
            || length > MAX_BYTES
        {
            return None;
        }
        if length == 0 {
            return Some(Vec::new());
        }
        Some(std::slice::from_raw_parts(data.cast::<u8>(), length).to_vec())
    }
}
