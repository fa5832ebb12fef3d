use std::future::Future;
use std::sync::atomic::Ordering;

use super::give_back::give_back_tail;
use super::states::IDLE_STATES_KEPT;
use super::*;
use crate::engine::alloc::allocate::IdRange;
use crate::engine::error::SeqResult;
use crate::engine::stats::{self, Recorder};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize};
use std::sync::Weak;

use crate::engine::alloc::block_cache::tail_of;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::management;
use crate::engine::store::counter_store::{CounterStore, FetchToken};
use crate::engine::store::memory_store::MemoryStore;
use crate::engine::test_support::{route, run, Rng};
use std::collections::VecDeque;

fn lane() -> Lane {
    Lane {
        policy: CreatePolicy {
            upsert: true,
            start: 1,
        },
        write_concern: None,
    }
}

fn counter(name: &str) -> CounterRef {
    CounterRef::new("counters", "seq", CounterName::text(name).unwrap())
}

/// Bound on the live objects of a client once calls are over: at most twice
/// [`IDLE_STATES_KEPT`] kept states (half of them may hold cached values when a prune
/// leaves them), each with its call queue and one block cache, and room for the calls
/// still holding one. Independent of how many names were used.
const LIVE_BOUND: usize = 3 * (2 * IDLE_STATES_KEPT + 64);

#[test]
fn distinct_names_through_coalesced_and_cached_calls_stay_within_a_bound() {
    const NAMES: usize = 200_000;
    let states = Arc::new(CounterStates::<String>::default());
    let store = Arc::new(MemoryStore::default());
    let live = run(async {
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..32)
            .map(|_| {
                let (states, store, next) = (states.clone(), store.clone(), next.clone());
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= NAMES {
                            return;
                        }
                        let name = format!("tenant-{i}");
                        let mode = match i % 2 {
                            0 => Mode::Coalesce,
                            _ => Mode::Cached(10),
                        };
                        let state = states.get(&name);
                        let submitted =
                            state.submit(&route(&store, &counter(&name), &lane(), mode), 1);
                        drop(state);
                        let range = submitted.finish().await.unwrap();
                        assert_eq!(range.first, 1, "{name}: its own counter");
                        if i % 1024 == 0 {
                            let live = states.live();
                            assert!(live <= LIVE_BOUND, "{live} live objects after {i} names");
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.await.unwrap();
        }
        // Let spawned round trips and fills finish.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // One more call releases what the last prune could not.
        for i in 0..IDLE_STATES_KEPT + 1 {
            states.get(&format!("after-{i}"));
        }
        states.live()
    });
    assert!(live <= LIVE_BOUND, "{live} live per-counter objects");
    assert!(states.len() <= 2 * IDLE_STATES_KEPT, "{}", states.len());
}

/// Resident memory per distinct name (run by hand: `cargo test rss_per_distinct_name
/// -- --ignored --nocapture`): 100,000 names through coalesced, then cached calls.
#[test]
#[ignore]
fn rss_per_distinct_name() {
    fn rss() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }
    const NAMES: usize = 100_000;
    for mode in [Mode::Coalesce, Mode::Cached(10)] {
        let states = Arc::new(CounterStates::<String>::default());
        let store = Arc::new(MemoryStore::default());
        let round = |offset: usize| {
            let (states, store) = (states.clone(), store.clone());
            run(async move {
                for i in offset..offset + NAMES {
                    let name = format!("n-{i}");
                    let state = states.get(&name);
                    let call = state.submit(&route(&store, &counter(&name), &lane(), mode), 1);
                    drop(state);
                    call.finish().await.unwrap();
                }
            })
        };
        round(0);
        let before = rss();
        round(NAMES);
        let after = rss();
        // The in-memory store keeps one document per name: compare versions, not
        // absolute figures.
        let per_name = (after as f64 - before as f64) / NAMES as f64;
        println!(
            "{mode:?}: {per_name:.0} B per distinct name ({} live objects)",
            states.live()
        );
    }
}

/// Hot counters served concurrently in every mode, raised by `set` from time to time,
/// while calls on thousands of other names make the client prune: a counter never
/// has two live states, no value is handed out twice, and a call made after a `set`
/// resolved never gets a value from before it (what a second, stale state would
/// hand out).
#[test]
fn pruning_never_leaves_two_live_states_for_one_counter() {
    const HOT: usize = 6;
    for seed in 1..=3u64 {
        let states = Arc::new(CounterStates::<String>::default());
        let store = Arc::new(MemoryStore::default());
        let seen: Arc<Mutex<HashMap<String, Vec<Weak<CounterState>>>>> = Arc::default();
        let watermarks: Arc<Vec<AtomicI64>> = Arc::new((0..HOT).map(|_| 0.into()).collect());
        let done = Arc::new(AtomicBool::new(false));
        let values = run(async {
            let check = {
                let (seen, done) = (seen.clone(), done.clone());
                tokio::spawn(async move {
                    let mut checks = 0usize;
                    while !done.load(Ordering::SeqCst) || checks == 0 {
                        for (name, weaks) in lock(&seen).iter_mut() {
                            weaks.retain(|w| w.strong_count() > 0);
                            assert!(weaks.len() <= 1, "{name}: {} live states", weaks.len());
                        }
                        checks += 1;
                        tokio::task::yield_now().await;
                    }
                })
            };
            let hot_calls: Vec<_> = (0..12u64)
                .map(|task| {
                    let (states, store, seen, marks) = (
                        states.clone(),
                        store.clone(),
                        seen.clone(),
                        watermarks.clone(),
                    );
                    tokio::spawn(async move {
                        let mut rng = Rng::new(seed * 100 + task);
                        let mut got = Vec::new();
                        for _ in 0..1_500 {
                            let hot = rng.below(HOT as u64) as usize;
                            let name = format!("hot-{hot}");
                            let (mode, count) = match rng.below(3) {
                                0 => (Mode::Coalesce, 1 + rng.below(3) as i64),
                                1 => (Mode::Cached(4), 1 + rng.below(4) as i64),
                                _ => (Mode::Direct, 1),
                            };
                            let floor = marks[hot].load(Ordering::SeqCst);
                            let state = states.get(&name);
                            let weak = Arc::downgrade(&state);
                            {
                                let mut seen = lock(&seen);
                                let weaks = seen.entry(name.clone()).or_default();
                                if !weaks.iter().any(|w| w.ptr_eq(&weak)) {
                                    weaks.push(weak);
                                }
                            }
                            let submitted =
                                state.submit(&route(&store, &counter(&name), &lane(), mode), count);
                            drop(state);
                            let range = submitted.finish().await.unwrap();
                            assert!(
                                range.first > floor,
                                "{name}: {} handed out after a set to {floor}",
                                range.first
                            );
                            got.extend(range.values().map(|v| (hot, v)));
                            if rng.below(4) == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                        got
                    })
                })
                .collect();
            let setter = {
                let (states, store, marks, done) = (
                    states.clone(),
                    store.clone(),
                    watermarks.clone(),
                    done.clone(),
                );
                tokio::spawn(async move {
                    let mut rng = Rng::new(seed);
                    let mut round = 0i64;
                    while !done.load(Ordering::SeqCst) {
                        round += 1;
                        let hot = rng.below(HOT as u64) as usize;
                        let name = format!("hot-{hot}");
                        let raised = round * 10_000_000;
                        let state = states.get(&name);
                        state
                            .fenced(management::set(&*store, &counter(&name), raised, true))
                            .await
                            .unwrap();
                        drop(state);
                        marks[hot].store(raised, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_micros(300)).await;
                    }
                })
            };
            let churn: Vec<_> = (0..4)
                .map(|task| {
                    let (states, store) = (states.clone(), store.clone());
                    tokio::spawn(async move {
                        for i in 0..3_000 {
                            let name = format!("churn-{task}-{i}");
                            let mode = if i % 2 == 0 {
                                Mode::Coalesce
                            } else {
                                Mode::Cached(3)
                            };
                            let state = states.get(&name);
                            let submitted =
                                state.submit(&route(&store, &counter(&name), &lane(), mode), 1);
                            drop(state);
                            submitted.finish().await.unwrap();
                        }
                    })
                })
                .collect();
            let mut values = Vec::new();
            for task in hot_calls {
                values.extend(task.await.unwrap());
            }
            for task in churn {
                task.await.unwrap();
            }
            done.store(true, Ordering::SeqCst);
            setter.await.unwrap();
            check.await.unwrap();
            values
        });
        let mut sorted = values.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            values.len(),
            "seed {seed}: a value handed out twice"
        );
        let recreated: usize = lock(&seen).len();
        assert_eq!(recreated, HOT);
    }
}

/// Processes (each its own state) take cached values from one counter while some of
/// them close (give back) and restart, with calls of the closing process still in
/// flight, `set` moving the counter on and numbers given explicitly (raises that may
/// find the counter past them, inside a cached tail): no value is handed out twice, no
/// give-back puts the counter back below a number given, the counter never ends behind
/// a value handed out, and a lone process that closes and restarts continues right
/// after its last value.
#[test]
fn processes_racing_a_give_back_never_hand_out_a_value_twice() {
    for seed in 1..=8u64 {
        let store = Arc::new(MemoryStore::default());
        // Round trips of random latency on the worker threads: fills land at any
        // point of a give-back.
        store.max_spin_us.store(seed * 5, Ordering::SeqCst);
        let c = counter("raced");
        let highest_given = Arc::new(AtomicI64::new(0));
        let values = run(async {
            let workers: Vec<_> = (0..4u64)
                .map(|process| {
                    let (store, c) = (store.clone(), c.clone());
                    let highest_given = highest_given.clone();
                    tokio::spawn(async move {
                        let mut rng = Rng::new(seed * 10 + process);
                        let mut state = Arc::new(CounterState::default());
                        let mut got = Vec::new();
                        for _ in 0..300 {
                            let size = 1 + rng.below(9) as i64;
                            let count = 1 + rng.below(size as u64) as i64;
                            let calls: Vec<_> = (0..1 + rng.below(4))
                                .map(|_| {
                                    state.submit(
                                        &route(&store, &c, &lane(), Mode::Cached(size)),
                                        count,
                                    )
                                })
                                .collect();
                            let closing = rng.below(5) == 0;
                            let in_flight: Vec<_> = calls
                                .into_iter()
                                .map(|s| tokio::spawn(s.finish()))
                                .collect();
                            if rng.below(4) == 0 {
                                // A number given explicitly by another process (which
                                // discards none of this one's cache): the counter may be
                                // past it already, maybe inside a cached tail.
                                // At least 1, a value the counter hands out: a raise of a
                                // counter not created yet creates it at the number given,
                                // and one below 0 would put it under the floor of 0 that
                                // `highest_given` starts from (the counter may then end
                                // below 0 with no value given twice).
                                let given = (store_value(&store, &c) - rng.below(12) as i64).max(1);
                                management::raise_to(&*store, &c, given).await.unwrap();
                                highest_given.fetch_max(given, Ordering::SeqCst);
                            }
                            if closing {
                                let given = highest_given.load(Ordering::SeqCst);
                                let give_store = store.clone();
                                state.give_back(|_| give_store.clone()).await;
                                state = Arc::new(CounterState::default());
                                // Any process would hand out a number below the counter
                                // again: no give-back puts it back below one given.
                                let now = store_value(&store, &c);
                                assert!(now >= given, "seed {seed}: counter {now} below {given}");
                            }
                            for call in in_flight {
                                if let Ok(range) = call.await.unwrap() {
                                    got.extend(range.values());
                                }
                            }
                            if rng.below(50) == 0 {
                                // Moves the counter on, as another process's set may.
                                let floor = store_value(&store, &c) + 1_000;
                                state
                                    .fenced(management::raise_to(&*store, &c, floor))
                                    .await
                                    .unwrap();
                            }
                            if rng.below(3) == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                        let give_store = store.clone();
                        state.give_back(|_| give_store.clone()).await;
                        got
                    })
                })
                .collect();
            let mut all = Vec::new();
            for w in workers {
                all.extend(w.await.unwrap());
            }
            all
        });
        let mut sorted = values.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            values.len(),
            "seed {seed}: a value handed out twice"
        );
        let last = *sorted.last().unwrap();
        assert!(
            store_value(&store, &c) >= last,
            "seed {seed}: counter behind {last}"
        );
    }
    // Alone: close, restart, continue right after the last value, several times.
    let store = Arc::new(MemoryStore::default());
    let c = counter("alone");
    run(async {
        let mut expected = 1;
        for size in [5i64, 1, 7, 3, 100] {
            let state = Arc::new(CounterState::default());
            for _ in 0..(size + 2) {
                let range = state
                    .submit(&route(&store, &c, &lane(), Mode::Cached(size)), 1)
                    .finish()
                    .await
                    .unwrap();
                assert_eq!(range.first, expected, "continues where it stopped");
                expected += 1;
            }
            let give_store = store.clone();
            let outcome = state.give_back(|_| give_store.clone()).await;
            assert_eq!(outcome.abandoned, 0);
            assert_eq!(store_value(&store, &c), expected - 1);
        }
    });
}

/// One caller at a time takes cached values (each call awaited before the next, as
/// in `for (;;) await s.next()`) while the block fetches take random times on another
/// thread, so that fills land at every point of a call, also between finding the
/// cache empty and queueing: every value is the one after the last, up to the limit.
/// (The CI failure `…, 300, 301, 602, 302, …` was a call served by a fetch of its own
/// that reached the counter after the prefetch whose block it then skipped.)
#[test]
fn sequential_cached_calls_get_each_value_in_order_whenever_fills_land() {
    let mut failures = Vec::new();
    for seed in 1..=64u64 {
        let store = Arc::new(MemoryStore::default());
        let c = counter(&format!("sequential-{seed}"));
        let mut rng = Rng::new(seed);
        let size = 2 + rng.below(7) as i64;
        let max = 400 + rng.below(200) as i64;
        let config = SequenceConfig::new(1, Some(1), Some(max), false).unwrap();
        let bounded = seed % 2 == 0;
        if bounded {
            store.put_configured(&c, 0, config);
        }
        let limit = if bounded { max } else { 600 };
        store.max_spin_us.store(1 + rng.below(40), Ordering::SeqCst);
        let got = run(async {
            let state = Arc::new(CounterState::default());
            let mut got = Vec::new();
            // One more call than there are values: on a bounded counter it fails.
            while (got.len() as i64) <= limit {
                let call = state.submit(&route(&store, &c, &lane(), Mode::Cached(size)), 1);
                got.push(call.finish().await.map(|r| r.first).map_err(|e| e.code));
                for _ in 0..rng.below(3) {
                    tokio::task::yield_now().await;
                }
            }
            got
        });
        let mut expected: Vec<_> = (1..=limit).map(Ok).collect();
        expected.push(match bounded {
            true => Err(crate::engine::error::ErrorCode::SequenceExhausted),
            false => Ok(limit + 1),
        });
        if got != expected {
            let at = got.iter().zip(&expected).position(|(g, e)| g != e);
            let from = at.unwrap_or(0).saturating_sub(2);
            let around = &got[from..(from + 6).min(got.len())];
            failures.push(format!("seed {seed} (size {size}): at {at:?}, {around:?}"));
        }
    }
    assert!(failures.is_empty(), "out of order: {failures:#?}");
}

#[test]
fn calls_served_at_once_beside_submitted_ones_get_each_value_in_order() {
    let mut failures = Vec::new();
    for seed in 1..=64u64 {
        let store = Arc::new(MemoryStore::default());
        let c = counter(&format!("served-now-{seed}"));
        let mut rng = Rng::new(seed);
        let size = 1 + rng.below(6) as i64;
        store.max_spin_us.store(1 + rng.below(40), Ordering::SeqCst);
        let (mut got, at_once) = run(async {
            let state = Arc::new(CounterState::default());
            let mut route = route(&store, &c, &lane(), Mode::Cached(size));
            route.cache = Some(state.block_cache(&route.lane, &c, size));
            // (the call's place in the order of calls, its value)
            let (mut got, mut pending, mut at_once) = (Vec::new(), Vec::new(), 0);
            for place in 0..300 {
                // As the binding does: served at once when the cache can, else submitted;
                // some calls are left pending, so that later ones may find calls waiting.
                match state.submit_now(&route, 1) {
                    Some((range, background)) => {
                        spawn_background(background);
                        got.push((place, range.first));
                        at_once += 1;
                    }
                    None => {
                        let call = tokio::spawn(state.submit(&route, 1).finish());
                        pending.push((place, call));
                        if rng.below(3) != 0 {
                            for (place, call) in pending.drain(..) {
                                got.push((place, call.await.unwrap().unwrap().first));
                            }
                        }
                    }
                }
                for _ in 0..rng.below(3) {
                    tokio::task::yield_now().await;
                }
            }
            for (place, call) in pending {
                got.push((place, call.await.unwrap().unwrap().first));
            }
            (got, at_once)
        });
        got.sort();
        let values: Vec<i64> = got.into_iter().map(|(_, v)| v).collect();
        if values != (1..=300).collect::<Vec<_>>() || at_once == 0 {
            failures.push(format!(
                "seed {seed} (size {size}): {at_once} at once, {values:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "out of order: {failures:#?}");
}

#[test]
fn a_call_the_cache_cannot_serve_at_once_is_left_untouched() {
    run(async {
        let store = Arc::new(MemoryStore::default());
        let c = counter("not-now");
        let state = Arc::new(CounterState::default());
        let mut cached = route(&store, &c, &lane(), Mode::Cached(4));
        assert!(
            state.submit_now(&cached, 1).is_none(),
            "a route without its block cache"
        );
        cached.cache = Some(state.block_cache(&cached.lane, &c, 4));
        assert!(state.submit_now(&cached, 1).is_none(), "an empty cache");
        assert!(store.get(&c).is_none(), "no fetch was started");
        assert_eq!(state.submit(&cached, 1).finish().await.unwrap().first, 1);
        assert!(
            state.submit_now(&cached, 5).is_none(),
            "beyond the block size"
        );
        let (range, _) = state.submit_now(&cached, 3).expect("the rest of the block");
        assert_eq!((range.first, range.last), (2, 4));
        for mode in [Mode::Coalesce, Mode::Direct] {
            let other = route(&store, &c, &lane(), mode);
            assert!(state.submit_now(&other, 1).is_none(), "{mode:?}");
        }
    });
}

#[test]
fn a_give_back_counts_what_it_returns_and_what_it_abandons() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("counted");
    let cached = |state: &Arc<CounterState>| cached_call(state, &store, &c);
    run(async {
        let state = Arc::new(CounterState::default());
        assert_eq!(cached(&state).await.unwrap().first, 1);
        assert_eq!(cached(&state).await.unwrap().first, 2);
        state.drain_fetches().await;
        let reserved = store_value(&store, &c);
        let give = store.clone();
        let outcome = state.give_back(|_| give.clone()).await;
        let expected = GivenBack {
            returned: reserved - 2,
            abandoned: 0,
        };
        assert_eq!(outcome, expected);
        assert_eq!(store_value(&store, &c), 2);
        let state = Arc::new(CounterState::default());
        assert_eq!(cached(&state).await.unwrap().first, 3);
        state.drain_fetches().await;
        let reserved = store_value(&store, &c);
        // Another process moves the counter on.
        store.put(&c, Some(mongodb::bson::Bson::Int64(reserved + 100)));
        let give = store.clone();
        let outcome = state.give_back(|_| give.clone()).await;
        let expected = GivenBack {
            returned: 0,
            abandoned: reserved - 3,
        };
        assert_eq!(outcome, expected);
        assert_eq!(store_value(&store, &c), reserved + 100);
    });
    let sum = GivenBack {
        returned: 1,
        abandoned: 2,
    }
    .plus(GivenBack {
        returned: 3,
        abandoned: 5,
    });
    assert_eq!(
        sum,
        GivenBack {
            returned: 4,
            abandoned: 7
        }
    );
}

/// A number given explicitly inside a process's cached tail (another process's raise,
/// which moves nothing: the counter is past it) stops that tail's give-back, ascending
/// and descending; one given below the tail does not.
#[test]
fn a_raise_inside_a_cached_tail_stops_its_give_back() {
    let store = Arc::new(MemoryStore::default());
    run(async {
        // One call: 1 for the call, a block of 10 (2 ..= 11) in the cache.
        for (name, given, returned) in [
            ("inside", 5, false),
            ("at-end", 11, false),
            ("below", 1, true),
        ] {
            let c = counter(name);
            let state = Arc::new(CounterState::default());
            assert_eq!(cached_call(&state, &store, &c).await.unwrap().first, 1);
            state.drain_fetches().await;
            assert_eq!(store_value(&store, &c), 11, "{name}");
            // Another process: its raise leaves this process's cache alone.
            assert_eq!(management::raise_to(&*store, &c, given).await.unwrap(), 11);
            let give = store.clone();
            let outcome = state.give_back(|_| give.clone()).await;
            let (expected, value) = match returned {
                true => (
                    GivenBack {
                        returned: 10,
                        abandoned: 0,
                    },
                    1,
                ),
                false => (
                    GivenBack {
                        returned: 0,
                        abandoned: 10,
                    },
                    11,
                ),
            };
            assert_eq!(outcome, expected, "{name}");
            assert_eq!(store_value(&store, &c), value, "{name}");
        }
        // Descending: -1 for the call, a block of -2 ..= -11, a number given at -4.
        let c = counter("descending");
        let config = SequenceConfig::new(-1, Some(-1000), Some(0), false).unwrap();
        store.put_configured(&c, 0, config);
        let state = Arc::new(CounterState::default());
        assert_eq!(cached_call(&state, &store, &c).await.unwrap().first, -1);
        state.drain_fetches().await;
        assert_eq!(store_value(&store, &c), -11);
        assert_eq!(management::raise_to(&*store, &c, -4).await.unwrap(), -11);
        let give = store.clone();
        let outcome = state.give_back(|_| give.clone()).await;
        assert_eq!(
            outcome,
            GivenBack {
                returned: 0,
                abandoned: 10
            }
        );
        assert_eq!(store_value(&store, &c), -11);
        // A raise before the cache fetched leaves the next process's give-back alone.
        let state = Arc::new(CounterState::default());
        assert_eq!(cached_call(&state, &store, &c).await.unwrap().first, -12);
        state.drain_fetches().await;
        let give = store.clone();
        let outcome = state.give_back(|_| give.clone()).await;
        assert_eq!(
            outcome,
            GivenBack {
                returned: 10,
                abandoned: 0
            }
        );
        assert_eq!(store_value(&store, &c), -12);
    });
}

/// `set` and `reset` put the counter anywhere: numbers given before them stop holding
/// back the give-back of values fetched after them (a raise to 1000, a reset to 0,
/// then a cache's tail of 2 ..= 11 goes back).
#[test]
fn a_set_or_reset_clears_the_marks_of_numbers_given_before_it() {
    let store = Arc::new(MemoryStore::default());
    run(async {
        let c = counter("reset-after-raise");
        let first = Arc::new(CounterState::default());
        assert_eq!(cached_call(&first, &store, &c).await.unwrap().first, 1);
        first.drain_fetches().await;
        assert_eq!(management::raise_to(&*store, &c, 1000).await.unwrap(), 1000);
        drop(first);
        for put_back in ["reset", "set"] {
            match put_back {
                "reset" => assert_eq!(management::reset(&*store, &c, 1).await.unwrap(), 1),
                _ => management::set(&*store, &c, 0, false).await.unwrap(),
            }
            let fresh = Arc::new(CounterState::default());
            assert_eq!(cached_call(&fresh, &store, &c).await.unwrap().first, 1);
            fresh.drain_fetches().await;
            let give = store.clone();
            let outcome = fresh.give_back(|_| give.clone()).await;
            assert_eq!(
                outcome,
                GivenBack {
                    returned: 10,
                    abandoned: 0
                },
                "{put_back}"
            );
            assert_eq!(management::raise_to(&*store, &c, 1000).await.unwrap(), 1000);
        }
    });
}

/// One value of `c` through `state` without a cache (another process numbering).
async fn uncached_call(state: &Arc<CounterState>, store: &Arc<MemoryStore>, c: &CounterRef) -> i64 {
    let submitted = state.submit(&route(store, c, &lane(), Mode::Coalesce), 1);
    submitted.finish().await.unwrap().first
}

/// The late give-back of a process whose close timed out (its update still on its way)
/// after an operator's `reset` and another process's numbering without a cache, which
/// brought the counter back to the very value the give-back expects (ABA): the counter
/// holds the token of no fetch of that process any more, so nothing is returned and no
/// value comes twice.
#[test]
fn a_give_back_held_past_a_reset_and_uncached_numbering_to_its_value_returns_nothing() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("late-after-reset");
    run(async {
        let a = Arc::new(CounterState::default());
        assert_eq!(cached_call(&a, &store, &c).await.unwrap().first, 1);
        a.drain_fetches().await;
        assert_eq!(store_value(&store, &c), 11);
        let give = store.clone();
        let held = a.give_back_later(move |_| give.clone());
        let b = Arc::new(CounterState::default());
        b.fenced(management::reset(&*store, &c, 1)).await.unwrap();
        let mut handed = Vec::new();
        for _ in 0..11 {
            handed.push(uncached_call(&b, &store, &c).await);
        }
        assert_eq!(handed, (1..=11).collect::<Vec<_>>());
        assert_eq!(
            store_value(&store, &c),
            11,
            "the value the give-back expects"
        );
        let late = held.await;
        assert_eq!(
            late,
            GivenBack {
                returned: 0,
                abandoned: 10
            }
        );
        assert_eq!(store_value(&store, &c), 11, "not moved back under 2 ..= 11");
        assert_eq!(uncached_call(&b, &store, &c).await, 12, "no value twice");
    });
}

/// The same with the process's own fetch after the `reset`: its cache fetches 1 and a
/// block up to the same value again, which a held give-back of its previous block must
/// not undo (its tail would come twice, from its cache and from the counter); the
/// give-back of the new block, with the new token, still goes through.
#[test]
fn a_give_back_held_past_a_reset_and_the_processs_own_refetch_returns_nothing() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("late-after-refetch");
    run(async {
        let a = Arc::new(CounterState::default());
        assert_eq!(cached_call(&a, &store, &c).await.unwrap().first, 1);
        a.drain_fetches().await;
        let give = store.clone();
        let held = a.give_back_later(move |_| give.clone());
        let operator = Arc::new(CounterState::default());
        operator
            .fenced(management::reset(&*store, &c, 1))
            .await
            .unwrap();
        let mut handed = vec![cached_call(&a, &store, &c).await.unwrap().first];
        a.drain_fetches().await;
        assert_eq!(
            store_value(&store, &c),
            11,
            "the value the held give-back expects"
        );
        assert_eq!(held.await.returned, 0);
        assert_eq!(store_value(&store, &c), 11);
        for _ in 0..3 {
            handed.push(cached_call(&a, &store, &c).await.unwrap().first);
        }
        a.drain_fetches().await;
        let give = store.clone();
        let own = a.give_back(move |_| give.clone()).await;
        assert!(own.returned > 0, "{own:?}");
        handed.push(uncached_call(&operator, &store, &c).await);
        assert_eq!(
            handed,
            (1..=5).collect::<Vec<_>>(),
            "no value twice, none lost"
        );
    });
}

/// Every write that puts the counter anywhere removes the flag of the cache fetches
/// before it; a give-back needs the flag of its own fetch, so none computed before the
/// write applies after it.
#[test]
fn a_set_or_reset_removes_the_cache_flag() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("unflagged-by-writes");
    run(async {
        let state = Arc::new(CounterState::default());
        for write in ["set", "reset"] {
            cached_call(&state, &store, &c).await.unwrap();
            state.drain_fetches().await;
            assert!(store.is_flagged(&c), "{write}: flagged by the fetch");
            match write {
                "set" => state
                    .fenced(management::set(&*store, &c, 20, false))
                    .await
                    .unwrap(),
                _ => {
                    state
                        .fenced(management::reset(&*store, &c, 1))
                        .await
                        .unwrap();
                }
            }
            assert!(!store.is_flagged(&c), "{write} removes the flag");
        }
        // A raise and a fetch without a cache leave the flag as it is.
        cached_call(&state, &store, &c).await.unwrap();
        state.drain_fetches().await;
        uncached_call(&state, &store, &c).await;
        management::raise_to(&*store, &c, 100).await.unwrap();
        assert!(store.is_flagged(&c));
    });
}

/// A counter never fetched into a cache (an older release's cache, another tool) is
/// never given back to: nothing tells whether a raise found it past a number.
#[test]
fn only_a_counter_flagged_by_a_cache_fetch_is_given_back_to() {
    let store = MemoryStore::default();
    let c = counter("unflagged");
    let tail = IdRange {
        first: 2,
        last: 10,
        step: 1,
    };
    let token = FetchToken::fresh();
    run(async {
        store.put(&c, Some(mongodb::bson::Bson::Int64(10)));
        assert!(!give_back_tail(&store, &c, None, tail, Some(token))
            .await
            .unwrap());
        assert_eq!(store_value(&store, &c), 10);
        // Flagged by a cache's fetch (0 → 10): given back, by the holder of its token.
        store.put(&c, Some(mongodb::bson::Bson::Int64(0)));
        let cached = c.clone().through_cache(token);
        store.increment_integer(&cached, 10, false).await.unwrap();
        for other in [None, Some(FetchToken::fresh())] {
            assert!(!give_back_tail(&store, &c, None, tail, other).await.unwrap());
        }
        assert!(give_back_tail(&store, &c, None, tail, Some(token))
            .await
            .unwrap());
        assert_eq!(store_value(&store, &c), 1);
    });
}

#[test]
fn a_give_back_cut_short_counts_its_tail_as_abandoned_never_as_returned() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("cut-short");
    let cached = |state: &Arc<CounterState>| cached_call(state, &store, &c);
    run(async {
        let state = Arc::new(CounterState::default());
        assert_eq!(cached(&state).await.unwrap().first, 1);
        assert_eq!(cached(&state).await.unwrap().first, 2);
        state.drain_fetches().await;
        let reserved = store_value(&store, &c);
        assert!(reserved > 2);
        // The server stops answering: the update never returns, and a close's time
        // limit drops the give-back in the middle of it.
        store.stall_give_back.store(true, Ordering::SeqCst);
        let before = stats::PROCESS.snapshot();
        let give = store.clone();
        let giving = state.give_back(|_| give.clone());
        let cut = tokio::time::timeout(std::time::Duration::from_millis(50), giving).await;
        assert!(cut.is_err(), "the give-back was cut short");
        let after = stats::PROCESS.snapshot();
        // Other tests count too: only increases of at least these can be asserted.
        assert!(
            after.discarded_at_close >= before.discarded_at_close + (reserved - 2) as u64,
            "the tail counts as abandoned"
        );
        assert_eq!(store_value(&store, &c), reserved, "nothing was written");
        assert_eq!(state.abandon_cached(), 0, "the tail had left the cache");
        store.stall_give_back.store(false, Ordering::SeqCst);
        let next = cached(&state).await.unwrap().first;
        assert_eq!(next, reserved + 1, "never handed out here again");
    });
}

#[test]
fn abandoning_the_cache_counts_every_value_and_serves_none_of_them() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("abandoned");
    let cached = |state: &Arc<CounterState>| cached_call(state, &store, &c);
    run(async {
        let state = Arc::new(CounterState::default());
        assert_eq!(cached(&state).await.unwrap().first, 1);
        state.drain_fetches().await;
        let reserved = store_value(&store, &c);
        let before = stats::PROCESS.snapshot();
        assert_eq!(state.abandon_cached(), reserved - 1);
        let after = stats::PROCESS.snapshot();
        assert!(after.discarded_at_close >= before.discarded_at_close + (reserved - 1) as u64);
        assert_eq!(state.abandon_cached(), 0, "once");
        assert_eq!(cached(&state).await.unwrap().first, reserved + 1);
    });
}

#[test]
fn abandoning_the_cache_counts_older_blocks_besides_the_tail() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("abandoned-blocks");
    let cached = |state: &Arc<CounterState>| cached_call(state, &store, &c);
    run(async {
        let state = Arc::new(CounterState::default());
        assert_eq!(cached(&state).await.unwrap().first, 1);
        state.drain_fetches().await;
        // Another process moves the counter on: the next fill does not adjoin.
        let moved = store_value(&store, &c) + 100;
        store.put(&c, Some(mongodb::bson::Bson::Int64(moved)));
        // Take values until a fill comes due and lands (after the move). Not "until
        // the state is in use": the first fill's task may still hold the cache for a
        // moment after it finished, which looks the same.
        while store_value(&store, &c) <= moved {
            cached(&state).await.unwrap();
            state.drain_fetches().await;
        }
        let held: i64 = lock(&state.caches).values().map(|s| s.available()).sum();
        assert!(
            store_value(&store, &c) > moved,
            "a fill came after the move"
        );
        assert_eq!(state.abandon_cached(), held, "the tail and the older block");
    });
}

/// A state with a block fetch under way that never lands (its future held, never run).
fn stuck_fetching(name: &str) -> (Arc<CounterState>, impl Future<Output = ()>) {
    use crate::engine::alloc::coalesce::Grants;
    let state = Arc::new(CounterState::default());
    let cache = Arc::new(BlockCache::new(10, Default::default()));
    lock(&state.caches).insert((lane(), counter(name), 10), cache.clone());
    let (_answer, fetch) = cache.enqueue(1, |_, _| std::future::pending::<Grants>());
    assert!(cache.is_fetching());
    (state, fetch.expect("the first call fetches"))
}

#[test]
fn past_the_shared_deadline_a_drain_does_not_wait_for_fetches_under_way() {
    use futures_util::FutureExt;
    use std::time::Duration;
    use tokio::time::Instant;
    run(async {
        let (first, _first_fetch) = stuck_fetching("drain-first");
        let (second, _second_fetch) = stuck_fetching("drain-second");
        // Before the deadline, a fetch under way is waited for.
        let ahead = Instant::now() + Duration::from_secs(60);
        assert!(first.drain_fetches_by(ahead).now_or_never().is_none());
        // A management write fencing several states computes one deadline: once it has
        // passed (the first state took it all), the next state is not waited for at
        // all, with no bound of its own.
        let passed = Instant::now() - Duration::from_millis(1);
        assert!(first.drain_fetches_by(passed).now_or_never().is_some());
        assert!(second.drain_fetches_by(passed).now_or_never().is_some());
    });
}

/// A drain waits for every fetch of the state, one cache after another, and is woken
/// when the last one ends: not polled, and not at its deadline.
#[test]
fn a_drain_is_woken_when_the_last_fetch_ends() {
    use crate::engine::alloc::coalesce::Grants;
    use std::time::Duration;
    run(async {
        let state = Arc::new(CounterState::default());
        let mut releases = Vec::new();
        for name in ["drain-a", "drain-b"] {
            let cache = Arc::new(BlockCache::new(10, Default::default()));
            lock(&state.caches).insert((lane(), counter(name), 10), cache.clone());
            let (release, released) = tokio::sync::oneshot::channel::<()>();
            let released = Arc::new(std::sync::Mutex::new(Some(released)));
            let (_answer, fetch) = cache.enqueue(1, move |_, _| {
                let released = released.lock().unwrap().take();
                async move {
                    if let Some(released) = released {
                        let _ = released.await;
                    }
                    let failed: Grants = Err(crate::engine::error::SeqError::internal("released"));
                    failed
                }
            });
            tokio::spawn(fetch.expect("the first call fetches"));
            releases.push(release);
        }
        // Far beyond the test's own bound: only a wake-up ends the drain in time.
        let far = tokio::time::Instant::now() + Duration::from_secs(600);
        let draining = {
            let state = state.clone();
            tokio::spawn(async move { state.drain_fetches_by(far).await })
        };
        let second = releases.pop().unwrap();
        releases.pop().unwrap().send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!draining.is_finished(), "one fetch is still in flight");
        second.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), draining)
            .await
            .expect("woken when the last fetch ended")
            .unwrap();
        assert!(state.nothing_in_flight());
    });
}

#[test]
fn round_trips_are_recorded_with_their_calls_and_fills() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("recorded");
    let stats = Arc::new(crate::engine::stats::Stats::default());
    let recorder = Recorder::new(Some(stats.clone()));
    run(async {
        let state = Arc::new(CounterState::default());
        let recorded = |mode| Route {
            recorder: recorder.clone(),
            ..route(&store, &c, &lane(), mode)
        };
        state
            .submit(&recorded(Mode::Direct), 3)
            .finish()
            .await
            .unwrap();
        state
            .submit(&recorded(Mode::Cached(5)), 1)
            .finish()
            .await
            .unwrap();
    });
    let s = stats.snapshot();
    assert_eq!(s.round_trips, 2);
    assert_eq!(s.merged_calls, 2, "one call each");
    assert_eq!(s.blocks_fetched, 1, "the cached call's fill");
    assert!(s.latency_max_us > 0 || s.latency_p50_us == 0);
}

/// A `coalesce: false` call starts its round trip as soon as it is submitted, as the
/// default path does, not when its outcome is first polled: the binding spawns the
/// background work before it creates the promise, so the request leaves without
/// waiting for the promise's setup on the JavaScript thread. Concurrent direct calls
/// still get distinct values, each its own contiguous range.
#[test]
fn a_direct_call_starts_its_round_trip_before_its_outcome_is_awaited() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("direct-at-once");
    run(async {
        let state = Arc::new(CounterState::default());
        let Submitted {
            outcome,
            background,
        } = state.submit(&route(&store, &c, &lane(), Mode::Direct), 3);
        // The round trip runs to its end with the outcome never polled.
        background
            .expect("a direct call starts its round trip")
            .await;
        assert_eq!(store_value(&store, &c), 3);
        let Outcome::Later(pending) = outcome else {
            panic!("a direct call is served by a round trip");
        };
        let range = pending.await.unwrap();
        assert_eq!((range.first, range.last), (1, 3));

        // Many at once, through `finish` (the path of calls awaited on the runtime):
        // distinct contiguous ranges that together cover the counter exactly.
        let trips_before = store.round_trips.load(Ordering::SeqCst);
        let calls: Vec<_> = (1..=40i64)
            .map(|count| {
                let submitted = state.submit(&route(&store, &c, &lane(), Mode::Direct), count);
                tokio::spawn(async move { (count, submitted.finish().await.unwrap()) })
            })
            .collect();
        let mut ranges = Vec::new();
        for call in calls {
            let (count, range) = call.await.unwrap();
            assert_eq!(range.count(), count);
            assert_eq!(range.last - range.first + 1, count);
            ranges.push((range.first, range.last));
        }
        ranges.sort();
        let mut next = 4;
        for (first, last) in ranges {
            assert_eq!(first, next, "no value twice, none skipped");
            next = last + 1;
        }
        assert_eq!(next - 1, 3 + 40 * 41 / 2);
        assert_eq!(store_value(&store, &c), next - 1);
        // Each its own round trip: none merged with the calls made beside it.
        let trips = store.round_trips.load(Ordering::SeqCst) - trips_before;
        assert!(trips >= 40, "{trips} round trips for 40 direct calls");
    });
}

/// A failed direct round trip, now run as background work, fails exactly its call with
/// the server's error (not a lost answer), takes no values, and the next call works.
#[test]
fn a_failed_direct_round_trip_fails_its_call_with_the_error() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("direct-fails");
    run(async {
        let state = Arc::new(CounterState::default());
        store.fail_next.store(1, Ordering::SeqCst);
        let failed = state
            .submit(&route(&store, &c, &lane(), Mode::Direct), 2)
            .finish()
            .await
            .unwrap_err();
        assert_ne!(
            failed.code,
            crate::engine::error::ErrorCode::Internal,
            "{failed:?}"
        );
        let next = state
            .submit(&route(&store, &c, &lane(), Mode::Direct), 2)
            .finish()
            .await
            .unwrap();
        assert_eq!((next.first, next.last), (1, 2));
    });
}

/// A direct call whose caller has given up (its outcome dropped: the deadline
/// passed, the client closed) does not start or finish its round trip, as when the
/// round trip ran inside the call.
#[test]
fn a_direct_round_trip_stops_when_its_caller_gives_up() {
    let store = Arc::new(MemoryStore::default());
    let c = counter("direct-given-up");
    run(async {
        let state = Arc::new(CounterState::default());
        let Submitted {
            outcome,
            background,
        } = state.submit(&route(&store, &c, &lane(), Mode::Direct), 5);
        drop(outcome);
        background.expect("a direct call's round trip").await;
        assert_eq!(store.round_trips.load(Ordering::SeqCst), 0);
        assert_eq!(store_value(&store, &c), 0);
    });
}

#[test]
fn a_client_closing_drains_every_state_with_its_key() {
    let states = CounterStates::<usize>::default();
    let first = states.get(&1);
    states.get(&2);
    let mut drained = states.drain();
    drained.sort_by_key(|(key, _)| *key);
    assert_eq!(drained.len(), 2);
    assert_eq!(drained[0].0, 1);
    assert!(Arc::ptr_eq(&drained[0].1, &first));
    assert!(states.is_empty());
}

/// One value of `c` through `state`, cached in blocks of 10, as the engine submits it.
fn cached_call(
    state: &Arc<CounterState>,
    store: &Arc<MemoryStore>,
    c: &CounterRef,
) -> impl Future<Output = SeqResult<IdRange>> {
    state
        .submit(&route(store, c, &lane(), Mode::Cached(10)), 1)
        .finish()
}

fn store_value(store: &MemoryStore, c: &CounterRef) -> i64 {
    match store.get(c).flatten() {
        Some(mongodb::bson::Bson::Int32(v)) => i64::from(v),
        Some(mongodb::bson::Bson::Int64(v)) => v,
        _ => 0,
    }
}

#[test]
fn a_tail_is_the_run_of_blocks_that_adjoins_the_last_one() {
    let blocks = |bs: &[(i64, i64, i64)]| -> VecDeque<IdRange> {
        bs.iter()
            .map(|&(first, last, step)| IdRange { first, last, step })
            .collect()
    };
    assert_eq!(tail_of(&blocks(&[])), None);
    assert_eq!(
        tail_of(&blocks(&[(1, 3, 1), (5, 9, 1), (10, 12, 1)])),
        Some(IdRange::contiguous(5, 12)),
        "a block not adjoining is left out"
    );
    assert_eq!(
        tail_of(&blocks(&[(-1, -3, -1), (-4, -9, -1)])),
        Some(IdRange {
            first: -1,
            last: -9,
            step: -1
        }),
        "descending"
    );
    assert_eq!(
        tail_of(&blocks(&[
            (i64::MAX - 1, i64::MAX - 1, 1),
            (i64::MAX, i64::MAX, 1)
        ])),
        Some(IdRange::contiguous(i64::MAX - 1, i64::MAX))
    );
    assert_eq!(
        tail_of(&blocks(&[(i64::MAX, i64::MAX, 1), (i64::MIN, i64::MIN, 1)])),
        Some(IdRange::contiguous(i64::MIN, i64::MIN)),
        "no wrap past the 64-bit end"
    );
    assert_eq!(
        tail_of(&blocks(&[(1, 3, 1), (4, 4, 2)])),
        Some(IdRange {
            first: 4,
            last: 4,
            step: 2
        }),
        "another step does not adjoin"
    );
}

#[test]
fn a_tail_is_not_given_back_past_the_64_bit_end_or_on_a_cycling_counter() {
    let store = MemoryStore::default();
    let c = counter("ends");
    // Each counter below is flagged as a cache's fetch leaves it: only the tail decides.
    run(async {
        store.put(&c, Some(mongodb::bson::Bson::Int64(i64::MIN + 2)));
        let token = Some(store.flag_cached(&c));
        let tail = IdRange::contiguous(i64::MIN, i64::MIN + 2);
        assert!(!give_back_tail(&store, &c, None, tail, token).await.unwrap());
        assert_eq!(store_value(&store, &c), i64::MIN + 2);
        let down = IdRange {
            first: i64::MAX,
            last: i64::MAX - 2,
            step: -1,
        };
        store.put(&c, Some(mongodb::bson::Bson::Int64(i64::MAX - 2)));
        let token = Some(store.flag_cached(&c));
        assert!(!give_back_tail(&store, &c, None, down, token).await.unwrap());
        let cycling = SequenceConfig::new(1, Some(1), Some(10), true).unwrap();
        store.put_configured(&c, 8, cycling);
        let token = Some(store.flag_cached(&c));
        let tail = IdRange::contiguous(5, 8);
        assert!(!give_back_tail(&store, &c, Some(cycling), tail, token)
            .await
            .unwrap());
        assert_eq!(store_value(&store, &c), 8);
        let bounded = SequenceConfig::new(1, Some(1), Some(10), false).unwrap();
        store.put_configured(&c, 8, bounded);
        let token = Some(store.flag_cached(&c));
        assert!(
            !give_back_tail(&store, &c, None, tail, token).await.unwrap(),
            "a plain guard does not match a configured counter"
        );
        assert!(give_back_tail(&store, &c, Some(bounded), tail, token)
            .await
            .unwrap());
        assert_eq!(store_value(&store, &c), 4);
        assert!(
            !give_back_tail(&store, &c, Some(bounded), tail, token)
                .await
                .unwrap(),
            "only while it holds the tail's last value"
        );
        let down = IdRange {
            first: -3,
            last: -6,
            step: -1,
        };
        store.put(&c, Some(mongodb::bson::Bson::Int32(-6)));
        let token = Some(store.flag_cached(&c));
        assert!(give_back_tail(&store, &c, None, down, token).await.unwrap());
        assert_eq!(store_value(&store, &c), -2, "descending: back up");
    });
}

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

#[test]
fn select_gives_exactly_the_kept_states_it_picks() {
    let states = CounterStates::<String>::default();
    let (a, b, c) = (
        states.get(&"a".to_string()),
        states.get(&"b".to_string()),
        states.get(&"c".to_string()),
    );
    let mut picked = states.select(|key| key != "b");
    picked.sort_by_key(Arc::as_ptr);
    let mut expected = vec![a, c];
    expected.sort_by_key(Arc::as_ptr);
    assert_eq!(picked.len(), 2);
    assert!(picked.iter().zip(&expected).all(|(p, e)| Arc::ptr_eq(p, e)));
    assert!(states
        .select(|key| key == "b")
        .iter()
        .all(|s| Arc::ptr_eq(s, &b)));
    assert!(states.select(|_| false).is_empty());
}
