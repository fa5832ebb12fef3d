//! Giving cached values back: a counter put back to the value before its unused tail, only
//! where nobody moved it meanwhile.

use super::*;
use crate::engine::panic_safety::lock;
#[cfg(test)]
use std::future::Future;
use std::sync::Arc;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::block_cache::{BlockCache, Tail};
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::SeqResult;
use crate::engine::stats::{self};
use crate::engine::store::counter_store::{CounterRef, CounterStore, FetchToken};
use crate::engine::store::driver_store::DriverStore;
use crate::engine::store::mongo_driver::MongoDriver;

impl Lane {
    /// The stores of a give-back's writes through `driver` (a database of a client), one
    /// per lane with the lane's write concern: its commands are published as round-trip
    /// events (no fetch's event covers them).
    pub fn store_of(driver: &MongoDriver) -> impl Fn(&Lane) -> Arc<DriverStore<MongoDriver>> + '_ {
        move |lane| {
            let concern = lane.write_concern.as_ref().map(|w| w.to_driver());
            Arc::new(DriverStore(
                driver
                    .clone()
                    .with_write_concern(concern)
                    .publishing_commands(),
            ))
        }
    }
}

impl CounterState {
    /// Gives back the unused tail of every cached block of this counter: each tail is
    /// taken out of its cache (never handed out here any more), then the counter is put
    /// back to the value before the tail with one conditional update, guarded on the
    /// counter still holding exactly the last value of the tail (the value this process's
    /// fetch left there) with the flag that very fetch wrote (its token), on its
    /// configuration, and on no raise having marked a value of the tail. Anything else
    /// means the counter moved on (another process, a `set`), was put anywhere since
    /// (a `set` or `reset`, even if numbering brought it back to the same value) or a
    /// value of the tail was given explicitly, and the tail is abandoned (a gap, as
    /// without a give-back). Drains the block fetches in flight first (bounded), so that
    /// their fills are given back too. `store_of` gives the store of a lane's writes; each tail
    /// goes back to the counter as the calls that fetched it named it.
    pub async fn give_back<S, F>(&self, store_of: F) -> GivenBack
    where
        S: CounterStore,
        F: Fn(&Lane) -> Arc<S>,
    {
        let _turn = self.management_turn.lock().await;
        self.drain_fetches().await;
        let config = self.hint();
        let mut outcome = GivenBack::default();
        // One cache at a time: a give-back cut short leaves the tails it did not reach
        // in their caches, for `abandon_cached` to count.
        for (lane, counter, cache) in self.caches() {
            let Some(tail) = cache.take_tail() else {
                continue;
            };
            let part = return_tail(&*store_of(&lane), &counter, config, tail).await;
            outcome = outcome.plus(part);
        }
        outcome
    }

    /// [`CounterState::give_back`] computed now and sent when awaited: the tails leave
    /// the caches at once, the updates go later, as those of a process whose close timed
    /// out may still reach the server after anything else happened to the counter.
    #[cfg(test)]
    pub fn give_back_later<S, F>(&self, store_of: F) -> impl Future<Output = GivenBack>
    where
        S: CounterStore,
        F: Fn(&Lane) -> Arc<S>,
    {
        let config = self.hint();
        let tails: Vec<(Arc<S>, CounterRef, Tail)> = self
            .caches()
            .into_iter()
            .filter_map(|(lane, counter, cache)| {
                Some((store_of(&lane), counter, cache.take_tail()?))
            })
            .collect();
        async move {
            let mut outcome = GivenBack::default();
            for (store, counter, tail) in tails {
                outcome = outcome.plus(return_tail(&*store, &counter, config, tail).await);
            }
            outcome
        }
    }

    /// Every block cache of this counter, with its lane and naming.
    fn caches(&self) -> Vec<(Lane, CounterRef, Arc<BlockCache>)> {
        lock(&self.caches)
            .iter()
            .map(|((lane, counter, _), cache)| (lane.clone(), counter.clone(), cache.clone()))
            .collect()
    }

    /// Takes every cached value of this counter out of its caches and counts it as
    /// abandoned at close: for the counters a close had no time left to give back.
    /// Returns how many.
    pub fn abandon_cached(&self) -> i64 {
        let caches: Vec<Arc<BlockCache>> = lock(&self.caches).values().cloned().collect();
        let abandoned = caches
            .iter()
            .filter_map(|cache| cache.take_tail())
            .map(|tail| tail.values.count() + tail.dropped)
            .sum();
        stats::gave_back(0, abandoned);
        abandoned
    }
}

/// Gives `tail` back to `counter` ([`give_back_tail`]): what was returned and what
/// abandoned, counted in the statistics.
async fn return_tail<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    config: Option<SequenceConfig>,
    tail: Tail,
) -> GivenBack {
    let count = tail.values.count();
    // Out of the cache, the tail counts as abandoned until the update says it was
    // returned: a give-back cut short (a close's time limit) drops this future
    // mid-update, not knowing whether it was applied, and must not claim it was.
    let mut part = Counted(GivenBack {
        returned: 0,
        abandoned: tail.dropped + count,
    });
    if let Ok(true) = give_back_tail(store, counter, config, tail.values, tail.token).await {
        part.0 = GivenBack {
            returned: count,
            abandoned: tail.dropped,
        };
    }
    part.0
}

/// A part of a give-back, counted in the process's statistics when it goes (also when
/// the give-back is dropped before it finished).
struct Counted(GivenBack);

impl Drop for Counted {
    fn drop(&mut self) {
        stats::gave_back(self.0.returned, self.0.abandoned);
    }
}

/// What giving back a counter's cached tails did ([`CounterState::give_back`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GivenBack {
    /// Values returned to the counter: the next call, in any process, gets the first.
    pub returned: i64,
    /// Values left unused (the counter had moved on, it cycles, or the write failed).
    pub abandoned: i64,
}

impl GivenBack {
    /// The sum of two outcomes.
    pub fn plus(self, other: GivenBack) -> GivenBack {
        GivenBack {
            returned: self.returned + other.returned,
            abandoned: self.abandoned + other.abandoned,
        }
    }
}

/// Puts `counter` back from the last value of `tail` to the value before its first, in
/// one conditional update: only when it holds exactly `tail.last` with the flag `token`
/// (the fetch that left it there), is configured as `config` and no raise (a number
/// given explicitly, `raiseTo`, `syncToMax`, in any process) marked a value of `tail`
/// ([`CounterStore::give_back`]). `false` (nothing written) when it does not, when no
/// fetch is known to have left it there (`token` is `None`), when the counter cycles (a
/// cycling counter back at the same value after a full cycle cannot be told from one
/// nobody moved), or when the value before the tail lies outside 64 bits.
pub async fn give_back_tail<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    config: Option<SequenceConfig>,
    tail: IdRange,
    token: Option<FetchToken>,
) -> SeqResult<bool> {
    let Some(token) = token else {
        return Ok(false);
    };
    if config.is_some_and(|c| c.cycle) {
        return Ok(false);
    }
    let Some(before) = tail.first.checked_sub(tail.step) else {
        return Ok(false);
    };
    store
        .give_back(counter, config.as_ref(), tail, token, before)
        .await
}
