//! One owner per counter and client: everything a process knows about one counter —
//! the calls waiting for a round trip, the cached blocks, the configuration hint — lives
//! in one [`CounterState`], kept by the client it belongs to ([`CounterStates`]) and
//! dropped with it. Every call for that counter goes through it, and every management
//! write (`set`, `reset`, `drop`, `init`, `syncToMax`) tells it to forget what it holds.
//!
//! The state's roles, one file each: serving calls (`submit`), management writes fencing
//! what the process holds (`fencing`), giving cached values back (`give_back`), and the
//! states of one client (`states`).
//!
//! # Who touches what
//!
//! Every field is reached through `&self` from any thread: calls on the JavaScript
//! thread, round trips and fetches on runtime threads. `hint` and `caches` are behind
//! plain locks held for a look or an insert only (never across an `await`; `caches`
//! before a cache's own lock, never after). `generation` is an atomic moved on only by
//! management writes ([`CounterState::invalidate`]) and read by fetches. The `turn`s
//! are async locks held across round trips: `turn` by the read-then-write path of a
//! configured counter, `management_turn` by management writes and give-backs (which
//! also drain the fetches in flight first), `gapless_turn` by a gapless transaction.
//! Each block cache guards its own contents and fetch state ([`BlockCache`]); the
//! coalescer its own queues.

mod fencing;
mod give_back;
mod states;
mod submit;

pub use give_back::GivenBack;
pub use states::CounterStates;
#[cfg(test)]
pub use submit::Pending;
pub use submit::{spawn_background, Mode, Outcome, Route, Submitted};

use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::engine::alloc::allocate::CreatePolicy;
use crate::engine::alloc::block_cache::BlockCache;
use crate::engine::alloc::coalesce::Coalescer;
use crate::engine::alloc::live::{LiveGroup, LiveToken};
use crate::engine::client::write_concern::WriteConcernSpec;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::store::counter_store::CounterRef;

/// Calls that may share round trips and cached blocks: same creation policy and write
/// concern, and the same naming of the counter ([`CounterRef`]: filter and step). Two
/// namings of one document share the state (one fence for management writes and
/// give-backs) but keep apart queues and blocks: a server that told them apart would then
/// never number one from the other's document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lane {
    /// What a call does when the counter is missing.
    pub policy: CreatePolicy,
    /// The write concern of the counter writes.
    pub write_concern: Option<WriteConcernSpec>,
}

/// What this process holds for one counter of one client.
pub struct CounterState {
    /// The configuration the counter had at its last call, tried first (every write is
    /// guarded on it, so a stale one only costs a read).
    hint: Mutex<Option<SequenceConfig>>,
    /// Moved on by every management write; fills fetched before are thrown away.
    generation: Arc<AtomicU64>,
    /// Serialises the read-then-write path of configured counters in this process.
    turn: tokio::sync::Mutex<()>,
    /// Makes management writes and give-backs of this process take turns, so that a
    /// give-back never undoes a `set` to the very value it expects.
    management_turn: Arc<tokio::sync::Mutex<()>>,
    /// One gapless transaction at a time per counter in this process.
    gapless_turn: Arc<tokio::sync::Mutex<()>>,
    lanes: Arc<Coalescer<(Lane, CounterRef)>>,
    caches: Mutex<HashMap<(Lane, CounterRef, i64), Arc<BlockCache>>>,
    /// Counts this state and its parts among the live ones of its client.
    group: LiveGroup,
    _live: LiveToken,
}

impl Default for CounterState {
    /// A state counted in a group of its own.
    fn default() -> Self {
        CounterState::in_group(&LiveGroup::default())
    }
}

impl CounterState {
    /// An empty state, counted (with its call queue and caches) in `group`.
    pub fn in_group(group: &LiveGroup) -> Self {
        CounterState {
            hint: Mutex::default(),
            generation: Arc::default(),
            turn: tokio::sync::Mutex::default(),
            management_turn: Arc::default(),
            gapless_turn: Arc::default(),
            lanes: Arc::new(Coalescer::tracked(group.token())),
            caches: Mutex::default(),
            group: group.clone(),
            _live: group.token(),
        }
    }

    /// The configuration hint.
    fn hint(&self) -> Option<SequenceConfig> {
        *lock(&self.hint)
    }

    fn remember(&self, config: Option<SequenceConfig>) {
        *lock(&self.hint) = config;
    }

    /// The lock that makes gapless transactions on this counter take turns.
    pub fn gapless_turn(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.gapless_turn.clone()
    }

    /// The block cache of `lane` and `counter` with blocks of `size`, created on first use.
    pub fn block_cache(&self, lane: &Lane, counter: &CounterRef, size: i64) -> Arc<BlockCache> {
        let mut caches = lock(&self.caches);
        caches
            .entry((lane.clone(), counter.clone(), size))
            .or_insert_with(|| {
                let live = self.group.token();
                Arc::new(BlockCache::tracked(size, self.generation.clone(), live))
            })
            .clone()
    }

    /// Whether something of this state is in use besides the state itself: a round
    /// trip or block fetch in flight, a caller holding one of its block caches, or a
    /// gapless transaction holding its turn. (A caller holding the state itself shows
    /// in the state's own count.)
    fn in_use(&self) -> bool {
        Arc::strong_count(&self.gapless_turn) > 1
            || self.lanes.in_flight() > 0
            || lock(&self.caches)
                .values()
                .any(|cache| Arc::strong_count(cache) > 1 || cache.is_fetching())
    }

    /// Whether no round trip or block fetch of this state is in flight (tests wait for
    /// it between steps).
    #[cfg(test)]
    pub fn nothing_in_flight(&self) -> bool {
        self.lanes.in_flight() == 0 && !lock(&self.caches).values().any(|s| s.is_fetching())
    }

    /// Waits until [`CounterState::nothing_in_flight`], woken as round trips and fetches
    /// end (a fetch's end may let a queued round trip go, so both are looked at again).
    #[cfg(test)]
    pub async fn until_nothing_in_flight(&self) {
        let far = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
        while !self.nothing_in_flight() {
            self.lanes.until_none_in_flight().await;
            self.drain_fetches_by(far).await;
        }
    }

    /// Whether its block caches hold values not handed out yet.
    fn holds_values(&self) -> bool {
        lock(&self.caches)
            .values()
            .any(|cache| cache.available() > 0)
    }
}

#[cfg(test)]
#[path = "counter_state_tests.rs"]
mod tests;
