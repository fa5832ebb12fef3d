//! The management calls of one prepared counter ([`Managed`]): the read of its value and
//! the writes that move it (`init`, `set`, `reset`, `drop`, `raiseTo`, `syncToMax`).
//!
//! A call is admitted to the counter's client before anything is made or sent
//! ([`PreparedCounter::manage`]), as a call for values is: a client closed (or retiring)
//! by then sends nothing. That the admission comes first, and apart, is what lets a
//! caller whose client the registry let go in that instant ask the registry again
//! ([`PreparedCounter::try_manage`]) instead of failing a call whose user closed nothing.
//!
//! Every write is fenced here, so that no caller can forget it: what this process holds
//! of the counter is forgotten before and after the write ([`Fence`]).

use std::future::Future;
use std::sync::Arc;

use crate::engine::alloc::counter_state::CounterState;
use crate::engine::alloc::prepared_counter::PreparedCounter;
use crate::engine::client::handle::{Admission, ClientHandle, Late};
use crate::engine::counter::locator::Locator;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::SeqResult;
use crate::engine::management;
use crate::engine::store::counter_store::CounterRef;
use crate::engine::store::driver_store::DriverStore;
use crate::engine::store::mongo_driver::MongoDriver;

/// A management call of a prepared counter, admitted to its client: counted as pending
/// (a retiring client waits for it) until the call it makes ends. Each method makes one
/// call, bounded as calls are (the call timeout, the client closing).
pub struct Managed {
    counter: PreparedCounter,
    admission: Admission,
}

impl PreparedCounter {
    /// A management call of this counter, admitted to its client; `CLIENT_CLOSED`, with
    /// nothing made or sent, once the client is closed or retiring.
    pub fn manage(&self) -> SeqResult<Managed> {
        let admission = self.handle().admit()?;
        Ok(Managed {
            counter: self.clone(),
            admission,
        })
    }

    /// [`PreparedCounter::manage`], or `None`, with nothing done, when the registry let
    /// the client go ([`ClientHandle::was_let_go`]) after the caller found it open: the
    /// caller then asks the registry again, as for a call for values
    /// ([`PreparedCounter::try_submit`]).
    pub fn try_manage(&self) -> Option<SeqResult<Managed>> {
        match self.manage() {
            Err(_) if self.handle().was_let_go() => None,
            managed => Some(managed),
        }
    }
}

impl Managed {
    /// The counter's value, the last value handed out, without advancing it.
    pub fn current(self) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        let (store, counter) = (self.store(), self.counter.counter().clone());
        let read = async move { management::current(&store, &counter).await };
        self.admission.within(read, Late::Read)
    }

    /// Creates the counter ([`management::init`]); `true` when this call created it.
    pub fn init(
        self,
        start: Option<i64>,
        config: Option<SequenceConfig>,
    ) -> impl Future<Output = SeqResult<bool>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::init(&store, &counter, start, config).await
        })
    }

    /// Sets the counter so that the next value is `value + step` ([`management::set`]).
    pub fn set(
        self,
        value: i64,
        upsert: bool,
    ) -> impl Future<Output = SeqResult<()>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::set(&store, &counter, value, upsert).await
        })
    }

    /// Puts the counter back to its start ([`management::reset`]); returns that start.
    pub fn reset(
        self,
        default_start: i64,
    ) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::reset(&store, &counter, default_start).await
        })
    }

    /// Deletes the counter; `true` when it existed.
    pub fn drop_counter(self) -> impl Future<Output = SeqResult<bool>> + Send + 'static {
        self.fenced(
            |store, counter| async move { management::drop_counter(&store, &counter).await },
        )
    }

    /// Moves the counter on to `value` at least, in its direction
    /// ([`management::raise_to`]); returns its value afterwards.
    pub fn raise_to(self, value: i64) -> impl Future<Output = SeqResult<i64>> + Send + 'static {
        self.fenced(move |store, counter| async move {
            management::raise_to(&store, &counter, value).await
        })
    }

    /// Moves the counter on to the furthest value `path` reaches in collection `source`
    /// of its database ([`management::sync_to_source`]); returns its value afterwards.
    pub fn sync_to(
        self,
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

    /// The store of management calls, which publishes each command it sends as a
    /// round-trip event. Not the store of the counter's fetches: a fetch publishes one
    /// event of its own however many commands it took, and must not publish them twice.
    fn store(&self) -> DriverStore<MongoDriver> {
        DriverStore(self.counter.driver().clone().publishing_commands())
    }

    /// The management write `write` (given the management store and the counter),
    /// fenced ([`Fence::fenced`]): what this process holds of the counter, and of the
    /// located counters that may find the same document, is forgotten before and after
    /// it, as PostgreSQL's `setval` discards the session's cache. The call is bounded by
    /// the call timeout, but the fenced write runs to its end in a task of its own: a
    /// write the server applies after the call gave up must still be followed by the
    /// discard, or this process would hand out values of a block fetched before a write
    /// that moved the counter back.
    fn fenced<T, F, Fut>(self, write: F) -> impl Future<Output = SeqResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(DriverStore<MongoDriver>, CounterRef) -> Fut,
        Fut: Future<Output = SeqResult<T>> + Send + 'static,
    {
        let fence = Fence::of(&self.counter);
        let handle = self.counter.handle().clone();
        let write = write(self.store(), self.counter.counter().clone());
        // Once its fence is taken (it may wait for an earlier write or for fetches), the
        // write looks at its client again, so a client closed while it waited sends
        // nothing.
        let gated = async move {
            handle.ensure_open()?;
            write.await
        };
        let write = management::to_its_end(async move { fence.fenced(gated).await });
        self.admission.within(write, Late::Write)
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
    /// What a management write on `counter` must fence.
    fn of(counter: &PreparedCounter) -> Fence {
        match counter.counter().locator {
            Locator::ById => Fence::Counter(counter.state().clone()),
            // Other fields (another plugin's locator) may find the same document, each with
            // a state of its own: every located counter that may find it is fenced too.
            Locator::ByFields(_) => Fence::Collection(Box::new(CollectionFence {
                handle: counter.handle().clone(),
                database: counter.driver().database().name().to_string(),
                counter: counter.counter().clone(),
                own: counter.state().clone(),
            })),
        }
    }

    /// Runs the management write `op` with the states fenced.
    async fn fenced<T>(self, op: impl Future<Output = T>) -> T {
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
    use crate::engine::error::ErrorCode;
    use crate::engine::test_support::{prepared_of_closed_port, retiring, run};

    /// A management call on a client its user closed is refused; on one the registry let
    /// go (retiring, or closed as its retirement ended) it is handed back for its caller
    /// to ask again. Either way nothing is made, nothing sent, nothing left pending.
    #[test]
    fn a_management_call_on_a_client_let_go_is_handed_back_and_on_a_closed_one_refused() {
        run(async {
            for (retired, closed) in [(true, false), (true, true), (false, true)] {
                let counter = prepared_of_closed_port().await;
                let handle = counter.handle().clone();
                let _held = if retired {
                    Some(retiring(&handle).await)
                } else {
                    None
                };
                if closed {
                    handle.close().await;
                }
                let e = counter.manage().err().expect("refused");
                assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
                let pending = usize::from(retired);
                assert_eq!(
                    handle.busy(),
                    pending,
                    "only the read that keeps it retiring"
                );
                match counter.try_manage() {
                    None => assert!(retired && !closed, "handed back: {retired} {closed}"),
                    Some(Err(e)) => {
                        assert!(closed, "refused: {retired} {closed}");
                        assert_eq!(e.code, ErrorCode::ClientClosed);
                    }
                    Some(Ok(_)) => panic!("admitted on a client not open"),
                }
                assert_eq!(handle.busy(), pending);
            }
            // Closed as its retirement ends, not by its user: still let go.
            let counter = prepared_of_closed_port().await;
            counter.handle().retire().await;
            assert!(counter.try_manage().is_none());
        });
    }

    #[test]
    fn an_admitted_call_keeps_a_retiring_client_until_it_ends() {
        run(async {
            let counter = prepared_of_closed_port().await;
            let handle = counter.handle().clone();
            let managed = counter.manage().expect("admitted");
            assert_eq!(handle.busy(), 1);
            let mut retiring = Box::pin(handle.retire());
            assert!(
                futures_util::poll!(&mut retiring).is_pending(),
                "waits for it"
            );
            drop(managed);
            retiring.await;
            assert_eq!(handle.busy(), 0);
        });
    }

    #[test]
    fn a_write_waiting_for_its_fence_when_the_client_closes_is_never_sent() {
        run(async {
            let counter = prepared_of_closed_port().await;
            let handle = counter.handle().clone();
            // An earlier management write holds the counter's turn until told to end.
            let (taken, turn_taken) = tokio::sync::oneshot::channel::<()>();
            let (end, ended) = tokio::sync::oneshot::channel::<()>();
            let earlier = tokio::spawn({
                let state = counter.state().clone();
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
            let write = tokio::spawn(counter.manage().expect("admitted").fenced({
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
}
