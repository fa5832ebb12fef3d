//! Reading and writing a counter outright: its value (`current`), creating it (`init`),
//! setting it (`set`, and `setCountersWhere` for every plain counter a filter matches),
//! putting it back to its start (`reset`) and deleting it (`drop`).

use crate::engine::alloc::allocate::{contention, MAX_ATTEMPTS};
use crate::engine::alloc::counter_state::CounterState;
use std::sync::Arc;

use crate::engine::client::handle::{ClientHandle, Late};
use crate::engine::client::write_concern::WriteConcernSpec;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::management::{counter_value_of, to_its_end, value_of};
use crate::engine::store::counter_store::{CounterRef, CounterStore, NewCounter};
use mongodb::bson::Document;

/// The value a plain counter stores so that its next value is `start`: one step
/// before it (`start - 1` for the helper's counters, `start - step` for a `counterAt`
/// handle with a `step`).
fn before(start: i64, counter: &CounterRef) -> SeqResult<i64> {
    start.checked_sub(counter.step).ok_or_else(|| {
        SeqError::overflow(format!(
            "Sequence '{}' cannot start at {start} with a step of {}: the value before it \
             is outside the 64-bit range",
            counter.label, counter.step
        ))
    })
}

/// The counter's value (the last value handed out) without advancing it.
pub async fn current<S: CounterStore>(store: &S, counter: &CounterRef) -> SeqResult<i64> {
    let found = store
        .read(counter)
        .await?
        .ok_or_else(|| SeqError::not_found(&counter.label))?;
    // Only a plain counter may hold a fraction; one whose configuration is damaged is
    // read as a configured one (an integer or nothing), as before.
    match &found.config {
        Ok(None) => counter_value_of(counter, None, found.value.as_ref()),
        _ => value_of(counter, found.value.as_ref()),
    }
}

/// Creates the counter so that the next value is `start` (with a configuration, its
/// default start when `None`), storing its step and limits; an existing counter is left
/// as it is. `true` when this call created it.
pub async fn init<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    start: Option<i64>,
    config: Option<SequenceConfig>,
) -> SeqResult<bool> {
    let (start, value) = match &config {
        Some(config) => {
            let start = start.unwrap_or_else(|| config.default_start());
            config.check_start(start)?;
            (start, config.value_before(start)?)
        }
        None => {
            let start = start.unwrap_or(1);
            (start, before(start, counter)?)
        }
    };
    let new = NewCounter {
        value,
        start: Some(start),
        config,
    };
    store.create(counter, new).await
}

/// Sets the counter so that the next value is `value + step` (PostgreSQL's `setval`).
/// With `upsert`, a missing counter is created; otherwise `SEQUENCE_NOT_FOUND`. A value
/// outside a configured counter's limits is refused with `INVALID_ARGUMENT`.
pub async fn set<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    value: i64,
    upsert: bool,
) -> SeqResult<()> {
    for _ in 0..MAX_ATTEMPTS {
        let Some(found) = store.read(counter).await? else {
            if !upsert {
                return Err(SeqError::not_found(&counter.label));
            }
            if store.create(counter, NewCounter::plain(value)).await? {
                return Ok(());
            }
            continue;
        };
        let config = found.configuration(counter)?;
        if let Some(config) = &config {
            if value < config.min || value > config.max {
                return Err(SeqError::invalid_argument(format!(
                    "Sequence '{}' cannot be set to {value}: outside its minValue {} .. \
                     maxValue {}",
                    counter.label, config.min, config.max
                )));
            }
        }
        if store
            .compare_and_set(counter, config.as_ref(), None, value)
            .await?
        {
            return Ok(());
        }
    }
    Err(contention(counter))
}

/// Puts the counter back so that the next value is its start: the one given to `init`,
/// else `default_start` (a configured counter's own default start). Returns that start.
pub async fn reset<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    default_start: i64,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let found = store
            .read(counter)
            .await?
            .ok_or_else(|| SeqError::not_found(&counter.label))?;
        let config = found.configuration(counter)?;
        let start = match (&found.start, &config) {
            (Some(stored), _) => value_of(counter, Some(stored))?,
            (None, Some(config)) => config.default_start(),
            (None, None) => default_start,
        };
        let value = match &config {
            Some(config) => config.value_before(start)?,
            None => before(start, counter)?,
        };
        if store
            .compare_and_set(counter, config.as_ref(), None, value)
            .await?
        {
            return Ok(start);
        }
    }
    Err(contention(counter))
}

/// Deletes the counter. `true` when it existed.
pub async fn drop_counter<S: CounterStore>(store: &S, counter: &CounterRef) -> SeqResult<bool> {
    store.delete(counter).await
}

/// Sets the field of every plain counter of `counter`'s collection in `database` matching
/// `fields` to `value` (mongoose-sequence's `counterReset`), with `concern` (the call's
/// write concern, else its `Db`'s); how many matched. Any counter of that collection and
/// field may match, so what this process holds of each is forgotten around the write, as
/// a `set` of one counter forgets its own: no cached block from before the write is
/// handed out after it. Bounded by the call timeout; the fenced write runs to its end
/// (see `Managed::set`).
pub async fn set_counters_where(
    handle: Arc<ClientHandle>,
    database: String,
    concern: Option<WriteConcernSpec>,
    counter: CounterRef,
    fields: Document,
    value: i64,
) -> SeqResult<u64> {
    let store = handle
        .driver(&database)?
        .with_write_concern(concern.map(|w| w.to_driver()))
        // Its command is published as a round-trip event.
        .publishing_commands();
    // Admitted before anything is sent, and looked at again once fenced, as a write of
    // one counter is (`Managed::set`).
    let admission = handle.admit()?;
    let write = to_its_end(async move {
        let gated = async {
            handle.ensure_open()?;
            store.set_where(&counter, fields, value).await
        };
        CounterState::fenced_all(
            || handle.counter_states_in(&database, &counter.collection, &counter.field),
            gated,
        )
        .await
    });
    admission.within(write, Late::Write).await
}
