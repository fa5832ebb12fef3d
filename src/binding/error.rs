//! Engine errors as JavaScript `Error` objects with a stable `code`.

use napi::bindgen_prelude::{Env, JsObjectValue, Object};
use napi::{JsValue, Status};

use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::redact::redact_connection_strings;

/// Engine results as napi results: the error becomes the JavaScript `Error` of
/// [`to_js_error`], so an export writes `result.or_throw(env)?`.
pub trait OrThrow<T> {
    /// The value, or the engine error as a JavaScript `Error` with its `code`.
    fn or_throw(self, env: &Env) -> napi::Result<T>;
}

impl<T> OrThrow<T> for SeqResult<T> {
    fn or_throw(self, env: &Env) -> napi::Result<T> {
        self.map_err(|error| to_js_error(env, error))
    }
}

/// Builds `Error(message)` with `code` (and `serverCode`, `codeName` for server errors),
/// wrapped so that napi throws or rejects with this very object.
pub fn to_js_error(env: &Env, error: SeqError) -> napi::Error {
    match build(env, &error) {
        Ok(object) => napi::Error::from_unknown_without_coercion(object.to_unknown()),
        Err(fallback) => fallback,
    }
}

/// The JavaScript `Error` object for `error`: every error this package raises leaves
/// through here, so this is where a connection string that input put into a message
/// (a counter name, a thrown value's text) loses its credentials.
pub fn build<'a>(env: &'a Env, error: &SeqError) -> napi::Result<Object<'a>> {
    let mut object = env.create_error(napi::Error::new(
        Status::GenericFailure,
        redact_connection_strings(&error.message),
    ))?;
    object.set_named_property("code", error.code.as_str())?;
    if let Some(code) = error.server_code {
        object.set_named_property("serverCode", code)?;
    }
    if let Some(name) = &error.server_code_name {
        object.set_named_property("codeName", name.as_str())?;
    }
    Ok(object)
}
