//! One owner per counter and client: everything a process knows about one counter —
//! the calls waiting for a round trip, the cached blocks, the configuration hint — lives
//! in one [`CounterState`], kept by the client it belongs to ([`CounterStates`]) and
//! dropped with it. Every call for that counter goes through it, and every management
//! write (`set`, `reset`, `drop`, `init`, `syncToMax`) tells it to forget what it holds.

use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::engine::allocate::{allocate_demands, CreatePolicy, IdRange};
use crate::engine::block_cache::CacheSlot;
use crate::engine::coalesce::{Coalescer, Grants};
use crate::engine::demand::Demand;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::sequence_config::SequenceConfig;
use crate::engine::store::{CounterRef, CounterStore};
use crate::engine::waiter::receive;
use crate::engine::write_concern::WriteConcernSpec;

/// A future the caller must spawn on the runtime.
pub type Background = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
/// A call's values, still to come.
pub type Pending = Pin<Box<dyn Future<Output = SeqResult<IdRange>> + Send + 'static>>;

/// Calls that may share round trips and cached blocks: same creation policy and write
/// concern (the counter itself is the state's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lane {
    /// What a call does when the counter is missing.
    pub policy: CreatePolicy,
    /// The write concern of the counter writes.
    pub write_concern: Option<WriteConcernSpec>,
}

/// Longest wait of a management write for the block fetches in flight.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How a call is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One round trip of its own.
    Direct,
    /// Merged with concurrent calls into one round trip.
    Coalesce,
    /// From blocks of this many values cached in the process.
    Cached(i64),
}

impl Submitted {
    /// Spawns the background work on the current runtime and waits for the values.
    pub async fn finish(self) -> SeqResult<IdRange> {
        if let Some(background) = self.background {
            tokio::spawn(background);
        }
        match self.outcome {
            Outcome::Now(range) => Ok(range),
            Outcome::Later(pending) => pending.await,
        }
    }
}

/// The outcome of submitting a call.
pub enum Outcome {
    /// Served at once, from the cache.
    Now(IdRange),
    /// To be awaited.
    Later(Pending),
}

/// A submitted call: its outcome, and work to spawn (a round trip it started, or the
/// prefetch of the next block).
pub struct Submitted {
    /// The values, now or later.
    pub outcome: Outcome,
    /// Spawn this on the runtime, when present.
    pub background: Option<Background>,
}

/// What this process holds for one counter of one client.
#[derive(Default)]
pub struct CounterState {
    /// The configuration the counter had at its last call, tried first (every write is
    /// guarded on it, so a stale one only costs a read).
    hint: Mutex<Option<SequenceConfig>>,
    /// Moved on by every management write; fills fetched before are thrown away.
    generation: Arc<AtomicU64>,
    /// Serialises the read-then-write path of configured counters in this process.
    turn: tokio::sync::Mutex<()>,
    /// One gapless transaction at a time per counter in this process.
    gapless_turn: Arc<tokio::sync::Mutex<()>>,
    lanes: Arc<Coalescer<Lane>>,
    caches: Mutex<HashMap<(Lane, i64), Arc<CacheSlot>>>,
}

impl CounterState {
    /// The configuration hint.
    fn hint(&self) -> Option<SequenceConfig> {
        *lock(&self.hint)
    }

    fn remember(&self, config: Option<SequenceConfig>) {
        *lock(&self.hint) = config;
    }

    /// Forgets the cached blocks and the configuration hint: the counter was changed by
    /// a management write of this process.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.remember(None);
        let slots: Vec<Arc<CacheSlot>> = lock(&self.caches).values().cloned().collect();
        for slot in slots {
            slot.discard();
        }
    }

    /// Runs the management write `op`, forgetting what this process holds for the counter
    /// before and after it (as PostgreSQL's `setval` discards the session's cache): a
    /// call made after it resolves sees the counter as `op` left it.
    pub async fn managed<T>(&self, op: impl Future<Output = T>) -> T {
        self.invalidate();
        self.settle_fetches().await;
        let outcome = op.await;
        self.invalidate();
        outcome
    }

    /// Waits (up to [`SETTLE_LIMIT`]) until no block fetch of this counter is in flight,
    /// so that a fill sent before a management write cannot land after it and take the
    /// first values of the counter's new state only to be thrown away (a gap right
    /// after `set` or `reset`).
    async fn settle_fetches(&self) {
        let started = std::time::Instant::now();
        loop {
            let slots: Vec<Arc<CacheSlot>> = lock(&self.caches).values().cloned().collect();
            if !slots.iter().any(|slot| slot.is_fetching()) || started.elapsed() > SETTLE_LIMIT {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// The lock that makes gapless transactions on this counter take turns.
    pub fn gapless_turn(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.gapless_turn.clone()
    }

    /// The cache slot of `lane` with blocks of `size`, created on first use.
    pub fn cache_slot(&self, lane: &Lane, size: i64) -> Arc<CacheSlot> {
        let mut caches = lock(&self.caches);
        caches
            .entry((lane.clone(), size))
            .or_insert_with(|| Arc::new(CacheSlot::new(size, self.generation.clone())))
            .clone()
    }

    /// Whether nothing is in flight and nothing is cached.
    fn idle(&self) -> bool {
        self.lanes.in_flight() == 0
            && lock(&self.caches)
                .values()
                .all(|slot| Arc::strong_count(slot) == 1 && slot.available() == 0)
    }

    /// The demand-serving round trip for `counter` over `store`, remembering the
    /// configuration it finds.
    pub fn fetcher<S>(
        self: &Arc<Self>,
        store: Arc<S>,
        counter: CounterRef,
        policy: CreatePolicy,
    ) -> impl Fn(Vec<Demand>) -> Pin<Box<dyn Future<Output = Grants> + Send>> + Send + Sync + 'static
    where
        S: CounterStore + 'static,
    {
        let state = self.clone();
        move |demands| {
            let (state, store, counter) = (state.clone(), store.clone(), counter.clone());
            Box::pin(async move {
                let hint = state.hint();
                let served =
                    allocate_demands(&*store, &counter, policy, &demands, hint, &state.turn)
                        .await?;
                if served.config != hint {
                    state.remember(served.config);
                }
                Ok(served.grants)
            })
        }
    }

    /// Submits a call for `count` values, served as `mode` says. Queues it at once, so
    /// calls submitted one after another are served in that order (coalesced and
    /// cached calls). `slot` is the cache slot of `mode` when the caller kept it.
    pub fn submit<S>(
        self: &Arc<Self>,
        store: &Arc<S>,
        counter: &CounterRef,
        lane: &Lane,
        mode: Mode,
        slot: Option<&Arc<CacheSlot>>,
        count: i64,
    ) -> Submitted
    where
        S: CounterStore + 'static,
    {
        match mode {
            Mode::Cached(size) if count <= size => {
                let owned;
                let slot = match slot {
                    Some(slot) => slot,
                    None => {
                        owned = self.cache_slot(lane, size);
                        &owned
                    }
                };
                if let Some(taken) = slot.try_take(count) {
                    let background = taken.prefetch.then(|| {
                        let fetch = self.fetcher(store.clone(), counter.clone(), lane.policy);
                        Box::pin(slot.clone().prefetch(fetch)) as Background
                    });
                    return Submitted {
                        outcome: Outcome::Now(taken.range),
                        background,
                    };
                }
                let fetch = self.fetcher(store.clone(), counter.clone(), lane.policy);
                let (answer, fetching) = slot.wait(count, fetch);
                Submitted {
                    outcome: Outcome::Later(Box::pin(receive(answer))),
                    background: fetching.map(|f| Box::pin(f) as Background),
                }
            }
            Mode::Direct => {
                let fetch = self.fetcher(store.clone(), counter.clone(), lane.policy);
                let pending = async move {
                    let mut grants = fetch(vec![Demand::Exact(count)]).await?;
                    grants.pop().unwrap_or_else(|| {
                        Err(SeqError::internal("a round trip answered no demand"))
                    })
                };
                Submitted {
                    outcome: Outcome::Later(Box::pin(pending)),
                    background: None,
                }
            }
            // Coalesced, or a batch larger than the cache's blocks.
            _ => {
                let fetch = self.fetcher(store.clone(), counter.clone(), lane.policy);
                let (answer, driver) = self.lanes.submit(lane.clone(), count, fetch);
                Submitted {
                    outcome: Outcome::Later(Box::pin(receive(answer))),
                    background: driver.map(|d| Box::pin(d) as Background),
                }
            }
        }
    }
}

/// How many counter states a client keeps before it drops idle ones.
pub const IDLE_STATES_KEPT: usize = 1024;

/// The counter states of one client, keyed by database and counter.
pub struct CounterStates<K> {
    states: Mutex<HashMap<K, Arc<CounterState>>>,
}

impl<K> Default for CounterStates<K> {
    fn default() -> Self {
        CounterStates {
            states: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> CounterStates<K> {
    /// The state of `key`, created on first use. Past [`IDLE_STATES_KEPT`] states, those
    /// nobody holds and that have nothing in flight or cached are dropped first, so
    /// per-tenant or per-day names do not grow memory without bound.
    pub fn get(&self, key: &K) -> Arc<CounterState> {
        let mut states = lock(&self.states);
        if let Some(state) = states.get(key) {
            return state.clone();
        }
        if states.len() >= IDLE_STATES_KEPT {
            states.retain(|_, state| Arc::strong_count(state) > 1 || !state.idle());
        }
        states.entry(key.clone()).or_default().clone()
    }

    /// How many states are kept.
    pub fn len(&self) -> usize {
        lock(&self.states).len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every state (the client closed).
    pub fn clear(&self) {
        lock(&self.states).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_states_are_dropped_past_the_limit_and_held_ones_kept() {
        let states = CounterStates::<usize>::default();
        let held = states.get(&0);
        for key in 1..=IDLE_STATES_KEPT * 3 {
            states.get(&key);
        }
        assert!(states.len() <= IDLE_STATES_KEPT + 1, "{}", states.len());
        assert!(Arc::ptr_eq(&held, &states.get(&0)), "a held state survives");
        states.clear();
        assert!(states.is_empty());
    }
}
