//! A shared driver client: opened on one runtime, its calls bounded by the call timeout,
//! its counter states held for it, given back and shut down when it closes or retires.
//!
//! A driver client runs background tasks (server monitors, connection pools) on the tokio
//! runtime that opened it, and dies with that runtime. The host may replace the runtime
//! (napi-rs shuts it down when the last JavaScript thread that loaded the addon ends, and
//! starts a new one for the next), so each client remembers its runtime: a client of
//! another runtime is stale, and the registry replaces it.
//!
//! # Who touches what
//!
//! A handle is shared (`Arc`) by every call and by the registry, on the JavaScript
//! thread and the runtime's threads; nothing in it needs `&mut`. Its life (open,
//! retiring, closed) and its count of pending calls are its [`Lifecycle`], changed only
//! through its transitions: [`ClientHandle::retire`] and [`ClientHandle::mark_closed`]
//! move it on, [`ClientHandle::admit`] and [`ClientHandle::within`] count a call from its
//! submission to its end.
//! The first call to close it takes its counter states out (`counters`, behind their
//! own lock) to give their tails back; `last_used` is a relaxed clock for the
//! registry's sweeps. The rest is set when it opens and never changes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use mongodb::bson::doc;
use mongodb::Client;
use tokio::runtime::{Handle, Id as RuntimeId};

use crate::engine::alloc::counter_state::{CounterState, CounterStates, GivenBack, Lane};
use crate::engine::client::call_bound::CallBound;
use crate::engine::client::client_certificate::check_client_certificate;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::driver_error::from_driver;
use crate::engine::client::lifecycle::{Lifecycle, Phase};
use crate::engine::client::writable::WritableServer;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::store::counter_store::{CounterRef, DocumentKey};
use crate::engine::store::mongo_driver::{IndexMemo, MongoDriver};
use crate::engine::text::redact::redact;
use crate::engine::text::validate::check_database;

/// How long closing waits for the driver to shut down before leaving it to finish in the
/// background (pending calls are rejected at once either way).
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The runtime whose context the current thread is in, if any.
pub(super) fn current_runtime() -> Option<RuntimeId> {
    Handle::try_current().ok().map(|h| h.id())
}

static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Milliseconds since the first use of this module (a cheap, monotonic clock for
/// last-use times).
fn now_millis() -> u64 {
    EPOCH.elapsed().as_millis() as u64
}

/// `CLIENT_CLOSED` for a call made after its client was closed or began to retire.
fn closed() -> SeqError {
    SeqError::new(
        ErrorCode::ClientClosed,
        "this client was closed; open a new one with connect(uri)",
    )
}

/// The counter states a client held, by database and counter document.
type HeldStates = Vec<((String, DocumentKey), Arc<CounterState>)>;

/// An open driver client with the secrets of its connection string.
pub struct ClientHandle {
    client: Client,
    secrets: Arc<Vec<String>>,
    /// Open, retiring or closed, and the calls submitted and not settled.
    lifecycle: Lifecycle,
    /// Each noted with the naming that created it.
    counters: CounterStates<(String, DocumentKey), CounterRef>,
    indexes: IndexMemo,
    /// The runtime that runs this client's background tasks.
    pub(super) runtime: Option<RuntimeId>,
    /// Longest wait of a call, from its submission, and the setting that decided it.
    call_bound: CallBound,
    /// When a call last used this client ([`now_millis`]).
    last_used: AtomicU64,
    /// The server this client writes to, for round-trip events.
    writable: Arc<WritableServer>,
}

impl ClientHandle {
    /// Opens a client (resolving `mongodb+srv` names); no round trip to the server yet.
    /// Its background tasks run on the current runtime, to which it then belongs.
    pub async fn open(target: &ConnectionTarget) -> SeqResult<ClientHandle> {
        let secrets = Arc::new(target.secrets());
        // The certificate as the driver is about to read it (rotated since the target was
        // made, perhaps): one it could not present is refused before the client opens.
        if let Some(contents) = target.client_certificate() {
            check_client_certificate(contents, "tlsCertificateKeyFile")?;
        }
        let mut options = target
            .client_options()
            .await
            .map_err(|e| from_driver(&e, &secrets))?;
        if let Some(timeout) = target.server_selection_timeout() {
            options.server_selection_timeout = Some(timeout);
        }
        if let Some(timeout) = target.connect_timeout() {
            options.connect_timeout = Some(timeout);
        }
        if options.app_name.is_none() {
            options.app_name = Some("mongodb-sequence".to_string());
        }
        let call_bound = CallBound::of(options.server_selection_timeout, target.socket_timeout());
        // The driver reads the TLS files here, by path: the client presents what they hold
        // now, which after a certificate rotated in place is the new one.
        // Watches which server takes writes, for round-trip events (never overriding a
        // handler the options came with).
        let writable = Arc::new(WritableServer::default());
        if options.sdam_event_handler.is_none() {
            options.sdam_event_handler = Some(writable.handler());
        }
        let client = Client::with_options(options).map_err(|e| from_driver(&e, &secrets))?;
        Ok(ClientHandle {
            client,
            writable,
            secrets,
            lifecycle: Lifecycle::default(),
            counters: CounterStates::default(),
            indexes: IndexMemo::default(),
            runtime: current_runtime(),
            call_bound,
            last_used: AtomicU64::new(now_millis()),
        })
    }

    /// Checks that the server answers (`ping`).
    pub async fn ping(&self) -> SeqResult<()> {
        self.ensure_open()?;
        self.client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .map_err(|e| from_driver(&e, &self.secrets))?;
        Ok(())
    }

    /// The counters of database `name`.
    pub fn driver(&self, name: &str) -> SeqResult<MongoDriver> {
        self.ensure_open()?;
        check_database(name)?;
        Ok(self.driver_of(self.client.database(name)))
    }

    /// The counters of `database` through this client, open or not.
    fn driver_of(&self, database: mongodb::Database) -> MongoDriver {
        MongoDriver::new(database, self.secrets.clone())
            .with_index_memo(self.indexes.clone())
            .with_writable(self.writable.clone())
    }

    /// This client's state of the document counter `counter` finds in database
    /// `database` (queued calls, cached blocks, configuration hint), created on first
    /// use: one for every way of naming that document.
    pub fn counter_state(&self, database: &str, counter: &CounterRef) -> Arc<CounterState> {
        self.counters
            .get_noted(&(database.to_string(), counter.document_key()), || {
                counter.clone()
            })
    }

    /// This client's states of the counters of `field` in `collection` of `database`
    /// (for a write that may change several of them).
    pub fn counter_states_in(
        &self,
        database: &str,
        collection: &str,
        field: &str,
    ) -> Vec<Arc<CounterState>> {
        self.counters
            .select(|(db, key)| db == database && key.counts_in(collection, field))
    }

    /// This client's states of the counters in `database` that may be the document
    /// `counter` finds ([`CounterRef::may_find_the_same_document`], against the naming that
    /// created each state), its own included.
    pub fn counter_states_sharing(
        &self,
        database: &str,
        counter: &CounterRef,
    ) -> Vec<Arc<CounterState>> {
        self.counters.select_noted(|(db, _), naming| {
            db == database && counter.may_find_the_same_document(naming)
        })
    }

    /// The underlying driver client (for tests and admin tools).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The strings to keep out of messages about this client.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// Whether [`ClientHandle::close`] or [`ClientHandle::retire`] was called: it takes
    /// no more calls.
    pub fn is_closed(&self) -> bool {
        self.lifecycle.phase() != Phase::Open
    }

    /// Whether the registry let it go (released for idleness or past the client limit,
    /// or replaced after a rotation of its TLS files): it retired rather than being
    /// closed by its user. A call refused for that asks the registry again.
    pub fn was_let_go(&self) -> bool {
        self.lifecycle.was_let_go()
    }

    /// Waits until its phase is `phase` or later (tests wait for a release or a rotation).
    #[cfg(test)]
    pub async fn reached(&self, phase: Phase) {
        self.lifecycle.reached(phase).await;
    }

    /// Where the client is in its life.
    pub fn phase(&self) -> Phase {
        self.lifecycle.phase()
    }

    /// Whether this client belongs to another runtime than the one the current thread is
    /// in (its background tasks ended with that runtime). `false` when the thread is in
    /// no runtime's context (it cannot tell).
    pub fn is_stale(&self) -> bool {
        matches!((self.runtime, current_runtime()), (Some(mine), Some(now)) if mine != now)
    }

    /// Neither closed nor stale: calls may use it.
    pub fn is_usable(&self) -> bool {
        !self.is_closed() && !self.is_stale()
    }

    /// The longest a call through this client waits (its server selection timeout, or
    /// its socket timeout when smaller).
    pub fn call_timeout(&self) -> Duration {
        self.call_bound.timeout
    }

    /// The setting [`ClientHandle::call_timeout`] comes from (`serverSelectionTimeoutMS`
    /// or `socketTimeoutMS`), for messages.
    pub fn call_timeout_setting(&self) -> &'static str {
        self.call_bound.setting
    }

    /// Calls bounded by [`ClientHandle::within`] and not ended yet.
    pub fn busy(&self) -> usize {
        self.lifecycle.pending()
    }

    pub(super) fn idle_for(&self) -> Duration {
        Duration::from_millis(now_millis().saturating_sub(self.last_used.load(Ordering::Relaxed)))
    }

    pub(super) fn touch(&self) {
        self.last_used.store(now_millis(), Ordering::Relaxed);
    }

    /// Marks the client closed and rejects its pending calls, without shutting the driver
    /// down. For the caller that closed it, the counter states it held (to give back
    /// their cached tails before the driver shuts down).
    pub(super) fn mark_closed(&self) -> Option<HeldStates> {
        self.lifecycle.close().then(|| self.counters.drain())
    }

    /// Gives back the cached tails of `states` ([`CounterState::give_back`]), all
    /// counters at once, through this client's driver (closed to calls, still open).
    async fn give_back(&self, states: HeldStates) -> GivenBack {
        if self.is_stale() {
            return GivenBack::default();
        }
        let giving = states.into_iter().map(|((database, _), state)| {
            let database = self.client.database(&database);
            async move {
                let driver = self.driver_of(database);
                state.give_back(Lane::store_of(&driver)).await
            }
        });
        futures_util::future::join_all(giving)
            .await
            .into_iter()
            .fold(GivenBack::default(), GivenBack::plus)
    }

    /// Gives back the tails of `states` within `timeout` (values whose give-back did not
    /// finish in time are abandoned), then shuts the driver down within what is left of
    /// it; true when the shutdown finished in time.
    pub(super) async fn give_back_and_shut_down(
        &self,
        states: HeldStates,
        timeout: Duration,
    ) -> bool {
        let started = Instant::now();
        let held: Vec<Arc<CounterState>> = states.iter().map(|(_, s)| s.clone()).collect();
        if tokio::time::timeout(timeout, self.give_back(states))
            .await
            .is_err()
        {
            // Out of time (a server that stopped answering): what was not given back yet
            // is abandoned, and counted so, never handed out by this closed client.
            for state in held {
                state.abandon_cached();
            }
        }
        self.shut_down_within(timeout.saturating_sub(started.elapsed()))
            .await
    }

    /// Refuses further calls, rejects pending ones with `CLIENT_CLOSED`, gives back the
    /// unused tails of cached blocks ([`CounterState::give_back`]) and closes the
    /// connections, waiting at most [`DEFAULT_CLOSE_TIMEOUT`]. Idempotent.
    pub async fn close(&self) {
        self.close_within(DEFAULT_CLOSE_TIMEOUT).await;
    }

    /// As [`ClientHandle::close`], waiting at most `timeout` for the driver's shutdown
    /// (which ends the server sessions and closes the connections, and can hang on a
    /// server that stopped answering); past it, the shutdown goes on in the background.
    /// True when the shutdown finished in time (or was not this call's to make).
    pub async fn close_within(&self, timeout: Duration) -> bool {
        let closed_now = self.lifecycle.close();
        self.end_closed(closed_now, timeout).await
    }

    /// Closes as [`ClientHandle::close`] does, but lets the calls already pending settle
    /// first (each within its call timeout from its submission; they are not rejected):
    /// from now on the client takes no call (holders of its counters prepare them again),
    /// then it gives its cached tails back and shuts down. For a client replaced by
    /// another of the same connection, which must not serve a counter beside it.
    ///
    /// It waits until its last pending call ends (woken then, not polling), or it is
    /// closed meanwhile, or the call timeout has passed.
    pub async fn retire(&self) {
        let deadline = self.begin_retiring();
        self.finish_retiring(deadline).await;
    }

    /// The first half of [`ClientHandle::retire`], at once: from now on the client takes
    /// no call. Returns how long [`ClientHandle::finish_retiring`] waits for the calls
    /// pending.
    pub(super) fn begin_retiring(&self) -> tokio::time::Instant {
        self.lifecycle.retire();
        tokio::time::Instant::now() + self.call_bound.timeout
    }

    /// The second half of [`ClientHandle::retire`]: waits for the pending calls (until
    /// `deadline` at most), then closes.
    pub(super) async fn finish_retiring(&self, deadline: tokio::time::Instant) {
        self.lifecycle.until_idle_or_closed(deadline).await;
        // Closed as a retirement ends, not by its user: a call refused now is still one
        // the registry let go.
        let closed_now = self.lifecycle.close_retired();
        self.end_closed(closed_now, DEFAULT_CLOSE_TIMEOUT).await;
    }

    /// What follows the move to closed, for the caller that made it (`closed_now`; for
    /// any other, nothing: one close gives back and shuts down): drains the counter
    /// states, gives back their cached tails and shuts the driver down within `timeout`.
    /// True when the shutdown finished in time (or was not this caller's to make).
    async fn end_closed(&self, closed_now: bool, timeout: Duration) -> bool {
        if !closed_now {
            return true;
        }
        let states = self.counters.drain();
        self.give_back_and_shut_down(states, timeout).await
    }

    /// Shuts the driver down (after [`ClientHandle::mark_closed`]), waiting at most
    /// `timeout`; true when it finished in time.
    async fn shut_down_within(&self, timeout: Duration) -> bool {
        if self.is_stale() {
            // Its runtime is gone, and its tasks with it: nothing left to shut down.
            return true;
        }
        let client = self.client.clone();
        let shutdown = tokio::spawn(async move { client.shutdown().await });
        tokio::time::timeout(timeout, shutdown).await.is_ok()
    }

    /// `CLIENT_CLOSED` once [`ClientHandle::close`] was called, or when the client belongs
    /// to a runtime that has ended.
    pub fn ensure_open(&self) -> SeqResult<()> {
        self.check_open()?;
        self.touch();
        Ok(())
    }

    /// [`ClientHandle::ensure_open`] without marking the client used.
    fn check_open(&self) -> SeqResult<()> {
        if self.is_closed() {
            return Err(closed());
        }
        if self.is_stale() {
            return Err(SeqError::new(
                ErrorCode::ClientClosed,
                "this client was opened by a JavaScript environment that has ended (its \
                 connections ended with it); open a new one with connect(uri)",
            ));
        }
        Ok(())
    }

    /// `: the last check of <server> failed: <error>` when no server that takes writes is
    /// known and the driver's monitoring saw a check fail (a certificate refused, a
    /// handshake or login that failed), secrets removed; empty otherwise (a server was
    /// there: another one's failure would not be why the call took too long).
    fn last_failure(&self) -> String {
        if self.writable.address().is_some() {
            return String::new();
        }
        match self.writable.failure() {
            Some((server, error)) => redact(
                &format!(": the last check of {server} failed: {error}"),
                &self.secrets,
            ),
            None => String::new(),
        }
    }

    /// `pending` taking values, under the rule of [`ClientHandle::within`], for tests (calls
    /// are admitted first: [`ClientHandle::admit`]).
    #[cfg(test)]
    pub fn bounded(
        self: &Arc<Self>,
        pending: crate::engine::alloc::counter_state::Pending,
    ) -> crate::engine::alloc::counter_state::Pending {
        Box::pin(self.within(pending, Late::Values))
    }

    /// Admits a call that takes values or writes: counted as pending from now until the
    /// [`Admission`] is dropped, so a retirement that begins meanwhile waits for it.
    /// `CLIENT_CLOSED` once the client is retiring or closed (nothing of the call has
    /// started), or stale; see [`Lifecycle::admit`] for why the order of its steps
    /// matters.
    pub fn admit(self: &Arc<Self>) -> SeqResult<Admission> {
        // Not touched here: the admission touches the client when it ends.
        self.check_open()?;
        if !self.lifecycle.admit() {
            return Err(closed());
        }
        Ok(Admission(self.clone()))
    }

    /// `work`, bounded: it rejects with `CONNECTION` once the call timeout has passed
    /// since now (the call's submission), and with `CLIENT_CLOSED` as soon as the client
    /// closes, so no call waits longer than its client's call timeout on a server that
    /// stopped answering. Work it started may still complete afterwards: `late` says in
    /// the message what that does (values left unused, a gap, never a duplicate; a write
    /// applied). Counted as pending whatever the phase: calls that take values or write
    /// are admitted first ([`ClientHandle::admit`], [`Admission::within`]).
    pub fn within<T, F>(
        self: &Arc<Self>,
        work: F,
        late: Late,
    ) -> impl std::future::Future<Output = SeqResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: std::future::Future<Output = SeqResult<T>> + Send + 'static,
    {
        self.lifecycle.call_started();
        Admission(self.clone()).within(work, late)
    }
}

/// A call admitted to its client ([`ClientHandle::admit`]), counted as pending until
/// dropped.
pub struct Admission(Arc<ClientHandle>);

impl Admission {
    /// `work` under the rule of [`ClientHandle::within`], this admission held until it
    /// ends.
    pub fn within<T, F>(
        self,
        work: F,
        late: Late,
    ) -> impl std::future::Future<Output = SeqResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: std::future::Future<Output = SeqResult<T>> + Send + 'static,
    {
        let handle = self.0.clone();
        let CallBound { timeout, setting } = handle.call_bound;
        let deadline = tokio::time::Instant::now() + timeout;
        async move {
            let _admission = self;
            tokio::select! {
                biased;
                outcome = work => outcome,
                () = handle.lifecycle.closed() => Err(SeqError::new(
                    ErrorCode::ClientClosed,
                    format!(
                        "the client was closed while this call was waiting; {}",
                        late.closed_note()
                    ),
                )),
                _ = tokio::time::sleep_until(deadline) => Err(SeqError::new(
                    ErrorCode::Connection,
                    format!(
                        "cannot reach MongoDB: no answer within {} ms of the call (the \
                         {setting} of the connection){}; {}",
                        timeout.as_millis(),
                        handle.last_failure(),
                        late.note()
                    ),
                )),
            }
        }
    }
}

/// What the answer of a call that timed out still does if the server gives it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Late {
    /// Values reserved late are left unused (a gap).
    Values,
    /// A read changes nothing.
    Read,
    /// A management write may still be applied (its fence completes it in the background).
    Write,
}

impl Late {
    /// What the call did, for a client closed while it waited.
    fn closed_note(self) -> &'static str {
        match self {
            Late::Values => "its values, if reserved, are left unused",
            Late::Read => "nothing was changed",
            Late::Write => {
                "a write sent before the close may still be applied (none is sent after \
                 it): read the counter before trying it again"
            }
        }
    }

    fn note(self) -> &'static str {
        match self {
            Late::Values => "if the server applies it later, its values are left unused",
            Late::Read => "nothing was changed",
            Late::Write => {
                "the write may still be applied: read the counter before trying it again"
            }
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.lifecycle.call_ended();
        self.0.touch();
    }
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
