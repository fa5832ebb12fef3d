//! Cached allocation (like PostgreSQL's `CACHE n` or Hibernate's pooled optimizer): a
//! process reserves blocks of `n` values and serves calls from them locally, fetching the
//! next block before the current one runs out.
//!
//! Values stay unique across processes (every block is reserved atomically on the server)
//! and, within a process, follow the counter's direction (ascending; descending for a
//! negative step, `step: -2` giving `-1, -3, -5`; starting over after a cycle), but are
//! not ordered across processes; values left in a block when the process exits, or too
//! few for a batch call, are never handed out (gaps). When calls
//! outpace the round trips (the cache ran dry while a fetch was under way), one fetch
//! reserves several blocks at once, doubling up to [`MAX_BLOCKS_PER_FETCH`]; it halves
//! again when a fetch is not needed within a second.

//! # Who touches what
//!
//! `size` and `generation` never change here (the counter state moves `generation` on at
//! each management write). Everything else of a cache is in [`CacheContents`], behind the
//! cache's one lock, which no one holds across an `await`: calls take and queue on the
//! JavaScript thread ([`BlockCache::try_take`], [`BlockCache::enqueue`]), the cache's fetch
//! task fills it on a runtime thread, management writes and give-backs empty it on a
//! runtime thread ([`BlockCache::discard`], [`BlockCache::take_tail`]). The lock is taken
//! after the counter state's map of caches, never before.
//!
//! Whether a fetch is under way is one [`FetchState`], which holds the calls waiting for
//! it; its transitions are the only way to change it:
//!
//! - `Idle` → `Fetching`: by a call, through [`FetchState::start`] (a prefetch) or
//!   [`FetchState::queue`] (a call that must wait). The call that made the transition
//!   spawns the fetch, so there is at most one fetch per cache.
//! - `Fetching` → `Idle`: only by that fetch, through [`FetchState::finish`] once every
//!   waiting call is served or failed, or by its early-stop guard through
//!   [`FetchState::abandon`] (a panic, a dropped task), which fails the waiting calls.
//!
//! After either move to `Idle` the cache's `fetch_ended` is notified, waking whoever waits
//! for the fetches to drain ([`BlockCache::wait_idle_until`]) without polling.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};

use crate::engine::alloc::coalesce::Grants;
use crate::engine::alloc::demand::Demand;
use crate::engine::alloc::live::LiveToken;
use crate::engine::alloc::waiter::Waiter;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::panic_safety::{caught, lock, OnEarlyStop};
use crate::engine::store::counter_store::FetchToken;
use crate::engine::text::validate::MAX_RANGE_COUNT;

/// Most blocks one fetch reserves when calls outpace round trips.
pub const MAX_BLOCKS_PER_FETCH: i64 = 64;
/// A fetch not needed for this long halves the blocks per fetch.
const SLOW_DEMAND: Duration = Duration::from_secs(1);

/// Whether a block fetch of a cache is under way, with the calls waiting for it (see the
/// transitions at the top of this module).
enum FetchState {
    /// No fetch under way, and so no call waiting: a call the blocks cannot serve starts
    /// one.
    Idle,
    /// A fetch is under way (spawned, or about to be, by the call that started it).
    Fetching {
        /// Calls waiting for the blocks being fetched, in call order.
        waiters: VecDeque<Waiter>,
    },
}

/// The waiters of a cache with no fetch under way.
const NO_WAITERS: &VecDeque<Waiter> = &VecDeque::new();

impl FetchState {
    /// Whether a fetch is under way.
    fn is_fetching(&self) -> bool {
        matches!(self, FetchState::Fetching { .. })
    }

    /// The calls waiting for the fetch under way, in call order (none when idle).
    fn waiters(&self) -> &VecDeque<Waiter> {
        match self {
            FetchState::Idle => NO_WAITERS,
            FetchState::Fetching { waiters } => waiters,
        }
    }

    /// Takes out the first waiting call.
    fn next_waiter(&mut self) -> Option<Waiter> {
        match self {
            FetchState::Idle => None,
            FetchState::Fetching { waiters } => waiters.pop_front(),
        }
    }

    /// `Idle` → `Fetching`, with no call waiting yet (a prefetch). True when this made
    /// the transition: the caller must then start the fetch; false when one is under
    /// way already.
    fn start(&mut self) -> bool {
        match self {
            FetchState::Idle => {
                *self = FetchState::Fetching {
                    waiters: VecDeque::new(),
                };
                true
            }
            FetchState::Fetching { .. } => false,
        }
    }

    /// Queues `waiter` for the fetch under way, starting one when idle
    /// ([`FetchState::start`]: true when the caller must start it).
    fn queue(&mut self, waiter: Waiter) -> bool {
        let started = self.start();
        if let FetchState::Fetching { waiters } = self {
            waiters.push_back(waiter);
        }
        started
    }

    /// `Fetching` → `Idle`: the fetch ends, every call it carried answered.
    fn finish(&mut self) {
        debug_assert!(
            self.waiters().is_empty(),
            "a fetch ended with calls waiting"
        );
        *self = FetchState::Idle;
    }

    /// `Fetching` → `Idle` for a fetch that stopped early: returns the calls that were
    /// waiting for it, which the caller fails.
    fn abandon(&mut self) -> VecDeque<Waiter> {
        match std::mem::replace(self, FetchState::Idle) {
            FetchState::Idle => VecDeque::new(),
            FetchState::Fetching { waiters } => waiters,
        }
    }
}

/// What a [`BlockCache`] holds, behind its lock.
struct CacheContents {
    /// Reserved values not handed out yet, oldest block first.
    blocks: VecDeque<IdRange>,
    /// How many values `blocks` hold: kept as they change, since a cached call asks on
    /// every take (summing up to 64 blocks each time cost more than the take).
    held: i64,
    /// Whether a block fetch is under way, and the calls waiting for it.
    fetch: FetchState,
    /// Blocks reserved by the next fetch.
    blocks_per_fetch: i64,
    /// When the last fetch completed.
    last_fetch: Option<Instant>,
    /// The token of the last fetch that took values: the flag the counter holds while
    /// no other cache fetched and no `set` or `reset` came since, which a give-back of
    /// the tail requires.
    token: Option<FetchToken>,
}

impl CacheContents {
    fn available(&self) -> i64 {
        #[cfg(test)]
        assert_eq!(
            self.held,
            self.blocks.iter().map(IdRange::count).sum::<i64>(),
            "the count of held values follows the blocks"
        );
        self.held
    }

    /// Takes every block out.
    fn take_blocks(&mut self) -> VecDeque<IdRange> {
        self.held = 0;
        std::mem::take(&mut self.blocks)
    }

    /// Takes `count` contiguous values from the oldest block that has them, dropping
    /// older blocks too short for it.
    fn take(&mut self, count: i64) -> Option<IdRange> {
        while let Some(front) = self.blocks.front_mut() {
            if front.count() >= count {
                let taken = front.slice(0, count);
                match front.after(count) {
                    Some(rest) => *front = rest,
                    None => {
                        self.blocks.pop_front();
                    }
                }
                self.held -= taken.count();
                return Some(taken);
            }
            if let Some(short) = self.blocks.pop_front() {
                self.held -= short.count();
                crate::engine::stats::discarded_short(short.count());
            }
        }
        None
    }

    /// Hands cached values to the waiters in order; true when all are served.
    fn serve_waiters(&mut self) -> bool {
        while let Some(count) = self.fetch.waiters().front().map(|waiter| waiter.count) {
            let Some(range) = self.take(count) else {
                return false;
            };
            let waiter = self.fetch.next_waiter().expect("front exists");
            waiter.answer(Ok(range));
        }
        true
    }

    /// Stores a fetched fill, split into blocks of `size`, in order.
    fn store(&mut self, values: IdRange, size: i64) {
        let total = values.count();
        let mut offset = 0;
        while offset < total {
            let length = size.min(total - offset);
            let block = values.slice(offset, length);
            self.held += block.count();
            self.blocks.push_back(block);
            offset += length;
        }
    }
}

/// What a fast-path take found.
pub struct Taken {
    /// The values served.
    pub range: IdRange,
    /// Whether the caller should start a prefetch ([`BlockCache::start_fetching`]).
    pub prefetch: bool,
}

/// The cached blocks of one counter, with block size `size`.
pub struct BlockCache {
    size: i64,
    /// The counter's generation, moved on by every management write of this process:
    /// a fill fetched in an older generation is thrown away.
    generation: Arc<AtomicU64>,
    contents: Mutex<CacheContents>,
    /// Notified after each fetch ends (`Fetching` → `Idle`).
    fetch_ended: Notify,
    _live: LiveToken,
}

impl BlockCache {
    /// An empty cache of blocks of `size`, following the counter's `generation`.
    pub fn new(size: i64, generation: Arc<AtomicU64>) -> Self {
        BlockCache::tracked(size, generation, LiveToken::default())
    }

    /// [`BlockCache::new`], counted by `live` while it exists.
    pub fn tracked(size: i64, generation: Arc<AtomicU64>, live: LiveToken) -> Self {
        BlockCache {
            _live: live,
            size,
            generation,
            contents: Mutex::new(CacheContents {
                blocks: VecDeque::new(),
                held: 0,
                fetch: FetchState::Idle,
                blocks_per_fetch: 1,
                last_fetch: None,
                token: None,
            }),
            fetch_ended: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheContents> {
        lock(&self.contents)
    }

    /// Throws away every cached value (after a management write: `set`, `reset`, `drop`,
    /// `init`, `syncToMax`). Calls waiting for a fetch keep waiting for it.
    /// Returns how many values it threw away.
    pub fn discard(&self) -> i64 {
        let mut contents = self.lock();
        let thrown = contents.available();
        contents.take_blocks();
        contents.blocks_per_fetch = 1;
        contents.last_fetch = None;
        contents.token = None;
        thrown
    }

    /// Serves `count` values without waiting, or `None` when the blocks have too few (or
    /// calls are already waiting, so order is kept). With `Taken::prefetch`, less than
    /// half of a fetch is left and none is under way: the caller should start one.
    pub fn try_take(&self, count: i64) -> Option<Taken> {
        let mut contents = self.lock();
        if !contents.fetch.waiters().is_empty() {
            return None;
        }
        let range = contents.take(count)?;
        let prefetch = self.prefetch_due(&mut contents);
        Some(Taken { range, prefetch })
    }

    /// After a take: whether less than half of a fetch is left and no fetch is under way,
    /// in which case the caller must start one (the cache is `Fetching` for it).
    fn prefetch_due(&self, contents: &mut CacheContents) -> bool {
        let low = contents.available() * 2 < self.size * contents.blocks_per_fetch;
        low && contents.fetch.start()
    }

    /// Queues a call for `count` values (at most the block size) that [`try_take`] could
    /// not serve, at once so that calls keep their order. Returns where its values will
    /// arrive and the fetch to spawn, if any: the one that serves the call when no fetch
    /// is under way.
    ///
    /// A fetch may have landed since [`try_take`] found too few values (it runs on
    /// another thread, and the two calls take the lock one after the other): when no
    /// call waits and the blocks now hold enough, the call is served from them at once
    /// (its answer is ready; the fetch returned is then a prefetch, when one is due).
    /// Queueing it instead would start a fetch of its own, which reaches the counter
    /// after the one that landed and hands this call a value beyond the cached ones,
    /// which later calls then get: values out of order.
    ///
    /// [`try_take`]: BlockCache::try_take
    pub fn enqueue<F, Fut>(
        self: &Arc<Self>,
        count: i64,
        fetch: F,
    ) -> (
        oneshot::Receiver<SeqResult<IdRange>>,
        Option<impl Future<Output = ()> + Send + 'static>,
    )
    where
        F: Fn(Vec<Demand>, FetchToken) -> Fut + Send + 'static,
        Fut: Future<Output = Grants> + Send + 'static,
    {
        let (waiter, answer) = Waiter::new(count);
        let start_fetch = {
            let mut contents = self.lock();
            let landed = match contents.fetch.waiters().is_empty() {
                true => contents.take(count),
                false => None,
            };
            match landed {
                Some(range) => {
                    waiter.answer(Ok(range));
                    self.prefetch_due(&mut contents)
                }
                None => contents.fetch.queue(waiter),
            }
        };
        (
            answer,
            start_fetch.then(|| self.clone().start_fetching(fetch)),
        )
    }

    /// The fetch to spawn: it fetches until the waiters are served; each round trip serves the waiting calls
    /// (each as its own demand, so a bounded counter treats them as it would alone) and
    /// fills the cache with what is left before the counter's limit, at most one fetch's
    /// worth. The caller made the cache `Fetching` (through [`BlockCache::try_take`] or
    /// [`BlockCache::enqueue`]); the fetch alone makes it `Idle` again. Each round trip gets a fresh [`FetchToken`], which its
    /// writes leave in the counter.
    pub fn start_fetching<F, Fut>(
        self: Arc<Self>,
        fetch: F,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        F: Fn(Vec<Demand>, FetchToken) -> Fut + Send + 'static,
        Fut: Future<Output = Grants> + Send + 'static,
    {
        // Armed before the fetch is first polled: a fetch dropped unstarted still ends.
        let cache = self.clone();
        let release = OnEarlyStop::new(move || cache.fail_fetch());
        self.fetch_until_served(fetch, release)
    }

    async fn fetch_until_served<F, Fut>(
        self: Arc<Self>,
        fetch: F,
        release: OnEarlyStop<impl FnOnce() + Send>,
    ) where
        F: Fn(Vec<Demand>, FetchToken) -> Fut + Send + 'static,
        Fut: Future<Output = Grants> + Send + 'static,
    {
        loop {
            let (demands, generation) = {
                let mut contents = self.lock();
                let idle = contents
                    .last_fetch
                    .is_some_and(|t| t.elapsed() > SLOW_DEMAND);
                if idle && contents.fetch.waiters().is_empty() {
                    contents.blocks_per_fetch = (contents.blocks_per_fetch / 2).max(1);
                }
                let mut demands: Vec<Demand> = Vec::new();
                let mut total = 0;
                for waiter in contents.fetch.waiters() {
                    if total + waiter.count > MAX_RANGE_COUNT {
                        break;
                    }
                    total += waiter.count;
                    demands.push(Demand::Exact(waiter.count));
                }
                let fill = (self.size * contents.blocks_per_fetch).min(MAX_RANGE_COUNT - total);
                if fill > 0 {
                    demands.push(Demand::UpTo(fill));
                }
                (demands, self.generation.load(Ordering::SeqCst))
            };
            let served = demands
                .iter()
                .filter(|d| matches!(d, Demand::Exact(_)))
                .count();
            let token = FetchToken::fresh();
            let result = caught("cache block fetch", fetch(demands, token)).await;
            let mut contents = self.lock();
            // A cache never filled (a first call, or the first after a management write)
            // had nothing to run out of: its waiting calls say nothing about demand.
            let primed = contents.last_fetch.replace(Instant::now()).is_some();
            let done = match result {
                Ok(mut grants) => {
                    // Values taken: this fetch wrote its token (a fetch that took none
                    // wrote nothing).
                    if grants.iter().any(Result::is_ok) {
                        contents.token = Some(token);
                    }
                    let fill = (grants.len() > served).then(|| grants.pop()).flatten();
                    for grant in grants {
                        if let Some(waiter) = contents.fetch.next_waiter() {
                            waiter.answer(grant);
                        }
                    }
                    let current = self.generation.load(Ordering::SeqCst) == generation;
                    match fill {
                        Some(Ok(values)) if current => contents.store(values, self.size),
                        // Fetched before a management write: thrown away.
                        Some(Ok(values)) => {
                            crate::engine::stats::discarded_by_writes(values.count())
                        }
                        _ => {}
                    }
                    let ran_dry = primed && (served > 0 || !contents.fetch.waiters().is_empty());
                    let done = contents.serve_waiters();
                    if done && ran_dry {
                        contents.blocks_per_fetch =
                            (contents.blocks_per_fetch * 2).min(MAX_BLOCKS_PER_FETCH);
                    }
                    done
                }
                Err(error) => {
                    // Exactly the calls this round trip carried: those queued while it
                    // was under way get a round trip of their own.
                    for _ in 0..served {
                        if let Some(waiter) = contents.fetch.next_waiter() {
                            waiter.answer(Err(error.clone()));
                        }
                    }
                    contents.fetch.waiters().is_empty()
                }
            };
            if done {
                contents.fetch.finish();
                drop(contents);
                // The next fetch may already be under way: the release must not touch it.
                release.disarm();
                self.fetch_ended.notify_waiters();
                return;
            }
        }
    }

    /// Ends a fetch that stopped early (a panic outside the round trip, or the runtime
    /// dropping the task): its waiting calls fail with `INTERNAL` instead of waiting
    /// forever, and the next call starts a new fetch.
    fn fail_fetch(&self) {
        let mut contents = self.lock();
        for waiter in contents.fetch.abandon() {
            waiter.answer(Err(SeqError::internal("cache block fetch")));
        }
        drop(contents);
        self.fetch_ended.notify_waiters();
    }

    /// Waits until no block fetch of this cache is under way; false when `deadline` came
    /// first (and at once when it has passed). Woken when the fetch ends, not polled:
    /// interest is registered before the state is looked at, so an end in between is
    /// not missed.
    pub async fn wait_idle_until(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let ended = self.fetch_ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.is_fetching() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return false;
            }
            // The fetch ended; another may have started since: look again.
        }
    }

    /// Takes every cached value out of the cache (none is handed out from them any more)
    /// and returns its tail: the run of values at the end that continues, value after
    /// value, up to the last value fetched (the one the fetch left in the counter), with
    /// the token of that fetch. Older blocks not adjoining it are dropped (a gap).
    /// `None` when nothing was cached.
    pub fn take_tail(&self) -> Option<Tail> {
        let mut contents = self.lock();
        contents.blocks_per_fetch = 1;
        let held = contents.available();
        let blocks = contents.take_blocks();
        let token = contents.token.take();
        drop(contents);
        tail_of(&blocks).map(|values| Tail {
            values,
            token,
            dropped: held - values.count(),
        })
    }

    /// Whether a block fetch is under way.
    pub fn is_fetching(&self) -> bool {
        self.lock().fetch.is_fetching()
    }

    /// Values reserved and not yet handed out.
    pub fn available(&self) -> i64 {
        self.lock().available()
    }

    /// Blocks the next fetch reserves.
    pub fn blocks_per_fetch(&self) -> i64 {
        self.lock().blocks_per_fetch
    }
}

impl Drop for BlockCache {
    /// Values still cached when the cache goes (its counter state was pruned, or its
    /// client ended without a close) are counted as dropped.
    fn drop(&mut self) {
        let left = self.lock().available();
        if left > 0 {
            crate::engine::stats::discarded_dropped(left);
        }
    }
}

/// The unused tail of a cache's blocks ([`BlockCache::take_tail`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail {
    /// The run of values that ends at the last value fetched.
    pub values: IdRange,
    /// The token of the last fetch that took values (`None`: none did).
    pub token: Option<FetchToken>,
    /// How many values the older blocks not adjoining the run held (a gap).
    pub dropped: i64,
}

/// The run of `blocks` at their end in which each value follows the one before by the
/// blocks' step, as one range; `None` when there are no blocks.
pub(crate) fn tail_of(blocks: &VecDeque<IdRange>) -> Option<IdRange> {
    let mut tail = *blocks.back()?;
    for block in blocks.iter().rev().skip(1) {
        let adjoins =
            block.step == tail.step && block.last.checked_add(block.step) == Some(tail.first);
        if !adjoins {
            break;
        }
        tail.first = block.first;
    }
    Some(tail)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use super::*;
    use crate::engine::alloc::waiter::receive;
    use crate::engine::test_support::{gated, run, values_of, FakeCounter, Gate, Rng};

    /// [`crate::engine::test_support::by_total`] for a cache, whose fetches also take a
    /// token (left unused: these tests count values).
    fn by_total<F, Fut>(
        fetch: F,
    ) -> impl Fn(Vec<Demand>, FetchToken) -> std::pin::Pin<Box<dyn Future<Output = Grants> + Send>>
           + Send
           + Sync
           + 'static
    where
        F: Fn(i64) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = SeqResult<IdRange>> + Send + 'static,
    {
        let by_total = crate::engine::test_support::by_total(fetch);
        move |demands, _token| by_total(demands)
    }

    fn new_cache(size: i64) -> Arc<BlockCache> {
        Arc::new(BlockCache::new(size, Default::default()))
    }

    impl BlockCache {
        /// Takes or waits, spawning what must run, as the engine does; fetches by totals.
        async fn reserve<F, Fut>(self: Arc<Self>, count: i64, fetch: F) -> SeqResult<IdRange>
        where
            F: Fn(i64) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = SeqResult<IdRange>> + Send + 'static,
        {
            self.reserve_with(count, by_total(fetch)).await
        }

        /// [`BlockCache::reserve`] with a fetch as the engine makes it.
        async fn reserve_with<F, Fut>(self: Arc<Self>, count: i64, fetch: F) -> SeqResult<IdRange>
        where
            F: Fn(Vec<Demand>, FetchToken) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Grants> + Send + 'static,
        {
            if let Some(taken) = self.try_take(count) {
                if taken.prefetch {
                    tokio::spawn(self.clone().start_fetching(fetch));
                }
                return Ok(taken.range);
            }
            let (answer, fetching) = self.enqueue(count, fetch);
            if let Some(fetching) = fetching {
                tokio::spawn(fetching);
            }
            crate::engine::alloc::waiter::receive(answer).await
        }
    }

    /// The CI failure `…, 300, 301, 602, 302, 303, …`: a call finds the cache empty while
    /// a prefetch is under way, and the prefetch lands before the call queues (the engine
    /// takes and queues under two locks). The call must then be served from the block
    /// that just arrived, not start a fetch of its own that reaches the server after the
    /// prefetch and hands it a value beyond the cached ones.
    #[test]
    fn a_call_queued_just_after_a_prefetch_landed_is_served_from_it_in_order() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let fetch = {
            let counter = counter.clone();
            move |t| counter.clone().fetch(t, 0)
        };
        let mut got = Vec::new();
        run(async {
            got.push(cache.clone().reserve(1, fetch.clone()).await.unwrap().first);
            let mut prefetch = None;
            // Empty the block; the prefetch it asks for is held, not yet run.
            while let Some(taken) = cache.try_take(1) {
                got.push(taken.range.first);
                if taken.prefetch {
                    prefetch = Some(cache.clone().start_fetching(by_total(fetch.clone())));
                }
            }
            assert!(cache.is_fetching(), "the prefetch is under way");
            // The next call found nothing cached; before it queues, the prefetch lands.
            prefetch.expect("a prefetch came due").await;
            let (answer, fetching) = cache.enqueue(1, by_total(fetch.clone()));
            if let Some(fetching) = fetching {
                tokio::spawn(fetching);
            }
            got.push(
                crate::engine::alloc::waiter::receive(answer)
                    .await
                    .unwrap()
                    .first,
            );
            for _ in 0..3 {
                got.push(cache.clone().reserve(1, fetch.clone()).await.unwrap().first);
            }
        });
        assert_eq!(got, (1..=15).collect::<Vec<_>>(), "ascending, without gaps");
        assert_eq!(counter.value(), 21, "no round trip beyond the prefetch");
    }

    /// Each fetch gets a fresh token; the tail carries the token of the last fetch that
    /// took values (the flag it left in the counter), not of one that failed, and none
    /// after the cache was discarded.
    #[test]
    fn a_tail_carries_the_token_of_the_last_fetch_that_took_values() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let seen = Arc::new(Mutex::new(Vec::<FetchToken>::new()));
        let fetch = || {
            let seen = seen.clone();
            let totals = by_total({
                let counter = counter.clone();
                move |t| counter.clone().fetch(t, 0)
            });
            move |demands, token| {
                seen.lock().unwrap().push(token);
                totals(demands, token)
            }
        };
        let failing = {
            let seen = seen.clone();
            move |_, token| {
                seen.lock().unwrap().push(token);
                async { Err(SeqError::internal("no round trip")) }
            }
        };
        run(async {
            cache.clone().reserve_with(1, fetch()).await.unwrap();
            let mut due = false;
            while !due {
                due = cache.try_take(1).expect("cached").prefetch;
            }
            cache.clone().start_fetching(failing).await;
        });
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert_ne!(seen[0], seen[1], "a fresh token per fetch");
        let tail = cache.take_tail().expect("a tail");
        assert_eq!(tail.token, Some(seen[0]), "the failed fetch wrote nothing");
        assert_eq!(tail.values.last, counter.value());
        run(async {
            cache.clone().reserve_with(1, fetch()).await.unwrap();
        });
        assert!(cache.discard() > 0);
        assert_eq!(cache.lock().token, None, "discarded with the blocks");
    }

    #[test]
    fn take_tail_keeps_the_run_up_to_the_last_fill_and_counts_older_blocks() {
        let next = Arc::new(std::sync::atomic::AtomicI64::new(0));
        let fetch = {
            let next = next.clone();
            move |total: i64| {
                let next = next.clone();
                async move {
                    let last = next.fetch_add(total, Ordering::SeqCst) + total;
                    IdRange::ending_at(last, total)
                }
            }
        };
        let cache = new_cache(10);
        run(async {
            let (answer, fetching) = cache.enqueue(1, by_total(fetch.clone()));
            fetching.expect("the first call fetches").await;
            let first = crate::engine::alloc::waiter::receive(answer).await;
            assert_eq!(first.unwrap().first, 1);
            let mut due = false;
            while !due {
                due = cache.try_take(1).expect("cached").prefetch;
            }
            // Another process moves the counter on before the next fill.
            next.fetch_add(100, Ordering::SeqCst);
            cache.clone().start_fetching(by_total(fetch)).await;
        });
        let fill = cache.blocks_per_fetch() * 10;
        let held = cache.available();
        let Tail {
            values: tail,
            dropped,
            ..
        } = cache.take_tail().expect("a tail");
        assert_eq!(tail.count(), fill, "the last fill, alone");
        assert_eq!(tail.last, next.load(Ordering::SeqCst));
        assert_eq!(
            dropped,
            held - fill,
            "the older block is counted as dropped"
        );
        assert!(dropped > 0);
        assert_eq!(cache.available(), 0, "nothing is served from them any more");
        assert!(cache.take_tail().is_none());
    }

    #[test]
    fn a_block_too_short_for_a_batch_is_skipped_and_counted_as_short() {
        // Large: no other test's values can make up for a missed count.
        const SHORT: i64 = 876_543_211;
        let mut contents = CacheContents {
            blocks: VecDeque::from([
                IdRange::contiguous(1, SHORT),
                IdRange::contiguous(SHORT + 1, 3 * SHORT),
            ]),
            held: 3 * SHORT,
            fetch: FetchState::Idle,
            blocks_per_fetch: 1,
            last_fetch: None,
            token: None,
        };
        let before = crate::engine::stats::PROCESS.snapshot().discarded_short;
        let taken = contents.take(SHORT + 1).expect("the second block has room");
        assert_eq!(taken, IdRange::contiguous(SHORT + 1, 2 * SHORT + 1));
        let after = crate::engine::stats::PROCESS.snapshot().discarded_short;
        assert!(
            after - before >= SHORT as u64,
            "{before} + {SHORT} > {after}"
        );
        assert_eq!(contents.available(), SHORT - 1);
    }

    #[test]
    fn a_cache_dropped_with_values_counts_them_as_dropped() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        run(async {
            let c = counter.clone();
            cache
                .clone()
                .reserve(1, move |t| c.clone().fetch(t, 0))
                .await
                .unwrap();
        });
        let held = cache.available();
        assert!(held > 0);
        let before = crate::engine::stats::PROCESS.snapshot().discarded_dropped;
        drop(cache);
        let after = crate::engine::stats::PROCESS.snapshot().discarded_dropped;
        assert!(after >= before + held as u64, "{before} + {held} > {after}");
        let empty = new_cache(10);
        let before = crate::engine::stats::PROCESS.snapshot().discarded_dropped;
        assert_eq!(empty.discard(), 0);
        drop(empty);
        // Other tests may drop caches meanwhile: only a lower bound holds across threads.
        assert!(crate::engine::stats::PROCESS.snapshot().discarded_dropped >= before);
    }

    #[test]
    fn a_panicking_fetch_fails_its_waiters_and_the_next_call_fetches_again() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        counter.panic_on.store(1, Ordering::SeqCst);
        let (first, second) = run(async {
            let c = counter.clone();
            let first = cache
                .clone()
                .reserve(1, move |t| c.clone().fetch(t, 0))
                .await;
            let c = counter.clone();
            let second = cache
                .clone()
                .reserve(1, move |t| c.clone().fetch(t, 0))
                .await;
            (first, second)
        });
        assert_eq!(
            first.unwrap_err().code,
            crate::engine::error::ErrorCode::Internal
        );
        assert_eq!(second.unwrap().first, 1);
    }

    #[test]
    fn serves_from_blocks_with_few_round_trips_and_no_duplicate() {
        for seed in 1..=6u64 {
            let cache = new_cache(100);
            let counter = Arc::new(FakeCounter::default());
            let results = run(async {
                let mut rng = Rng::new(seed);
                let mut tasks = Vec::new();
                for _ in 0..2_000 {
                    let count = 1 + rng.below(4) as i64;
                    let delay = rng.below(500);
                    let counter = counter.clone();
                    let cache = cache.clone();
                    tasks.push(tokio::spawn(async move {
                        let fetch = move |total| counter.clone().fetch(total, delay);
                        (count, cache.reserve(count, fetch).await)
                    }));
                    if rng.below(8) == 0 {
                        tokio::time::sleep(std::time::Duration::from_micros(50)).await;
                    }
                }
                let mut out = Vec::new();
                for t in tasks {
                    let (count, r) = t.await.unwrap();
                    out.push((count, r.unwrap()));
                }
                out
            });
            let all = values_of(&results);
            let mut dedup = all.clone();
            dedup.dedup();
            assert_eq!(dedup.len(), all.len(), "seed {seed}: no duplicate");
            assert!(all.iter().all(|v| *v >= 1 && *v <= counter.value()));
            let trips = counter.round_trips.load(Ordering::SeqCst);
            assert!(
                trips <= 2 * (counter.value() as usize / 100) + 2,
                "seed {seed}: {trips} round trips"
            );
            assert!(
                trips < 200,
                "seed {seed}: blocks served most calls ({trips} trips)"
            );
        }
    }

    #[test]
    fn sequential_calls_ascend_and_prefetch_keeps_a_block_ready() {
        let cache = new_cache(100);
        let counter = Arc::new(FakeCounter::default());
        let values = run(async {
            let mut out = Vec::new();
            for _ in 0..350 {
                let c = counter.clone();
                let r = cache
                    .clone()
                    .reserve(1, move |t| c.clone().fetch(t, 100))
                    .await
                    .unwrap();
                out.push(r.first);
                tokio::task::yield_now().await;
            }
            out
        });
        assert!(values.windows(2).all(|w| w[0] < w[1]), "ascending");
        assert_eq!(values[0], 1);
        assert!(counter.value() >= 350);
    }

    #[test]
    fn try_take_is_empty_until_a_block_arrives_and_asks_for_prefetch() {
        let cache = new_cache(10);
        assert!(cache.try_take(1).is_none());
        let counter = Arc::new(FakeCounter::default());
        run(async {
            let c = counter.clone();
            let r = cache
                .clone()
                .reserve(1, move |t| c.clone().fetch(t, 0))
                .await;
            assert_eq!(r.unwrap(), IdRange::contiguous(1, 1));
        });
        // The waiting call got its own value; the fill is a whole block.
        assert_eq!(cache.available(), 10);
        let mut prefetch_asked = false;
        for expected in 2..=11 {
            let taken = cache.try_take(1).expect("served from the block");
            assert_eq!(taken.range.first, expected);
            prefetch_asked |= taken.prefetch;
        }
        assert!(
            prefetch_asked,
            "a prefetch was asked for below half a block"
        );
        assert!(cache.try_take(1).is_none());
    }

    #[test]
    fn a_failed_fetch_fails_the_waiters_and_the_next_call_retries() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        counter.fail_every.store(1, Ordering::SeqCst);
        run(async {
            let c = counter.clone();
            let e = cache
                .clone()
                .reserve(1, move |t| c.clone().fetch(t, 0))
                .await;
            assert_eq!(e.unwrap_err().server_code, Some(91));
            counter.fail_every.store(0, Ordering::SeqCst);
            let c = counter.clone();
            let r = cache
                .clone()
                .reserve(1, move |t| c.clone().fetch(t, 0))
                .await;
            assert_eq!(r.unwrap().first, 1);
        });
    }

    #[test]
    fn a_failed_fetch_fails_exactly_the_calls_it_carried() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let trips = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let gate = Gate::default();
        let fetch = {
            let (counter, trips, gate) = (counter.clone(), trips.clone(), gate.clone());
            move |total| {
                let trip = trips.fetch_add(1, Ordering::SeqCst) + 1;
                let (counter, gate) = (counter.clone(), gate.clone());
                async move {
                    gate.pass().await;
                    match trip {
                        1 => Err(SeqError::server(91, None, "injected failure")),
                        _ => counter.fetch(total, 0).await,
                    }
                }
            }
        };
        let (first, later) = run(async {
            let (first, fetching) = cache.enqueue(1, by_total(fetch.clone()));
            tokio::spawn(fetching.expect("the first call fetches"));
            // The first call's fetch is under way, held at the gate; these calls queue
            // behind it, however slowly a loaded machine runs the test.
            gate.reached(1).await;
            let later: Vec<_> = (0..3)
                .map(|_| {
                    let (answer, fetching) = cache.enqueue(2, by_total(fetch.clone()));
                    assert!(fetching.is_none(), "queued behind the fetch under way");
                    answer
                })
                .collect();
            gate.open();
            let first = receive(first).await;
            let later = futures_util::future::join_all(later.into_iter().map(receive)).await;
            (first, later)
        });
        assert_eq!(
            first.unwrap_err().server_code,
            Some(91),
            "the carried call fails"
        );
        let mut values = Vec::new();
        for answer in later {
            let range = answer.expect("a call queued after the failed fetch was sent");
            assert_eq!(range.count(), 2);
            values.extend(range.values());
        }
        let mut unique = values.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 6, "no value twice");
        assert_eq!(
            trips.load(Ordering::SeqCst),
            2,
            "one more fetch served them all"
        );
        assert!(!cache.is_fetching());
    }

    /// After a fetch that never completed: its waiter `answer` failed with `INTERNAL`, the
    /// cache is free, and the next call starts at 1 (nothing was consumed).
    async fn failed_internal_then_fetch_ended(
        cache: &Arc<BlockCache>,
        counter: &Arc<FakeCounter>,
        answer: tokio::sync::oneshot::Receiver<SeqResult<IdRange>>,
    ) {
        let limit = std::time::Duration::from_secs(5);
        let got = tokio::time::timeout(limit, crate::engine::alloc::waiter::receive(answer)).await;
        let error = got.expect("the waiter was answered").unwrap_err();
        assert_eq!(error.code, crate::engine::error::ErrorCode::Internal);
        assert!(
            !cache.is_fetching(),
            "no fetch is in flight: the next call starts one"
        );
        let c = counter.clone();
        let next = cache.clone().reserve(1, move |t| c.clone().fetch(t, 0));
        let r = tokio::time::timeout(limit, next).await.expect("served");
        assert_eq!(r.unwrap().first, 1, "the dropped fetch consumed nothing");
    }

    #[test]
    fn a_fetch_dropped_midway_fails_its_waiters_and_the_next_call_fetches_again() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        // Never opened: the fetch stays under way until its task is dropped.
        let gate = Gate::default();
        run(async {
            let (answer, fetching) = cache.enqueue(1, by_total(gated(&counter, &gate)));
            let task = tokio::spawn(fetching.expect("the first call fetches"));
            gate.reached(1).await;
            task.abort();
            let _ = task.await;
            failed_internal_then_fetch_ended(&cache, &counter, answer).await;
        });
    }

    #[test]
    fn a_fetch_dropped_before_it_ran_fails_its_waiters_and_ends_the_fetch() {
        // A runtime shutting down drops spawned tasks without polling them: the cache
        // must not stay "fetching" for a fetch that never starts.
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        run(async {
            let c = counter.clone();
            let (answer, fetching) = cache.enqueue(1, by_total(move |t| c.clone().fetch(t, 0)));
            drop(fetching.expect("the first call fetches"));
            failed_internal_then_fetch_ended(&cache, &counter, answer).await;
        });
    }

    #[test]
    fn a_prefetch_dropped_before_it_ran_ends_the_fetch() {
        let cache = new_cache(4);
        let counter = Arc::new(FakeCounter::default());
        run(async {
            let limit = std::time::Duration::from_secs(5);
            let c = counter.clone();
            let first = cache.clone().reserve(1, move |t| c.clone().fetch(t, 0));
            tokio::time::timeout(limit, first)
                .await
                .expect("served")
                .unwrap();
            // Take until a prefetch is due, then drop it unstarted.
            let mut dropped = false;
            for _ in 0..4 {
                if let Some(taken) = cache.try_take(1) {
                    if taken.prefetch {
                        let c = counter.clone();
                        drop(
                            cache
                                .clone()
                                .start_fetching(by_total(move |t| c.clone().fetch(t, 0))),
                        );
                        dropped = true;
                        break;
                    }
                }
            }
            assert!(dropped, "a prefetch came due");
            assert!(
                !cache.is_fetching(),
                "no fetch is in flight: the next call starts one"
            );
            for _ in 0..8 {
                let c = counter.clone();
                let next = cache.clone().reserve(1, move |t| c.clone().fetch(t, 0));
                tokio::time::timeout(limit, next)
                    .await
                    .expect("served")
                    .unwrap();
            }
        });
    }

    #[test]
    fn the_first_fill_of_an_empty_cache_does_not_raise_the_blocks_per_fetch() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let take = |cache: &Arc<BlockCache>| {
            let c = counter.clone();
            run(cache.clone().reserve(1, move |t| c.clone().fetch(t, 0))).unwrap()
        };
        assert_eq!(take(&cache), IdRange::contiguous(1, 1));
        assert_eq!(
            cache.blocks_per_fetch(),
            1,
            "the first call found nothing to run out of"
        );
        assert_eq!(counter.value(), 11, "its value and one block");
        // The second call finds 9 left of a fetch of 10: no fetch yet.
        let second = cache.try_take(1).expect("served from the block");
        assert_eq!((second.range.first, second.prefetch), (2, false));
        // After a management write the cache is empty again: its first fill is a first one.
        cache.discard();
        assert_eq!(take(&cache).first, 12);
        assert_eq!(cache.blocks_per_fetch(), 1);
        assert_eq!(counter.value(), 22);
    }

    #[test]
    fn one_call_waiting_on_a_filled_cache_run_dry_raises_the_blocks_per_fetch() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let c = counter.clone();
        let fetch = move |t| c.clone().fetch(t, 0);
        let failing = |_| async { Err(SeqError::internal("no round trip")) };
        let waited = run(async {
            assert_eq!(
                cache.clone().reserve(1, fetch.clone()).await.unwrap().first,
                1
            );
            // Take the block, every background fetch it asks for failing: the cache is
            // then empty with no fetch under way.
            for expected in 2..=11 {
                let taken = cache.try_take(1).expect("cached");
                assert_eq!(taken.range.first, expected);
                if taken.prefetch {
                    cache.clone().start_fetching(by_total(failing)).await;
                }
            }
            assert!(!cache.is_fetching());
            assert_eq!(cache.blocks_per_fetch(), 1);
            // One call, alone, waits for a fetch: it outpaced the round trips.
            cache.clone().reserve(1, fetch).await.unwrap()
        });
        assert_eq!(waited.first, 12);
        assert_eq!(cache.blocks_per_fetch(), 2);
    }

    /// A prefetch comes due at the first take that leaves less than half of a fetch
    /// (`size × blocks per fetch`): with blocks of 10, at 4 left of one block, and at the
    /// first take (9 left of 10) once a fetch takes two blocks.
    #[test]
    fn a_prefetch_comes_due_below_half_a_fetch_and_not_before() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let c = counter.clone();
        let fetch = move |t| c.clone().fetch(t, 0);
        let failing = |_| async { Err(SeqError::internal("no round trip")) };
        let (one_block, two_blocks) = run(async {
            cache.clone().reserve(1, fetch.clone()).await.unwrap();
            let mut left_when_due = Vec::new();
            while let Some(taken) = cache.try_take(1) {
                if taken.prefetch {
                    left_when_due.push(cache.available());
                    cache.clone().start_fetching(by_total(failing)).await;
                }
            }
            // A call outpaces the round trips: the next fetch takes two blocks.
            cache.clone().reserve(1, fetch).await.unwrap();
            assert_eq!(cache.blocks_per_fetch(), 2);
            let mut left = Vec::new();
            while let Some(taken) = cache.try_take(1) {
                if taken.prefetch {
                    left.push(cache.available());
                    break;
                }
            }
            (left_when_due, left)
        });
        assert_eq!(
            one_block.first(),
            Some(&4),
            "due at 4 of 10 left: {one_block:?}"
        );
        assert_eq!(two_blocks, vec![9], "due at 9 left, under half of 20");
    }

    #[test]
    fn running_dry_fetches_more_blocks_at_once_in_ascending_blocks() {
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let values = run(async {
            let mut out = Vec::new();
            for _ in 0..200 {
                let c = counter.clone();
                let calls = (0..25).map(|_| {
                    let c = c.clone();
                    cache.clone().reserve(1, move |t| c.clone().fetch(t, 200))
                });
                for r in futures_util::future::join_all(calls).await {
                    out.push(r.unwrap().first);
                }
            }
            out
        });
        assert!(
            cache.blocks_per_fetch() > 1,
            "demand raised the blocks per fetch"
        );
        assert!(cache.blocks_per_fetch() <= MAX_BLOCKS_PER_FETCH);
        let mut sorted = values.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), values.len(), "no duplicate");
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "ascending in call order"
        );
    }

    #[test]
    fn a_fetch_state_moves_only_through_its_transitions() {
        let mut state = FetchState::Idle;
        assert!(!state.is_fetching());
        assert!(state.waiters().is_empty());
        assert!(state.next_waiter().is_none());
        // A prefetch: idle → fetching, once.
        assert!(state.start(), "the caller that starts it spawns the fetch");
        assert!(state.is_fetching());
        assert!(!state.start(), "one fetch at a time");
        // Calls queue behind the fetch under way, in order.
        let (first, _first) = Waiter::new(1);
        let (second, _second) = Waiter::new(2);
        assert!(!state.queue(first), "queued behind the fetch under way");
        assert!(!state.queue(second));
        let counts: Vec<i64> = state.waiters().iter().map(|w| w.count).collect();
        assert_eq!(counts, vec![1, 2]);
        assert_eq!(state.next_waiter().map(|w| w.count), Some(1));
        // Stopped early: idle again, its waiting calls handed over to be failed.
        let left = state.abandon();
        assert_eq!(left.iter().map(|w| w.count).collect::<Vec<_>>(), vec![2]);
        assert!(!state.is_fetching());
        assert!(state.abandon().is_empty(), "nothing left to fail");
        // A call that must wait starts the fetch when none is under way.
        let (third, _third) = Waiter::new(3);
        assert!(state.queue(third), "the waiting call starts the fetch");
        assert!(state.is_fetching());
        assert_eq!(state.next_waiter().map(|w| w.count), Some(3));
        state.finish();
        assert!(!state.is_fetching());
        assert!(state.start(), "the next fetch may start");
    }

    #[test]
    fn a_wait_for_the_fetches_is_woken_when_the_fetch_ends_not_at_its_deadline() {
        use std::time::Duration;
        let cache = new_cache(10);
        let counter = Arc::new(FakeCounter::default());
        let gate = Gate::default();
        run(async {
            // Far beyond the test's own bound: only a wake-up ends the wait in time.
            let far = tokio::time::Instant::now() + Duration::from_secs(600);
            let bound = Duration::from_secs(10);
            let (answer, fetching) = cache.enqueue(1, by_total(gated(&counter, &gate)));
            tokio::spawn(fetching.expect("the first call fetches"));
            gate.reached(1).await;
            let waiting = {
                let cache = cache.clone();
                tokio::spawn(async move { cache.wait_idle_until(far).await })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "the fetch is under way");
            gate.open();
            let idle = tokio::time::timeout(bound, waiting)
                .await
                .expect("woken when the fetch ended")
                .unwrap();
            assert!(idle);
            assert!(!cache.is_fetching());
            assert_eq!(receive(answer).await.unwrap().first, 1);
            // A fetch dropped before it ran ends too, and wakes the wait.
            assert!(cache.discard() > 0);
            let (answer, fetching) = cache.enqueue(1, by_total(gated(&counter, &gate)));
            let fetching = fetching.expect("the cache is empty: this call fetches");
            let waiting = {
                let cache = cache.clone();
                tokio::spawn(async move { cache.wait_idle_until(far).await })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!waiting.is_finished(), "the fetch is under way");
            drop(fetching);
            let idle = tokio::time::timeout(bound, waiting)
                .await
                .expect("woken when the dropped fetch ended")
                .unwrap();
            assert!(idle);
            assert!(receive(answer).await.is_err(), "its waiting call failed");
        });
    }

    #[test]
    fn a_wait_for_a_fetch_that_never_ends_stops_at_its_deadline() {
        use std::time::Duration;
        let cache = new_cache(10);
        run(async {
            let (_answer, fetching) = cache.enqueue(1, |_, _| std::future::pending::<Grants>());
            let _never_run = fetching.expect("the first call fetches");
            let started = std::time::Instant::now();
            let deadline = tokio::time::Instant::now() + Duration::from_millis(50);
            assert!(
                !cache.wait_idle_until(deadline).await,
                "the deadline came first"
            );
            assert!(started.elapsed() >= Duration::from_millis(50));
            assert!(cache.is_fetching());
            // A deadline already past: no wait at all.
            let passed = tokio::time::Instant::now();
            assert!(!cache.wait_idle_until(passed).await);
        });
        // An idle cache is idle whatever the deadline.
        let idle = new_cache(10);
        run(async {
            let passed = tokio::time::Instant::now();
            assert!(idle.wait_idle_until(passed).await);
        });
    }
}
