//! The shared clients behind Node driver `Db` handles: inspection and shutdown.

use crate::binding::boundary::promise_call;
use crate::binding::read::option_reader::read_close_options;

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

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
