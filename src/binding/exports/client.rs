//! `connect(uri)`: this package's own Rust-backed client and its database handles.

use crate::binding::boundary::promise_call;
use crate::binding::boundary::sync_call;
use crate::binding::read::option_reader::{read_close_options, read_connect_options};
use crate::binding::read::sequence_db::SequenceDb;
use std::sync::Arc;

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::error::OrThrow;
use crate::binding::js::{describe, required_string, string};
use crate::binding::spawn::promise;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::handle::ClientHandle;
use crate::engine::error::{SeqError, SeqResult};

/// A connection to MongoDB opened by `connect(uri)`, independent of the Node driver.
/// Get database handles with `db(name)`; call `close()` when done.
#[napi]
pub struct SequenceClient {
    handle: Arc<ClientHandle>,
}

#[napi]
impl SequenceClient {
    /// A handle on database `name`, to pass as the `db` argument of the sequence functions.
    /// Throws `INVALID_ARGUMENT` for an invalid name and `CLIENT_CLOSED` after `close()`.
    #[napi(ts_args_type = "name: string")]
    pub fn db(&self, env: &Env, name: Unknown) -> napi::Result<SequenceDb> {
        sync_call(env, "SequenceClient.db", || {
            let name = required_string("database name", &name).or_throw(env)?;
            self.handle.driver(&name).or_throw(env)?;
            Ok(SequenceDb::new(self.handle.clone(), name))
        })
    }

    /// Closes the connections; calls still pending and later calls through this client
    /// reject with `CLIENT_CLOSED`. Resolves once the driver has shut down or after
    /// `timeoutMS` (default 5000), whichever comes first. Safe to call more than once.
    #[napi(
        ts_args_type = "options?: CloseOptions",
        ts_return_type = "Promise<void>"
    )]
    pub fn close<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_call(env, "SequenceClient.close", || {
            let handle = self.handle.clone();
            let timeout = read_close_options(options.as_ref());
            promise(env, async move {
                handle.close_within(timeout?).await;
                Ok(())
            })
        })
    }

    /// Whether `close()` was called.
    #[napi(getter, catch_unwind)]
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }
}

fn read_connect_target(uri: &Unknown, options: Option<&Unknown>) -> SeqResult<ConnectionTarget> {
    let uri = string(uri).ok_or_else(|| {
        SeqError::invalid_argument(format!(
            "uri must be a MongoDB connection string; got {}",
            describe(uri)
        ))
    })?;
    read_connect_options(options, ConnectionTarget::from_uri(&uri)?)
}

/// Opens a Rust-backed client and checks that the server answers (`ping`).
/// Rejects with `INVALID_ARGUMENT` for a bad connection string and `CONNECTION` when no
/// server answers within `serverSelectionTimeoutMS`. The password never appears in errors.
#[napi(
    ts_args_type = "uri: string, options?: ConnectOptions",
    ts_return_type = "Promise<SequenceClient>"
)]
pub fn connect<'env>(
    env: &'env Env,
    uri: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, SequenceClient>> {
    promise_call(env, "connect", || {
        let target = read_connect_target(&uri, options.as_ref());
        promise(env, async move {
            let handle = ClientHandle::open(&target?).await?;
            handle.ping().await?;
            Ok(SequenceClient {
                handle: Arc::new(handle),
            })
        })
    })
}
