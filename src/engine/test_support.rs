//! Helpers for the unit tests: a runtime, a counter behind a fake round trip, and a
//! small deterministic random source.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::counter_state::{Lane, Mode, Route, Submitted};
use crate::engine::alloc::prepared_counter::PreparedCounter;
use crate::engine::call_options::CallOptions;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::handle::{ClientHandle, Late};
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::stats::Recorder;
use crate::engine::store::counter_store::CounterRef;

/// Runs `f` on a multi-threaded tokio runtime.
pub fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// The route of calls to `counter` over `store` in `lane`, served as `mode` says, as a
/// prepared counter makes it (no block cache kept, no handle's statistics).
pub fn route<S>(store: &Arc<S>, counter: &CounterRef, lane: &Lane, mode: Mode) -> Route<S> {
    Route {
        store: store.clone(),
        counter: counter.clone(),
        lane: lane.clone(),
        mode,
        cache: None,
        recorder: Recorder::default(),
    }
}

impl Submitted {
    /// Starts the background work ([`Submitted::start`]) and waits for the values, as a
    /// call awaited on the runtime does.
    pub async fn finish(self) -> SeqResult<IdRange> {
        self.start().values().await
    }
}

/// xorshift64*: deterministic pseudo-random numbers for interleavings.
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A server-side counter reached through a slow, sometimes failing "round trip".
#[derive(Default)]
pub struct FakeCounter {
    value: AtomicI64,
    /// Round trips made.
    pub round_trips: AtomicUsize,
    /// Fail every n-th round trip (0: never), consuming nothing.
    pub fail_every: AtomicUsize,
    /// Largest single `$inc` seen.
    pub largest: AtomicI64,
    /// Panic in the n-th round trip (0: never), consuming nothing.
    pub panic_on: AtomicUsize,
}

impl FakeCounter {
    /// Reserves `total` values after a pause of up to `max_delay_us`.
    pub async fn fetch(self: Arc<Self>, total: i64, delay_us: u64) -> SeqResult<IdRange> {
        tokio::time::sleep(Duration::from_micros(delay_us)).await;
        let n = self.round_trips.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.panic_on.load(Ordering::SeqCst) {
            panic!("injected panic in round trip {n}");
        }
        let every = self.fail_every.load(Ordering::SeqCst);
        if every > 0 && n.is_multiple_of(every) {
            return Err(SeqError::server(91, None, "injected failure"));
        }
        self.largest.fetch_max(total, Ordering::SeqCst);
        let last = self.value.fetch_add(total, Ordering::SeqCst) + total;
        IdRange::ending_at(last, total)
    }

    /// The counter's value.
    pub fn value(&self) -> i64 {
        self.value.load(Ordering::SeqCst)
    }
}

/// Holds round trips until the test opens it, counting those that reached it: a test
/// acts while a round trip is under way by waiting until one has reached the gate,
/// not by sleeping for however long it should take to get there.
#[derive(Clone)]
pub struct Gate {
    open: Arc<tokio::sync::watch::Sender<bool>>,
    arrived: Arc<tokio::sync::watch::Sender<usize>>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            open: Arc::new(tokio::sync::watch::Sender::new(false)),
            arrived: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }
}

impl Gate {
    /// Waits (in a round trip) until the gate is open, counted as having reached it.
    pub async fn pass(&self) {
        self.arrived.send_modify(|n| *n += 1);
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }

    /// Waits until `n` round trips have reached the gate; panics past a generous bound.
    pub async fn reached(&self, n: usize) {
        let mut arrived = self.arrived.subscribe();
        let reached = arrived.wait_for(|arrived| *arrived >= n);
        tokio::time::timeout(Duration::from_secs(10), reached)
            .await
            .unwrap_or_else(|_| panic!("{n} round trips never reached the gate"))
            .expect("the gate is held here");
    }

    /// Lets every round trip through, now and from now on.
    pub fn open(&self) {
        self.open.send_replace(true);
    }
}

/// A fetch from `counter` of `total` values that first waits at `gate`.
pub fn gated(
    counter: &Arc<FakeCounter>,
    gate: &Gate,
) -> impl Fn(i64) -> std::pin::Pin<Box<dyn std::future::Future<Output = SeqResult<IdRange>> + Send>>
       + Clone
       + Send
       + Sync
       + 'static {
    let (counter, gate) = (counter.clone(), gate.clone());
    move |total| {
        let (counter, gate) = (counter.clone(), gate.clone());
        Box::pin(async move {
            gate.pass().await;
            counter.fetch(total, 0).await
        })
    }
}

/// Every value of the given blocks, sorted; panics on a block of the wrong size.
pub fn values_of(blocks: &[(i64, IdRange)]) -> Vec<i64> {
    let mut all: Vec<i64> = blocks
        .iter()
        .flat_map(|(count, r)| {
            assert_eq!(r.count(), *count, "a caller got a slice of the wrong size");
            r.values().collect::<Vec<_>>()
        })
        .collect();
    all.sort_unstable();
    all
}

/// Adapts a fetch of `total` contiguous values to the demand-serving fetch the
/// coalescer and the cache call: every demand is served in full, in order.
pub fn by_total<F, Fut>(
    fetch: F,
) -> impl Fn(
    Vec<crate::engine::alloc::demand::Demand>,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = crate::engine::alloc::coalesce::Grants> + Send>,
> + Send
       + Sync
       + 'static
where
    F: Fn(i64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = SeqResult<IdRange>> + Send + 'static,
{
    move |demands| {
        let fut = fetch(crate::engine::alloc::demand::total(&demands));
        Box::pin(async move {
            fut.await
                .map(|range| crate::engine::alloc::demand::split(range, &demands))
        })
    }
}

/// A counter prepared in a client of a closed port, which no test lets time out.
pub async fn prepared_of_closed_port() -> PreparedCounter {
    let target =
        ConnectionTarget::from_uri("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=600000")
            .unwrap();
    let handle = Arc::new(ClientHandle::open(&target).await.unwrap());
    let counter = CounterRef::new("counters", "seq", CounterName::text("c").unwrap());
    PreparedCounter::new(&handle, "db", &counter, &CallOptions::default(), None).unwrap()
}

/// `handle` made to retire, and kept retiring by a read held pending (a retiring client
/// with no call pending closes at once): the read and the retirement, to hold.
pub async fn retiring(
    handle: &Arc<ClientHandle>,
) -> (
    impl std::future::Future<Output = SeqResult<()>>,
    std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>,
) {
    let read = handle.within(std::future::pending::<SeqResult<()>>(), Late::Read);
    let mut retiring: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> =
        Box::pin(handle.retire());
    assert!(futures_util::poll!(&mut retiring).is_pending());
    (read, retiring)
}
