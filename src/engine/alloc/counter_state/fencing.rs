//! Management writes fence what this process holds for a counter: its cached blocks and
//! hint are forgotten before and after the write, and block fetches in flight settle first.

use super::*;
use crate::engine::panic_safety::lock;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::engine::alloc::block_cache::CacheSlot;
use crate::engine::stats::{self};

/// Longest wait of a management write for the block fetches in flight (of all the states
/// it fences together).
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

impl CounterState {
    /// Forgets the cached blocks and the configuration hint: the counter was changed by
    /// a management write of this process.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.remember(None);
        let slots: Vec<Arc<CacheSlot>> = lock(&self.caches).values().cloned().collect();
        for slot in slots {
            stats::discarded_by_writes(slot.discard());
        }
    }

    /// Runs the management write `op`, forgetting what this process holds for the counter
    /// before and after it (as PostgreSQL's `setval` discards the session's cache): a
    /// call made after it resolves sees the counter as `op` left it.
    pub async fn managed<T>(&self, op: impl Future<Output = T>) -> T {
        let _turn = self.management_turn.lock().await;
        self.invalidate();
        self.settle_fetches().await;
        let outcome = op.await;
        self.invalidate();
        outcome
    }

    /// [`CounterState::managed`] for a write that may change any of the states `select`
    /// lists (and no other counter of this process): it takes their management turns, in
    /// one order so that two such writes never wait for each other, until `select` lists
    /// no state it does not hold (a counter first used meanwhile); forgets what they hold
    /// before and after `op`, and after it also what the states `select` lists then hold
    /// (a counter first used while `op` ran may have fetched before it).
    pub async fn managed_all<T>(
        select: impl Fn() -> Vec<Arc<CounterState>>,
        op: impl Future<Output = T>,
    ) -> T {
        let (ordered, _turns) = loop {
            let mut ordered = select();
            ordered.sort_by_key(Arc::as_ptr);
            ordered.dedup_by_key(|state| Arc::as_ptr(state));
            let mut turns = Vec::with_capacity(ordered.len());
            for state in &ordered {
                turns.push(state.management_turn.clone().lock_owned().await);
            }
            let held = |state: &Arc<CounterState>| ordered.iter().any(|o| Arc::ptr_eq(o, state));
            if select().iter().all(held) {
                break (ordered, turns);
            }
        };
        for state in &ordered {
            state.invalidate();
        }
        // One deadline for all: the write waits at most [`SETTLE_LIMIT`], however many
        // states it fences.
        let deadline = Instant::now() + SETTLE_LIMIT;
        for state in &ordered {
            state.settle_fetches_by(deadline).await;
        }
        let outcome = op.await;
        for state in ordered.iter().chain(select().iter()) {
            state.invalidate();
        }
        outcome
    }

    /// Waits (up to [`SETTLE_LIMIT`]) until no block fetch of this counter is in flight,
    /// so that a fill sent before a management write cannot land after it and take the
    /// first values of the counter's new state only to be thrown away (a gap right
    /// after `set` or `reset`).
    pub(super) async fn settle_fetches(&self) {
        self.settle_fetches_by(Instant::now() + SETTLE_LIMIT).await;
    }

    /// [`CounterState::settle_fetches`] until `deadline` at the latest: past it, returns
    /// at once.
    pub(super) async fn settle_fetches_by(&self, deadline: Instant) {
        loop {
            let slots: Vec<Arc<CacheSlot>> = lock(&self.caches).values().cloned().collect();
            if !slots.iter().any(|slot| slot.is_fetching()) || Instant::now() > deadline {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}
