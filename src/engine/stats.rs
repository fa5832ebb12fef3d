//! Statistics an operator can watch: per `sequence()` handle and for the whole process,
//! counted with relaxed atomics (a handful of uncontended adds per call, nothing more).
//!
//! Calls, values handed out and cache hits are counted where a call is submitted and
//! where it settles ([`crate::engine::alloc::prepared_counter::PreparedCounter::submit`],
//! also for calls refused before they reached it:
//! [`crate::engine::alloc::prepared_counter::refused`]); round
//! trips (one per fetch, however many server requests it took), the calls merged into
//! them, blocks fetched, retries and round-trip latency where the fetch runs
//! ([`crate::engine::alloc::counter_state::CounterState::fetcher`]); values discarded and
//! given back where the cache lets them go. Counts are monotonic; a snapshot reads each
//! counter on its own, so the figures of one snapshot may be a few calls apart.
//!
//! The same place records round-trip events ([`RoundTripEvent`]) while a JavaScript
//! thread listens ([`thread_listening`]); otherwise it only reads one counter.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use crate::engine::error::ErrorCode;
use crate::engine::panic_safety::lock;
use crate::engine::store::counter_store::Endpoint;

/// Latency buckets: exact below 4 µs, then four per power of two (at most 19 % wide).
const BUCKETS: usize = 4 + 4 * 62;

/// The bucket of a latency of `micros`.
fn bucket(micros: u64) -> usize {
    if micros < 4 {
        return micros as usize;
    }
    let exponent = 63 - micros.leading_zeros() as usize;
    let sub = ((micros >> (exponent - 2)) & 3) as usize;
    4 + (exponent - 2) * 4 + sub
}

/// The largest latency in bucket `index`, in microseconds.
fn bucket_top(index: usize) -> u64 {
    if index < 4 {
        return index as u64;
    }
    let exponent = (index - 4) / 4 + 2;
    let sub = ((index - 4) % 4) as u64;
    let low = (4 + sub) << (exponent - 2);
    low + ((1u64 << (exponent - 2)) - 1)
}

/// Counters of one handle or of the process.
pub struct Stats {
    /// Calls not served from the cache at once (a cache hit counts only as a hit, one
    /// add fewer on the fastest path).
    calls: AtomicU64,
    values: AtomicU64,
    cache_hits: AtomicU64,
    round_trips: AtomicU64,
    merged_calls: AtomicU64,
    blocks_fetched: AtomicU64,
    retries: AtomicU64,
    discarded_by_writes: AtomicU64,
    discarded_at_close: AtomicU64,
    discarded_dropped: AtomicU64,
    discarded_short: AtomicU64,
    discarded_unclaimed: AtomicU64,
    given_back: AtomicU64,
    errors: [AtomicU64; ErrorCode::ALL.len()],
    latency: [AtomicU64; BUCKETS],
    latency_max: AtomicU64,
}

impl Stats {
    /// All counters at zero (a `const fn`: the process's statistics need no lazy
    /// initialisation, so a cached call reaches them without a check).
    pub const fn new() -> Self {
        Stats {
            calls: AtomicU64::new(0),
            values: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            merged_calls: AtomicU64::new(0),
            blocks_fetched: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            discarded_by_writes: AtomicU64::new(0),
            discarded_at_close: AtomicU64::new(0),
            discarded_dropped: AtomicU64::new(0),
            discarded_short: AtomicU64::new(0),
            discarded_unclaimed: AtomicU64::new(0),
            given_back: AtomicU64::new(0),
            errors: [const { AtomicU64::new(0) }; ErrorCode::ALL.len()],
            latency: [const { AtomicU64::new(0) }; BUCKETS],
            latency_max: AtomicU64::new(0),
        }
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

/// The statistics of the whole process.
pub static PROCESS: Stats = Stats::new();

/// A plain copy of [`Stats`] at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Calls submitted (each `next`, batch or range call counts one).
    pub calls: u64,
    /// Values handed out to calls that succeeded.
    pub values: u64,
    /// Calls served from the block cache without waiting.
    pub cache_hits: u64,
    /// Round trips (one per fetch of values, however many requests it took).
    pub round_trips: u64,
    /// Calls served by those round trips (merged ones count each).
    pub merged_calls: u64,
    /// Cache blocks fetched (fills that returned values).
    pub blocks_fetched: u64,
    /// Attempts started over after losing a race (another process changed the counter).
    pub retries: u64,
    /// Cached values thrown away by management writes of this process.
    pub discarded_by_writes: u64,
    /// Cached values abandoned at close (the counter had moved on).
    pub discarded_at_close: u64,
    /// Cached values dropped with counters no longer in use (pruned states, ended
    /// runtimes).
    pub discarded_dropped: u64,
    /// Cached values skipped because a batch needed more contiguous values than the rest
    /// of their block held.
    pub discarded_short: u64,
    /// Values reserved for calls that did not take them: the call gave up first (its
    /// deadline passed, its client closed) or could not receive them (past 2^53 - 1 as a
    /// number).
    pub discarded_unclaimed: u64,
    /// Cached values given back at close or `release()`.
    pub given_back: u64,
    /// Failed calls by error code (codes never seen are left out).
    pub errors: Vec<(&'static str, u64)>,
    /// Round-trip latency percentiles and maximum, in microseconds (0 without trips).
    pub latency_p50_us: u64,
    /// 99th percentile.
    pub latency_p99_us: u64,
    /// Largest.
    pub latency_max_us: u64,
}

impl Snapshot {
    /// Failed calls with `code`.
    pub fn errors_of(&self, code: ErrorCode) -> u64 {
        self.errors
            .iter()
            .find(|(name, _)| *name == code.as_str())
            .map_or(0, |(_, n)| *n)
    }
}

impl Stats {
    /// A copy of the counters now.
    pub fn snapshot(&self) -> Snapshot {
        let latency: Vec<u64> = self.latency.iter().map(|b| b.load(Relaxed)).collect();
        let max = self.latency_max.load(Relaxed);
        let percentile = |p: f64| -> u64 {
            let total: u64 = latency.iter().sum();
            if total == 0 {
                return 0;
            }
            let rank = ((total as f64) * p).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (index, n) in latency.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return bucket_top(index).min(max);
                }
            }
            max
        };
        Snapshot {
            calls: self.calls.load(Relaxed) + self.cache_hits.load(Relaxed),
            values: self.values.load(Relaxed),
            cache_hits: self.cache_hits.load(Relaxed),
            round_trips: self.round_trips.load(Relaxed),
            merged_calls: self.merged_calls.load(Relaxed),
            blocks_fetched: self.blocks_fetched.load(Relaxed),
            retries: self.retries.load(Relaxed),
            discarded_by_writes: self.discarded_by_writes.load(Relaxed),
            discarded_at_close: self.discarded_at_close.load(Relaxed),
            discarded_dropped: self.discarded_dropped.load(Relaxed),
            discarded_short: self.discarded_short.load(Relaxed),
            discarded_unclaimed: self.discarded_unclaimed.load(Relaxed),
            given_back: self.given_back.load(Relaxed),
            errors: ErrorCode::ALL
                .iter()
                .zip(&self.errors)
                .map(|(code, n)| (code.as_str(), n.load(Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            latency_p50_us: percentile(0.50),
            latency_p99_us: percentile(0.99),
            latency_max_us: max,
        }
    }
}

fn code_index(code: ErrorCode) -> usize {
    ErrorCode::ALL
        .iter()
        .position(|c| *c == code)
        .expect("every code is listed")
}

/// Where a call's figures go: the process's statistics, and its handle's when it has
/// one. Cheap to clone.
#[derive(Clone, Default)]
pub struct Recorder {
    handle: Option<Arc<Stats>>,
}

impl Recorder {
    /// Records into the process's statistics and, when given, `handle`'s.
    pub fn new(handle: Option<Arc<Stats>>) -> Self {
        Recorder { handle }
    }

    /// The handle's statistics it records into besides the process's, if any.
    pub fn handle(&self) -> Option<&Arc<Stats>> {
        self.handle.as_ref()
    }

    fn each(&self, f: impl Fn(&Stats)) {
        f(&PROCESS);
        if let Some(handle) = &self.handle {
            f(handle);
        }
    }

    /// A call was submitted that the cache did not serve at once.
    pub fn call(&self) {
        self.each(|s| {
            s.calls.fetch_add(1, Relaxed);
        });
    }

    /// A call failed with `code` before it waited for anything (a bad argument, a client
    /// that could not open, values it could not receive).
    pub fn failed(&self, code: ErrorCode) {
        self.call();
        self.ended(Err(code));
    }

    /// A call was served from the cache at once with `values` values.
    pub fn cache_hit(&self, values: i64) {
        self.each(|s| {
            s.cache_hits.fetch_add(1, Relaxed);
            s.values.fetch_add(values as u64, Relaxed);
        });
    }

    /// A call ended later: with `values` values, or failed with `code`.
    pub fn ended(&self, outcome: Result<i64, ErrorCode>) {
        self.each(|s| match outcome {
            Ok(values) => {
                s.values.fetch_add(values as u64, Relaxed);
            }
            Err(code) => {
                s.errors[code_index(code)].fetch_add(1, Relaxed);
            }
        });
    }

    /// A round trip took `took`, serving `calls` calls, fetching `blocks` cache fills,
    /// after `retries` attempts started over.
    pub fn round_trip(&self, took: Duration, calls: usize, blocks: u64, retries: u32) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let index = bucket(micros).min(BUCKETS - 1);
        self.each(|s| {
            s.round_trips.fetch_add(1, Relaxed);
            s.merged_calls.fetch_add(calls as u64, Relaxed);
            s.blocks_fetched.fetch_add(blocks, Relaxed);
            s.retries.fetch_add(u64::from(retries), Relaxed);
            s.latency[index].fetch_add(1, Relaxed);
            s.latency_max.fetch_max(micros, Relaxed);
        });
    }
}

/// Cached values thrown away by a management write of this process.
pub fn discarded_by_writes(values: i64) {
    PROCESS
        .discarded_by_writes
        .fetch_add(values.max(0) as u64, Relaxed);
}

/// Cached values dropped with a counter state no longer in use.
pub fn discarded_dropped(values: i64) {
    PROCESS
        .discarded_dropped
        .fetch_add(values.max(0) as u64, Relaxed);
}

/// Cached values skipped: the rest of a block too short for a batch.
pub fn discarded_short(values: i64) {
    PROCESS
        .discarded_short
        .fetch_add(values.max(0) as u64, Relaxed);
}

/// Values reserved for a call that did not take them.
pub fn discarded_unclaimed(values: i64) {
    PROCESS
        .discarded_unclaimed
        .fetch_add(values.max(0) as u64, Relaxed);
}

/// A close or `release()` gave back `returned` cached values and abandoned `abandoned`.
pub fn gave_back(returned: i64, abandoned: i64) {
    PROCESS
        .given_back
        .fetch_add(returned.max(0) as u64, Relaxed);
    PROCESS
        .discarded_at_close
        .fetch_add(abandoned.max(0) as u64, Relaxed);
}

/// One round trip, for tracing: published on the `mongodb-sequence:round-trip`
/// diagnostics channel while it has subscribers.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundTripEvent {
    /// The counter's database, when the store knows it.
    pub database: Option<String>,
    /// The counter's collection.
    pub collection: String,
    /// The MongoDB command sent (`findAndModify` for a fetch of values).
    pub operation: &'static str,
    /// Host and port of the server the client writes to, when known.
    pub server: Option<(String, u16)>,
    /// The counter's name as shown in messages (`None` for a listing, which names none).
    pub counter: Option<String>,
    /// Values the round trip reserved (for calls and cache fills; 0 for management).
    pub values: i64,
    /// Value-taking calls it served (0 for the commands of management calls).
    pub calls: usize,
    /// How long it took.
    pub duration: Duration,
    /// `None` when it succeeded, else the error code of its failure.
    pub error: Option<ErrorCode>,
    /// Attempts started over.
    pub retries: u32,
}

/// One round trip as its event tells it: a fetch of values (one event however many
/// requests it took, its restarts in `retries`), or one command of a management call.
#[derive(Debug, Clone, Copy)]
pub struct Trip<'a> {
    /// The command sent (a fetch's is `findAndModify`).
    pub operation: &'static str,
    /// The collection it went to.
    pub collection: &'a str,
    /// The counter's name as shown in messages, when the trip is for one counter.
    pub counter: Option<&'a str>,
    /// Values reserved.
    pub values: i64,
    /// Value-taking calls served.
    pub calls: usize,
    /// Attempts started over (a fetch that lost a race, a command sent again on a new
    /// connection).
    pub retries: u32,
    /// How long it took.
    pub took: Duration,
    /// `None` when it succeeded, else its error code.
    pub error: Option<ErrorCode>,
}

/// Records `trip` as a [`RoundTripEvent`] while events are on: the one place an event is
/// made, for fetches and for management calls alike. Names are masked as messages mask
/// them (tracers copy the event into spans and logs). `endpoint` (the database and the
/// server written to) is only asked for while events are on.
pub fn record_trip(endpoint: impl FnOnce() -> Endpoint, trip: Trip<'_>) {
    if !events_on() {
        return;
    }
    let masked = crate::engine::text::redact::redact_connection_strings;
    let endpoint = endpoint();
    record_event(RoundTripEvent {
        database: endpoint.database.as_deref().map(masked),
        collection: masked(trip.collection),
        operation: trip.operation,
        server: endpoint.server,
        counter: trip.counter.map(masked),
        values: trip.values,
        calls: trip.calls,
        duration: trip.took,
        error: trip.error,
        retries: trip.retries,
    });
}

/// Held by each unit test that changes the listening count ([`listening_test`]).
#[cfg(test)]
pub(crate) struct ListeningTest(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

/// Serialises the unit tests that change the listening count: each asserts what it sees
/// of the process's one queue. One that fails leaves nobody listening and the queue
/// empty, so that the next one fails only for its own reasons.
#[cfg(test)]
pub(crate) fn listening_test() -> ListeningTest {
    static ONLY: Mutex<()> = Mutex::new(());
    ListeningTest(lock(&ONLY))
}

#[cfg(test)]
impl Drop for ListeningTest {
    fn drop(&mut self) {
        if std::thread::panicking() {
            LISTENING_THREADS.store(0, SeqCst);
            lock(&EVENTS).clear();
        }
    }
}

/// Events kept until JavaScript takes them; older ones are dropped past it.
const EVENTS_KEPT: usize = 4096;

/// JavaScript threads whose round-trip channel has subscribers (each diagnostics channel
/// belongs to one thread; the queue is the process's).
static LISTENING_THREADS: AtomicUsize = AtomicUsize::new(0);
static EVENTS: LazyLock<Mutex<VecDeque<RoundTripEvent>>> = LazyLock::new(Mutex::default);
static EVENTS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// A JavaScript thread's channel gained subscribers (`true`) or lost them, or the
/// thread ended while it had some (`false`); called once per change by that thread.
/// Round trips are recorded while at least one thread listens; when the last one stops,
/// the queue is emptied. A thread without subscribers thus never turns off the events
/// another thread listens to.
pub fn thread_listening(on: bool) {
    if on {
        LISTENING_THREADS.fetch_add(1, SeqCst);
    } else if LISTENING_THREADS
        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
        .is_ok_and(|before| before == 1)
    {
        let mut events = lock(&EVENTS);
        // Looked at again under the lock: a thread that started listening since then
        // keeps what was recorded for it.
        if !events_on() {
            events.clear();
        }
    }
}

/// Whether round trips are recorded as events: a JavaScript thread listens.
pub fn events_on() -> bool {
    LISTENING_THREADS.load(Relaxed) > 0
}

/// Records `event` while events are on.
pub fn record_event(event: RoundTripEvent) {
    if !events_on() {
        return;
    }
    let mut events = lock(&EVENTS);
    // Looked at again under the lock: the last listener may have stopped, and emptied
    // the queue, since the look above (the round trip ends on a worker thread while a
    // JavaScript thread stops listening); an event queued now would wait for whoever
    // listens next, with nobody to take it until then.
    if !events_on() {
        return;
    }
    if events.len() >= EVENTS_KEPT {
        events.pop_front();
        EVENTS_DROPPED.fetch_add(1, Relaxed);
    }
    events.push_back(event);
}

/// Takes the recorded events, oldest first.
pub fn take_events() -> Vec<RoundTripEvent> {
    if !events_on() {
        return Vec::new();
    }
    lock(&EVENTS).drain(..).collect()
}

/// Events dropped because nobody took them in time.
pub fn events_dropped() -> u64 {
    EVENTS_DROPPED.load(Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_latency_in_order_and_tops_bound_them() {
        let mut last = 0;
        for micros in (0..5_000u64).chain([1 << 20, (1 << 40) + 3, u64::MAX / 2, u64::MAX]) {
            let index = bucket(micros);
            assert!(index < BUCKETS, "{micros}");
            assert!(index >= last || micros > 5_000, "monotonic at {micros}");
            last = index;
            assert!(bucket_top(index) >= micros, "{micros} above its bucket");
            if index > 0 {
                assert!(bucket_top(index - 1) < micros, "{micros} in a later bucket");
            }
            if micros >= 4 {
                assert!(
                    bucket_top(index) as f64 <= micros as f64 * 1.25 + 1.0,
                    "{micros}: bucket too wide"
                );
            }
        }
    }

    #[test]
    fn percentiles_come_from_the_recorded_trips() {
        let stats = Arc::new(Stats::default());
        let recorder = Recorder::new(Some(stats.clone()));
        for micros in 1..=100u64 {
            recorder.round_trip(Duration::from_micros(micros * 100), 2, 1, 0);
        }
        recorder.round_trip(Duration::from_millis(50), 1, 0, 3);
        let s = stats.snapshot();
        assert_eq!(s.round_trips, 101);
        assert_eq!(s.merged_calls, 201);
        assert_eq!(s.blocks_fetched, 100);
        assert_eq!(s.retries, 3);
        assert_eq!(s.latency_max_us, 50_000);
        assert!(
            (5_000..=6_300).contains(&s.latency_p50_us),
            "{}",
            s.latency_p50_us
        );
        assert!(
            (9_900..=12_300).contains(&s.latency_p99_us),
            "{}",
            s.latency_p99_us
        );
        assert_eq!(Stats::default().snapshot().latency_p99_us, 0);
    }

    #[test]
    fn events_are_kept_while_a_thread_listens_and_bounded() {
        let event = |counter: &str| RoundTripEvent {
            database: Some("app".into()),
            collection: "counters".into(),
            operation: "findAndModify",
            server: None,
            counter: Some(counter.into()),
            values: 1,
            calls: 1,
            duration: Duration::from_micros(7),
            error: None,
            retries: 0,
        };
        let _only = listening_test();
        assert!(!events_on(), "nobody listens at first");
        record_event(event("off"));
        assert!(take_events().is_empty(), "nothing while nobody listens");
        thread_listening(true); // the main thread
        thread_listening(true); // a worker
        record_event(event("on"));
        let dropped = events_dropped();
        for _ in 0..EVENTS_KEPT {
            record_event(event("filler"));
        }
        assert!(events_dropped() > dropped, "past the bound, the oldest go");
        let taken = take_events();
        // At least as many were recorded as are kept (other tests' round trips may add).
        assert_eq!(taken.len(), EVENTS_KEPT, "the queue is full, never beyond");
        assert!(
            !taken.iter().any(|e| e.counter.as_deref() == Some("on")),
            "the oldest went first"
        );
        record_event(event("kept"));
        thread_listening(false); // the worker stops listening (or ends)
        assert!(events_on(), "the main thread still listens");
        let kept = take_events();
        assert!(
            kept.iter().any(|e| e.counter.as_deref() == Some("kept")),
            "one thread stopping keeps what another listens to"
        );
        record_event(event("again"));
        thread_listening(false);
        assert!(!events_on());
        assert!(
            take_events().is_empty(),
            "nothing is taken while nobody listens"
        );
        thread_listening(false); // one too many (never called so): stays at zero
        assert!(!events_on());
        thread_listening(true);
        let after = take_events();
        thread_listening(false);
        assert!(
            !after.iter().any(|e| e.counter.as_deref() == Some("again")),
            "the last thread stopping emptied the queue"
        );
        // A round trip ends on a worker thread just as the last listener stops: nothing
        // is left queued once nobody listens, whatever the interleaving.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let recorders: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    for n in 0u64.. {
                        if stop.load(SeqCst) {
                            break;
                        }
                        record_event(event("late"));
                        if n % 16 == 0 {
                            // Leaves the queue's lock to the listening thread now and then.
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut left = 0;
        for round in 0..3_000 {
            thread_listening(true);
            if round % 2 == 0 {
                std::thread::yield_now();
            }
            thread_listening(false);
            // A recorder that saw the listener just before it stopped has queued its
            // event by now, or never will.
            for _ in 0..20 {
                std::thread::yield_now();
            }
            if lock(&EVENTS)
                .iter()
                .any(|e| e.counter.as_deref() == Some("late"))
            {
                left += 1;
                lock(&EVENTS).clear();
            }
        }
        stop.store(true, SeqCst);
        for recorder in recorders {
            recorder.join().unwrap();
        }
        assert_eq!(
            left, 0,
            "rounds that left an event queued with nobody listening"
        );
    }

    #[test]
    fn a_trip_is_recorded_masked_and_only_while_a_thread_listens() {
        let _only = listening_test();
        let secret = "pa55-Wd%21x";
        let name = format!("mongodb://alice:{secret}@h/trip");
        let trip = Trip {
            operation: "delete",
            collection: &name,
            counter: Some(&name),
            values: 0,
            calls: 0,
            retries: 1,
            took: Duration::from_micros(30),
            error: Some(ErrorCode::Connection),
        };
        let endpoint = || Endpoint {
            database: Some(format!("mongodb://bob:{secret}@h")),
            server: Some(("db1".into(), 27017)),
        };
        let asked = std::cell::Cell::new(false);
        record_trip(
            || {
                asked.set(true);
                endpoint()
            },
            trip,
        );
        assert!(
            !asked.get(),
            "the endpoint is not looked up while nobody listens"
        );
        thread_listening(true);
        record_trip(endpoint, trip);
        record_trip(
            endpoint,
            Trip {
                counter: None,
                ..trip
            },
        );
        let ours: Vec<RoundTripEvent> = take_events()
            .into_iter()
            .filter(|e| e.operation == "delete" && e.retries == 1)
            .collect();
        thread_listening(false);
        assert_eq!(ours.len(), 2, "{ours:?}");
        for event in &ours {
            assert!(!format!("{event:?}").contains(secret), "{event:?}");
            assert_eq!(event.collection, "mongodb://****@h/trip");
            assert_eq!(event.database.as_deref(), Some("mongodb://****@h"));
            assert_eq!(event.server, Some(("db1".into(), 27017)));
            assert_eq!(event.error, Some(ErrorCode::Connection));
            assert_eq!((event.values, event.calls), (0, 0));
            assert_eq!(event.duration, Duration::from_micros(30));
        }
        assert_eq!(ours[0].counter.as_deref(), Some("mongodb://****@h/trip"));
        assert_eq!(ours[1].counter, None, "a listing names no counter");
    }

    #[test]
    fn discards_and_give_backs_count_in_the_process() {
        // Other tests add too: only increases of at least these amounts can be asserted.
        let before = PROCESS.snapshot();
        discarded_by_writes(7);
        discarded_dropped(5);
        gave_back(11, 13);
        let after = PROCESS.snapshot();
        assert!(after.discarded_by_writes >= before.discarded_by_writes + 7);
        assert!(after.discarded_dropped >= before.discarded_dropped + 5);
        assert!(after.given_back >= before.given_back + 11);
        assert!(after.discarded_at_close >= before.discarded_at_close + 13);
    }

    #[test]
    fn calls_values_and_errors_add_up() {
        let stats = Arc::new(Stats::default());
        let recorder = Recorder::new(Some(stats.clone()));
        recorder.cache_hit(1);
        recorder.call();
        recorder.ended(Ok(5));
        recorder.call();
        recorder.ended(Err(ErrorCode::Contention));
        recorder.failed(ErrorCode::SequenceOverflow);
        let s = stats.snapshot();
        assert_eq!((s.calls, s.values, s.cache_hits), (4, 6, 1));
        assert_eq!(s.errors_of(ErrorCode::Contention), 1);
        assert_eq!(
            s.errors_of(ErrorCode::SequenceOverflow),
            1,
            "a call failed at once"
        );
        assert_eq!(s.errors.len(), 2);
        assert_eq!(s.errors_of(ErrorCode::Connection), 0);
        assert!(PROCESS.snapshot().calls >= 3, "the process counts too");
    }
}
