//! Merging concurrent reservations of one counter into one round trip.
//!
//! While a round trip for a counter is in flight, further calls for it queue up; when it
//! returns, one `$inc: <sum of their counts>` serves the whole queue and each caller gets
//! its own contiguous slice, in call order. One round trip per counter is in flight at a
//! time. A failed round trip fails exactly the callers it carried, with the same error.

use crate::engine::panic_safety::{lock, OnEarlyStop};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::engine::alloc::demand::Demand;
use crate::engine::alloc::live::LiveToken;
use crate::engine::alloc::waiter::Waiter;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::panic_safety::caught;
use crate::engine::text::validate::MAX_RANGE_COUNT;

/// The answer to each demand of one round trip, or the error that failed all of them.
pub type Grants = SeqResult<Vec<SeqResult<IdRange>>>;

/// Queues of waiting calls, one per counter key; a key is present while a round trip for
/// it is in flight.
pub struct Coalescer<K> {
    lanes: Mutex<HashMap<K, VecDeque<Waiter>>>,
    /// Tests only: notified whenever a key is released (its round trips are over).
    #[cfg(test)]
    released: tokio::sync::Notify,
    _live: LiveToken,
}

impl<K> Default for Coalescer<K> {
    fn default() -> Self {
        Coalescer::tracked(LiveToken::default())
    }
}

impl<K> Coalescer<K> {
    /// An empty coalescer, counted by `live` while it exists.
    pub fn tracked(live: LiveToken) -> Self {
        Coalescer {
            lanes: Mutex::new(HashMap::new()),
            #[cfg(test)]
            released: tokio::sync::Notify::new(),
            _live: live,
        }
    }
}

impl<K: Eq + Hash + Clone + Send + 'static> Coalescer<K> {
    /// Queues a call for `count` values of the counter `key`, at once (so calls are served
    /// in the order they were submitted), and returns where its values will arrive. When
    /// this call starts a round trip, the second element drives it and must be spawned.
    /// `fetch(demands)` serves the demands in one round trip; calls with equal keys must
    /// pass equivalent `fetch`es (same counter, same options), since whichever starts a
    /// round trip serves everybody queued behind it.
    pub fn submit<F, Fut>(
        self: &Arc<Self>,
        key: K,
        count: i64,
        fetch: F,
    ) -> (
        oneshot::Receiver<SeqResult<IdRange>>,
        Option<impl Future<Output = ()> + Send + 'static>,
    )
    where
        F: Fn(Vec<Demand>) -> Fut + Send + 'static,
        Fut: Future<Output = Grants> + Send + 'static,
    {
        let (waiter, answer) = Waiter::new(count);
        let starts_round_trip = {
            let mut lanes = lock(&self.lanes);
            match lanes.get_mut(&key) {
                Some(queue) => {
                    queue.push_back(waiter);
                    false
                }
                None => {
                    lanes.insert(key.clone(), VecDeque::from([waiter]));
                    true
                }
            }
        };
        let driver = starts_round_trip.then(|| {
            // Armed before the driver is first polled: a driver dropped unstarted still
            // ends the lane's round trips.
            let (coalescer, stopped) = (self.clone(), key.clone());
            let release = OnEarlyStop::new(move || coalescer.fail_lane(&stopped));
            self.clone().drive(key, fetch, release)
        });
        (answer, driver)
    }

    /// Serves the queue of `key` one round trip at a time until it is empty; `release`
    /// fails the lane if it stops early.
    async fn drive<F, Fut>(
        self: Arc<Self>,
        key: K,
        fetch: F,
        release: OnEarlyStop<impl FnOnce() + Send>,
    ) where
        F: Fn(Vec<Demand>) -> Fut + Send + 'static,
        Fut: Future<Output = Grants> + Send + 'static,
    {
        while let Some(batch) = self.next_batch(&key) {
            let demands = batch.iter().map(|w| Demand::Exact(w.count)).collect();
            let result = caught("merged round trip", fetch(demands)).await;
            let unreachable = match &result {
                Err(error) if error.code == ErrorCode::Connection => Some(error.clone()),
                _ => None,
            };
            // No server (or no connection) for this round trip: the calls queued behind it
            // fail with it instead of waiting for a round trip of their own. Taken out
            // before its own callers are answered: a call made after one of them saw the
            // error was not queued behind it, and gets a round trip of its own.
            let queued = match &unreachable {
                Some(_) => self.take_queued(&key),
                None => Vec::new(),
            };
            hand_out(batch, result);
            if let Some(error) = unreachable {
                for waiter in queued {
                    waiter.answer(Err(error.clone()));
                }
            }
        }
        // `next_batch` released the lane: a later call may already have started another
        // one under the same key, which the release must not touch.
        release.disarm();
    }

    /// Takes the waiting calls whose counts add up to at most [`MAX_RANGE_COUNT`] (at least
    /// one); `None`, and the key is released, when nobody waits.
    fn next_batch(&self, key: &K) -> Option<Vec<Waiter>> {
        let mut lanes = lock(&self.lanes);
        let queue = lanes.get_mut(key)?;
        // Calls that gave up (their deadline passed, their client closed) take no values.
        queue.retain(|waiter| !waiter.reply.is_closed());
        if queue.is_empty() {
            lanes.remove(key);
            #[cfg(test)]
            self.released.notify_waiters();
            return None;
        }
        let mut batch = Vec::new();
        let mut total = 0;
        while let Some(next) = queue.front() {
            if !batch.is_empty() && total + next.count > MAX_RANGE_COUNT {
                break;
            }
            total += next.count;
            batch.extend(queue.pop_front());
        }
        Some(batch)
    }

    /// Takes out every call queued for `key`.
    fn take_queued(&self, key: &K) -> Vec<Waiter> {
        lock(&self.lanes)
            .get_mut(key)
            .map(|queue| queue.drain(..).collect())
            .unwrap_or_default()
    }

    /// Ends the lane of `key` whose driver stopped before emptying it (a panic outside
    /// the round trip, or the runtime dropping the task): its waiting calls fail with
    /// `INTERNAL`, and later calls start a new round trip.
    fn fail_lane(&self, key: &K) {
        let queue = lock(&self.lanes).remove(key);
        #[cfg(test)]
        self.released.notify_waiters();
        for waiter in queue.into_iter().flatten() {
            waiter.answer(Err(SeqError::internal("merged round trip")));
        }
    }

    /// Number of counters with a round trip in flight.
    pub fn in_flight(&self) -> usize {
        lock(&self.lanes).len()
    }

    /// Waits until no round trip is in flight, woken as keys are released.
    #[cfg(test)]
    pub async fn until_none_in_flight(&self) {
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            released.await;
        }
    }
}

/// Gives each caller its own result, in queue order, or each the round trip's error.
fn hand_out(batch: Vec<Waiter>, result: Grants) {
    match result {
        Ok(grants) => {
            // A caller that went away simply drops its slice (a gap, never a duplicate).
            for (waiter, grant) in batch.into_iter().zip(grants) {
                waiter.answer(grant);
            }
        }
        Err(error) => {
            for waiter in batch {
                waiter.answer(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use super::*;
    use crate::engine::alloc::waiter::receive;
    use crate::engine::test_support::{by_total, gated, run, values_of, FakeCounter, Gate, Rng};

    fn leaked() -> &'static Arc<Coalescer<u32>> {
        Box::leak(Box::default())
    }

    impl Coalescer<u32> {
        /// Submits, drives and awaits one call, fetching by totals.
        async fn reserve<F, Fut>(
            self: &Arc<Self>,
            key: u32,
            count: i64,
            fetch: F,
        ) -> SeqResult<IdRange>
        where
            F: Fn(i64) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = SeqResult<IdRange>> + Send + 'static,
        {
            let (answer, driver) = self.submit(key, count, by_total(fetch));
            if let Some(driver) = driver {
                tokio::spawn(driver);
            }
            crate::engine::alloc::waiter::receive(answer).await
        }
    }

    #[test]
    fn concurrent_calls_share_round_trips_without_gap_or_duplicate() {
        for seed in 1..=8u64 {
            let coalescer = leaked();
            let counter = Arc::new(FakeCounter::default());
            let results = run(async {
                let mut rng = Rng::new(seed);
                let mut tasks = Vec::new();
                for _ in 0..400 {
                    let count = 1 + rng.below(5) as i64;
                    let delay = rng.below(300);
                    let counter = counter.clone();
                    tasks.push(tokio::spawn(async move {
                        let fetch = move |total| counter.clone().fetch(total, delay);
                        (count, coalescer.reserve(7, count, fetch).await)
                    }));
                    if rng.below(4) == 0 {
                        tokio::task::yield_now().await;
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
            let expected: Vec<i64> = (1..=counter.value()).collect();
            assert_eq!(all, expected, "seed {seed}: gapless and duplicate-free");
            let trips = counter.round_trips.load(Ordering::SeqCst);
            assert!(
                trips < 400,
                "seed {seed}: {trips} round trips were not merged"
            );
            assert_eq!(coalescer.in_flight(), 0);
        }
    }

    #[test]
    fn a_panicking_round_trip_fails_only_its_calls_and_ends_the_lane() {
        let coalescer = leaked();
        let counter = Arc::new(FakeCounter::default());
        counter.panic_on.store(1, Ordering::SeqCst);
        let gate = Gate::default();
        let fetch = gated(&counter, &gate);
        let (first, queued, later) = run(async {
            let (first, driver) = coalescer.submit(3, 1, by_total(fetch.clone()));
            tokio::spawn(driver.expect("the first call drives"));
            // The round trip that panics is under way, held at the gate: these calls
            // queue behind it, however slowly a loaded machine runs the test.
            gate.reached(1).await;
            let queued: Vec<_> = (0..3)
                .map(|_| {
                    let (answer, driver) = coalescer.submit(3, 2, by_total(fetch.clone()));
                    assert!(driver.is_none(), "queued behind the round trip in flight");
                    answer
                })
                .collect();
            gate.open();
            let first = receive(first).await;
            let queued = futures_util::future::join_all(queued.into_iter().map(receive)).await;
            let c = counter.clone();
            let later = coalescer
                .reserve(3, 1, move |t| c.clone().fetch(t, 0))
                .await;
            (first, queued, later)
        });
        assert_eq!(
            first.unwrap_err().code,
            crate::engine::error::ErrorCode::Internal
        );
        let slices: Vec<(i64, i64)> = queued
            .into_iter()
            .map(|r| r.map(|r| (r.first, r.last)).unwrap())
            .collect();
        assert_eq!(
            slices,
            vec![(1, 2), (3, 4), (5, 6)],
            "each queued call got its own two values; the panic consumed nothing"
        );
        assert_eq!(later.unwrap().first, 7);
        assert_eq!(coalescer.in_flight(), 0);
    }

    /// After a round trip that never completed: its call `answer` failed with `INTERNAL`,
    /// the lane is free, and the next call on `key` starts at 1 (nothing was consumed).
    async fn failed_internal_then_lane_ended(
        coalescer: &'static Arc<Coalescer<u32>>,
        counter: &Arc<FakeCounter>,
        key: u32,
        answer: tokio::sync::oneshot::Receiver<SeqResult<IdRange>>,
    ) {
        let limit = std::time::Duration::from_secs(5);
        let got = tokio::time::timeout(limit, crate::engine::alloc::waiter::receive(answer)).await;
        let error = got.expect("the call was answered").unwrap_err();
        assert_eq!(error.code, crate::engine::error::ErrorCode::Internal);
        assert_eq!(coalescer.in_flight(), 0, "the lane is free");
        let c = counter.clone();
        let next = coalescer.reserve(key, 1, move |t| c.clone().fetch(t, 0));
        let r = tokio::time::timeout(limit, next).await.expect("served");
        assert_eq!(
            r.unwrap().first,
            1,
            "the dropped round trip consumed nothing"
        );
    }

    #[test]
    fn a_driver_dropped_midway_fails_its_calls_and_ends_the_lane() {
        let coalescer = leaked();
        let counter = Arc::new(FakeCounter::default());
        // Never opened: the round trip stays under way until the driver is dropped.
        let gate = Gate::default();
        run(async {
            let (answer, driver) = coalescer.submit(5, 1, by_total(gated(&counter, &gate)));
            let task = tokio::spawn(driver.expect("the first call drives"));
            gate.reached(1).await;
            task.abort();
            let _ = task.await;
            failed_internal_then_lane_ended(coalescer, &counter, 5, answer).await;
        });
    }

    #[test]
    fn a_driver_dropped_before_it_ran_fails_its_calls_and_ends_the_lane() {
        // A runtime shutting down drops spawned tasks without polling them: the lane
        // must not stay taken by a round trip that never starts.
        let coalescer = leaked();
        let counter = Arc::new(FakeCounter::default());
        run(async {
            let c = counter.clone();
            let fetch = by_total(move |t| c.clone().fetch(t, 0));
            let (answer, driver) = coalescer.submit(6, 1, fetch);
            drop(driver.expect("the first call drives"));
            failed_internal_then_lane_ended(coalescer, &counter, 6, answer).await;
        });
    }

    #[test]
    fn slices_follow_call_order() {
        let coalescer = leaked();
        let counter = Arc::new(FakeCounter::default());
        let gate = Gate::default();
        let fetch = gated(&counter, &gate);
        let ranges = run(async {
            // The first call starts a round trip, held at the gate; the next three queue
            // behind it, in call order.
            let (first, driver) = coalescer.submit(1, 1, by_total(fetch.clone()));
            tokio::spawn(driver.expect("the first call drives"));
            gate.reached(1).await;
            let queued: Vec<_> = [3, 1, 2]
                .into_iter()
                .map(|count| {
                    let (answer, driver) = coalescer.submit(1, count, by_total(fetch.clone()));
                    assert!(driver.is_none(), "queued behind the round trip in flight");
                    answer
                })
                .collect();
            gate.open();
            let first = receive(first).await;
            let queued = futures_util::future::join_all(queued.into_iter().map(receive)).await;
            (first, queued)
        });
        assert_eq!(ranges.0.unwrap(), IdRange::contiguous(1, 1));
        let slices: Vec<(i64, i64)> = ranges
            .1
            .into_iter()
            .map(|r| r.map(|r| (r.first, r.last)).unwrap())
            .collect();
        assert_eq!(slices, vec![(2, 4), (5, 5), (6, 7)]);
        assert_eq!(counter.round_trips.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_round_trip_fails_exactly_its_callers() {
        for seed in 1..=4u64 {
            let coalescer = leaked();
            let counter = Arc::new(FakeCounter::default());
            counter.fail_every.store(2, Ordering::SeqCst);
            let results = run(async {
                let mut rng = Rng::new(seed);
                let mut tasks = Vec::new();
                for _ in 0..300 {
                    let count = 1 + rng.below(3) as i64;
                    let delay = rng.below(200);
                    let counter = counter.clone();
                    tasks.push(tokio::spawn(async move {
                        let fetch = move |total| counter.clone().fetch(total, delay);
                        (count, coalescer.reserve(9, count, fetch).await)
                    }));
                    if rng.below(10) == 0 {
                        tokio::time::sleep(std::time::Duration::from_micros(300)).await;
                    }
                }
                let mut out = Vec::new();
                for t in tasks {
                    out.push(t.await.unwrap());
                }
                out
            });
            let failed = results.iter().filter(|(_, r)| r.is_err()).count();
            assert!(failed > 0, "seed {seed}: failures were injected");
            for (_, r) in &results {
                if let Err(e) = r {
                    assert_eq!(e.server_code, Some(91));
                }
            }
            let ok: Vec<(i64, IdRange)> = results
                .into_iter()
                .filter_map(|(c, r)| r.ok().map(|r| (c, r)))
                .collect();
            let all = values_of(&ok);
            let expected: Vec<i64> = (1..=counter.value()).collect();
            assert_eq!(all, expected, "seed {seed}: failures consumed nothing");
        }
    }

    /// A call made once an earlier call has seen its round trip fail for want of a server
    /// was not queued behind that round trip: it gets one of its own, not the old error
    /// (the CI failure "a waited for server selection: 0 ms", where the lane was still
    /// draining when the next call arrived).
    #[test]
    fn a_call_made_after_a_failure_was_seen_gets_a_round_trip_of_its_own() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let coalescer = leaked();
        let mut inherited = 0;
        for key in 0..400u32 {
            let failed_once = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let fetch = move |demands: Vec<Demand>| {
                let failed_once = failed_once.clone();
                async move {
                    if failed_once.swap(true, Ordering::SeqCst) {
                        Ok(demands
                            .iter()
                            .map(|_| Ok(IdRange::contiguous(1, 1)))
                            .collect())
                    } else {
                        Err(SeqError::new(ErrorCode::Connection, "no server"))
                    }
                }
            };
            let (mut first, driver) = coalescer.submit(key, 1, fetch.clone());
            runtime.spawn(driver.unwrap());
            // Seen on this thread the moment it is answered; the next call is made at once.
            let seen = loop {
                match first.try_recv() {
                    Ok(outcome) => break outcome,
                    Err(_) => std::hint::spin_loop(),
                }
            };
            assert_eq!(seen.unwrap_err().code, ErrorCode::Connection);
            let (second, driver) = coalescer.submit(key, 1, fetch);
            if let Some(driver) = driver {
                runtime.spawn(driver);
            }
            let outcome = runtime.block_on(crate::engine::alloc::waiter::receive(second));
            if outcome.is_err() {
                inherited += 1;
            }
        }
        assert_eq!(
            inherited, 0,
            "calls that inherited an earlier call's failure"
        );
    }

    #[test]
    fn calls_queued_behind_a_round_trip_that_found_no_server_fail_with_it() {
        let coalescer = leaked();
        let trips = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // The round trip finds no server only once the test has queued calls behind it,
        // however slowly a loaded machine runs the test.
        let (answer_now, answer) = tokio::sync::watch::channel(false);
        let fetch = {
            let trips = trips.clone();
            move |_demands: Vec<Demand>| {
                let (trips, mut answer) = (trips.clone(), answer.clone());
                async move {
                    trips.fetch_add(1, Ordering::SeqCst);
                    let _ = answer.wait_for(|now| *now).await;
                    Err(SeqError::new(ErrorCode::Connection, "no server"))
                }
            }
        };
        let (first, queued) = run(async {
            let (first, driver) = coalescer.submit(5, 1, fetch.clone());
            tokio::spawn(driver.unwrap());
            while trips.load(Ordering::SeqCst) == 0 {
                tokio::task::yield_now().await;
            }
            let queued: Vec<_> = (0..4)
                .map(|_| {
                    let (answer, driver) = coalescer.submit(5, 1, fetch.clone());
                    assert!(driver.is_none(), "queued behind the round trip in flight");
                    answer
                })
                .collect();
            answer_now.send_replace(true);
            let first = crate::engine::alloc::waiter::receive(first).await;
            let queued = futures_util::future::join_all(
                queued
                    .into_iter()
                    .map(crate::engine::alloc::waiter::receive),
            )
            .await;
            (first, queued)
        });
        assert_eq!(first.unwrap_err().code, ErrorCode::Connection);
        // Not queued for a round trip of their own: they were answered with the first's
        // error, and no second round trip ran.
        for outcome in queued {
            assert_eq!(outcome.unwrap_err().code, ErrorCode::Connection);
        }
        assert_eq!(trips.load(Ordering::SeqCst), 1, "no second round trip");
        assert_eq!(coalescer.in_flight(), 0);
    }

    #[test]
    fn calls_that_gave_up_while_queued_take_no_values() {
        let coalescer = leaked();
        let counter = Arc::new(FakeCounter::default());
        let gate = Gate::default();
        let fetch = gated(&counter, &gate);
        let (first, kept) = run(async {
            let (first, driver) = coalescer.submit(8, 1, by_total(fetch.clone()));
            tokio::spawn(driver.unwrap());
            // The first round trip is under way, held at the gate: these calls queue.
            gate.reached(1).await;
            let mut kept = Vec::new();
            for n in 0..6 {
                let (answer, driver) = coalescer.submit(8, 10, by_total(fetch.clone()));
                assert!(driver.is_none(), "queued behind the round trip in flight");
                if n % 2 == 0 {
                    kept.push(answer);
                } // the others give up: their receivers are dropped
            }
            gate.open();
            let first = crate::engine::alloc::waiter::receive(first).await;
            let kept = futures_util::future::join_all(
                kept.into_iter().map(crate::engine::alloc::waiter::receive),
            )
            .await;
            (first, kept)
        });
        assert_eq!(first.unwrap().first, 1);
        let firsts: Vec<i64> = kept.into_iter().map(|r| r.unwrap().first).collect();
        assert_eq!(
            firsts,
            vec![2, 12, 22],
            "only the calls still waiting were served"
        );
        assert_eq!(counter.value(), 31);
    }

    #[test]
    fn one_round_trip_never_exceeds_the_range_limit() {
        let coalescer = leaked();
        let counter = Arc::new(FakeCounter::default());
        let big = MAX_RANGE_COUNT / 2 + 1;
        let gate = Gate::default();
        let fetch = gated(&counter, &gate);
        run(async {
            let (first, driver) = coalescer.submit(3, big, by_total(fetch.clone()));
            tokio::spawn(driver.expect("the first call drives"));
            // Two calls that together exceed the limit queue behind the round trip in
            // flight: whatever the timing, they would share the next one without it.
            gate.reached(1).await;
            let queued = (0..2).map(|_| {
                let (answer, driver) = coalescer.submit(3, big, by_total(fetch.clone()));
                assert!(driver.is_none(), "queued behind the round trip in flight");
                answer
            });
            let answers: Vec<_> = std::iter::once(first).chain(queued).collect();
            gate.open();
            for r in futures_util::future::join_all(answers.into_iter().map(receive)).await {
                assert_eq!(r.unwrap().count(), big);
            }
        });
        assert!(counter.largest.load(Ordering::SeqCst) <= MAX_RANGE_COUNT);
        assert_eq!(counter.round_trips.load(Ordering::SeqCst), 3);
    }
}
