//! [`CounterStore`] on MongoDB, written once for every way of reaching it: the three
//! primitive operations come from a [`CounterDriver`] (plain, or inside a transaction),
//! the filters from `filters`.

use std::future::Future;

use mongodb::bson::{doc, Bson, Document};

use crate::engine::counter::counter_value::compact_integer;
use crate::engine::counter::id_range::IdRange;
use crate::engine::counter::sequence_config::{ConfigFields, SequenceConfig};
use crate::engine::error::SeqResult;
use crate::engine::store::counter_store::{
    CounterDoc, CounterRef, CounterStore, Direction, Endpoint, FetchToken, FieldGuard, NewCounter,
};
use crate::engine::store::filters;

/// The primitive operations on a counters collection.
pub trait CounterDriver: Send + Sync {
    /// Where the operations go (nothing known by default).
    fn endpoint(&self) -> Endpoint {
        Endpoint::default()
    }

    /// `findOneAndUpdate(filter, update, { upsert })` returning the counter field after
    /// the update. An upsert that loses the race for the counter's `_id` gives `None`.
    fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
        upsert: bool,
    ) -> impl Future<Output = SeqResult<Option<Bson>>> + Send;

    /// The counter document (its field and configuration), if any.
    fn find_counter(
        &self,
        counter: &CounterRef,
    ) -> impl Future<Output = SeqResult<Option<Document>>> + Send;

    /// Creates the counter with `fields` (its value, start and configuration), in a
    /// document of its own or beside the other counters of its document
    /// ([`filters::without_counter`]); `false` when the counter exists already.
    fn create_counter(
        &self,
        counter: &CounterRef,
        fields: Document,
    ) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Deletes the counter: its document when it holds nothing else
    /// ([`filters::alone_in_document`]), otherwise only its fields ([`filters::removal`]);
    /// `true` when it existed.
    fn delete_counter(&self, counter: &CounterRef) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Makes sure the unique index over the fields of the counter's locator exists, so
    /// that two creations of the counter collide instead of making two documents
    /// (nothing to do for a counter found by `_id`).
    fn ensure_unique_index(
        &self,
        counter: &CounterRef,
    ) -> impl Future<Output = SeqResult<()>> + Send;
}

/// The counter operations over a [`CounterDriver`].
#[derive(Clone)]
pub struct DriverStore<D>(pub D);

impl<D: CounterDriver> DriverStore<D> {
    /// One conditional update without upsert: whether it matched the counter.
    async fn matched(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
    ) -> SeqResult<bool> {
        let updated = self
            .0
            .find_and_update(counter, filter, update, false)
            .await?;
        Ok(updated.is_some())
    }
}

impl<D: CounterDriver> CounterStore for DriverStore<D> {
    fn endpoint(&self) -> Endpoint {
        self.0.endpoint()
    }

    async fn increment_integer(
        &self,
        counter: &CounterRef,
        by: i64,
        upsert: bool,
    ) -> SeqResult<Option<Bson>> {
        let filter = filters::plain_integer(counter);
        self.0
            .find_and_update(counter, filter, filters::increment(counter, by), upsert)
            .await
    }

    async fn prepare_upsert(&self, counter: &CounterRef) -> SeqResult<()> {
        self.0.ensure_unique_index(counter).await
    }

    async fn increment_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        by: i64,
    ) -> SeqResult<Option<Bson>> {
        let filter = filters::plain_guarded(counter, guard);
        self.0
            .find_and_update(counter, filter, filters::increment(counter, by), false)
            .await
    }

    async fn set_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        value: i64,
    ) -> SeqResult<bool> {
        let filter = filters::plain_guarded(counter, guard);
        self.matched(counter, filter, filters::set_value(counter, value))
            .await
    }

    async fn read(&self, counter: &CounterRef) -> SeqResult<Option<CounterDoc>> {
        let found = self.0.find_counter(counter).await?;
        Ok(found.map(|d| filters::counter_doc(counter, d)))
    }

    async fn create(&self, counter: &CounterRef, new: NewCounter) -> SeqResult<bool> {
        // Creation collides with a racing one only under the locator's unique index.
        self.0.ensure_unique_index(counter).await?;
        let mut fields = doc! { counter.field.as_str(): compact_integer(new.value) };
        if let Some(start) = new.start {
            fields.insert(
                ConfigFields::of(&counter.field).start,
                compact_integer(start),
            );
        }
        if let Some(config) = &new.config {
            fields.extend(config.to_fields(&counter.field));
        }
        self.0.create_counter(counter, fields).await
    }

    async fn advance_configured(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        count: i64,
    ) -> SeqResult<Option<Bson>> {
        let (Some(filter), Some(span)) = (
            filters::configured_with_room(counter, config, count),
            config.span(count),
        ) else {
            return Ok(None);
        };
        self.0
            .find_and_update(counter, filter, filters::increment(counter, span), false)
            .await
    }

    async fn restart_cycle(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        needs: i64,
        value: i64,
    ) -> SeqResult<bool> {
        let filter = filters::configured_without_room(counter, config, needs);
        self.matched(counter, filter, filters::set_value(counter, value))
            .await
    }

    async fn compare_and_set(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        expected: Option<i64>,
        value: i64,
    ) -> SeqResult<bool> {
        let filter = filters::configured_at(counter, config, expected);
        let update = match expected {
            Some(_) => filters::set_value(counter, value),
            None => filters::set_value_unmarked(counter, value),
        };
        self.matched(counter, filter, update).await
    }

    async fn delete(&self, counter: &CounterRef) -> SeqResult<bool> {
        self.0.delete_counter(counter).await
    }

    async fn raise(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        value: i64,
        direction: Direction,
    ) -> SeqResult<Option<Bson>> {
        let configured = filters::configured_as(counter, config);
        if config.is_none() {
            // A plain counter found by other fields may be stored twice (a unique index
            // never made): refused here, before either write below picks one of them.
            self.0.ensure_unique_index(counter).await?;
        }
        // Most counters are never cached: tried first, in one round trip. None of these
        // writes upserts over an existing document (inside a transaction the collision
        // would abort it), except when a cached fetch creates the counter between them.
        let uncached = || filters::cached_flag(counter, configured.clone(), false);
        let plain_update = filters::raise_value(counter, value, direction);
        let raised = self
            .0
            .find_and_update(counter, uncached(), plain_update.clone(), false)
            .await?;
        if raised.is_some() {
            return Ok(raised);
        }
        let cached = filters::cached_flag(counter, configured.clone(), true);
        let marked = filters::raise_marked(counter, value, direction);
        let raised = self
            .0
            .find_and_update(counter, cached, marked, false)
            .await?;
        if raised.is_some() || config.is_some() {
            return Ok(raised);
        }
        // A missing plain counter is created at `value` (under its unique index, above).
        self.0
            .find_and_update(counter, uncached(), plain_update, true)
            .await
    }

    async fn give_back(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        tail: IdRange,
        token: FetchToken,
        before: i64,
    ) -> SeqResult<bool> {
        let filter = filters::returnable(counter, config, tail, token);
        self.matched(counter, filter, filters::set_value(counter, before))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::counter::counter_name::CounterName;
    use crate::engine::test_support::run;
    use mongodb::bson::doc;
    use std::sync::Mutex;

    /// A driver that only records the fields of the counters it is asked to create.
    #[derive(Default)]
    struct Inserts(Mutex<Vec<Document>>);

    impl CounterDriver for Inserts {
        async fn find_and_update(
            &self,
            _: &CounterRef,
            _: Document,
            _: Document,
            _: bool,
        ) -> SeqResult<Option<Bson>> {
            Ok(None)
        }

        async fn find_counter(&self, _: &CounterRef) -> SeqResult<Option<Document>> {
            Ok(None)
        }

        async fn create_counter(&self, _: &CounterRef, document: Document) -> SeqResult<bool> {
            self.0.lock().unwrap().push(document);
            Ok(true)
        }

        async fn delete_counter(&self, _: &CounterRef) -> SeqResult<bool> {
            Ok(false)
        }

        async fn ensure_unique_index(&self, _: &CounterRef) -> SeqResult<()> {
            Ok(())
        }
    }

    /// The store hands the driver the counter's fields only; the creation's update
    /// (`$set`, never an insert: a document may hold other counters) makes the counter's
    /// marks anew (a cached fetch's flag, or none), by a dotted path that leaves the
    /// other counters' marks as they are.
    #[test]
    fn a_cached_fetch_creating_its_counter_flags_it_beside_other_marks() {
        let store = DriverStore(Inserts::default());
        let token = FetchToken::fresh();
        let counter = CounterRef::new("counters", "seq", CounterName::text("a").unwrap());
        let cached = counter.clone().through_cache(token);
        run(async {
            assert!(store.create(&cached, NewCounter::plain(5)).await.unwrap());
            assert!(store.create(&counter, NewCounter::plain(5)).await.unwrap());
        });
        let created = store.0 .0.lock().unwrap().clone();
        assert_eq!(created, vec![doc! { "seq": 5 }, doc! { "seq": 5 }]);
        assert_eq!(
            filters::creation(&cached, doc! { "seq": 5 }),
            doc! { "$set": { "seq": 5, "_mseq_marks.seq": { "cached": token.to_bson() } } }
        );
        assert_eq!(
            filters::creation(&counter, doc! { "seq": 5 }),
            doc! { "$set": { "seq": 5 }, "$unset": { "_mseq_marks.seq": "" } }
        );
    }
}
