//! The entry point of the engine: a counter prepared for calls ([`PreparedCounter`]).
//! Every call that takes values goes through [`PreparedCounter::submit`], which submits
//! it to the counter's one state in its client (directly, through the coalescer, or from
//! the block cache, as the options say), starts the work it needs, refuses values the
//! caller cannot receive and counts it. Its management calls are admitted by
//! [`PreparedCounter::manage`] (`management/managed.rs`), which fences every write.

use std::sync::Arc;

use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::counter_state::{
    spawn_background, CounterState, GivenBack, Lane, Mode, Outcome, Route, Submitted,
};
use crate::engine::call_options::CallOptions;
use crate::engine::client::handle::{Admission, ClientHandle, Late};
use crate::engine::error::{SeqError, SeqResult};
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
    pub(crate) fn driver(&self) -> &MongoDriver {
        &self.route.store.0
    }

    /// The client the counter was prepared in.
    pub(crate) fn handle(&self) -> &Arc<ClientHandle> {
        &self.handle
    }

    /// The counter's one state in its client.
    pub(crate) fn state(&self) -> &Arc<CounterState> {
        &self.state
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
        self.submit_if(self.handle.admit(), count)
    }

    /// [`PreparedCounter::submit`], or `None`, with nothing done and nothing counted, when
    /// the registry let the client go ([`ClientHandle::was_let_go`]) after the caller
    /// found it open: the caller then asks the registry for the connection's client
    /// again, as a call made a moment later would, instead of failing a call whose user
    /// closed nothing.
    pub fn try_submit(&self, count: i64) -> Option<SeqResult<Outcome>> {
        match self.handle.admit() {
            Err(_) if self.handle.was_let_go() => None,
            admitted => Some(self.submit_if(admitted, count)),
        }
    }

    /// The call submitted when `admitted` ([`ClientHandle::admit`]), otherwise refused
    /// and counted as failed.
    fn submit_if(&self, admitted: SeqResult<Admission>, count: i64) -> SeqResult<Outcome> {
        match admitted {
            Ok(admission) => Ok(self.submit_admitted(admission, count)),
            Err(error) => Err(refused(self.route.recorder.handle(), error)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::counter::counter_name::CounterName;
    use crate::engine::error::ErrorCode;
    use crate::engine::test_support::{prepared_of_closed_port as prepared, retiring, run};
    use crate::engine::text::validate::MAX_SAFE_INTEGER;

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
