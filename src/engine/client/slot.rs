//! A target's client slot: where its shared client opens, once, and the client it
//! replaces, which must have left first. The registry keeps one slot per target and prunes
//! the ones that are spent.

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
#[derive(Clone)]
pub(super) struct Retiring {
    pub(super) handle: Arc<ClientHandle>,
    done: watch::Receiver<bool>,
}

impl Retiring {
    /// Retires `handle` in the background.
    pub(super) fn start(handle: Arc<ClientHandle>) -> Retiring {
        let retiring = handle.clone();
        Retiring::leaving(handle, async move { retiring.retire().await })
    }

    /// Closes `handle` (pending calls reject at once) in the background, waiting at most
    /// `timeout` for its give-back and shutdown. Its calls are refused from now on.
    pub(super) fn closing(handle: Arc<ClientHandle>, timeout: Duration) -> Retiring {
        let states = handle.mark_closed();
        let closing = handle.clone();
        Retiring::leaving(handle, async move {
            if let Some(states) = states {
                closing.give_back_and_shut_down(states, timeout).await;
            }
        })
    }

    pub(super) fn leaving(
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
    pub(super) replaces: Option<Retiring>,
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
    pub(super) fn after(leaving: Retiring) -> Slot {
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
            && self.replaces.as_ref().is_none_or(Retiring::is_finished)
    }
}

pub(super) type Slot = Arc<SlotCell>;
