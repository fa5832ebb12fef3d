//! Managing counters: read without advancing, set, reset, create, drop, list, and raise a
//! counter to the largest value already used in a collection.
//!
//! Each operation is one atomic single-document write (or read). Racing `next()` calls see
//! either the state before it or after it. Like PostgreSQL's `setval`, `set` and `reset`
//! may move a counter backwards, after which values already handed out come again.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;

use crate::engine::counter_value::{compact_integer, integer_after_increment};
use crate::engine::driver_counters::CounterDriver;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::mongo_store::MongoStore;
use crate::engine::sequence_config::{ConfigFields, SequenceConfig};
use crate::engine::store::CounterRef;
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

impl MongoStore {
    /// The counter's value (the last value handed out) without advancing it.
    pub async fn current(&self, counter: &CounterRef) -> SeqResult<i64> {
        let found = self
            .find_counter(counter)
            .await?
            .ok_or_else(|| SeqError::not_found(&counter.label))?;
        value_of(counter, found.get(&counter.field))
    }

    /// Creates the counter so that the next value is `start` (with a configuration, its
    /// default start when `None`), storing its step and limits; an existing counter is
    /// left as it is. `true` when this call created it.
    pub async fn init(
        &self,
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
        let mut document = doc! {
            "_id": counter.id(),
            counter.field.as_str(): compact_integer(value),
            ConfigFields::of(&counter.field).start: compact_integer(start),
        };
        if let Some(config) = &config {
            document.extend(config.to_fields(&counter.field));
        }
        self.insert_counter(counter, document).await
    }

    /// Sets the counter so that the next value is `value + step` (PostgreSQL's `setval`).
    /// With `upsert`, a missing counter is created; otherwise `SEQUENCE_NOT_FOUND`.
    pub async fn set(&self, counter: &CounterRef, value: i64, upsert: bool) -> SeqResult<()> {
        let result = self
            .counters(counter)
            .update_one(
                doc! { "_id": counter.id() },
                doc! { "$set": { counter.field.as_str(): compact_integer(value) } },
            )
            .upsert(upsert)
            .await
            .map_err(|e| self.error(&e))?;
        if result.matched_count == 0 && result.upserted_id.is_none() {
            return Err(SeqError::not_found(&counter.label));
        }
        Ok(())
    }

    /// Puts the counter back so that the next value is its start: the one given to `init`,
    /// else `default_start`. Returns that start.
    pub async fn reset(&self, counter: &CounterRef, default_start: i64) -> SeqResult<i64> {
        let found = self
            .find_counter(counter)
            .await?
            .ok_or_else(|| SeqError::not_found(&counter.label))?;
        let config = SequenceConfig::from_doc(&found, &counter.field)
            .map_err(|damage| SeqError::invalid_counter(&counter.label, &counter.field, &damage))?;
        let start = match (found.get(ConfigFields::of(&counter.field).start), &config) {
            (Some(stored), _) => value_of(counter, Some(stored))?,
            (None, Some(config)) => config.default_start(),
            (None, None) => default_start,
        };
        let value = match &config {
            Some(config) => config.value_before(start)?,
            None => before(start, counter)?,
        };
        self.set(counter, value, false).await?;
        Ok(start)
    }

    /// Deletes the counter. `true` when it existed.
    pub async fn drop_counter(&self, counter: &CounterRef) -> SeqResult<bool> {
        let result = self
            .counters(counter)
            .delete_one(doc! { "_id": counter.id() })
            .await
            .map_err(|e| self.error(&e))?;
        Ok(result.deleted_count == 1)
    }

    /// Every counter of `collection` whose `field` holds an integer: `(_id, value)`.
    pub async fn list(&self, collection: &str, field: &str) -> SeqResult<Vec<(Bson, i64)>> {
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
                Some((d.get("_id")?.clone(), value))
            })
            .collect())
    }

    /// Raises the counter to at least the largest integer in `field` of `source` (atomic
    /// `$max`: it never lowers it, and racing `next()` calls are not lost). Creates the
    /// counter when absent. Returns the counter's value afterwards.
    pub async fn sync_to_max(
        &self,
        counter: &CounterRef,
        source: &str,
        field: &str,
    ) -> SeqResult<i64> {
        let largest = self
            .database()
            .collection::<Document>(source)
            .find_one(doc! { field: { "$type": ["int", "long", "double"] } })
            .sort(doc! { field: -1 })
            .projection(doc! { field: 1 })
            .await
            .map_err(|e| self.error(&e))?;
        let max = match largest {
            None => 0,
            Some(d) => match d.get(field) {
                Some(Bson::Double(v)) => v.ceil() as i64,
                other => integer_after_increment(other).unwrap_or(0),
            },
        };
        let after = self
            .counters(counter)
            .find_one_and_update(
                doc! { "_id": counter.id() },
                doc! { "$max": { counter.field.as_str(): compact_integer(max) } },
            )
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await
            .map_err(|e| self.error(&e))?
            .ok_or_else(|| SeqError::not_found(&counter.label))?;
        value_of(counter, after.get(&counter.field))
    }
}
