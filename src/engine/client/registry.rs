//! Driver clients: one per distinct [`ConnectionTarget`], shared by every call.
//!
//! A driver client runs background tasks (server monitors, connection pools) on the tokio
//! runtime that opened it, and dies with that runtime. The host may replace the runtime
//! (napi-rs shuts it down when the last JavaScript thread that loaded the addon ends, and
//! starts a new one for the next), so each client remembers its runtime: a shared client
//! of another runtime is never handed out again but replaced by a new one, and with it
//! everything it held (counter states, cached blocks, coalescing queues, index memos).
//!
//! One target has one shared client at a time. When a call's target read its TLS files
//! after the client opened and found other contents (a certificate rotated in place), the
//! client retires (its pending calls settle, its cached tails are given back) before the
//! new one opens: two clients of one connection would be two states of the same counters,
//! and a `reset` through one would not discard the other's cached block.
//!
//! Shared clients are also released when nobody needs them: when every Node driver client
//! they were derived from has closed ([`ClientRegistry::watch`] / [`ClientRegistry::release`]),
//! after [`Limits::idle_after`] without a call, and beyond [`Limits::max_clients`] (the
//! least recently used idle ones first).
//!
//! Every call waits at most its client's call timeout (the server selection timeout) from
//! when it was submitted, and before that at most as long again for the client it replaces
//! to retire or close; closing is bounded: calls still pending reject with
//! `CLIENT_CLOSED`, and a driver shutdown that outlasts the bound goes on in the background.

use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use mongodb::bson::doc;
use mongodb::Client;
use tokio::runtime::{Handle, Id as RuntimeId};
use tokio::sync::{watch, OnceCell};

use crate::engine::alloc::counter_state::{CounterState, CounterStates, GivenBack, Lane, Pending};
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::driver_error::from_driver;
use crate::engine::client::writable::WritableServer;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::store::counter_store::{CounterRef, DocumentKey};
use crate::engine::store::driver_counters::DriverCounters;
use crate::engine::store::mongo_driver::{IndexMemo, MongoDriver};
use crate::engine::text::validate::check_database;

/// How long closing waits for the driver to shut down before leaving it to finish in the
/// background (pending calls are rejected at once either way).
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// The driver's default server selection timeout, which is also a call's timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a retiring client looks whether its pending calls have settled.
const RETIRE_POLL: Duration = Duration::from_millis(5);

/// The runtime whose context the current thread is in, if any.
fn current_runtime() -> Option<RuntimeId> {
    Handle::try_current().ok().map(|h| h.id())
}

static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Milliseconds since the first use of this module (a cheap, monotonic clock for
/// last-use times).
fn now_millis() -> u64 {
    EPOCH.elapsed().as_millis() as u64
}

/// The counter states a client held, by database and counter document.
type HeldStates = Vec<((String, DocumentKey), Arc<CounterState>)>;

/// An open driver client with the secrets of its connection string.
pub struct ClientHandle {
    client: Client,
    secrets: Arc<Vec<String>>,
    closed: AtomicBool,
    /// Takes no more calls, while those pending settle ([`ClientHandle::retire`]).
    retiring: AtomicBool,
    /// Becomes `true` when the client closes: pending calls reject at once.
    closing: watch::Sender<bool>,
    counters: CounterStates<(String, DocumentKey)>,
    indexes: IndexMemo,
    /// The runtime that runs this client's background tasks.
    runtime: Option<RuntimeId>,
    /// Longest wait of a call, from its submission.
    call_timeout: Duration,
    /// Calls submitted and not settled.
    busy: AtomicUsize,
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
        let call_timeout = options
            .server_selection_timeout
            .unwrap_or(DEFAULT_CALL_TIMEOUT);
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
            closed: AtomicBool::new(false),
            retiring: AtomicBool::new(false),
            closing: watch::Sender::new(false),
            counters: CounterStates::default(),
            indexes: IndexMemo::default(),
            runtime: current_runtime(),
            call_timeout,
            busy: AtomicUsize::new(0),
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
        Ok(
            MongoDriver::new(self.client.database(name), self.secrets.clone())
                .with_index_memo(self.indexes.clone())
                .with_writable(self.writable.clone()),
        )
    }

    /// This client's state of the document counter `counter` finds in database
    /// `database` (queued calls, cached blocks, configuration hint), created on first
    /// use: one for every way of naming that document.
    pub fn counter_state(&self, database: &str, counter: &CounterRef) -> Arc<CounterState> {
        self.counters
            .get(&(database.to_string(), counter.document_key()))
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
        self.closed.load(Ordering::SeqCst) || self.retiring.load(Ordering::SeqCst)
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

    /// The longest a call through this client waits (its server selection timeout).
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// Calls submitted through [`ClientHandle::guard`] and not settled yet.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::SeqCst)
    }

    fn idle_for(&self) -> Duration {
        Duration::from_millis(now_millis().saturating_sub(self.last_used.load(Ordering::Relaxed)))
    }

    fn touch(&self) {
        self.last_used.store(now_millis(), Ordering::Relaxed);
    }

    /// Marks the client closed and rejects its pending calls, without shutting the driver
    /// down. For the caller that closed it, the counter states it held (to give back
    /// their cached tails before the driver shuts down).
    fn mark_closed(&self) -> Option<HeldStates> {
        self.retiring.store(true, Ordering::SeqCst);
        if self.closed.swap(true, Ordering::SeqCst) {
            return None;
        }
        self.closing.send_replace(true);
        Some(self.counters.drain())
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
                let store_of = |lane: &Lane| {
                    let concern = lane.write_concern.as_ref().map(|w| w.to_driver());
                    Arc::new(DriverCounters(
                        MongoDriver::new(database.clone(), self.secrets.clone())
                            .with_write_concern(concern),
                    ))
                };
                state.give_back(store_of).await
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
    async fn give_back_and_shut_down(&self, states: HeldStates, timeout: Duration) -> bool {
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
        let Some(states) = self.mark_closed() else {
            return true;
        };
        self.give_back_and_shut_down(states, timeout).await
    }

    /// Closes as [`ClientHandle::close`] does, but lets the calls already pending settle
    /// first (each within its call timeout from its submission; they are not rejected):
    /// from now on the client takes no call (holders of its counters prepare them again),
    /// then it gives its cached tails back and shuts down. For a client replaced by
    /// another of the same connection, which must not serve a counter beside it.
    pub async fn retire(&self) {
        self.retiring.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + self.call_timeout;
        while self.busy() > 0
            && !self.closed.load(Ordering::SeqCst)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(RETIRE_POLL).await;
        }
        self.close().await;
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
        if self.is_closed() {
            return Err(SeqError::new(
                ErrorCode::ClientClosed,
                "this client was closed; open a new one with connect(uri)",
            ));
        }
        if self.is_stale() {
            return Err(SeqError::new(
                ErrorCode::ClientClosed,
                "this client was opened by a JavaScript environment that has ended (its \
                 connections ended with it); open a new one with connect(uri)",
            ));
        }
        self.touch();
        Ok(())
    }

    /// `pending`, bounded: it rejects with `CONNECTION` once the call timeout has passed
    /// since now (the call's submission), and with `CLIENT_CLOSED` as soon as the client
    /// closes. A round trip it started may still complete afterwards; its values are then
    /// lost (a gap, never a duplicate).
    pub fn guard(self: &Arc<Self>, pending: Pending) -> Pending {
        let timeout = self.call_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut closing = self.closing.subscribe();
        self.busy.fetch_add(1, Ordering::SeqCst);
        let busy = Busy(self.clone());
        Box::pin(async move {
            let _busy = busy;
            tokio::select! {
                biased;
                outcome = pending => outcome,
                _ = closing.wait_for(|closed| *closed) => Err(SeqError::new(
                    ErrorCode::ClientClosed,
                    "the client was closed while this call was waiting; its values, if \
                     reserved, are left unused",
                )),
                _ = tokio::time::sleep_until(deadline) => Err(SeqError::new(
                    ErrorCode::Connection,
                    format!(
                        "cannot reach MongoDB: no answer within {} ms of the call (the \
                         serverSelectionTimeoutMS of the connection); if the server applies \
                         it later, its values are left unused",
                        timeout.as_millis()
                    ),
                )),
            }
        })
    }
}

/// Counts a call as pending on its client until dropped.
struct Busy(Arc<ClientHandle>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

/// A shared client, with its target's TLS files as read when it opened.
struct Opened {
    handle: Arc<ClientHandle>,
    files: ConnectionTarget,
}

/// A client of a target that leaves while the next client of that target may already be
/// asked for: replaced (its TLS files were rotated: it retires, [`ClientHandle::retire`])
/// or released (its last Node client closed, it went idle or least recently used, or the
/// clients were closed: it closes, [`ClientHandle::close_within`]). The next client opens
/// only once it has given its cached tails back, so that a counter never has two states
/// in one process at a time, not even one that only gives back.
#[derive(Clone)]
struct Retiring {
    handle: Arc<ClientHandle>,
    done: watch::Receiver<bool>,
}

impl Retiring {
    /// Retires `handle` in the background.
    fn start(handle: Arc<ClientHandle>) -> Retiring {
        let retiring = handle.clone();
        Retiring::leaving(handle, async move { retiring.retire().await })
    }

    /// Closes `handle` (pending calls reject at once) in the background, waiting at most
    /// `timeout` for its give-back and shutdown. Its calls are refused from now on.
    fn closing(handle: Arc<ClientHandle>, timeout: Duration) -> Retiring {
        let states = handle.mark_closed();
        let closing = handle.clone();
        Retiring::leaving(handle, async move {
            if let Some(states) = states {
                closing.give_back_and_shut_down(states, timeout).await;
            }
        })
    }

    fn leaving(
        handle: Arc<ClientHandle>,
        leave: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Retiring {
        let (finished, done) = watch::channel(false);
        tokio::spawn(async move {
            leave.await;
            finished.send_replace(true);
        });
        Retiring { handle, done }
    }

    /// Whether the client has closed.
    fn is_finished(&self) -> bool {
        *self.done.borrow() || self.done.has_changed().is_err()
    }

    /// Waits until the client has closed (its cached tails given back or abandoned).
    async fn finished(&self) {
        let mut done = self.done.clone();
        // An error is a retiring task that ended without saying so: nothing to wait for.
        let _ = done.wait_for(|done| *done).await;
    }
}

/// Where the shared client of one target is opened, once.
#[derive(Default)]
struct SlotCell {
    cell: OnceCell<Opened>,
    /// The client this one replaces: this one opens only once that one has closed, so
    /// that a connection never has two clients, two states of one counter, at a time.
    replaces: Option<Retiring>,
    /// Set when a rotation of the TLS files took this slot out: a call that opened a
    /// client into it asks again.
    rotated: AtomicBool,
}

impl SlotCell {
    fn handle(&self) -> Option<&Arc<ClientHandle>> {
        self.cell.get().map(|opened| &opened.handle)
    }

    /// The slot that takes the place of one whose client `leaving` is leaving: the next
    /// client opens into it once that one has closed.
    fn after(leaving: Retiring) -> Slot {
        Arc::new(SlotCell {
            replaces: Some(leaving),
            ..SlotCell::default()
        })
    }

    /// Holds no client, waits for none, and no call holds it: nothing to keep it for. A
    /// call opens its client into the slot it took from the map once the client it
    /// replaces has finished; a slot held by a call may be about to hold a client, and
    /// pruning it would leave that client tracked by nothing. Asked with the map locked,
    /// where calls take their copies.
    fn is_spent(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) == 1
            && !self.cell.initialized()
            && self.replaces.as_ref().is_none_or(Retiring::is_finished)
    }
}

type Slot = Arc<SlotCell>;

/// When shared clients are released for lack of use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most clients kept open: past it, opening one closes the least recently used
    /// clients that have no call pending.
    pub max_clients: usize,
    /// A client with no call pending for this long is closed.
    pub idle_after: Duration,
    /// How often idle clients are looked for.
    pub sweep_every: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_clients: 32,
            idle_after: Duration::from_secs(300),
            sweep_every: Duration::from_secs(30),
        }
    }
}

/// Shared clients keyed by target, created on first use.
#[derive(Default)]
pub struct ClientRegistry {
    slots: Mutex<HashMap<ConnectionTarget, Slot>>,
    /// Live Node driver clients each target was derived from.
    watchers: Mutex<HashMap<ConnectionTarget, usize>>,
    limits: Limits,
    /// The runtime in which the idle sweeper runs, if one does.
    sweeper: Mutex<Option<RuntimeId>>,
    /// Tests only: a barrier that every opening waits at twice, once when it starts and
    /// once before it completes, so that a test can act while a client is opening.
    #[cfg(test)]
    opening_gate: Option<Arc<tokio::sync::Barrier>>,
    /// Tests only: a barrier that every call waits at once its client is open, before it
    /// checks that the registry still tracks it.
    #[cfg(test)]
    checked_gate: Option<Arc<tokio::sync::Barrier>>,
}

impl ClientRegistry {
    /// A registry with these limits.
    #[cfg(test)]
    pub fn with_limits(limits: Limits) -> Self {
        ClientRegistry {
            limits,
            ..Default::default()
        }
    }

    /// The client for `target`, opened once however many calls ask at the same time. A
    /// client of another runtime (or closed) is replaced by a new one, and so is one whose
    /// TLS files `target` read later with other contents
    /// ([`ConnectionTarget::supersedes`]): the old one retires first (its pending calls
    /// settle, its cached tails are given back), then the new one opens, so that one
    /// connection never serves a counter from two states. `CLIENT_CLOSED` when the clients
    /// were closed (or `target` released) while it was opening.
    pub async fn get(&'static self, target: &ConnectionTarget) -> SeqResult<Arc<ClientHandle>> {
        // Asking again takes another rotation of the files each time.
        loop {
            if let Some(handle) = self.get_once(target).await? {
                return Ok(handle);
            }
        }
    }

    /// [`ClientRegistry::get`], or `None` when a rotation replaced the client this call
    /// opened before it could be used (ask again).
    async fn get_once(
        &'static self,
        target: &ConnectionTarget,
    ) -> SeqResult<Option<Arc<ClientHandle>>> {
        let (slot, unusable) = {
            let mut slots = lock(&self.slots);
            let (unusable, rotated) = match slots.get(target).and_then(|slot| slot.cell.get()) {
                Some(opened) if !opened.handle.is_usable() => (true, None),
                Some(opened) if target.supersedes(&opened.files) => {
                    (false, Some(opened.handle.clone()))
                }
                _ => (false, None),
            };
            let unusable = if unusable { slots.remove(target) } else { None };
            let slot = match rotated {
                Some(old) => {
                    if let Some(taken) = slots.remove(target) {
                        taken.rotated.store(true, Ordering::SeqCst);
                    }
                    let slot = SlotCell::after(Retiring::start(old));
                    slots.insert(target.clone(), slot.clone());
                    slot
                }
                None => slots.entry(target.clone()).or_default().clone(),
            };
            (slot, unusable)
        };
        if let Some(old) = unusable.as_ref().and_then(|slot| slot.handle()) {
            // A client of a runtime that ended: its tasks are gone, only mark it closed so
            // that whoever still holds it stops using it.
            old.mark_closed();
        }
        let mut opened = false;
        let handle = slot
            .cell
            .get_or_try_init(|| async {
                opened = true;
                #[cfg(test)]
                if let Some(gate) = &self.opening_gate {
                    gate.wait().await;
                    gate.wait().await;
                }
                if let Some(old) = &slot.replaces {
                    // Within the call's own timeout: a client whose pending calls hang (a
                    // server that stopped answering) retires only once they time out.
                    let timeout = old.handle.call_timeout();
                    if tokio::time::timeout(timeout, old.finished()).await.is_err() {
                        return Err(SeqError::new(
                            ErrorCode::Connection,
                            format!(
                                "cannot reach MongoDB: the connection's previous client, \
                                 closing, did not finish within {} ms of the call (the \
                                 serverSelectionTimeoutMS of the connection); no value was \
                                 reserved",
                                timeout.as_millis()
                            ),
                        ));
                    }
                }
                // The files as the driver reads them now, for the rotations to come.
                let files = target.with_tls_files_read_now();
                let handle = Arc::new(ClientHandle::open(&files).await?);
                Ok::<_, SeqError>(Opened { handle, files })
            })
            .await?
            .handle
            .clone();
        // The slot may have been taken out while the client was opening (the clients
        // were closed, or the last Node client of `target` closed): a client opened into
        // it would be tracked by nothing, never released nor closed. It is closed here
        // (nothing used it yet), and the call rejects like those the close found pending.
        // Taken out by a rotation, it is retiring already: the call asks again.
        #[cfg(test)]
        if let Some(gate) = &self.checked_gate {
            gate.wait().await;
        }
        let tracked = lock(&self.slots)
            .get(target)
            .is_some_and(|now| Arc::ptr_eq(now, &slot));
        if !tracked {
            if slot.rotated.load(Ordering::SeqCst) {
                return Ok(None);
            }
            handle.close().await;
            return Err(SeqError::new(
                ErrorCode::ClientClosed,
                "the client was closed while this call was waiting for it to open; no \
                 value was reserved",
            ));
        }
        handle.touch();
        if opened {
            self.release_unused(Some(target));
            self.ensure_sweeper();
        }
        Ok(Some(handle))
    }

    /// The client for `target` if it is already open and belongs to the current runtime
    /// (no waiting), and `target` does not replace it (see [`ClientRegistry::get`]).
    /// `None` outside any runtime's context.
    pub fn try_get(&self, target: &ConnectionTarget) -> Option<Arc<ClientHandle>> {
        let now = current_runtime()?;
        let slots = lock(&self.slots);
        let opened = slots.get(target)?.cell.get()?;
        let handle = &opened.handle;
        if handle.runtime != Some(now) || handle.is_closed() || target.supersedes(&opened.files) {
            return None;
        }
        handle.touch();
        Some(handle.clone())
    }

    /// How many distinct clients are open.
    pub fn len(&self) -> usize {
        let slots = lock(&self.slots);
        slots.values().filter(|s| s.cell.initialized()).count()
    }

    /// Whether no client is open.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes and forgets every client, waiting at most `timeout` for their shutdowns
    /// (pending calls reject with `CLIENT_CLOSED` at once). True when every shutdown
    /// finished in time.
    pub async fn close_all(&self, timeout: Duration) -> bool {
        // Each client leaves a slot that a call made meanwhile opens its next client into
        // only once this one has given its cached tails back.
        let slots: Vec<(Option<Retiring>, Option<Retiring>)> = {
            let mut slots = lock(&self.slots);
            let mut taken = Vec::new();
            for (_, slot) in slots.iter_mut() {
                let closing = slot
                    .handle()
                    .filter(|handle| !handle.is_stale())
                    .map(|handle| Retiring::closing(handle.clone(), timeout));
                if let Some(stale) = slot.handle().filter(|handle| handle.is_stale()) {
                    stale.mark_closed();
                }
                taken.push((closing.clone(), slot.replaces.clone()));
                *slot = match (closing, &slot.replaces) {
                    (Some(closing), _) => SlotCell::after(closing),
                    // Still waiting for a client that retires: so are calls made meanwhile.
                    (None, Some(retiring)) => SlotCell::after(retiring.clone()),
                    (None, None) => Arc::default(),
                };
            }
            slots.retain(|_, slot| !slot.is_spent());
            taken
        };
        // A client still retiring closes too (its pending calls reject at once).
        let closing = slots.into_iter().map(|(closing, retiring)| async move {
            let mut done = true;
            if let Some(closing) = closing {
                done &= tokio::time::timeout(timeout, closing.finished())
                    .await
                    .is_ok();
            }
            if let Some(retiring) = retiring {
                done &= retiring.handle.close_within(timeout).await;
                done &= tokio::time::timeout(timeout, retiring.finished())
                    .await
                    .is_ok();
            }
            done
        });
        futures_util::future::join_all(closing)
            .await
            .into_iter()
            .all(|done| done)
    }

    /// Notes that one more live Node driver client uses `target`.
    pub fn watch(&self, target: &ConnectionTarget) {
        *lock(&self.watchers).entry(target.clone()).or_default() += 1;
    }

    /// One Node driver client of `target` closed: when it was the last, the shared
    /// client closes (waiting at most [`DEFAULT_CLOSE_TIMEOUT`]); a later call opens a
    /// new one.
    pub async fn release(&self, target: &ConnectionTarget) {
        let last = {
            let mut watchers = lock(&self.watchers);
            match watchers.get_mut(target) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    false
                }
                Some(_) => {
                    watchers.remove(target);
                    true
                }
                None => false,
            }
        };
        if !last {
            return;
        }
        let closing = {
            let mut slots = lock(&self.slots);
            let handle = slots.get(target).and_then(|slot| slot.handle()).cloned();
            match handle {
                Some(handle) if !handle.is_stale() => {
                    let closing = Retiring::closing(handle, DEFAULT_CLOSE_TIMEOUT);
                    slots.insert(target.clone(), SlotCell::after(closing.clone()));
                    Some(closing)
                }
                stale => {
                    // A client still opening is closed by the call that opens it; one that
                    // waits for a retiring client keeps the next one waiting too.
                    let retiring = slots.remove(target).and_then(|slot| slot.replaces.clone());
                    if let Some(retiring) = retiring {
                        slots.insert(target.clone(), SlotCell::after(retiring));
                    }
                    if let Some(stale) = stale {
                        stale.mark_closed();
                    }
                    None
                }
            }
        };
        if let Some(closing) = closing {
            closing.finished().await;
        }
    }

    /// Takes out the clients to release: idle ones (no call pending for
    /// [`Limits::idle_after`]), then, past [`Limits::max_clients`], the least recently
    /// used ones with no call pending. Clients of another runtime go too. The client of
    /// `keep` (just opened for a call) stays. Each released client closes in the
    /// background, leaving a slot that its target's next client opens into once it has
    /// closed; slots left by clients that closed since are forgotten.
    fn take_unused(&self, keep: Option<&ConnectionTarget>) -> Vec<Arc<ClientHandle>> {
        let mut slots = lock(&self.slots);
        slots.retain(|_, slot| !slot.is_spent());
        let mut chosen: Vec<ConnectionTarget> = slots
            .iter()
            .filter_map(|(target, slot)| {
                let handle = slot.handle()?;
                (handle.is_stale()
                    || (Some(target) != keep
                        && handle.busy() == 0
                        && handle.idle_for() >= self.limits.idle_after))
                    .then(|| target.clone())
            })
            .collect();
        let open = slots.values().filter(|s| s.cell.initialized()).count() - chosen.len();
        if open > self.limits.max_clients {
            let mut idle: Vec<(ConnectionTarget, Duration)> = slots
                .iter()
                .filter(|(target, _)| Some(*target) != keep && !chosen.contains(target))
                .filter_map(|(target, slot)| {
                    let handle = slot.handle()?;
                    (handle.busy() == 0).then(|| (target.clone(), handle.idle_for()))
                })
                .collect();
            idle.sort_by_key(|entry| std::cmp::Reverse(entry.1));
            let excess = open - self.limits.max_clients;
            chosen.extend(idle.into_iter().take(excess).map(|(target, _)| target));
        }
        let mut taken = Vec::new();
        for target in chosen {
            let Some(handle) = slots.get(&target).and_then(|s| s.handle()).cloned() else {
                continue;
            };
            if handle.is_stale() {
                // Its runtime ended, its tasks with it: nothing to give back or wait for.
                handle.mark_closed();
                slots.remove(&target);
            } else {
                let closing = Retiring::closing(handle.clone(), DEFAULT_CLOSE_TIMEOUT);
                slots.insert(target, SlotCell::after(closing));
            }
            taken.push(handle);
        }
        taken
    }

    /// Releases the clients [`ClientRegistry::take_unused`] gives (closing in the
    /// background). Returns how many clients are left.
    fn release_unused(&self, keep: Option<&ConnectionTarget>) -> usize {
        self.take_unused(keep);
        self.len()
    }

    /// Starts the task that releases idle clients in the current runtime, unless one
    /// runs there already. It stops when no client is left.
    fn ensure_sweeper(&'static self) {
        let Some(now) = current_runtime() else {
            return;
        };
        {
            let mut sweeper = lock(&self.sweeper);
            if *sweeper == Some(now) {
                return;
            }
            *sweeper = Some(now);
        }
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(self.limits.sweep_every).await;
                if self.release_unused(None) == 0 {
                    let mut sweeper = lock(&self.sweeper);
                    // Recheck under the lock: a client opened since then keeps it going.
                    if lock(&self.slots).is_empty() {
                        *sweeper = None;
                        return;
                    }
                }
            }
        });
    }
}

/// The process-wide registry used for Node driver `Db` handles and `uri` options.
pub static SHARED_CLIENTS: LazyLock<ClientRegistry> = LazyLock::new(ClientRegistry::default);

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        runtime().block_on(f)
    }

    fn leaked(limits: Limits) -> &'static ClientRegistry {
        Box::leak(Box::new(ClientRegistry::with_limits(limits)))
    }

    /// A registry whose openings wait twice at the returned barrier (see `opening_gate`).
    fn gated() -> (&'static ClientRegistry, Arc<tokio::sync::Barrier>) {
        let gate = Arc::new(tokio::sync::Barrier::new(2));
        let registry = ClientRegistry {
            opening_gate: Some(gate.clone()),
            ..ClientRegistry::default()
        };
        (Box::leak(Box::new(registry)), gate)
    }

    #[test]
    fn a_client_still_opening_when_the_clients_close_is_closed_and_never_handed_out() {
        run(async {
            let (registry, gate) = gated();
            let a = target(50);
            let open = |a: &ConnectionTarget| {
                let a = a.clone();
                tokio::spawn(async move { registry.get(&a).await })
            };
            // closeSharedClients() while a call's client is opening.
            let call = open(&a);
            gate.wait().await;
            assert_eq!(registry.len(), 0, "still opening");
            assert!(registry.close_all(DEFAULT_CLOSE_TIMEOUT).await);
            gate.wait().await;
            let e = call
                .await
                .unwrap()
                .err()
                .expect("the call was pending at the close");
            assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
            assert_eq!(registry.len(), 0, "no client is left that nothing tracks");
            // The last Node client closing while a call's client is opening: the same.
            registry.watch(&a);
            let call = open(&a);
            gate.wait().await;
            registry.release(&a).await;
            gate.wait().await;
            let e = call.await.unwrap().err().expect("its Node client closed");
            assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
            assert_eq!(registry.len(), 0);
            // A later call opens a client that the next close closes.
            let later = open(&a);
            gate.wait().await;
            gate.wait().await;
            let later = later.await.unwrap().unwrap();
            assert_eq!(registry.len(), 1);
            assert!(Arc::ptr_eq(&registry.try_get(&a).unwrap(), &later));
            registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
            assert!(later.is_closed());
        });
    }

    #[test]
    fn a_client_opening_after_its_predecessor_closed_is_not_pruned_by_another_release() {
        run(async {
            let (registry, gate) = gated();
            let a = target(51);
            let open = |a: &ConnectionTarget| {
                let a = a.clone();
                tokio::spawn(async move { registry.get(&a).await })
            };
            // A worker's Node client closes: its shared client is released and leaves a
            // slot for the next one, which opens once the release has given back.
            registry.watch(&a);
            let first = open(&a);
            gate.wait().await;
            gate.wait().await;
            first.await.unwrap().unwrap();
            registry.release(&a).await;
            // The next worker's call opens into that slot while a call for another
            // connection releases unused clients: the slot is in use, not spent.
            let call = open(&a);
            gate.wait().await;
            registry.release_unused(None);
            gate.wait().await;
            let handle = call.await.unwrap().expect("the opening slot was kept");
            assert!(Arc::ptr_eq(&registry.try_get(&a).unwrap(), &handle));
            assert_eq!(registry.len(), 1);
            registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
        });
    }

    fn target(n: u32) -> ConnectionTarget {
        ConnectionTarget::from_uri(&format!(
            "mongodb://127.0.0.1:1/?appName=t{n}&serverSelectionTimeoutMS=300"
        ))
        .unwrap()
    }

    #[test]
    fn a_tls_file_rotated_in_place_replaces_the_client_once_it_has_retired() {
        use crate::engine::client::connection::derive_from_node_client;
        use crate::engine::client::node_options::{NodeOptions, NodeValue};
        use crate::engine::counter::id_range::IdRange;
        let dir =
            std::env::temp_dir().join(format!("mongodb-sequence-{}-open", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ca.pem");
        let uri = format!(
            "mongodb://127.0.0.1:1/?tls=true&serverSelectionTimeoutMS=300&tlsCAFile={}",
            path.to_str().unwrap()
        );
        let mut host = std::collections::BTreeMap::new();
        host.insert("host".to_string(), NodeValue::Text("127.0.0.1".into()));
        host.insert("port".to_string(), NodeValue::number(2.0));
        let mut o = NodeOptions::new();
        o.insert("hosts".into(), NodeValue::List(vec![NodeValue::Map(host)]));
        o.insert("serverSelectionTimeoutMS".into(), NodeValue::number(300.0));
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert(
            "tlsCAFile".into(),
            NodeValue::Text(path.to_str().unwrap().into()),
        );
        let made: [&dyn Fn() -> ConnectionTarget; 2] =
            [&|| ConnectionTarget::from_uri(&uri).unwrap(), &|| {
                derive_from_node_client(&o).unwrap()
            }];
        for make in made {
            std::fs::write(&path, b"alice's CA").unwrap();
            let before = make();
            run(async {
                let registry = leaked(Limits::default());
                let first = registry.get(&before).await.unwrap();
                // Rotated in place while the client is open: targets made before keep it.
                std::fs::write(&path, b"alice's renewed CA").unwrap();
                assert!(Arc::ptr_eq(&registry.get(&before).await.unwrap(), &first));
                assert!(registry.try_get(&before).is_some());
                let (settle, settled) = tokio::sync::oneshot::channel();
                let pending = first.guard(Box::pin(async move { settled.await.unwrap() }));
                // A target that read the new contents replaces it, never beside it: the old
                // one takes no more calls, its pending call settles, it closes (its cached
                // tails given back), and only then does the new one open.
                let renewed = make();
                assert_eq!(renewed, before, "one connection");
                assert!(
                    registry.try_get(&renewed).is_none(),
                    "left to get, which replaces"
                );
                let replacing = {
                    let renewed = renewed.clone();
                    tokio::spawn(async move { registry.get(&renewed).await })
                };
                tokio::time::sleep(Duration::from_millis(50)).await;
                assert!(first.is_closed(), "the old client takes no more calls");
                assert!(
                    !replacing.is_finished(),
                    "the new one waits for the pending call"
                );
                settle.send(Ok(IdRange::contiguous(7, 7))).unwrap();
                let outcome = pending.await.unwrap();
                assert_eq!((outcome.first, outcome.last), (7, 7), "not rejected");
                let second = replacing.await.unwrap().unwrap();
                assert!(!Arc::ptr_eq(&second, &first));
                assert!(
                    first.closed.load(Ordering::SeqCst),
                    "closed before the new one opened"
                );
                assert_eq!(registry.len(), 1);
                // Targets made before it opened use it: they never reopen the old contents.
                assert!(Arc::ptr_eq(&registry.get(&before).await.unwrap(), &second));
                assert!(Arc::ptr_eq(&registry.try_get(&before).unwrap(), &second));
                assert!(Arc::ptr_eq(&registry.get(&renewed).await.unwrap(), &second));
                // Rotated again with a call pending: the clients closing meanwhile reject it
                // at once, and the replacement with it.
                std::fs::write(&path, b"alice's CA, third").unwrap();
                let pending = second.guard(Box::pin(std::future::pending()));
                let third = make();
                let replacing = tokio::spawn(async move { registry.get(&third).await });
                tokio::time::sleep(Duration::from_millis(20)).await;
                assert!(registry.close_all(DEFAULT_CLOSE_TIMEOUT).await);
                assert_eq!(pending.await.unwrap_err().code, ErrorCode::ClientClosed);
                let e = replacing.await.unwrap().err().expect("rejected");
                assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
                assert!(registry.is_empty());
                // Released: the next client of the oldest target opens with the files as
                // they are now, instead of failing for good.
                let reopened = registry.get(&before).await.unwrap();
                assert!(reopened.is_usable() && !Arc::ptr_eq(&reopened, &second));
                registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
            });
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_call_whose_new_client_a_rotation_replaced_asks_again() {
        let dir =
            std::env::temp_dir().join(format!("mongodb-sequence-{}-again", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ca.pem");
        std::fs::write(&path, b"alice's CA").unwrap();
        let uri = format!(
            "mongodb://127.0.0.1:1/?tls=true&serverSelectionTimeoutMS=300&tlsCAFile={}",
            path.to_str().unwrap()
        );
        let before = ConnectionTarget::from_uri(&uri).unwrap();
        run(async {
            let gate = Arc::new(tokio::sync::Barrier::new(2));
            let registry: &'static ClientRegistry = Box::leak(Box::new(ClientRegistry {
                checked_gate: Some(gate.clone()),
                ..ClientRegistry::default()
            }));
            let call = {
                let before = before.clone();
                tokio::spawn(async move { registry.get(&before).await })
            };
            // Its client is open; the call has not checked it yet.
            let opened = loop {
                match registry.try_get(&before) {
                    Some(opened) => break opened,
                    None => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            };
            // A call that read the rotated file replaces it meanwhile.
            std::fs::write(&path, b"alice's renewed CA").unwrap();
            let renewed = ConnectionTarget::from_uri(&uri).unwrap();
            let replacing = {
                let renewed = renewed.clone();
                tokio::spawn(async move { registry.get(&renewed).await })
            };
            while registry.try_get(&renewed).is_none() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            // Four arrivals at the gate: both calls' checks, the first call's second one,
            // and this (bounded: a call that did not ask again never arrives).
            let _ = tokio::time::timeout(Duration::from_secs(10), gate.wait()).await;
            let first = call.await.unwrap().expect("asked again, not refused");
            let second = replacing.await.unwrap().expect("opened");
            assert!(Arc::ptr_eq(&first, &second), "the replacement");
            assert!(opened.is_closed() && !Arc::ptr_eq(&first, &opened));
            assert_eq!(registry.len(), 1);
            registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn same_target_shares_one_client_and_different_ones_do_not() {
        run(async {
            let registry = leaked(Limits::default());
            let a = ConnectionTarget::from_uri("mongodb://127.0.0.1:1/").unwrap();
            let b = ConnectionTarget::from_uri("mongodb://u:p@127.0.0.1:1/").unwrap();
            let (x, y) = tokio::join!(registry.get(&a), registry.get(&a));
            assert!(Arc::ptr_eq(&x.unwrap(), &y.unwrap()));
            let z = registry.get(&b).await.unwrap();
            assert_eq!(registry.len(), 2);
            assert!(!z.is_closed());
            registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
            assert!(registry.is_empty());
            assert!(z.is_closed());
            assert_eq!(z.driver("db").err().unwrap().code, ErrorCode::ClientClosed);
        });
    }

    #[test]
    fn a_client_of_an_ended_runtime_is_replaced_not_reused() {
        let registry = leaked(Limits::default());
        let a = target(1);
        let old = runtime().block_on(registry.get(&a)).unwrap();
        // The runtime that opened `old` is gone (dropped above); a new one takes over.
        let rt = runtime();
        let _guard = rt.enter();
        assert!(
            old.is_stale(),
            "seen from the new runtime, the old client is stale"
        );
        assert!(
            registry.try_get(&a).is_none(),
            "never handed out without waiting"
        );
        assert_eq!(old.ensure_open().unwrap_err().code, ErrorCode::ClientClosed);
        let new = rt.block_on(registry.get(&a)).unwrap();
        assert!(!Arc::ptr_eq(&old, &new));
        assert!(old.is_closed(), "the replaced client is marked closed");
        assert!(new.is_usable());
        assert!(Arc::ptr_eq(&registry.try_get(&a).unwrap(), &new));
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn outside_any_runtime_try_get_hands_out_nothing() {
        let registry = leaked(Limits::default());
        let a = target(2);
        let rt = runtime();
        rt.block_on(registry.get(&a)).unwrap();
        assert!(registry.try_get(&a).is_none());
        let _guard = rt.enter();
        assert!(registry.try_get(&a).is_some());
    }

    #[test]
    fn clients_past_the_limit_are_closed_least_recently_used_first() {
        run(async {
            let registry = leaked(Limits {
                max_clients: 3,
                ..Limits::default()
            });
            let mut handles = Vec::new();
            for n in 0..3 {
                handles.push(registry.get(&target(10 + n)).await.unwrap());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // The first is used again: the second is now the least recently used.
            registry.get(&target(10)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
            let fourth = registry.get(&target(13)).await.unwrap();
            assert_eq!(registry.len(), 3);
            assert!(handles[1].is_closed(), "the least recently used one closed");
            assert!(!handles[0].is_closed() && !handles[2].is_closed());
            assert!(!fourth.is_closed());
        });
    }

    #[test]
    fn a_client_with_a_pending_call_is_not_released() {
        run(async {
            let registry = leaked(Limits {
                max_clients: 1,
                idle_after: Duration::from_millis(1),
                sweep_every: Duration::from_millis(5),
            });
            let busy = registry.get(&target(20)).await.unwrap();
            let never: Pending = Box::pin(std::future::pending());
            let guarded = busy.guard(never);
            tokio::time::sleep(Duration::from_millis(30)).await;
            assert!(!busy.is_closed(), "a pending call keeps its client");
            let other = registry.get(&target(21)).await.unwrap();
            assert!(!busy.is_closed(), "even past the limit");
            // The pending call times out (serverSelectionTimeoutMS=300) and settles.
            let outcome = guarded.await;
            assert_eq!(outcome.unwrap_err().code, ErrorCode::Connection);
            tokio::time::sleep(Duration::from_millis(40)).await;
            assert!(
                busy.is_closed() && other.is_closed(),
                "idle ones are released"
            );
            assert!(registry.is_empty());
        });
    }

    #[test]
    fn a_pending_call_waits_at_most_its_timeout_and_rejects_at_close() {
        run(async {
            let registry = leaked(Limits::default());
            let handle = registry.get(&target(30)).await.unwrap();
            assert_eq!(handle.call_timeout(), Duration::from_millis(300));
            let started = Instant::now();
            let timed_out = handle.guard(Box::pin(std::future::pending())).await;
            let took = started.elapsed();
            assert_eq!(timed_out.unwrap_err().code, ErrorCode::Connection);
            // Its own 300 ms, not the driver's 30 s (loose above: a loaded machine is slow).
            assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3));

            let pending = handle.guard(Box::pin(std::future::pending()));
            let closer = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                registry.close_all(Duration::from_millis(200)).await
            };
            let started = Instant::now();
            let (outcome, _) = tokio::join!(pending, closer);
            assert_eq!(outcome.unwrap_err().code, ErrorCode::ClientClosed);
            // The code already tells the close from the 300 ms timeout; the bound only
            // catches a call left hanging.
            assert!(started.elapsed() < Duration::from_secs(3));
            assert_eq!(handle.busy(), 0);
        });
    }

    #[test]
    fn the_shared_client_closes_with_its_last_node_client() {
        run(async {
            let registry = leaked(Limits::default());
            let a = target(40);
            registry.watch(&a);
            registry.watch(&a);
            let handle = registry.get(&a).await.unwrap();
            registry.release(&a).await;
            assert!(!handle.is_closed(), "another Node client still uses it");
            registry.release(&a).await;
            assert!(handle.is_closed(), "the last one closed");
            assert!(registry.is_empty());
            let reopened = registry.get(&a).await.unwrap();
            assert!(!reopened.is_closed(), "a later call opens a new one");
            registry.release(&a).await;
            assert!(!reopened.is_closed(), "an unwatched target is not released");
        });
    }
}
