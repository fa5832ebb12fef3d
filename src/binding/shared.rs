//! The shared clients behind Node driver `Db` handles: inspection and shutdown.

use crate::binding::guard::promise_call;
use napi::bindgen_prelude::{Env, PromiseRaw};

use crate::binding::spawn::promise;
use crate::engine::registry::SHARED_CLIENTS;

/// How many Rust driver clients this process holds for Node driver `Db` handles and
/// `uri` options: one per distinct connection, however many calls are made.
#[napi(catch_unwind)]
pub fn shared_client_count() -> u32 {
    SHARED_CLIENTS.len() as u32
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
