//! The shared clients behind Node driver `Db` handles: inspection and shutdown.

use crate::binding::guard::promise_call;
use std::time::Duration;

use napi::bindgen_prelude::{Env, Object, PromiseRaw, Unknown};

use crate::binding::js_read::{describe, is_nullish, number, object, property};
use crate::engine::client::registry::DEFAULT_CLOSE_TIMEOUT;
use crate::engine::error::{SeqError, SeqResult};

use crate::binding::spawn::promise;
use crate::engine::alloc::live::live_counter_objects;
use crate::engine::client::registry::SHARED_CLIENTS;

/// How many Rust driver clients this process holds for Node driver `Db` handles and
/// `uri` options: one per distinct connection, however many calls are made.
#[napi(catch_unwind)]
pub fn shared_client_count() -> u32 {
    SHARED_CLIENTS.len() as u32
}

/// How many per-counter objects (a counter's state, its queue of merged calls, its
/// cached blocks) this process holds. Counters not in use are released past 1024 per
/// client, so the number stays bounded however many distinct names are used.
#[napi(catch_unwind)]
pub fn counter_state_count() -> u32 {
    u32::try_from(live_counter_objects()).unwrap_or(u32::MAX)
}

/// Closes the shared clients (for a graceful shutdown): calls still pending reject with
/// `CLIENT_CLOSED` at once, and the promise resolves once the driver has shut down or
/// after `timeoutMS` (default 5000), whichever comes first; a shutdown that takes longer
/// (a server that stopped answering) goes on in the background. Later calls open the
/// clients again.
#[napi(
    ts_args_type = "options?: CloseOptions",
    ts_return_type = "Promise<void>"
)]
pub fn close_shared_clients<'env>(
    env: &'env Env,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, ()>> {
    promise_call(env, "closeSharedClients", || {
        let timeout = read_close_options(options.as_ref());
        promise(env, async move {
            SHARED_CLIENTS.close_all(timeout?).await;
            Ok(())
        })
    })
}

/// Options of `closeSharedClients` and `SequenceClient.close`.
#[napi(object)]
pub struct CloseOptions {
    /// Longest wait for the driver to shut down, in milliseconds (default 5000). Pending
    /// calls reject with `CLIENT_CLOSED` at once either way.
    #[napi(js_name = "timeoutMS")]
    pub timeout_ms: Option<f64>,
}

/// Reads `{ timeoutMS }`: a whole number of milliseconds from 0 to 86400000.
pub fn read_close_options(options: Option<&Unknown>) -> SeqResult<Duration> {
    let Some(options) = options.filter(|o| !is_nullish(o)) else {
        return Ok(DEFAULT_CLOSE_TIMEOUT);
    };
    let obj = object(options).ok_or_else(|| {
        SeqError::invalid_argument(format!(
            "options must be an object; got {}",
            describe(options)
        ))
    })?;
    let keys = Object::keys(&obj)
        .map_err(|e| SeqError::invalid_argument(format!("cannot read options: {e}")))?;
    if let Some(key) = keys.iter().find(|k| k.as_str() != "timeoutMS") {
        return Err(SeqError::invalid_argument(format!(
            "unknown close option '{key}' (known: timeoutMS)"
        )));
    }
    let value = property(&obj, "timeoutMS")?;
    if is_nullish(&value) {
        return Ok(DEFAULT_CLOSE_TIMEOUT);
    }
    number(&value)
        .filter(|n| (0.0..=MAX_CLOSE_TIMEOUT_MS).contains(n) && n.fract() == 0.0)
        .map(|n| Duration::from_millis(n as u64))
        .ok_or_else(|| {
            SeqError::invalid_argument(format!(
                "option 'timeoutMS' must be a whole number of milliseconds from 0 to \
                 {MAX_CLOSE_TIMEOUT_MS}; got {}",
                describe(&value)
            ))
        })
}

/// Longest close timeout accepted: a day.
const MAX_CLOSE_TIMEOUT_MS: f64 = 86_400_000.0;
