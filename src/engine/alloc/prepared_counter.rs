//! The entry point of the engine: a counter prepared for calls ([`PreparedCounter`]).
//! Every call that takes values goes through [`PreparedCounter::submit`], which submits
//! it to the counter's one state in its client (directly, through the coalescer, or from
//! the block cache, as the options say), starts the work it needs, refuses values the
//! caller cannot receive and counts it; every management write of one counter goes
//! through a method of it that fences the counter's states around the write.

use std::future::Future;
use std::sync::Arc;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::counter_state::{
    spawn_background, CounterState, GivenBack, Lane, Mode, Outcome, Route, Submitted,
};
use crate::engine::call_options::CallOptions;
use crate::engine::client::handle::{Admission, ClientHandle, Late};
use crate::engine::counter::locator::Locator;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::management;
use crate::engine::stats::{Recorder, Stats};
use crate::engine::store::counter_store::CounterRef;
use crate::engine::store::driver_store::DriverStore;
use crate::engine::store::mongo_driver::MongoDriver;

/// A counter ready to take calls: its client, state and route (store, lane, mode, cache
/// cache, statistics). Reusable for many calls.
#[derive(Clone)]
pub struct PreparedCounter {
    handle: Arc<ClientHandle>,
    state: Arc<CounterState>,
    route: Arc<Route<DriverStore<MongoDriver>>>,
    /// The counter's name as shown in messages, when its calls return JavaScript
    /// numbers (no `bigint`, no `format`): values past 2^53 - 1 then fail the call.
    numbers_for: Option<Arc<str>>,
}

/// `error`, counted as a failed call in the process's statistics and in `stats` (a
/// handle's): for a call refused before it reached a prepared counter (its arguments,
/// a client that could not open, a counter that could not be prepared), so that every
/// call is counted where the others are.
pub fn refused(stats: Option<&Arc<Stats>>, error: SeqError) -> SeqError {
    Recorder::new(stats.cloned()).failed(error.code);
    error
}

impl PreparedCounter {
    /// Prepares `counter` (made and checked by [`CallOptions::counter`]) in `database`
    /// for calls with `options`; they are counted in `stats` too (a handle's
    /// statistics), when given.
    pub fn new(
        handle: &Arc<ClientHandle>,
        database: &str,
        counter: &CounterRef,
        options: &CallOptions,
        stats: Option<Arc<Stats>>,
    ) -> SeqResult<PreparedCounter> {
        let driver = handle
            .driver(database)?
            .with_write_concern(options.write_concern.as_ref().map(|w| w.to_driver()));
        let state = handle.counter_state(database, counter);
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
            .map(|size| state.block_cache(&lane, counter, size));
        let numbers_for = options
            .returns_numbers()
            .then(|| Arc::from(counter.label.as_str()));
        Ok(PreparedCounter {
            handle: handle.clone(),
            state,
            route: Arc::new(Route {
                store: Arc::new(DriverStore(driver)),
                counter: counter.clone(),
                lane,
                mode,
                cache,
                recorder: Recorder::new(stats),
            }),
            numbers_for,
        })
    }

    /// The driver of the database the counter lives in.
    fn driver(&self) -> &MongoDriver {
        &self.route.store.0
    }

    /// The store of this counter's management calls, which publishes each command it
    /// sends as a round-trip event. Not the store of its fetches: a fetch publishes one
    /// event of its own however many commands it took, and must not publish them twice.
    fn managing(&self) -> DriverStore<MongoDriver> {
        DriverStore(self.driver().clone().publishing_commands())
    }

    /// The counter.
    pub fn counter(&self) -> &CounterRef {
        &self.route.counter
    }

    /// Whether the client of this prepared counter was closed, or belongs to a runtime
    /// that has ended: prepare the counter again instead.
    pub fn is_closed(&self) -> bool {
        !self.handle.is_usable()
    }

    /// Submits a call for `count` values at once (it keeps its place in line) and starts
    /// the work it needs on the current runtime (a round trip, a cache fill or
    /// prefetch); a later outcome settles within the client's call timeout from now,
    /// and at once with `CLIENT_CLOSED` if the client closes. `CLIENT_CLOSED` once the
    /// client is closed. Values past 2^53 - 1 fail a call that returns numbers with
    /// `SEQUENCE_OVERFLOW`. The call is counted in the statistics, however it ends.
    pub fn submit(&self, count: i64) -> SeqResult<Outcome> {
        match self.handle.admit() {
            Ok(admission) => Ok(self.submit_admitted(admission, count)),
            Err(error) => Err(refused(self.route.recorder.handle(), error)),
        }
    }

    /// [`PreparedCounter::submit`], or `None`, with nothing done and nothing counted, when
    /// the registry let the client go ([`ClientHandle::was_let_go`]) after the caller
    /// found it open: the caller then asks the registry for the connection's client
    /// again, as a call made a moment later would, instead of failing a call whose user
    /// closed nothing.
    pub fn try_submit(&self, count: i64) -> Option<SeqResult<Outcome>> {
        match self.handle.admit() {
            Ok(admission) => Some(Ok(self.submit_admitted(admission, count))),
            Err(_) if self.handle.was_let_go() => None,
            Err(error) => Some(Err(refused(self.route.recorder.handle(), error))),
        }
    }

    /// [`PreparedCounter::submit`] once the call is admitted.
    fn submit_admitted(&self, admission: Admission, count: i64) -> Outcome {
        let Submitted {
            outcome,
            background,
        } = self.state.submit(&self.route, count);
        let recorder = &self.route.recorder;
        // Values the caller cannot receive (past 2^53 - 1 as numbers) fail the call here,
        // before they are counted: the statistics count the values callers receive.
        let outcome = match outcome {
            Outcome::Later(pending) => {
                recorder.call();
                let bounded = admission.within(pending, Late::Values);
                let recorder = recorder.clone();
                let numbers_for = self.numbers_for.clone();
                Outcome::Later(Box::pin(async move {
                    let outcome = bounded
                        .await
                        .and_then(|range| receivable(numbers_for.as_deref(), range));
                    recorder.ended(outcome.as_ref().map(IdRange::count).map_err(|e| e.code));
                    outcome
                }))
            }
            Outcome::Now(range) => match self.served_now(range) {
                Ok(range) => Outcome::Now(range),
                Err(error) => Outcome::Later(Box::pin(std::future::ready(Err(error)))),
            },
        };
        Submitted {
            outcome,
            background,
        }
        .start()
    }

    /// [`PreparedCounter::submit`] for a call its block cache serves at once, and only
    /// then: the call's values (or the overflow that fails it), counted, with the
    /// prefetch it makes due started. `None`, with nothing done, when it is not a cached
    /// call the cache can serve now, or its client is not open: `submit` then serves the
    /// call (or refuses it).
    pub fn submit_now(&self, count: i64) -> Option<SeqResult<IdRange>> {
        let _admission = self.handle.admit().ok()?;
        let (range, background) = self.state.submit_now(&self.route, count)?;
        spawn_background(background);
        Some(self.served_now(range))
    }

    /// Values served at once from the cache: counted, unless the caller cannot receive
    /// them ([`receivable`]), which fails the call.
    fn served_now(&self, range: IdRange) -> SeqResult<IdRange> {
        let recorder = &self.route.recorder;
        match receivable(self.numbers_for.as_deref(), range) {
            Ok(range) => {
                recorder.cache_hit(range.count());
                Ok(range)
            }
            Err(error) => {
                recorder.failed(error.code);
                Err(error)
            }
        }
    }

    /// Gives back the unused tails of this counter's cached blocks in this client
    /// ([`CounterState::give_back`]); the counter stays usable (a later call fetches
    /// again). `CLIENT_CLOSED` once the client is closed (its close gave them back).
    pub async fn give_back(&self) -> SeqResult<GivenBack> {
        self.handle.ensure_open()?;
        Ok(self.state.give_back(Lane::store_of(self.driver())).await)
    }

    /// The counter's value, the last value handed out, without advancing it: a read,
    /// bounded as calls are.
    pub fn current(&self) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        let (store, counter) = (self.managing(), self.counter().clone());
        let read = async move { management::current(&store, &counter).await };
        self.handle.within(read, Late::Read)
    }

    /// Creates the counter ([`management::init`]); `true` when this call created it.
    pub fn init(
        &self,
        start: Option<i64>,
        config: Option<SequenceConfig>,
    ) -> impl Future<Output = SeqResult<bool>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::init(&store, &counter, start, config).await
        })
    }

    /// Sets the counter so that the next value is `value + step` ([`management::set`]).
    pub fn set(
        &self,
        value: i64,
        upsert: bool,
    ) -> impl Future<Output = SeqResult<()>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::set(&store, &counter, value, upsert).await
        })
    }

    /// Puts the counter back to its start ([`management::reset`]); returns that start.
    pub fn reset(
        &self,
        default_start: i64,
    ) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::reset(&store, &counter, default_start).await
        })
    }

    /// Deletes the counter; `true` when it existed.
    pub fn drop_counter(&self) -> impl Future<Output = SeqResult<bool>> + Send + 'static {
        self.fenced(
            |store, counter| async move { management::drop_counter(&store, &counter).await },
        )
    }

    /// Moves the counter on to `value` at least, in its direction
    /// ([`management::raise_to`]); returns its value afterwards.
    pub fn raise_to(&self, value: i64) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::raise_to(&store, &counter, value).await
        })
    }

    /// Moves the counter on to the furthest value `path` reaches in collection `source`
    /// of its database ([`management::sync_to_source`]); returns its value afterwards.
    pub fn sync_to(
        &self,
        source: String,
        path: String,
    ) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            let source = management::SourceField {
                driver: &store.0,
                collection: source,
                path,
                counter: &counter.label,
            };
            management::sync_to_source(&store, &counter, &source).await
        })
    }

    /// The management write `write` (given this counter's management store and the
    /// counter), fenced ([`Fence::fenced`]): what this process holds of the counter, and
    /// of the located counters that may find the same document, is forgotten before and
    /// after it, as PostgreSQL's `setval` discards the session's cache. The call is
    /// bounded by the call timeout, but the fenced write runs to its end in a task of its
    /// own: a write the server applies after the call gave up must still be followed by
    /// the discard, or this process would hand out values of a block fetched before a
    /// write that moved the counter back.
    fn fenced<T, F, Fut>(&self, write: F) -> impl Future<Output = SeqResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(DriverStore<MongoDriver>, CounterRef) -> Fut,
        Fut: Future<Output = SeqResult<T>> + Send + 'static,
    {
        // Admitted before anything is sent: a write on a client closed (or retiring) by
        // now is refused and never sent, rather than sent under a `CLIENT_CLOSED`. Once
        // its fence is taken (it may wait for an earlier write or for fetches), it looks
        // again, so a client closed while it waited sends nothing either.
        let started = self.handle.admit().map(|admission| {
            let fence = self.fence();
            let handle = self.handle.clone();
            let write = write(self.managing(), self.counter().clone());
            let gated = async move {
                handle.ensure_open()?;
                write.await
            };
            let write = management::to_its_end(async move { fence.fenced(gated).await });
            admission.within(write, Late::Write)
        });
        async move { started?.await }
    }

    /// What a management write on this counter must fence ([`Fence::fenced`]).
    fn fence(&self) -> Fence {
        match self.counter().locator {
            Locator::ById => Fence::Counter(self.state.clone()),
            // Other fields (another plugin's locator) may find the same document, each with
            // a state of its own: every located counter that may find it is fenced too.
            Locator::ByFields(_) => Fence::Collection(Box::new(CollectionFence {
                handle: self.handle.clone(),
                database: self.driver().database().name().to_string(),
                counter: self.counter().clone(),
                own: self.state.clone(),
            })),
        }
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
enum Fence {
    /// The counter's own state: a counter named by `_id` is one document, one state.
    Counter(Arc<CounterState>),
    /// The counter's state and those of the located counters of its collection and
    /// field in this client that may find the same document under other fields.
    Collection(Box<CollectionFence>),
}

/// The client, database and counter (with its own state) whose twins a [`Fence`] covers.
struct CollectionFence {
    handle: Arc<ClientHandle>,
    database: String,
    counter: CounterRef,
    own: Arc<CounterState>,
}

impl Fence {
    /// Runs the management write `op` with the states fenced.
    async fn fenced<T>(self, op: impl std::future::Future<Output = T>) -> T {
        match self {
            Fence::Counter(state) => state.fenced(op).await,
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
                CounterState::fenced_all(select, op).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::engine::client::connection::ConnectionTarget;
    use crate::engine::counter::counter_name::CounterName;
    use crate::engine::error::ErrorCode;
    use crate::engine::test_support::run;
    use crate::engine::text::validate::MAX_SAFE_INTEGER;

    /// A counter prepared in a client of a closed port, which no test lets time out.
    async fn prepared() -> PreparedCounter {
        let target =
            ConnectionTarget::from_uri("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=600000")
                .unwrap();
        let handle = Arc::new(ClientHandle::open(&target).await.unwrap());
        let counter = CounterRef::new("counters", "seq", CounterName::text("c").unwrap());
        PreparedCounter::new(&handle, "db", &counter, &CallOptions::default(), None).unwrap()
    }

    /// `handle` made to retire, and kept retiring by a read held pending (a retiring client
    /// with no call pending closes at once): the read and the retirement, to hold.
    async fn retiring(
        handle: &Arc<ClientHandle>,
    ) -> (
        impl Future<Output = SeqResult<()>>,
        std::pin::Pin<Box<dyn Future<Output = ()> + '_>>,
    ) {
        let read = handle.within(std::future::pending::<SeqResult<()>>(), Late::Read);
        let mut retiring: std::pin::Pin<Box<dyn Future<Output = ()>>> = Box::pin(handle.retire());
        assert!(futures_util::poll!(&mut retiring).is_pending());
        (read, retiring)
    }

    #[test]
    fn a_management_write_on_a_client_closed_or_retiring_is_refused_and_never_sent() {
        run(async {
            for close in [true, false] {
                let counter = prepared().await;
                let handle = counter.handle.clone();
                let _held = retiring(&handle).await;
                if close {
                    handle.close().await;
                }
                let sent = Arc::new(AtomicBool::new(false));
                let write = counter.fenced({
                    let sent = sent.clone();
                    move |_, _| {
                        sent.store(true, Ordering::SeqCst);
                        async { Ok(()) }
                    }
                });
                let e = write.await.unwrap_err();
                assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
                assert!(!sent.load(Ordering::SeqCst), "the write was never made");
                assert_eq!(handle.busy(), 1, "only the read is pending");
            }
        });
    }

    #[test]
    fn a_write_waiting_for_its_fence_when_the_client_closes_is_never_sent() {
        run(async {
            let counter = prepared().await;
            let handle = counter.handle.clone();
            // An earlier management write holds the counter's turn until told to end.
            let (taken, turn_taken) = tokio::sync::oneshot::channel::<()>();
            let (end, ended) = tokio::sync::oneshot::channel::<()>();
            let earlier = tokio::spawn({
                let state = counter.state.clone();
                async move {
                    state
                        .fenced(async move {
                            taken.send(()).unwrap();
                            let _ = ended.await;
                        })
                        .await
                }
            });
            turn_taken.await.unwrap();
            let sent = Arc::new(AtomicBool::new(false));
            let write = tokio::spawn(counter.fenced({
                let sent = sent.clone();
                move |_, _| async move {
                    sent.store(true, Ordering::SeqCst);
                    Ok(())
                }
            }));
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            assert!(!write.is_finished(), "the write waits for its turn");
            // The close's give-back waits for the turns too: it runs on its own.
            let closing = tokio::spawn(async move { handle.close().await });
            let e = write.await.unwrap().unwrap_err();
            assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
            assert!(e.message.contains("none is sent after"), "{}", e.message);
            end.send(()).unwrap();
            earlier.await.unwrap();
            closing.await.unwrap();
            // The write's task took its turn before the close's give-back (a fair lock):
            // by now it has looked at the client, and sent nothing.
            assert!(!sent.load(Ordering::SeqCst), "a write sent after the close");
        });
    }

    #[test]
    fn a_value_call_on_a_retiring_client_is_refused_and_not_counted_as_pending() {
        run(async {
            let counter = prepared().await;
            let handle = counter.handle.clone();
            let _held = retiring(&handle).await;
            let e = counter.submit(1).err().expect("refused");
            assert_eq!(e.code, ErrorCode::ClientClosed);
            assert_eq!(handle.busy(), 1, "only the read");
        });
    }

    /// A call that found its client open, refused because the registry let the client
    /// go since (it retired), is handed back with nothing done and nothing counted, for
    /// its caller to ask the registry again; one whose client its user closed (straight
    /// from open, or while it retired) is refused and counted, as `submit` refuses it.
    #[test]
    fn a_call_on_a_client_let_go_is_handed_back_uncounted_and_on_a_closed_one_refused() {
        run(async {
            for (retired, closed) in [(true, false), (true, true), (false, true)] {
                let stats = Arc::new(Stats::default());
                let handle = prepared().await.handle;
                let counter = CounterRef::new("counters", "seq", CounterName::text("c").unwrap());
                let options = CallOptions::default();
                let counter =
                    PreparedCounter::new(&handle, "db", &counter, &options, Some(stats.clone()))
                        .unwrap();
                let _held = if retired {
                    Some(retiring(&handle).await)
                } else {
                    None
                };
                if closed {
                    handle.close().await;
                }
                let let_go = retired && !closed;
                assert_eq!(handle.was_let_go(), let_go, "{retired} {closed}");
                let outcome = counter.try_submit(1);
                let failed = stats.snapshot().errors_of(ErrorCode::ClientClosed);
                if let_go {
                    assert!(outcome.is_none(), "handed back to ask again");
                    assert_eq!(failed, 0, "not counted");
                    assert_eq!(handle.busy(), 1, "only the read: nothing was submitted");
                    // `submit` (the caller's last word) refuses it, counted.
                    let e = counter.submit(1).err().expect("refused");
                    assert_eq!(e.code, ErrorCode::ClientClosed);
                    assert_eq!(stats.snapshot().errors_of(ErrorCode::ClientClosed), 1);
                } else {
                    let e = outcome.expect("answered").err().expect("refused");
                    assert_eq!(e.code, ErrorCode::ClientClosed);
                    assert_eq!(failed, 1, "counted");
                }
            }
        });
    }

    /// The close that ends a retirement keeps the client let go: a call refused after
    /// it still asks the registry again.
    #[test]
    fn a_client_closed_as_its_retirement_ends_is_still_let_go() {
        run(async {
            let counter = prepared().await;
            let handle = counter.handle.clone();
            handle.retire().await;
            assert_eq!(
                handle.phase(),
                crate::engine::client::lifecycle::Phase::Closed
            );
            assert!(handle.was_let_go());
            assert!(counter.try_submit(1).is_none());
        });
    }

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
