//! A client's life, which only moves forward: open (it takes calls), retiring (it takes
//! none; those pending go on), closed (those pending reject) — and its pending calls.
//!
//! # Who touches what
//!
//! The phase is one atomic: it is read on every call, from the JavaScript thread and
//! the runtime's threads, so a lock there would make every call take it. Only the
//! transitions below write it, each a compare-and-swap or a swap that never moves back,
//! so two of them racing (a retirement and a close) end in the later phase. `pending`
//! is counted up by [`Lifecycle::admit`] or [`Lifecycle::call_started`] when a call is
//! submitted and down by [`Lifecycle::call_ended`] when it ends, on any thread.
//!
//! Admission counts the call before it looks at the phase, and a retirement moves the
//! phase before it looks at the count (all sequentially consistent): of a call admitted
//! in the instant a retirement begins, either the call sees `Retiring` and is refused
//! before it reserves anything, or the retirement sees it pending and waits for it.
//! Looking first and counting after would let the retirement close the client under a
//! call that had already reserved values (a gap).
//!
//! Waits are woken, never polled: `moved` is notified by every move of the phase (a
//! pending call rejects at once on the move to `Closed`), `idle` when the last pending
//! call ends (a retiring client
//! closes once its calls are done). Each wait asks for its wake-up before it looks at the
//! state, so a change in between is not missed.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Where a client is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// It takes calls.
    Open,
    /// It takes no more calls; those pending go on ([`super::handle::ClientHandle::retire`]).
    Retiring,
    /// Calls still pending reject with `CLIENT_CLOSED`; its cached tails are given back and
    /// its driver shut down.
    Closed,
}

impl Phase {
    fn of(raw: u8) -> Phase {
        match raw & PHASE_BITS {
            0 => Phase::Open,
            1 => Phase::Retiring,
            _ => Phase::Closed,
        }
    }
}

/// The bits of the phase atomic that hold the [`Phase`].
const PHASE_BITS: u8 = 0b011;
/// The bit of the phase atomic set by a retirement, in the same move as the phase, and
/// kept by the close that ends it ([`Lifecycle::close_retired`]); any other close clears
/// it. A call refused while it is set was refused because the registry let the client
/// go, never because its user closed it ([`Lifecycle::was_let_go`]).
const LET_GO: u8 = 0b100;

/// A client's phase and pending calls, with the wake-ups of those who wait on them.
pub struct Lifecycle {
    /// The [`Phase`] (`PHASE_BITS`) and the [`LET_GO`] bit.
    phase: AtomicU8,
    pending: AtomicUsize,
    /// Notified by every move of the phase.
    moved: Notify,
    /// Notified when the last pending call ends.
    idle: Notify,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            phase: AtomicU8::new(Phase::Open as u8),
            pending: AtomicUsize::new(0),
            moved: Notify::new(),
            idle: Notify::new(),
        }
    }
}

impl Lifecycle {
    /// The phase now.
    pub fn phase(&self) -> Phase {
        Phase::of(self.phase.load(Ordering::SeqCst))
    }

    /// `Open` → `Retiring`, let go. False when it was not open (retiring or closed
    /// already).
    pub fn retire(&self) -> bool {
        let (open, retiring) = (Phase::Open as u8, Phase::Retiring as u8 | LET_GO);
        let moved = self
            .phase
            .compare_exchange(open, retiring, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if moved {
            self.moved.notify_waiters();
        }
        moved
    }

    /// `Open` or `Retiring` → `Closed`, waking the calls waiting for it, by its user (or
    /// because its runtime ended): no longer let go, even when a retirement came first
    /// or closed it already. True for the one call that made the move (it gives back and
    /// shuts down); false when it was closed already.
    pub fn close(&self) -> bool {
        self.moved_to_closed(self.phase.swap(Phase::Closed as u8, Ordering::SeqCst))
    }

    /// [`Lifecycle::close`] that ends a retirement: a call refused from now on is still
    /// one the registry let go.
    pub fn close_retired(&self) -> bool {
        let closed = |raw: u8| Some(Phase::Closed as u8 | (raw & LET_GO));
        let before = self
            .phase
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, closed);
        self.moved_to_closed(before.unwrap_or_else(|raw| raw))
    }

    /// Whether the phase before a close was not `Closed`, waking the waiters if so.
    fn moved_to_closed(&self, before: u8) -> bool {
        if Phase::of(before) == Phase::Closed {
            return false;
        }
        self.moved.notify_waiters();
        true
    }

    /// Whether the registry let it go: it retired, and no close by its user came since.
    /// A call refused by [`Lifecycle::admit`] that finds this set was refused for the
    /// retirement (the bit moved with the phase).
    pub fn was_let_go(&self) -> bool {
        self.phase.load(Ordering::SeqCst) & LET_GO != 0
    }

    /// Calls started and not ended.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// A call that needs the client open (it takes values, or writes) is admitted: true,
    /// and it counts as pending until [`Lifecycle::call_ended`], when the client is open;
    /// false, and it is not counted, once it is retiring or closed.
    pub fn admit(&self) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.phase() == Phase::Open {
            return true;
        }
        self.call_ended();
        false
    }

    /// A call was submitted, whatever the phase (a read, which a retiring client still
    /// serves): it counts as pending until [`Lifecycle::call_ended`].
    pub fn call_started(&self) {
        self.pending.fetch_add(1, Ordering::SeqCst);
    }

    /// A call started by [`Lifecycle::call_started`] ended; the last one wakes
    /// [`Lifecycle::until_idle_or_closed`].
    pub fn call_ended(&self) {
        // Only a retiring (or closed) client is waited on for idleness, and the retirement
        // moves the phase before it looks at the count: a call that still sees `Open` here
        // ended before that look, which then finds it gone. An open client's calls (every
        // cached call) skip the notification's lock.
        if self.pending.fetch_sub(1, Ordering::SeqCst) == 1 && self.phase() != Phase::Open {
            self.idle.notify_waiters();
        }
    }

    /// Waits until the client is closed.
    pub async fn closed(&self) {
        self.reached(Phase::Closed).await;
    }

    /// Waits until the phase is `phase` or a later one (it never moves back).
    pub async fn reached(&self, phase: Phase) {
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            if self.phase() as u8 >= phase as u8 {
                return;
            }
            moved.await;
        }
    }

    /// Waits until no call is pending, or the client is closed, or `deadline` (what a
    /// retiring client waits for before it closes). The end of the last pending call
    /// wakes it only once the client is no longer open ([`Lifecycle::call_ended`]).
    pub async fn until_idle_or_closed(&self, deadline: tokio::time::Instant) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.pending() == 0 || self.phase() == Phase::Closed {
                return;
            }
            tokio::select! {
                // A call started since may be pending again: look again.
                () = &mut idle => {}
                () = self.closed() => return,
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::engine::test_support::run;

    /// Far beyond the tests' own bounds: only a wake-up ends such a wait in time.
    const FAR: Duration = Duration::from_secs(600);
    /// How long a test waits for a wake-up before it fails.
    const BOUND: Duration = Duration::from_secs(10);

    #[test]
    fn the_phase_only_moves_forward_through_its_transitions() {
        let life = Lifecycle::default();
        assert_eq!(life.phase(), Phase::Open);
        assert!(life.retire(), "open → retiring");
        assert_eq!(life.phase(), Phase::Retiring);
        assert!(!life.retire(), "once");
        assert!(life.close(), "retiring → closed, by this call");
        assert_eq!(life.phase(), Phase::Closed);
        assert!(!life.close(), "closed already: not this call's to finish");
        assert!(!life.retire(), "never back");
        assert_eq!(life.phase(), Phase::Closed);
        // Closed straight from open.
        let life = Lifecycle::default();
        assert!(life.close());
        assert!(!life.retire());
        assert_eq!(life.phase(), Phase::Closed);
    }

    #[test]
    fn a_wait_for_a_phase_is_woken_by_the_move_to_it_or_past_it() {
        use futures_util::poll;
        run(async {
            let life = Lifecycle::default();
            let mut retiring = Box::pin(life.reached(Phase::Retiring));
            let mut closed = Box::pin(life.reached(Phase::Closed));
            // Each wait registered (polled once, pending) before the move it waits for.
            assert!(poll!(&mut retiring).is_pending() && poll!(&mut closed).is_pending());
            life.retire();
            tokio::time::timeout(BOUND, retiring).await.expect("woken");
            assert!(poll!(&mut closed).is_pending(), "retiring is not closed");
            life.close();
            tokio::time::timeout(BOUND, closed).await.expect("woken");
            // A client closed without retiring first has passed retiring too.
            let skipped = Lifecycle::default();
            let mut waiting = Box::pin(skipped.reached(Phase::Retiring));
            assert!(poll!(&mut waiting).is_pending());
            skipped.close();
            tokio::time::timeout(BOUND, waiting).await.expect("woken");
        });
    }

    #[test]
    fn a_client_is_let_go_by_a_retirement_until_its_user_closes_it() {
        let retired = Lifecycle::default();
        assert!(!retired.was_let_go());
        assert!(retired.retire());
        assert!(retired.was_let_go() && retired.phase() == Phase::Retiring);
        assert!(
            retired.close_retired(),
            "the retirement's own close moves it"
        );
        assert!(retired.was_let_go() && retired.phase() == Phase::Closed);
        assert!(!retired.close(), "closed already");
        assert!(!retired.was_let_go(), "a close by its user comes after");
        assert_eq!(retired.phase(), Phase::Closed);
        // Closed by its user while retiring: refused calls are the user's.
        let user = Lifecycle::default();
        user.retire();
        assert!(user.close());
        assert!(!user.was_let_go());
        assert!(
            !user.close_retired(),
            "the retirement's close finds it closed"
        );
        assert!(!user.was_let_go());
        // Closed straight from open: never let go.
        let closed = Lifecycle::default();
        assert!(closed.close());
        assert!(!closed.retire());
        assert!(!closed.close_retired());
        assert!(!closed.was_let_go() && closed.phase() == Phase::Closed);
    }

    #[test]
    fn pending_calls_are_counted_until_they_end() {
        let life = Lifecycle::default();
        life.call_started();
        life.call_started();
        assert_eq!(life.pending(), 2);
        life.call_ended();
        life.call_ended();
        assert_eq!(life.pending(), 0);
    }

    #[test]
    fn a_call_is_admitted_only_while_open_and_counted_from_then() {
        let life = Lifecycle::default();
        assert!(life.admit());
        assert_eq!(life.pending(), 1);
        assert!(life.retire());
        assert!(!life.admit(), "retiring");
        assert_eq!(life.pending(), 1, "a refused call is not counted");
        life.call_ended();
        life.close();
        assert!(!life.admit(), "closed");
        assert_eq!(life.pending(), 0);
    }

    #[test]
    fn a_call_admitted_as_a_retirement_begins_is_refused_or_waited_for() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Barrier;
        run(async {
            for _ in 0..2000 {
                let life = Arc::new(Lifecycle::default());
                let ended = Arc::new(AtomicBool::new(false));
                let start = Arc::new(Barrier::new(2));
                let call = std::thread::spawn({
                    let (life, ended, start) = (life.clone(), ended.clone(), start.clone());
                    move || {
                        start.wait();
                        if !life.admit() {
                            return false;
                        }
                        std::hint::spin_loop();
                        ended.store(true, Ordering::SeqCst);
                        life.call_ended();
                        true
                    }
                });
                start.wait();
                life.retire();
                let far = tokio::time::Instant::now() + FAR;
                tokio::time::timeout(BOUND, life.until_idle_or_closed(far))
                    .await
                    .expect("the call ends");
                let ended_before_idle = ended.load(Ordering::SeqCst);
                if call.join().unwrap() {
                    assert!(ended_before_idle, "an admitted call was not waited for");
                }
            }
        });
    }

    #[test]
    fn a_wait_for_the_close_is_woken_by_it() {
        run(async {
            let life = Arc::new(Lifecycle::default());
            let waiting = {
                let life = life.clone();
                tokio::spawn(async move { life.closed().await })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "still open");
            assert!(life.retire());
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "retiring is not closed");
            life.close();
            tokio::time::timeout(BOUND, waiting)
                .await
                .expect("woken by the close")
                .unwrap();
            // Closed already: no wait.
            tokio::time::timeout(BOUND, life.closed())
                .await
                .expect("closed");
        });
    }

    #[test]
    fn a_retiring_wait_is_woken_when_the_last_pending_call_ends() {
        run(async {
            let life = Arc::new(Lifecycle::default());
            life.call_started();
            life.call_started();
            assert!(life.retire());
            let far = tokio::time::Instant::now() + FAR;
            let waiting = {
                let life = life.clone();
                tokio::spawn(async move { life.until_idle_or_closed(far).await })
            };
            life.call_ended();
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "one call is still pending");
            life.call_ended();
            tokio::time::timeout(BOUND, waiting)
                .await
                .expect("woken when the last call ended")
                .unwrap();
            assert_eq!(life.phase(), Phase::Retiring, "the wait changes nothing");
        });
    }

    #[test]
    fn a_retiring_wait_is_woken_by_a_close() {
        run(async {
            let life = Arc::new(Lifecycle::default());
            life.call_started();
            let far = tokio::time::Instant::now() + FAR;
            let waiting = {
                let life = life.clone();
                tokio::spawn(async move { life.until_idle_or_closed(far).await })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "a call is pending");
            life.close();
            tokio::time::timeout(BOUND, waiting)
                .await
                .expect("woken by the close")
                .unwrap();
            assert_eq!(life.pending(), 1, "the call is still pending");
        });
    }

    #[test]
    fn a_retiring_wait_for_a_call_that_never_ends_stops_at_its_deadline() {
        run(async {
            let life = Lifecycle::default();
            life.call_started();
            let started = std::time::Instant::now();
            let deadline = tokio::time::Instant::now() + Duration::from_millis(50);
            tokio::time::timeout(BOUND, life.until_idle_or_closed(deadline))
                .await
                .expect("ended at its deadline");
            assert!(started.elapsed() >= Duration::from_millis(50));
            assert_eq!(life.pending(), 1);
            // No call pending: no wait, whatever the deadline.
            life.call_ended();
            tokio::time::timeout(
                BOUND,
                life.until_idle_or_closed(tokio::time::Instant::now() + FAR),
            )
            .await
            .expect("idle");
        });
    }
}
