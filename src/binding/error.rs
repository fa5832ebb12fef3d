//! Engine errors as JavaScript `Error` objects with a stable `code`.

use napi::bindgen_prelude::{Env, JsObjectValue, Object};
use napi::{JsValue, Status};

use crate::engine::error::SeqError;

/// Builds `Error(message)` with `code` (and `serverCode`, `codeName` for server errors),
/// wrapped so that napi throws or rejects with this very object.
pub fn to_js_error(env: &Env, error: SeqError) -> napi::Error {
    match build(env, &error) {
        Ok(object) => napi::Error::from_unknown_without_coercion(object.to_unknown()),
        Err(fallback) => fallback,
    }
}

/// The JavaScript `Error` object for `error`.
pub fn build<'a>(env: &'a Env, error: &SeqError) -> napi::Result<Object<'a>> {
    let mut object = env.create_error(napi::Error::new(
        Status::GenericFailure,
        error.message.clone(),
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
