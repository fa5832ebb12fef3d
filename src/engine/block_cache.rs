//! Cached allocation (like PostgreSQL's `CACHE n` or Hibernate's pooled optimizer): a
//! process reserves blocks of `n` values and serves calls from them locally, fetching the
//! next block before the current one runs out.
//!
//! Values stay unique across processes (every block is reserved atomically on the server)
//! and ascend within a process, but not across processes; values left in a block when
//! the process exits, or too few for a batch call, are never handed out (gaps).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::engine::allocate::IdRange;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};

struct Waiter {
    count: i64,
    reply: oneshot::Sender<SeqResult<IdRange>>,
}

#[derive(Default)]
struct Entry {
    /// Reserved values not handed out yet, oldest block first.
    blocks: VecDeque<IdRange>,
    /// A block fetch is under way.
    fetching: bool,
    /// Calls waiting for the block being fetched, in call order.
    waiters: VecDeque<Waiter>,
}

impl Entry {
    fn available(&self) -> i64 {
        self.blocks.iter().map(IdRange::count).sum()
    }

    /// Takes `count` contiguous values from the oldest block that has them, dropping
    /// older blocks too short for it.
    fn take(&mut self, count: i64) -> Option<IdRange> {
        while let Some(front) = self.blocks.front_mut() {
            if front.count() >= count {
                let taken = IdRange {
                    first: front.first,
                    last: front.first + count - 1,
                };
                front.first += count;
                if front.count() == 0 {
                    self.blocks.pop_front();
                }
                return Some(taken);
            }
            self.blocks.pop_front();
        }
        None
    }
}

/// What a fast-path take found.
pub struct Taken {
    /// The values served.
    pub range: IdRange,
    /// Whether the caller should start a prefetch ([`BlockCache::prefetch`]).
    pub prefetch: bool,
}

/// Per-counter blocks of reserved values.
pub struct BlockCache<K> {
    entries: Mutex<HashMap<K, Entry>>,
}

impl<K> Default for BlockCache<K> {
    fn default() -> Self {
        BlockCache {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone + Send + 'static> BlockCache<K> {
    /// Serves `count` values from the cached blocks of `key` without waiting, or `None`
    /// when they have too few (or calls are already waiting, so order is kept). With
    /// `Taken::prefetch`, fewer than half a block (`size`) is left and no fetch is under
    /// way: the caller should start one.
    pub fn try_take(&self, key: &K, count: i64, size: i64) -> Option<Taken> {
        let mut entries = self.entries.lock().expect("block cache lock");
        let entry = entries.get_mut(key)?;
        if !entry.waiters.is_empty() {
            return None;
        }
        let range = entry.take(count)?;
        let prefetch = !entry.fetching && entry.available() * 2 < size;
        if prefetch {
            entry.fetching = true;
        }
        Some(Taken { range, prefetch })
    }

    /// Reserves `count` values (at most `size`), from the cache when possible, otherwise
    /// waiting for the next block. `fetch(size)` reserves one block in one round trip.
    pub async fn reserve<F, Fut>(
        &'static self,
        key: K,
        count: i64,
        size: i64,
        fetch: F,
    ) -> SeqResult<IdRange>
    where
        F: Fn(i64) -> Fut + Send + 'static,
        Fut: Future<Output = SeqResult<IdRange>> + Send + 'static,
    {
        if let Some(taken) = self.try_take(&key, count, size) {
            if taken.prefetch {
                tokio::spawn(self.prefetch(key, size, fetch));
            }
            return Ok(taken.range);
        }
        let (reply, answer) = oneshot::channel();
        let start_fetch = {
            let mut entries = self.entries.lock().expect("block cache lock");
            let entry = entries.entry(key.clone()).or_default();
            entry.waiters.push_back(Waiter { count, reply });
            !std::mem::replace(&mut entry.fetching, true)
        };
        if start_fetch {
            tokio::spawn(self.prefetch(key, size, fetch));
        }
        answer.await.unwrap_or_else(|_| {
            Err(SeqError::new(
                ErrorCode::Server,
                "the block fetch serving this call was abandoned (runtime shutting down)",
            ))
        })
    }

    /// Fetches blocks for `key` until its waiters are served; the caller has set
    /// `fetching` (through [`BlockCache::try_take`] or [`BlockCache::reserve`]).
    pub async fn prefetch<F, Fut>(&'static self, key: K, size: i64, fetch: F)
    where
        F: Fn(i64) -> Fut + Send + 'static,
        Fut: Future<Output = SeqResult<IdRange>> + Send + 'static,
    {
        loop {
            let result = fetch(size).await;
            let mut entries = self.entries.lock().expect("block cache lock");
            let entry = entries.entry(key.clone()).or_default();
            match result {
                Ok(block) => {
                    entry.blocks.push_back(block);
                    while let Some(waiter) = entry.waiters.front() {
                        let Some(range) = entry.take(waiter.count) else {
                            break;
                        };
                        let waiter = entry.waiters.pop_front().expect("front exists");
                        let _ = waiter.reply.send(Ok(range));
                    }
                    if entry.waiters.is_empty() {
                        entry.fetching = false;
                        return;
                    }
                }
                Err(error) => {
                    for waiter in entry.waiters.drain(..) {
                        let _ = waiter.reply.send(Err(error.clone()));
                    }
                    entry.fetching = false;
                    return;
                }
            }
        }
    }

    /// Values reserved and not yet handed out for `key`.
    pub fn available(&self, key: &K) -> i64 {
        let entries = self.entries.lock().expect("block cache lock");
        entries.get(key).map_or(0, Entry::available)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use super::*;
    use crate::engine::test_support::{run, values_of, FakeCounter, Rng};

    fn leaked() -> &'static BlockCache<u32> {
        Box::leak(Box::default())
    }

    #[test]
    fn serves_from_blocks_with_few_round_trips_and_no_duplicate() {
        for seed in 1..=6u64 {
            let cache = leaked();
            let counter = Arc::new(FakeCounter::default());
            let results = run(async {
                let mut rng = Rng::new(seed);
                let mut tasks = Vec::new();
                for _ in 0..2_000 {
                    let count = 1 + rng.below(4) as i64;
                    let delay = rng.below(500);
                    let counter = counter.clone();
                    tasks.push(tokio::spawn(async move {
                        let fetch = move |total| counter.clone().fetch(total, delay);
                        (count, cache.reserve(1, count, 100, fetch).await)
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
        }
    }

    #[test]
    fn sequential_calls_ascend_and_prefetch_keeps_a_block_ready() {
        let cache = leaked();
        let counter = Arc::new(FakeCounter::default());
        let values = run(async {
            let mut out = Vec::new();
            for _ in 0..350 {
                let c = counter.clone();
                let r = cache
                    .reserve(2, 1, 100, move |t| c.clone().fetch(t, 100))
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
        let cache = leaked();
        assert!(cache.try_take(&3, 1, 10).is_none());
        let counter = Arc::new(FakeCounter::default());
        run(async {
            let c = counter.clone();
            let r = cache
                .reserve(3, 1, 10, move |t| c.clone().fetch(t, 0))
                .await;
            assert_eq!(r.unwrap(), IdRange { first: 1, last: 1 });
        });
        assert_eq!(cache.available(&3), 9);
        let mut prefetch_asked = false;
        for expected in 2..=10 {
            let taken = cache.try_take(&3, 1, 10).expect("served from the block");
            assert_eq!(taken.range.first, expected);
            prefetch_asked |= taken.prefetch;
        }
        assert!(
            prefetch_asked,
            "a prefetch was asked for below half a block"
        );
        assert!(cache.try_take(&3, 1, 10).is_none());
    }

    #[test]
    fn a_failed_fetch_fails_the_waiters_and_the_next_call_retries() {
        let cache = leaked();
        let counter = Arc::new(FakeCounter::default());
        counter.fail_every.store(1, Ordering::SeqCst);
        run(async {
            let c = counter.clone();
            let e = cache
                .reserve(4, 1, 10, move |t| c.clone().fetch(t, 0))
                .await;
            assert_eq!(e.unwrap_err().server_code, Some(91));
            counter.fail_every.store(0, Ordering::SeqCst);
            let c = counter.clone();
            let r = cache
                .reserve(4, 1, 10, move |t| c.clone().fetch(t, 0))
                .await;
            assert_eq!(r.unwrap().first, 1);
        });
    }
}
