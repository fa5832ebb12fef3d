//! The entry point of the engine: a counter prepared for calls ([`PreparedCounter`]),
//! which submits each call to the counter's one state in its client, directly, through
//! the coalescer, or from the block cache, as the options say.

use std::sync::Arc;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::block_cache::CacheSlot;
use crate::engine::alloc::counter_state::{CounterState, Lane, Mode, Outcome, Submitted};
use crate::engine::call_options::CallOptions;
use crate::engine::client::registry::ClientHandle;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::SeqResult;
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
        let cache = options.cache.map(|size| state.cache_slot(&lane, size));
        Ok(PreparedCounter {
            handle: handle.clone(),
            store: Arc::new(DriverCounters(driver)),
            counter,
            state,
            lane,
            mode,
            cache,
        })
    }

    /// The driver of the database the counter lives in.
    pub fn driver(&self) -> &MongoDriver {
        &self.store.0
    }

    /// The store as the counter operations see it.
    pub fn counters(&self) -> &DriverCounters<MongoDriver> {
        &self.store
    }

    /// The counter.
    pub fn counter(&self) -> &CounterRef {
        &self.counter
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
        self.handle.ensure_open()?;
        let Submitted {
            outcome,
            background,
        } = self.state.submit(
            &self.store,
            &self.counter,
            &self.lane,
            self.mode,
            self.cache.as_ref(),
            count,
        );
        let outcome = match outcome {
            Outcome::Later(pending) => Outcome::Later(self.handle.guard(pending)),
            now => now,
        };
        Ok(Submitted {
            outcome,
            background,
        })
    }

    /// Reserves `count` values, spawning background work on the current runtime.
    pub async fn run(self, count: i64) -> SeqResult<IdRange> {
        self.submit(count)?.finish().await
    }
}
