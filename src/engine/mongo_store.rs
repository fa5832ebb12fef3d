//! [`CounterStore`] on a MongoDB database through the official driver.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{CollectionOptions, ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};

use crate::engine::counter_value::compact_integer;
use crate::engine::driver_error::{from_driver, is_duplicate_id};
use crate::engine::error::SeqResult;
use crate::engine::filters;
use crate::engine::sequence_config::SequenceConfig;
use crate::engine::store::{CounterDoc, CounterRef, CounterStore, FieldGuard};

/// Counters in one database, with the secrets to keep out of error messages.
#[derive(Clone)]
pub struct MongoStore {
    database: Database,
    secrets: std::sync::Arc<Vec<String>>,
    write_concern: Option<WriteConcern>,
}

impl MongoStore {
    /// A store over `database`; `secrets` are removed from every error message.
    pub fn new(database: Database, secrets: std::sync::Arc<Vec<String>>) -> Self {
        MongoStore {
            database,
            secrets,
            write_concern: None,
        }
    }

    /// The same store, writing with `concern` (the connection's default for `None`).
    pub fn with_write_concern(mut self, concern: Option<WriteConcern>) -> Self {
        self.write_concern = concern;
        self
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// A driver error as a typed error without secrets.
    pub fn error(&self, error: &mongodb::error::Error) -> crate::engine::error::SeqError {
        from_driver(error, &self.secrets)
    }

    /// The counters collection of `counter`, with this store's write concern.
    pub fn counters(&self, counter: &CounterRef) -> Collection<Document> {
        self.collection(counter)
    }

    fn collection(&self, counter: &CounterRef) -> Collection<Document> {
        match &self.write_concern {
            None => self.database.collection(&counter.collection),
            Some(concern) => self.database.collection_with_options(
                &counter.collection,
                CollectionOptions::builder()
                    .write_concern(concern.clone())
                    .build(),
            ),
        }
    }

    async fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
    ) -> SeqResult<Option<Bson>> {
        let found = self
            .collection(counter)
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .projection(filters::value_projection(counter))
            .await
            .map_err(|e| from_driver(&e, &self.secrets))?;
        Ok(found.and_then(|mut d| d.remove(&counter.field)))
    }
}

impl CounterStore for MongoStore {
    async fn increment_integer(&self, counter: &CounterRef, by: i64) -> SeqResult<Option<Bson>> {
        let update = filters::increment(counter, by);
        self.find_and_update(counter, filters::plain_integer(counter), update)
            .await
    }

    async fn increment_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        by: i64,
    ) -> SeqResult<Option<Bson>> {
        let filter = filters::plain_guarded(counter, guard);
        self.find_and_update(counter, filter, filters::increment(counter, by))
            .await
    }

    async fn read(&self, counter: &CounterRef) -> SeqResult<Option<CounterDoc>> {
        let found = self
            .collection(counter)
            .find_one(doc! { "_id": counter.id() })
            .projection(filters::counter_projection(counter))
            .await
            .map_err(|e| from_driver(&e, &self.secrets))?;
        Ok(found.map(|d| filters::counter_doc(counter, d)))
    }

    async fn create(&self, counter: &CounterRef, value: i64) -> SeqResult<bool> {
        let document = doc! {
            "_id": counter.id(),
            counter.field.as_str(): compact_integer(value),
        };
        match self.collection(counter).insert_one(document).await {
            Ok(_) => Ok(true),
            Err(e) if is_duplicate_id(&e) => Ok(false),
            Err(e) => Err(from_driver(&e, &self.secrets)),
        }
    }

    async fn advance_configured(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        count: i64,
    ) -> SeqResult<Option<Bson>> {
        let span = config.step.saturating_mul(count);
        let filter = filters::configured_with_room(counter, config, span);
        self.find_and_update(counter, filter, filters::increment(counter, span))
            .await
    }

    async fn restart_configured(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        expected: i64,
        value: i64,
    ) -> SeqResult<bool> {
        let filter = filters::configured_at(counter, config, expected);
        let updated = self
            .find_and_update(counter, filter, filters::set_value(counter, value))
            .await?;
        Ok(updated.is_some())
    }
}
