//! Running engine futures on napi's tokio runtime, rejecting with typed errors.

use std::future::Future;

use napi::bindgen_prelude::{Env, PromiseRaw, ToNapiValue};

use crate::binding::error::OrThrow;
use crate::engine::error::SeqResult;
use crate::engine::panic_safety::caught;

/// A promise for `work`: resolves with its value, or rejects with an `Error` carrying the
/// engine error's `code`. Argument errors found before any I/O go through here too, so a
/// call always returns a promise and never throws synchronously.
pub fn promise<'env, V, F>(env: &'env Env, work: F) -> napi::Result<PromiseRaw<'env, V>>
where
    V: ToNapiValue + Send + 'static,
    F: Future<Output = SeqResult<V>> + Send + 'static,
{
    crate::binding::diagnostics::before_call(env);
    env.spawn_future_with_callback(
        async move { Ok(caught("call", work).await) },
        |env, result| {
            crate::binding::diagnostics::after_settle(env);
            result.or_throw(env)
        },
    )
}
