//! [`CounterStore`] inside a transaction: every operation runs in one client session.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Collection, Database};
use tokio::sync::Mutex;

use crate::engine::counter_value::compact_integer;
use crate::engine::driver_error::{from_driver, is_duplicate_id};
use crate::engine::error::SeqResult;
use crate::engine::filters;
use crate::engine::sequence_config::SequenceConfig;
use crate::engine::store::{CounterDoc, CounterRef, CounterStore, FieldGuard};

/// Counters of one database, read and written in the transaction of `session`.
pub struct SessionStore<'a> {
    database: Database,
    secrets: &'a [String],
    session: Mutex<&'a mut ClientSession>,
}

impl<'a> SessionStore<'a> {
    /// A store running every operation in `session`.
    pub fn new(database: Database, secrets: &'a [String], session: &'a mut ClientSession) -> Self {
        SessionStore {
            database,
            secrets,
            session: Mutex::new(session),
        }
    }

    fn collection(&self, counter: &CounterRef) -> Collection<Document> {
        self.database.collection(&counter.collection)
    }

    async fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
    ) -> SeqResult<Option<Bson>> {
        let mut session = self.session.lock().await;
        let found = self
            .collection(counter)
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .projection(filters::value_projection(counter))
            .session(&mut **session)
            .await
            .map_err(|e| from_driver(&e, self.secrets))?;
        Ok(found.and_then(|mut d| d.remove(&counter.field)))
    }
}

impl CounterStore for SessionStore<'_> {
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
        let mut session = self.session.lock().await;
        let found = self
            .collection(counter)
            .find_one(doc! { "_id": counter.id() })
            .projection(filters::counter_projection(counter))
            .session(&mut **session)
            .await
            .map_err(|e| from_driver(&e, self.secrets))?;
        Ok(found.map(|d| filters::counter_doc(counter, d)))
    }

    async fn create(&self, counter: &CounterRef, value: i64) -> SeqResult<bool> {
        let document = doc! {
            "_id": counter.id(),
            counter.field.as_str(): compact_integer(value),
        };
        let mut session = self.session.lock().await;
        match self
            .collection(counter)
            .insert_one(document)
            .session(&mut **session)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if is_duplicate_id(&e) => Ok(false),
            Err(e) => Err(from_driver(&e, self.secrets)),
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
