//! Managing counters: read without advancing, set, reset, create, drop, list, and raise a
//! counter to the largest value already used in a collection.
//!
//! Each operation is one atomic single-document write (or read), guarded on the
//! counter's configuration as read, so it can never mix with a concurrent `init` of
//! another configuration. Racing `next()` calls see either the state before it or after
//! it. Like PostgreSQL's `setval`, `set` and `reset` may move a counter backwards, after
//! which values already handed out come again; values outside a configured counter's
//! limits are refused.

use mongodb::bson::{doc, Bson, Document};

use crate::engine::allocate::{contention, MAX_ATTEMPTS};
use crate::engine::counter_value::integer_after_increment;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::mongo_store::MongoStore;
use crate::engine::sequence_config::SequenceConfig;
use crate::engine::store::{CounterRef, CounterStore, NewCounter};
use crate::engine::validate::check_field;

fn value_of(counter: &CounterRef, value: Option<&Bson>) -> SeqResult<i64> {
    integer_after_increment(value)
        .map_err(|found| SeqError::invalid_counter(&counter.label, &counter.field, &found))
}

fn before(start: i64, counter: &CounterRef) -> SeqResult<i64> {
    start.checked_sub(1).ok_or_else(|| {
        SeqError::overflow(format!(
            "Sequence '{}' cannot start at the lowest 64-bit value",
            counter.label
        ))
    })
}

/// 2^63 as a double: the first double beyond the 64-bit integer range.
const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

/// The counter's value (the last value handed out) without advancing it.
pub async fn current<S: CounterStore>(store: &S, counter: &CounterRef) -> SeqResult<i64> {
    let found = store
        .read(counter)
        .await?
        .ok_or_else(|| SeqError::not_found(&counter.label))?;
    value_of(counter, found.value.as_ref())
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
                    "Sequence '{}' cannot be set to {value}: outside its minValue {} ..                      maxValue {}",
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

/// Raises the counter to at least `largest` (atomic `$max`: it never lowers it, and
/// racing `next()` calls are not lost), creating a plain counter when absent. A
/// configured counter must be ascending and `largest` within its `maxValue`. Returns the
/// counter's value afterwards.
pub async fn raise_to<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    largest: i64,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let config = match store.read(counter).await? {
            None => None,
            Some(found) => found.configuration(counter)?,
        };
        if let Some(config) = &config {
            if config.step < 0 {
                return Err(SeqError::invalid_argument(format!(
                    "Sequence '{}' descends; syncToMax only raises ascending counters",
                    counter.label
                )));
            }
            if largest > config.max {
                return Err(SeqError::invalid_argument(format!(
                    "Sequence '{}' cannot be raised to {largest}: beyond its maxValue {}",
                    counter.label, config.max
                )));
            }
        }
        if let Some(after) = store.raise(counter, config.as_ref(), largest).await? {
            return value_of(counter, Some(&after));
        }
    }
    Err(contention(counter))
}

/// The largest value `syncToMax` takes from a source field: whole numbers within the
/// 64-bit range; doubles are rounded up, and non-finite or out-of-range ones ignored.
pub fn usable_maximum(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(d) if d.is_finite() && (-I64_RANGE_END..I64_RANGE_END).contains(&d.ceil()) => {
            Some(d.ceil() as i64)
        }
        _ => None,
    }
}

impl MongoStore {
    /// Every counter of `collection` whose `field` holds an integer: `(_id, value)`.
    pub async fn list(
        &self,
        collection: &str,
        field: &str,
    ) -> SeqResult<Vec<(Bson, i64, Option<SequenceConfig>)>> {
        use futures_util::TryStreamExt;
        check_field(field)?;
        let filter = doc! { field: { "$type": ["int", "long", "double"] } };
        let docs: Vec<Document> = self
            .database()
            .collection::<Document>(collection)
            .find(filter)
            .sort(doc! { "_id": 1 })
            .await
            .map_err(|e| self.error(&e))?
            .try_collect()
            .await
            .map_err(|e| self.error(&e))?;
        Ok(docs
            .into_iter()
            .filter_map(|d| {
                let value = integer_after_increment(d.get(field)).ok()?;
                let config = SequenceConfig::from_doc(&d, field).ok().flatten();
                Some((d.get("_id")?.clone(), value, config))
            })
            .collect())
    }

    /// The largest usable value ([`usable_maximum`]) of `field` in collection `source`;
    /// 0 when there is none.
    pub async fn largest_in(&self, source: &str, field: &str) -> SeqResult<i64> {
        // Doubles of 2^63 and more (and infinities) are out of range: skip them on the
        // server, so a stray 1e300 cannot hide the real maximum.
        let filter = doc! {
            field: {
                "$type": ["int", "long", "double"],
                "$lt": I64_RANGE_END,
                "$gte": -I64_RANGE_END,
            }
        };
        let largest = self
            .database()
            .collection::<Document>(source)
            .find_one(filter)
            .sort(doc! { field: -1 })
            .projection(doc! { field: 1 })
            .await
            .map_err(|e| self.error(&e))?;
        Ok(largest
            .and_then(|d| usable_maximum(d.get(field)))
            .unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;
    use crate::engine::memory_store::MemoryStore;
    use crate::engine::test_support::run;

    fn counter(name: &str) -> CounterRef {
        let name = crate::engine::counter_name::CounterName::text(name).unwrap();
        CounterRef::new("counters", "seq", name)
    }

    #[test]
    fn set_outside_the_limits_is_refused_and_writes_nothing() {
        let store = MemoryStore::default();
        let c = counter("b");
        let config = SequenceConfig::new(1, Some(100), Some(200), false).unwrap();
        assert!(run(init(&store, &c, None, Some(config))).unwrap());
        let e = run(set(&store, &c, 0, false)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(run(current(&store, &c)).unwrap(), 99);
        run(set(&store, &c, 150, false)).unwrap();
        assert_eq!(run(current(&store, &c)).unwrap(), 150);
    }

    #[test]
    fn reset_uses_the_stored_start() {
        let store = MemoryStore::default();
        let c = counter("r");
        assert!(run(init(&store, &c, Some(1000), None)).unwrap());
        run(set(&store, &c, 5000, false)).unwrap();
        assert_eq!(run(reset(&store, &c, 1)).unwrap(), 1000);
        assert_eq!(run(current(&store, &c)).unwrap(), 999);
        assert!(run(drop_counter(&store, &c)).unwrap());
        assert_eq!(
            run(current(&store, &c)).unwrap_err().code,
            ErrorCode::SequenceNotFound
        );
    }

    #[test]
    fn raising_respects_limits_and_never_lowers() {
        let store = MemoryStore::default();
        let c = counter("s");
        assert_eq!(run(raise_to(&store, &c, 40)).unwrap(), 40);
        assert_eq!(run(raise_to(&store, &c, 7)).unwrap(), 40);
        let bounded = counter("bounded");
        let config = SequenceConfig::new(1, Some(1), Some(50), false).unwrap();
        run(init(&store, &bounded, None, Some(config))).unwrap();
        let e = run(raise_to(&store, &bounded, 51)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(run(current(&store, &bounded)).unwrap(), 0);
    }

    #[test]
    fn source_values_out_of_range_are_ignored() {
        assert_eq!(usable_maximum(Some(&Bson::Double(f64::INFINITY))), None);
        assert_eq!(usable_maximum(Some(&Bson::Double(1e300))), None);
        assert_eq!(usable_maximum(Some(&Bson::Double(f64::NAN))), None);
        assert_eq!(usable_maximum(Some(&Bson::Double(41.2))), Some(42));
        assert_eq!(usable_maximum(Some(&Bson::Int64(7))), Some(7));
    }
}
