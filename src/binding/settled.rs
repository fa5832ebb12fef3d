//! Promises settled at once, for calls served from the block cache without leaving the
//! JavaScript thread.

use std::ptr;

use napi::bindgen_prelude::{Env, PromiseRaw, ToNapiValue, Unknown};
use napi::{check_status, sys, JsValue};

use crate::binding::js_error::build;
use crate::engine::error::SeqResult;

/// A promise already resolved with the value, or rejected with the typed error.
pub fn settled<V: ToNapiValue>(env: &Env, result: SeqResult<V>) -> napi::Result<PromiseRaw<'_, V>> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: plain N-API calls on the current thread's env with freshly created handles.
    unsafe {
        check_status!(sys::napi_create_promise(
            env.raw(),
            &mut deferred,
            &mut promise
        ))?;
        match result {
            Ok(value) => {
                let value = V::to_napi_value(env.raw(), value)?;
                check_status!(sys::napi_resolve_deferred(env.raw(), deferred, value))?;
            }
            Err(error) => {
                let object = build(env, &error)?;
                check_status!(sys::napi_reject_deferred(env.raw(), deferred, object.raw()))?;
            }
        }
    }
    Ok(PromiseRaw::new(env.raw(), promise))
}

/// A promise already rejected with `reason`.
pub fn rejected_with<'env, V: ToNapiValue>(
    env: &'env Env,
    reason: Unknown<'env>,
) -> napi::Result<PromiseRaw<'env, V>> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: plain N-API calls on the current thread's env with live handles.
    unsafe {
        check_status!(sys::napi_create_promise(
            env.raw(),
            &mut deferred,
            &mut promise
        ))?;
        check_status!(sys::napi_reject_deferred(env.raw(), deferred, reason.raw()))?;
    }
    Ok(PromiseRaw::new(env.raw(), promise))
}
