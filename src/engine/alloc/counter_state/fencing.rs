//! Management writes fence what this process holds for a counter: its cached blocks and
//! hint are forgotten before and after the write, and the block fetches in flight are
//! drained first (waited for, within [`FETCH_DRAIN_LIMIT`]).
//!
//! # Who touches what
//!
//! A management write (or give-back) holds the state's `management_turn` for its whole
//! length, so two of them never interleave; calls never take that turn and go on
//! meanwhile. `generation` is moved on (an atomic, any thread) before the fills are
//! discarded, so that a fill landing in between is thrown away by its fetch. The drain
//! looks at each block cache's fetch state under the cache's lock and waits on the cache's
//! wake-up for the end of its fetch ([`BlockCache::wait_idle_until`]), never polling.

use super::*;
use crate::engine::panic_safety::lock;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::time::Instant;

use crate::engine::alloc::block_cache::BlockCache;
use crate::engine::stats::{self};

/// Longest wait of a management write for the block fetches in flight (of all the states
/// it fences together) to drain.
const FETCH_DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

impl CounterState {
    /// Forgets the cached blocks and the configuration hint: the counter was changed by
    /// a management write of this process.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.remember(None);
        let caches: Vec<Arc<BlockCache>> = lock(&self.caches).values().cloned().collect();
        for cache in caches {
            stats::discarded_by_writes(cache.discard());
        }
    }

    /// Runs the management write `op`, forgetting what this process holds for the counter
    /// before and after it (as PostgreSQL's `setval` discards the session's cache): a
    /// call made after it resolves sees the counter as `op` left it.
    pub async fn fenced<T>(&self, op: impl Future<Output = T>) -> T {
        let _turn = self.management_turn.lock().await;
        self.invalidate();
        self.drain_fetches().await;
        let outcome = op.await;
        self.invalidate();
        outcome
    }

    /// [`CounterState::fenced`] for a write that may change any of the states `select`
    /// lists (and no other counter of this process): it takes their management turns, in
    /// one order so that two such writes never wait for each other, until `select` lists
    /// no state it does not hold (a counter first used meanwhile); forgets what they hold
    /// before and after `op`, and after it also what the states `select` lists then hold
    /// (a counter first used while `op` ran may have fetched before it).
    pub async fn fenced_all<T>(
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
        // One deadline for all: the write waits at most [`FETCH_DRAIN_LIMIT`], however
        // many states it fences.
        let deadline = Instant::now() + FETCH_DRAIN_LIMIT;
        for state in &ordered {
            state.drain_fetches_by(deadline).await;
        }
        let outcome = op.await;
        for state in ordered.iter().chain(select().iter()) {
            state.invalidate();
        }
        outcome
    }

    /// Waits (up to [`FETCH_DRAIN_LIMIT`]) until no block fetch of this counter is in
    /// flight, so that a fill sent before a management write cannot land after it and
    /// take the first values of the counter's new state only to be thrown away (a gap
    /// right after `set` or `reset`).
    pub(super) async fn drain_fetches(&self) {
        self.drain_fetches_by(Instant::now() + FETCH_DRAIN_LIMIT)
            .await;
    }

    /// [`CounterState::drain_fetches`] until `deadline` at the latest: past it, returns
    /// at once. Waits for one fetching cache at a time, woken when its fetch ends, then
    /// looks at all of them again (a fetch may have started meanwhile, in a cache made
    /// since too): it returns once one look finds none fetching.
    pub(super) async fn drain_fetches_by(&self, deadline: Instant) {
        loop {
            let caches: Vec<Arc<BlockCache>> = lock(&self.caches).values().cloned().collect();
            let Some(fetching) = caches.into_iter().find(|cache| cache.is_fetching()) else {
                return;
            };
            if !fetching.wait_idle_until(deadline).await {
                return;
            }
        }
    }
}
