//! The shared clients behind Node driver `Db` handles: inspection and shutdown.

use crate::binding::guard::promise_call;
use napi::bindgen_prelude::{Env, PromiseRaw};

use crate::binding::spawn::promise;
use crate::engine::live::live_counter_objects;
use crate::engine::registry::SHARED_CLIENTS;

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

/// Closes the shared clients (for a graceful shutdown). Later calls open them again.
#[napi(ts_return_type = "Promise<void>")]
pub fn close_shared_clients(env: &Env) -> napi::Result<PromiseRaw<'_, ()>> {
    promise_call(env, "closeSharedClients", || {
        promise(env, async {
            SHARED_CLIENTS.close_all().await;
            Ok(())
        })
    })
}
