//! `connect(uri)`: this package's own Rust-backed client and its database handles.

use crate::binding::guard::promise_call;
use crate::binding::guard::sync_call;
use crate::binding::option_specs::{self, check_keys};
use std::sync::Arc;

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::js_error::to_js_error;
use crate::binding::js_read::{describe, is_nullish, object, property, required_string, string};
use crate::binding::spawn::promise;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::registry::ClientHandle;
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
            let name = required_string("database name", &name).map_err(|e| to_js_error(env, e))?;
            self.handle.driver(&name).map_err(|e| to_js_error(env, e))?;
            Ok(SequenceDb {
                handle: self.handle.clone(),
                name,
            })
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
            let timeout = crate::binding::shared::read_close_options(options.as_ref());
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

/// A database of a `SequenceClient`: pass it where the helper takes a Node driver `Db`.
#[napi]
pub struct SequenceDb {
    handle: Arc<ClientHandle>,
    name: String,
}

#[napi]
impl SequenceDb {
    /// The database name (as on a Node driver `Db`).
    #[napi(getter, catch_unwind)]
    pub fn database_name(&self) -> String {
        self.name.clone()
    }
}

impl SequenceDb {
    /// The client this database belongs to.
    pub fn handle(&self) -> Arc<ClientHandle> {
        self.handle.clone()
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Options of `connect`.
#[napi(object)]
pub struct ConnectOptions {
    /// How long to wait for a suitable server before failing with `CONNECTION`
    /// (overrides the connection string; the driver's default is 30000).
    #[napi(js_name = "serverSelectionTimeoutMS")]
    pub server_selection_timeout_ms: Option<f64>,
    /// How long to wait for a TCP connection (overrides the connection string).
    #[napi(js_name = "connectTimeoutMS")]
    pub connect_timeout_ms: Option<f64>,
}

/// Longest timeout accepted, in milliseconds (as for Node's timers: about 24.8 days).
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

fn read_connect_target(uri: &Unknown, options: Option<&Unknown>) -> SeqResult<ConnectionTarget> {
    let uri = string(uri).ok_or_else(|| {
        SeqError::invalid_argument(format!(
            "uri must be a MongoDB connection string; got {}",
            describe(uri)
        ))
    })?;
    let mut target = ConnectionTarget::from_uri(&uri)?;
    let Some(options) = options.filter(|o| !is_nullish(o)) else {
        return Ok(target);
    };
    let obj = object(options).ok_or_else(|| {
        SeqError::invalid_argument(format!(
            "options must be an object; got {}",
            describe(options)
        ))
    })?;
    let keys = napi::bindgen_prelude::Object::keys(&obj)
        .map_err(|e| SeqError::invalid_argument(format!("cannot read options: {e}")))?;
    check_keys("connect option", &keys, &[option_specs::CONNECT])?;
    for (key, slot) in [
        (
            "serverSelectionTimeoutMS",
            &mut target.server_selection_timeout_ms,
        ),
        ("connectTimeoutMS", &mut target.connect_timeout_ms),
    ] {
        let v = property(&obj, key)?;
        if is_nullish(&v) {
            continue;
        }
        let millis = Some(option_specs::whole(key, &v)?)
            .filter(|n| (0.0..=MAX_TIMEOUT_MS).contains(n) && n.fract() == 0.0)
            .ok_or_else(|| {
                SeqError::invalid_argument(format!(
                    "option '{key}' must be a whole number of milliseconds from 0 to \
                     {MAX_TIMEOUT_MS}; got {}",
                    describe(&v)
                ))
            })?;
        *slot = Some(millis as u64);
    }
    Ok(target)
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
