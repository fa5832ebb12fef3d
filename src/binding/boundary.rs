//! The boundary every export runs in. A panic never unwinds into Node (which
//! aborts the process): it becomes an `Error` with code `INTERNAL`. A JavaScript
//! exception thrown by user code while an argument is read (a getter, a Proxy trap, a
//! `toString`) or while results are written back is never left pending (which leaves a
//! promise that never settles): the call rejects, or throws, with `INVALID_ARGUMENT`
//! and the thrown value as `cause`. Every error leaves with a string `code`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Once;

use napi::bindgen_prelude::{Env, JsObjectValue, Object, PromiseRaw, ToNapiValue, Unknown};
use napi::{sys, JsError, JsValue, Status};

use crate::binding::error::{build, to_js_error};
use crate::binding::ready::rejected_with;
use crate::engine::error::{ErrorCode, SeqError};

/// Installs [`install_panic_hook`] once.
static PANIC_HOOK: Once = Once::new();

/// Characters of a thrown value's text quoted in the message at most.
const THROWN_TEXT_UNITS: usize = 200;

/// Runs a synchronous export's `body`.
pub fn sync_call<T>(
    env: &Env,
    place: &str,
    body: impl FnOnce() -> napi::Result<T>,
) -> napi::Result<T> {
    PANIC_HOOK.call_once(install_panic_hook);
    let outcome = catch_unwind(AssertUnwindSafe(body));
    let thrown = take_exception(env);
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(typed(env, place, error, thrown)),
        Err(_) => Err(to_js_error(env, SeqError::internal(place))),
    }
}

/// Runs an export that returns a promise: whatever `body` does, the caller gets a promise
/// (rejected when `body` failed or panicked), never a synchronous throw.
pub fn promise_call<'env, V: ToNapiValue>(
    env: &'env Env,
    place: &str,
    body: impl FnOnce() -> napi::Result<PromiseRaw<'env, V>>,
) -> napi::Result<PromiseRaw<'env, V>> {
    PANIC_HOOK.call_once(install_panic_hook);
    let outcome = catch_unwind(AssertUnwindSafe(body));
    let thrown = take_exception(env);
    let error = match outcome {
        Ok(Ok(promise)) => return Ok(promise),
        Ok(Err(error)) => typed(env, place, error, thrown),
        Err(_) => to_js_error(env, SeqError::internal(place)),
    };
    // SAFETY: a napi error turned into its JavaScript value on the JavaScript thread.
    let value = unsafe {
        Unknown::from_raw_unchecked(env.raw(), JsError::from(error).into_value(env.raw()))
    };
    rejected_with(env, value)
}

/// The error a failed `body` leaves with: the user's exception wrapped, our own typed
/// error as it is, and an untyped napi error given a code by its napi status.
fn typed(
    env: &Env,
    place: &str,
    error: napi::Error,
    thrown: Option<sys::napi_value>,
) -> napi::Error {
    if let Some(thrown) = thrown {
        return wrap_thrown(env, place, thrown);
    }
    let code = code_of_status(&error.status);
    // SAFETY: as above; the value is inspected, then handed back as the error.
    let value = unsafe { JsError::from(error).into_value(env.raw()) };
    if has_known_code(env, value) {
        // SAFETY: a live value of this env.
        return napi::Error::from_unknown_without_coercion(unsafe {
            Unknown::from_raw_unchecked(env.raw(), value)
        });
    }
    let message = text_of(env, value).unwrap_or_default();
    to_js_error(env, SeqError::new(code, format!("{place}: {message}")))
}

/// The code of an untyped napi error: `INVALID_ARGUMENT` when napi refused a value of the
/// wrong type (a JavaScript value that is not what the call needs), `INTERNAL` otherwise.
pub fn code_of_status(status: &Status) -> ErrorCode {
    match status {
        Status::InvalidArg
        | Status::ObjectExpected
        | Status::StringExpected
        | Status::NameExpected
        | Status::FunctionExpected
        | Status::NumberExpected
        | Status::BooleanExpected
        | Status::ArrayExpected
        | Status::BigintExpected
        | Status::DateExpected
        | Status::ArrayBufferExpected
        | Status::DetachableArraybufferExpected => ErrorCode::InvalidArgument,
        _ => ErrorCode::Internal,
    }
}

/// Whether `value` is an object whose `code` is one of this package's codes.
fn has_known_code(env: &Env, value: sys::napi_value) -> bool {
    // SAFETY: a live value of this env.
    let unknown = unsafe { Unknown::from_raw_unchecked(env.raw(), value) };
    let Some(object) = crate::binding::js::object_or_array(&unknown) else {
        return false;
    };
    let code = crate::binding::js::string_property(&object, "code");
    take_exception(env);
    code.is_some_and(|c| ErrorCode::ALL.iter().any(|k| k.as_str() == c))
}

/// Whether a JavaScript exception is pending on `env`.
pub fn exception_pending(env: &Env) -> bool {
    let mut pending = false;
    // SAFETY: an N-API exception query on the current env.
    let status = unsafe { sys::napi_is_exception_pending(env.raw(), &mut pending) };
    status == sys::Status::napi_ok && pending
}

/// The pending JavaScript exception, cleared, if any.
pub fn take_exception(env: &Env) -> Option<sys::napi_value> {
    let mut pending = false;
    let mut thrown = ptr::null_mut();
    // SAFETY: N-API exception queries on the current env.
    unsafe {
        (sys::napi_is_exception_pending(env.raw(), &mut pending) == sys::Status::napi_ok
            && pending
            && sys::napi_get_and_clear_last_exception(env.raw(), &mut thrown)
                == sys::Status::napi_ok)
            .then_some(thrown)
    }
}

/// `INVALID_ARGUMENT` for an exception user code threw, with the thrown value as `cause`.
fn wrap_thrown(env: &Env, place: &str, thrown: sys::napi_value) -> napi::Error {
    let shown = text_of(env, thrown).unwrap_or_else(|| "a value that cannot be shown".into());
    let error = SeqError::invalid_argument(format!(
        "{place}: code of an argument (a getter, Proxy trap or method) threw: {shown}"
    ));
    let object = build(env, &error).and_then(|mut object: Object| {
        // SAFETY: the thrown value is live on this env.
        let cause = unsafe { Unknown::from_raw_unchecked(env.raw(), thrown) };
        object.set_named_property("cause", cause)?;
        Ok(object)
    });
    take_exception(env);
    match object {
        // Captured without converting anything to a string: the cause may be a Symbol
        // (which throws when converted) or an object whose `cause` chain is cyclic.
        Ok(object) => napi::Error::from_unknown_without_coercion(object.to_unknown()),
        Err(_) => napi::Error::new(Status::GenericFailure, error.message),
    }
}

/// `String(value)`, at most [`THROWN_TEXT_UNITS`] UTF-16 units of it; `None` when
/// converting throws.
fn text_of(env: &Env, value: sys::napi_value) -> Option<String> {
    let mut text = ptr::null_mut();
    let mut buffer = [0u16; THROWN_TEXT_UNITS + 1];
    let mut length = 0usize;
    // SAFETY: N-API calls on the current env; the buffer outlives the call.
    let ok = unsafe {
        sys::napi_coerce_to_string(env.raw(), value, &mut text) == sys::Status::napi_ok
            && sys::napi_get_value_string_utf16(
                env.raw(),
                text,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut length,
            ) == sys::Status::napi_ok
    };
    take_exception(env);
    ok.then(|| String::from_utf16_lossy(&buffer[..length.min(THROWN_TEXT_UNITS)]))
}

/// Prints where a panic happened, and not its message (which could hold a password or
/// user data); the call that panicked reports `INTERNAL`. Installed by the first call
/// run in the boundary, so that only a process that loaded the addon through Node gets it.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_else(|| "unknown place".into());
        eprintln!(
            "mongodb-sequence: internal error at {place} (message withheld); the call fails \
             with code INTERNAL. Please report this bug."
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_comes_from_the_status_not_the_message() {
        for status in [
            Status::InvalidArg,
            Status::ObjectExpected,
            Status::FunctionExpected,
            Status::NumberExpected,
            Status::BigintExpected,
        ] {
            assert_eq!(
                code_of_status(&status),
                ErrorCode::InvalidArgument,
                "{status}"
            );
        }
        for status in [
            Status::GenericFailure,
            Status::PendingException,
            Status::QueueFull,
            Status::Closing,
            Status::Unknown,
        ] {
            assert_eq!(code_of_status(&status), ErrorCode::Internal, "{status}");
        }
    }
}
