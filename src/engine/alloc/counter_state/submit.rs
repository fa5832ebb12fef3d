//! Serving calls: each call submitted in its mode (its own round trip, coalesced, or from
//! the cache), and every round trip recorded.

use super::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::engine::alloc::allocate::{allocate_demands, Allocation, CreatePolicy, IdRange};
use crate::engine::alloc::block_cache::BlockCache;
use crate::engine::alloc::coalesce::Grants;
use crate::engine::alloc::demand::Demand;
use crate::engine::alloc::waiter::{receive, Waiter};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::panic_safety::caught;
use crate::engine::stats::{self, Recorder};
use crate::engine::store::counter_store::{CounterRef, CounterStore, FetchToken};

/// A future the caller must spawn on the runtime.
pub type Background = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A call's values, still to come.
pub type Pending = Pin<Box<dyn Future<Output = SeqResult<IdRange>> + Send + 'static>>;

/// How a call is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One round trip of its own, started when the call is submitted.
    Direct,
    /// Merged with concurrent calls into one round trip.
    Coalesce,
    /// From blocks of this many values cached in the process.
    Cached(i64),
}

/// How the calls of one prepared counter reach its state: the store and the naming of
/// the counter, its lane, how its calls are served, the block cache of that mode when the
/// caller keeps one, and where their figures go. Made once, used by every call.
pub struct Route<S> {
    /// Where the counter document lives.
    pub store: Arc<S>,
    /// The naming of the counter.
    pub counter: CounterRef,
    /// Which calls may share round trips and blocks.
    pub lane: Lane,
    /// How a call is served.
    pub mode: Mode,
    /// The block cache of `mode`, when the caller keeps it.
    pub cache: Option<Arc<BlockCache>>,
    /// Where the round trips are counted.
    pub recorder: Recorder,
}

impl<S> Route<S> {
    /// What a round trip of this route needs, owned: its fetches outlive the call.
    fn round_trip_parts(&self) -> (Arc<S>, CounterRef, CreatePolicy, Recorder) {
        let policy = self.lane.policy;
        (
            self.store.clone(),
            self.counter.clone(),
            policy,
            self.recorder.clone(),
        )
    }
}

/// A submitted call: its outcome, and work to spawn (a round trip it started, or the
/// prefetch of the next block).
pub struct Submitted {
    /// The values, now or later.
    pub outcome: Outcome,
    /// Spawn this on the runtime, when present.
    pub background: Option<Background>,
}

/// The outcome of submitting a call.
pub enum Outcome {
    /// Served at once, from the cache.
    Now(IdRange),
    /// To be awaited.
    Later(Pending),
}

impl Submitted {
    /// Starts the background work on the current runtime and returns the outcome: the one
    /// place a call's round trip or prefetch is started.
    pub fn start(self) -> Outcome {
        spawn_background(self.background);
        self.outcome
    }
}

/// Spawns a call's background work, when it has any, on the current runtime: where every
/// round trip and prefetch a call needs is started ([`Submitted::start`], and calls served
/// at once by [`CounterState::submit_now`]).
pub fn spawn_background(background: Option<Background>) {
    if let Some(background) = background {
        tokio::spawn(background);
    }
}

impl Outcome {
    /// The values, once they are there.
    pub async fn values(self) -> SeqResult<IdRange> {
        match self {
            Outcome::Now(range) => Ok(range),
            Outcome::Later(pending) => pending.await,
        }
    }
}

impl CounterState {
    /// The demand-serving round trip for `counter` over `store`, remembering the
    /// configuration it finds.
    /// Each round trip is recorded by `recorder` (and as an event while someone listens).
    fn fetcher<S>(
        self: &Arc<Self>,
        route: &Route<S>,
    ) -> impl Fn(Vec<Demand>) -> Pin<Box<dyn Future<Output = Grants> + Send>> + Send + Sync + 'static
    where
        S: CounterStore + 'static,
    {
        let state = self.clone();
        let (store, counter, policy, recorder) = route.round_trip_parts();
        move |demands| {
            let (state, store) = (state.clone(), store.clone());
            Box::pin(state.round_trip(store, counter.clone(), policy, recorder.clone(), demands))
        }
    }

    /// [`CounterState::fetcher`] for a block cache: each fetch flags the counter with the
    /// token the cache gives it ([`CounterRef::through_cache`]).
    fn cache_fetcher<S>(
        self: &Arc<Self>,
        route: &Route<S>,
    ) -> impl Fn(Vec<Demand>, FetchToken) -> Pin<Box<dyn Future<Output = Grants> + Send>>
           + Send
           + Sync
           + 'static
    where
        S: CounterStore + 'static,
    {
        let state = self.clone();
        let (store, counter, policy, recorder) = route.round_trip_parts();
        move |demands, token| {
            let (state, store) = (state.clone(), store.clone());
            let counter = counter.clone().through_cache(token);
            Box::pin(state.round_trip(store, counter, policy, recorder.clone(), demands))
        }
    }

    /// One round trip serving `demands`: see [`CounterState::fetcher`].
    async fn round_trip<S>(
        self: Arc<Self>,
        store: Arc<S>,
        counter: CounterRef,
        policy: CreatePolicy,
        recorder: Recorder,
        demands: Vec<Demand>,
    ) -> Grants
    where
        S: CounterStore + 'static,
    {
        let hint = self.hint();
        let started = std::time::Instant::now();
        let served = allocate_demands(&*store, &counter, policy, &demands, hint, &self.turn).await;
        let took = started.elapsed();
        record_round_trip(&recorder, &*store, &counter, &demands, &served, took);
        let served = served?;
        if served.config != hint {
            self.remember(served.config);
        }
        Ok(served.grants)
    }

    /// A cached call for `count` values served at once from `route`'s block cache: its
    /// values and the prefetch to spawn when one is due; `None`, with nothing done, when the cache cannot serve
    /// it now (not a cached route, a count beyond its blocks, too few values, calls
    /// waiting): [`CounterState::submit`] then queues it.
    pub fn submit_now<S>(
        self: &Arc<Self>,
        route: &Route<S>,
        count: i64,
    ) -> Option<(IdRange, Option<Background>)>
    where
        S: CounterStore + 'static,
    {
        match (route.mode, &route.cache) {
            (Mode::Cached(size), Some(cache)) if count <= size => {
                self.served_from(route, cache, count)
            }
            _ => None,
        }
    }

    /// `count` values taken from `cache` ([`BlockCache::try_take`]), and the prefetch
    /// to spawn when one is due.
    fn served_from<S>(
        self: &Arc<Self>,
        route: &Route<S>,
        cache: &Arc<BlockCache>,
        count: i64,
    ) -> Option<(IdRange, Option<Background>)>
    where
        S: CounterStore + 'static,
    {
        let taken = cache.try_take(count)?;
        let background = taken.prefetch.then(|| {
            let fetch = self.cache_fetcher(route);
            Box::pin(cache.clone().start_fetching(fetch)) as Background
        });
        Some((taken.range, background))
    }

    /// Submits a call for `count` values, served as `route` says. Queues it at once, so
    /// calls submitted one after another are served in that order (coalesced and cached
    /// calls). The caller starts the background work ([`Submitted::start`]).
    pub fn submit<S>(self: &Arc<Self>, route: &Route<S>, count: i64) -> Submitted
    where
        S: CounterStore + 'static,
    {
        let (mode, cache) = (route.mode, route.cache.as_ref());
        // Every mode's round trips go through the same round trip, made when one is
        // needed; a cache's fetches flag the counter with their tokens (see `CacheMarks`).
        match mode {
            Mode::Cached(size) if count <= size => {
                let owned;
                let cache = match cache {
                    Some(cache) => cache,
                    None => {
                        owned = self.block_cache(&route.lane, &route.counter, size);
                        &owned
                    }
                };
                if let Some((range, background)) = self.served_from(route, cache, count) {
                    return Submitted {
                        outcome: Outcome::Now(range),
                        background,
                    };
                }
                let fetch = self.cache_fetcher(route);
                let (mut answer, fetching) = cache.enqueue(count, fetch);
                // A fill that landed since `try_take` served the call at once.
                let outcome = match answer.try_recv() {
                    Ok(Ok(range)) => Outcome::Now(range),
                    Ok(Err(error)) => Outcome::Later(Box::pin(async move { Err(error) })),
                    Err(_) => Outcome::Later(Box::pin(receive(answer))),
                };
                Submitted {
                    outcome,
                    background: fetching.map(|f| Box::pin(f) as Background),
                }
            }
            // A round trip of its own, started at once like the coalescer's: the caller
            // spawns it before it sets up the promise, so the request does not wait for
            // that, and the outcome only receives the answer (as a coalesced call does).
            Mode::Direct => {
                let fetch = self.fetcher(route);
                let (mut waiter, answer) = Waiter::new(count);
                let round_trip = async move {
                    let served = tokio::select! {
                        biased;
                        // The caller gave up (its deadline passed, its client closed):
                        // the round trip stops with it, as it did when it ran inside the
                        // call (values already taken are left unused, a gap).
                        () = waiter.reply.closed() => return,
                        served = caught("round trip", fetch(vec![Demand::Exact(count)])) => served,
                    };
                    waiter.answer(served.and_then(|mut grants| {
                        grants.pop().unwrap_or_else(|| {
                            Err(SeqError::internal("a round trip answered no demand"))
                        })
                    }));
                };
                Submitted {
                    outcome: Outcome::Later(Box::pin(receive(answer))),
                    background: Some(Box::pin(round_trip)),
                }
            }
            // Coalesced, or a batch larger than the cache's blocks.
            _ => {
                let fetch = self.fetcher(route);
                let (answer, driver) =
                    self.lanes
                        .submit((route.lane.clone(), route.counter.clone()), count, fetch);
                Submitted {
                    outcome: Outcome::Later(Box::pin(receive(answer))),
                    background: driver.map(|d| Box::pin(d) as Background),
                }
            }
        }
    }
}

/// Records one round trip that served `demands` and took `took` ([`Recorder`], and an
/// event while events are on: [`stats::record_trip`]).
fn record_round_trip(
    recorder: &Recorder,
    store: &impl CounterStore,
    counter: &CounterRef,
    demands: &[Demand],
    served: &SeqResult<Allocation>,
    took: std::time::Duration,
) {
    let calls = demands
        .iter()
        .filter(|d| matches!(d, Demand::Exact(_)))
        .count();
    let (blocks, retries, values, error) = match served {
        Ok(served) => {
            let fills = demands
                .iter()
                .zip(&served.grants)
                .filter(|(d, g)| matches!(d, Demand::UpTo(_)) && g.is_ok())
                .count() as u64;
            let values = served.grants.iter().flatten().map(IdRange::count).sum();
            (fills, served.retries, values, None)
        }
        Err(e) => (0, 0, 0, Some(e.code)),
    };
    recorder.round_trip(took, calls, blocks, retries);
    let trip = stats::Trip {
        operation: "findAndModify",
        collection: &counter.collection,
        counter: Some(&counter.label),
        values,
        calls,
        retries,
        took,
        error,
    };
    stats::record_trip(|| store.endpoint(), trip);
}
