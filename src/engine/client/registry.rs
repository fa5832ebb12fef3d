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
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use tokio::runtime::Id as RuntimeId;

use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::handle::{current_runtime, ClientHandle, DEFAULT_CLOSE_TIMEOUT};
use crate::engine::client::slot::{Leaving, Opened, Slot, SlotCell};
use crate::engine::error::{ErrorCode, SeqError, SeqResult};

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
    /// Tests only: where every call waits once its client is open, before it checks that
    /// the registry still tracks it.
    #[cfg(test)]
    checked_gate: Option<CheckedGate>,
}

/// Tests only: how calls wait at the registry's `checked_gate`.
#[cfg(test)]
pub(super) enum CheckedGate {
    /// In pairs with the test, at a barrier of two.
    Pairs(Arc<tokio::sync::Barrier>),
    /// Until the test opens it, counted as they arrive.
    Held(crate::engine::test_support::Gate),
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
                    let slot = SlotCell::after(Leaving::retire(old));
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
                                 {} of the connection); no value was reserved",
                                timeout.as_millis(),
                                old.handle.call_timeout_setting()
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
        match &self.checked_gate {
            Some(CheckedGate::Pairs(barrier)) => {
                barrier.wait().await;
            }
            Some(CheckedGate::Held(gate)) => gate.pass().await,
            None => {}
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
        let slots: Vec<(Option<Leaving>, Option<Leaving>)> = {
            let mut slots = lock(&self.slots);
            let mut taken = Vec::new();
            for (_, slot) in slots.iter_mut() {
                let closing = slot
                    .handle()
                    .filter(|handle| !handle.is_stale())
                    .map(|handle| Leaving::close(handle.clone(), timeout));
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
                    let closing = Leaving::close(handle, DEFAULT_CLOSE_TIMEOUT);
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
        // A call that took a slot (to use its client, or to open one into it) has no
        // call pending on the client yet: it is in use all the same.
        let unused = |target: &ConnectionTarget, slot: &Slot, handle: &ClientHandle| {
            Some(target) != keep && Arc::strong_count(slot) == 1 && handle.busy() == 0
        };
        let mut chosen: Vec<ConnectionTarget> = slots
            .iter()
            .filter_map(|(target, slot)| {
                let handle = slot.handle()?;
                (handle.is_stale()
                    || (unused(target, slot, handle)
                        && handle.idle_for() >= self.limits.idle_after))
                    .then(|| target.clone())
            })
            .collect();
        let open = slots.values().filter(|s| s.cell.initialized()).count() - chosen.len();
        if open > self.limits.max_clients {
            let mut idle: Vec<(ConnectionTarget, Duration)> = slots
                .iter()
                .filter(|(target, _)| !chosen.contains(target))
                .filter_map(|(target, slot)| {
                    let handle = slot.handle()?;
                    unused(target, slot, handle).then(|| (target.clone(), handle.idle_for()))
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
                // Retired, not closed: no call was pending when it was chosen, but one
                // may have been admitted since (calls of a handle's kept counter reach
                // the client without the registry); it is waited for, never cut off.
                let leaving = Leaving::retire(handle.clone());
                slots.insert(target, SlotCell::after(leaving));
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
#[path = "registry_tests.rs"]
mod tests;
