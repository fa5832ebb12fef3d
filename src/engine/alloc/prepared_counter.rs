//! The entry point of the engine: a counter prepared for calls ([`PreparedCounter`]),
//! which submits each call to the counter's one state in its client, directly, through
//! the coalescer, or from the block cache, as the options say.

use std::sync::Arc;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::block_cache::CacheSlot;
use crate::engine::alloc::counter_state::{
    Call, CounterState, GivenBack, Lane, Mode, Outcome, Submitted,
};
use crate::engine::call_options::CallOptions;
use crate::engine::client::handle::{ClientHandle, Late};
use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::locator::Locator;
use crate::engine::error::SeqResult;
use crate::engine::stats::{Recorder, Stats};
use crate::engine::store::counter_store::CounterRef;
use crate::engine::store::driver_counters::DriverCounters;
use crate::engine::store::mongo_driver::MongoDriver;

/// A counter ready to reserve from: its client, store, state and cache slot. Reusable
/// for many calls.
#[derive(Clone)]
pub struct PreparedCounter {
    handle: Arc<ClientHandle>,
    store: Arc<DriverCounters<MongoDriver>>,
    counter: CounterRef,
    state: Arc<CounterState>,
    lane: Lane,
    mode: Mode,
    cache: Option<Arc<CacheSlot>>,
    recorder: Recorder,
    /// The counter's name as shown in messages, when its calls return JavaScript
    /// numbers (no `bigint`, no `format`): values past 2^53 - 1 then fail the call.
    numbers_for: Option<Arc<str>>,
}

impl PreparedCounter {
    /// Prepares the counter `name` in `database` for calls.
    pub fn new(
        handle: &Arc<ClientHandle>,
        database: &str,
        name: &CounterName,
        options: &CallOptions,
    ) -> SeqResult<PreparedCounter> {
        let counter = options.counter(name)?;
        let driver = handle
            .driver(database)?
            .with_write_concern(options.write_concern.as_ref().map(|w| w.to_driver()));
        let state = handle.counter_state(database, &counter);
        let lane = Lane {
            policy: options.policy(),
            write_concern: options.write_concern.clone(),
        };
        let mode = match (options.cache, options.coalesce) {
            (Some(size), _) => Mode::Cached(size),
            (None, true) => Mode::Coalesce,
            (None, false) => Mode::Direct,
        };
        let cache = options
            .cache
            .map(|size| state.cache_slot(&lane, &counter, size));
        let numbers_for = options.returns_numbers().then(|| Arc::from(name.label()));
        Ok(PreparedCounter {
            handle: handle.clone(),
            store: Arc::new(DriverCounters(driver)),
            counter,
            state,
            lane,
            mode,
            cache,
            recorder: Recorder::default(),
            numbers_for,
        })
    }

    /// The same counter, its calls also counted in `stats` (a handle's statistics).
    pub fn recording(mut self, stats: Option<Arc<Stats>>) -> Self {
        self.recorder = Recorder::new(stats);
        self
    }

    /// The driver of the database the counter lives in.
    pub fn driver(&self) -> &MongoDriver {
        &self.store.0
    }

    /// The store of this counter's management calls, which publishes each command it
    /// sends as a round-trip event. Not the store of its fetches: a fetch publishes one
    /// event of its own however many commands it took, and must not publish them twice.
    pub fn managing(&self) -> DriverCounters<MongoDriver> {
        DriverCounters(self.store.0.clone().publishing_commands())
    }

    /// The counter.
    pub fn counter(&self) -> &CounterRef {
        &self.counter
    }

    /// What a management write on this counter must fence ([`Fence::managed`]).
    pub fn fence(&self) -> Fence {
        match self.counter.locator {
            Locator::ById => Fence::Counter(self.state.clone()),
            // Other fields (another plugin's locator) may find the same document, each with
            // a state of its own: every located counter that may find it is fenced too.
            Locator::ByFields(_) => Fence::Collection(Box::new(CollectionFence {
                handle: self.handle.clone(),
                database: self.driver().database().name().to_string(),
                counter: self.counter.clone(),
                own: self.state.clone(),
            })),
        }
    }

    /// `work` bounded as this counter's value-taking calls are ([`ClientHandle::within`]).
    pub fn within<T, F>(
        &self,
        work: F,
        late: Late,
    ) -> impl std::future::Future<Output = SeqResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: std::future::Future<Output = SeqResult<T>> + Send + 'static,
    {
        self.handle.within(work, late)
    }

    /// This process's state of the counter.
    pub fn state(&self) -> &Arc<CounterState> {
        &self.state
    }

    /// Whether the client of this reservation was closed, or belongs to a runtime that
    /// has ended: prepare a new reservation instead.
    pub fn is_closed(&self) -> bool {
        !self.handle.is_usable()
    }

    /// Submits a call for `count` values at once (it keeps its place in line); the
    /// caller spawns `background` and awaits a later outcome, which settles within the
    /// client's call timeout from now, and at once with `CLIENT_CLOSED` if the client
    /// closes. `CLIENT_CLOSED` once the client is closed.
    pub fn submit(&self, count: i64) -> SeqResult<Submitted> {
        if let Err(error) = self.handle.ensure_open() {
            self.recorder.failed(error.code);
            return Err(error);
        }
        let call = Call {
            mode: self.mode,
            slot: self.cache.as_ref(),
            count,
        };
        let Submitted {
            outcome,
            background,
        } = self.state.submit_recorded(
            &self.store,
            &self.counter,
            &self.lane,
            call,
            &self.recorder,
        );
        // Values the caller cannot receive (past 2^53 - 1 as numbers) fail the call here,
        // before they are counted: the statistics count the values callers receive.
        let outcome = match outcome {
            Outcome::Later(pending) => {
                self.recorder.call();
                let bounded = self.handle.bounded(pending);
                let recorder = self.recorder.clone();
                let numbers_for = self.numbers_for.clone();
                Outcome::Later(Box::pin(async move {
                    let outcome = bounded
                        .await
                        .and_then(|range| receivable(numbers_for.as_deref(), range));
                    recorder.settled(outcome.as_ref().map(IdRange::count).map_err(|e| e.code));
                    outcome
                }))
            }
            Outcome::Now(range) => match receivable(self.numbers_for.as_deref(), range) {
                Ok(range) => {
                    self.recorder.cache_hit(range.count());
                    Outcome::Now(range)
                }
                Err(error) => {
                    // Still `Later`, so that `background` (a prefetch) is spawned.
                    self.recorder.failed(error.code);
                    Outcome::Later(Box::pin(std::future::ready(Err(error))))
                }
            },
        };
        Ok(Submitted {
            outcome,
            background,
        })
    }

    /// Gives back the unused tails of this counter's cached blocks in this client
    /// ([`CounterState::give_back`]); the counter stays usable (a later call fetches
    /// again). `CLIENT_CLOSED` once the client is closed (its close gave them back).
    pub async fn give_back(&self) -> SeqResult<GivenBack> {
        self.handle.ensure_open()?;
        // The client's driver of this database, with each lane's write concern; its
        // commands are published as events (no fetch's event covers them).
        let store_of = |lane: &Lane| {
            let concern = lane.write_concern.as_ref().map(|w| w.to_driver());
            Arc::new(DriverCounters(
                self.store
                    .0
                    .clone()
                    .with_write_concern(concern)
                    .publishing_commands(),
            ))
        };
        Ok(self.state.give_back(store_of).await)
    }

    /// Reserves `count` values, spawning background work on the current runtime.
    pub async fn run(self, count: i64) -> SeqResult<IdRange> {
        self.submit(count)?.finish().await
    }
}

/// `range`, unless the call returns JavaScript numbers (`numbers_for`: the counter's name
/// as shown in messages) and `range` goes past 2^53 - 1: `SEQUENCE_OVERFLOW` then.
/// Such a range was reserved and is never handed out: it counts as unclaimed.
fn receivable(numbers_for: Option<&str>, range: IdRange) -> SeqResult<IdRange> {
    match numbers_for {
        Some(name) => range
            .check_safe_for_numbers(name)
            .map(|()| range)
            .inspect_err(|_| {
                crate::engine::stats::discarded_unclaimed(range.count());
            }),
        None => Ok(range),
    }
}

/// The counter states a management write forgets around it (cached blocks, configuration
/// hint), so that no value cached before the write is handed out after it.
pub enum Fence {
    /// The counter's own state: a counter named by `_id` is one document, one state.
    Counter(Arc<CounterState>),
    /// The counter's state and those of the located counters of its collection and
    /// field in this client that may find the same document under other fields.
    Collection(Box<CollectionFence>),
}

/// The client, database and counter (with its own state) whose twins a [`Fence`] covers.
pub struct CollectionFence {
    handle: Arc<ClientHandle>,
    database: String,
    counter: CounterRef,
    own: Arc<CounterState>,
}

impl Fence {
    /// Runs the management write `op` with the states fenced.
    pub async fn managed<T>(self, op: impl std::future::Future<Output = T>) -> T {
        match self {
            Fence::Counter(state) => state.managed(op).await,
            Fence::Collection(fence) => {
                let CollectionFence {
                    handle,
                    database,
                    counter,
                    own,
                } = *fence;
                let select = || {
                    let mut states = handle.counter_states_sharing(&database, &counter);
                    states.push(own.clone());
                    states
                };
                CounterState::managed_all(select, op).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;
    use crate::engine::text::validate::MAX_SAFE_INTEGER;

    #[test]
    fn values_past_2_53_fail_a_call_that_returns_numbers_only() {
        let last_safe = IdRange::contiguous(MAX_SAFE_INTEGER - 1, MAX_SAFE_INTEGER);
        assert_eq!(receivable(Some("n"), last_safe).unwrap(), last_safe);
        let past = IdRange::contiguous(MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1);
        let e = receivable(Some("n"), past).unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceOverflow);
        assert!(e.message.contains("'n'") && e.message.contains("bigint"));
        let below = IdRange::contiguous(-MAX_SAFE_INTEGER - 1, -MAX_SAFE_INTEGER);
        assert!(
            receivable(Some("n"), below).is_err(),
            "descending past -(2^53 - 1)"
        );
        assert_eq!(
            receivable(None, past).unwrap(),
            past,
            "BigInts and formats take any"
        );
    }
}
