//! Managing counters: read without advancing, set, reset, create, drop, list, and raise a
//! counter to the largest value already used in a collection.
//!
//! Each operation is one atomic single-document write (or read), guarded on the
//! counter's configuration as read, so it can never mix with a concurrent `init` of
//! another configuration. Racing `next()` calls see either the state before it or after
//! it. Like PostgreSQL's `setval`, `set` and `reset` may move a counter backwards, after
//! which values already handed out come again; values outside a configured counter's
//! limits are refused.
//!
//! `raise_to` and `sync_to_source` only ever move a counter on in its own direction,
//! never back over values it handed out: an ascending counter up to a larger value
//! (`$max`), a descending one (negative step) down to a smaller one (`$min`).
//!
//! One file per role: reading and writing a counter outright (`writes`: `current`,
//! `init`, `set`, `reset`, `drop`, `setCountersWhere`), moving it on in its direction
//! (`raise`: `raiseTo`, `syncToMax`), finding the values a collection already uses
//! (`source`) and listing counters (`listing`).

mod listing;
pub(crate) mod managed;
mod raise;
mod source;
mod writes;

// The writes of one counter are reached through a management call admitted to its client
// (`managed::Managed`), whose methods fence them: outside the engine nothing can run one
// unfenced.
pub(in crate::engine) use raise::{raise_to, sync_to_source, SourceValues};
/// For the model test's source of values.
#[cfg(test)]
pub use source::extreme_of;
pub(in crate::engine) use source::SourceField;
pub use writes::set_counters_where;
pub(in crate::engine) use writes::{current, drop_counter, init, reset, set};

use std::future::Future;

use mongodb::bson::Bson;

use crate::engine::counter::counter_value::{counted_value, integer_after_increment};
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::store::counter_store::CounterRef;

/// `write` spawned on the runtime, so that it completes even when the call awaiting it
/// gives up (its deadline, its client closing): a fenced write must reach the discard
/// that follows it. The returned future only receives the outcome.
pub(in crate::engine) fn to_its_end<T, F>(
    write: F,
) -> impl Future<Output = SeqResult<T>> + Send + 'static
where
    T: Send + 'static,
    F: Future<Output = SeqResult<T>> + Send + 'static,
{
    let task = tokio::spawn(crate::engine::panic_safety::caught(
        "management write",
        write,
    ));
    async move {
        task.await
            .unwrap_or_else(|_| Err(SeqError::internal("management write")))
    }
}

/// The counter's value read from `value` (its counter field); a value that is not a
/// usable integer fails as an invalid counter.
fn value_of(counter: &CounterRef, value: Option<&Bson>) -> SeqResult<i64> {
    integer_after_increment(value)
        .map_err(|found| SeqError::invalid_counter(&counter.label, &counter.field, &found))
}

/// [`value_of`] for a counter configured as `config`: a plain one (`None`) may hold a
/// fraction another plugin left, which stands for the whole number past it in the
/// counter's direction, as the next call that takes a value reads it.
fn counter_value_of(
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
    value: Option<&Bson>,
) -> SeqResult<i64> {
    match config {
        Some(_) => value_of(counter, value),
        None => counted_value(value, counter.step)
            .map_err(|found| SeqError::invalid_counter(&counter.label, &counter.field, &found)),
    }
}

#[cfg(test)]
#[path = "management_tests.rs"]
mod tests;
