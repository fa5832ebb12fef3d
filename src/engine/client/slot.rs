//! A target's client slot: where its shared client opens, once, and the client it
//! replaces, which must have left first. The registry keeps one slot per target and prunes
//! the ones that are spent.
//!
//! # Who touches what
//!
//! A slot is made and replaced only under the registry's lock on its map; calls take a
//! copy (`Arc`) there and open their client into its `cell` outside the lock (the
//! `OnceCell` lets one of them open it). `replaces` never changes once the slot is made;
//! `rotated` is set, under the registry's lock, by the rotation that takes the slot out.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, OnceCell};

use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::handle::ClientHandle;

/// A shared client, with its target's TLS files as read when it opened.
pub(super) struct Opened {
    pub(super) handle: Arc<ClientHandle>,
    pub(super) files: ConnectionTarget,
}

/// A client of a target that leaves while the next client of that target may already be
/// asked for: replaced (its TLS files were rotated: it retires, [`ClientHandle::retire`])
/// or released (its last Node client closed, it went idle or least recently used, or the
/// clients were closed: it closes, [`ClientHandle::close_within`]). The next client opens
/// only once it has given its cached tails back, so that a counter never has two states
/// in one process at a time, not even one that only gives back.
///
/// The client's own phase says whether it still takes calls; this says when it has left
/// (its give-back and shutdown done), which comes later. The task that makes it leave
/// is its only writer; it says so through `done`, a `watch` every waiter reads.
#[derive(Clone)]
pub(super) struct Leaving {
    pub(super) handle: Arc<ClientHandle>,
    done: watch::Receiver<bool>,
}

impl Leaving {
    /// Retires `handle`: it takes no call from now on; its pending calls are waited for,
    /// and it closes, in the background.
    pub(super) fn retire(handle: Arc<ClientHandle>) -> Leaving {
        let deadline = handle.begin_retiring();
        let retiring = handle.clone();
        Leaving::spawn(
            handle,
            async move { retiring.finish_retiring(deadline).await },
        )
    }

    /// Closes `handle` (pending calls reject at once) in the background, waiting at most
    /// `timeout` for its give-back and shutdown. Its calls are refused from now on.
    pub(super) fn close(handle: Arc<ClientHandle>, timeout: Duration) -> Leaving {
        let states = handle.mark_closed();
        let closing = handle.clone();
        Leaving::spawn(handle, async move {
            if let Some(states) = states {
                closing.give_back_and_shut_down(states, timeout).await;
            }
        })
    }

    /// `handle`, leaving by `leave`, run in the background.
    pub(super) fn spawn(
        handle: Arc<ClientHandle>,
        leave: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Leaving {
        let (finished, done) = watch::channel(false);
        tokio::spawn(async move {
            leave.await;
            finished.send_replace(true);
        });
        Leaving { handle, done }
    }

    /// Whether the client has closed.
    pub(super) fn is_finished(&self) -> bool {
        *self.done.borrow() || self.done.has_changed().is_err()
    }

    /// Waits until the client has closed (its cached tails given back or abandoned).
    pub(super) async fn finished(&self) {
        let mut done = self.done.clone();
        // An error is a retiring task that ended without saying so: nothing to wait for.
        let _ = done.wait_for(|done| *done).await;
    }
}

/// Where the shared client of one target is opened, once.
#[derive(Default)]
pub(super) struct SlotCell {
    pub(super) cell: OnceCell<Opened>,
    /// The client this one replaces: this one opens only once that one has closed, so
    /// that a connection never has two clients, two states of one counter, at a time.
    pub(super) replaces: Option<Leaving>,
    /// Set when a rotation of the TLS files took this slot out: a call that opened a
    /// client into it asks again.
    pub(super) rotated: AtomicBool,
}

impl SlotCell {
    pub(super) fn handle(&self) -> Option<&Arc<ClientHandle>> {
        self.cell.get().map(|opened| &opened.handle)
    }

    /// The slot that takes the place of one whose client `leaving` is leaving: the next
    /// client opens into it once that one has closed.
    pub(super) fn after(leaving: Leaving) -> Slot {
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
    pub(super) fn is_spent(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) == 1
            && !self.cell.initialized()
            && self.replaces.as_ref().is_none_or(Leaving::is_finished)
    }
}

pub(super) type Slot = Arc<SlotCell>;
