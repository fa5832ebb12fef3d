//! Promises made already resolved or rejected, for calls served from the block cache
//! without leaving the JavaScript thread, and for calls refused before any work.

use std::ptr;

use napi::bindgen_prelude::{Env, PromiseRaw, ToNapiValue, Unknown};
use napi::{check_status, sys, JsValue};

use crate::binding::error::build;
use crate::engine::error::SeqResult;

/// How a promise made here ends.
enum Ending {
    Resolve(sys::napi_value),
    Reject(sys::napi_value),
}

/// A new promise, resolved or rejected at once as `how` says.
fn ready<'env, V>(env: &'env Env, how: Ending) -> napi::Result<PromiseRaw<'env, V>> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: plain N-API calls on the current thread's env with live handles.
    unsafe {
        check_status!(sys::napi_create_promise(
            env.raw(),
            &mut deferred,
            &mut promise
        ))?;
        check_status!(match how {
            Ending::Resolve(value) => sys::napi_resolve_deferred(env.raw(), deferred, value),
            Ending::Reject(reason) => sys::napi_reject_deferred(env.raw(), deferred, reason),
        })?;
    }
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// A promise already resolved with the value, or rejected with the typed error.
pub fn resolved_now<V: ToNapiValue>(
    env: &Env,
    result: SeqResult<V>,
) -> napi::Result<PromiseRaw<'_, V>> {
    let how = match result {
        // SAFETY: converting on the JavaScript thread of `env`.
        Ok(value) => Ending::Resolve(unsafe { V::to_napi_value(env.raw(), value)? }),
        Err(error) => Ending::Reject(build(env, &error)?.raw()),
    };
    ready(env, how)
}

/// A promise already rejected with `reason`.
pub fn rejected_with<'env, V: ToNapiValue>(
    env: &'env Env,
    reason: Unknown<'env>,
) -> napi::Result<PromiseRaw<'env, V>> {
    ready(env, Ending::Reject(reason.raw()))
}
