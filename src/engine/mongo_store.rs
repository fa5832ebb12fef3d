//! Counters in a MongoDB database through the official driver: the [`CounterDriver`]
//! primitives, written once for plain use and for use inside a transaction (a session).

use mongodb::bson::{Bson, Document};
use mongodb::options::{CollectionOptions, IndexOptions, ReturnDocument, WriteConcern};
use mongodb::{ClientSession, Collection, Database, IndexModel};
use tokio::sync::Mutex;

use crate::engine::driver_counters::CounterDriver;
use crate::engine::driver_error::{
    duplicate_on_other_index, from_driver, is_duplicate_key, is_duplicate_on,
};
use crate::engine::error::SeqError;
use crate::engine::error::SeqResult;
use crate::engine::filters;
use crate::engine::locator::Locator;
use crate::engine::store::CounterRef;

/// Counters in one database, with the secrets to keep out of error messages.
#[derive(Clone)]
pub struct MongoStore {
    database: Database,
    secrets: std::sync::Arc<Vec<String>>,
    write_concern: Option<WriteConcern>,
    indexes: IndexMemo,
}

/// The unique indexes (database, collection, index) this client has made sure of.
pub type IndexMemo = std::sync::Arc<Mutex<std::collections::HashSet<(String, String, String)>>>;

impl MongoStore {
    /// A store over `database`; `secrets` are removed from every error message.
    pub fn new(database: Database, secrets: std::sync::Arc<Vec<String>>) -> Self {
        MongoStore {
            database,
            secrets,
            write_concern: None,
            indexes: IndexMemo::default(),
        }
    }

    /// The same store, remembering made indexes in `indexes` (shared by a client).
    pub fn with_index_memo(mut self, indexes: IndexMemo) -> Self {
        self.indexes = indexes;
        self
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

    /// The counters collection of `counter`, with this store's write concern (inside a
    /// transaction the transaction's own applies).
    pub fn counters(&self, counter: &CounterRef, in_session: bool) -> Collection<Document> {
        match &self.write_concern {
            Some(concern) if !in_session => self.database.collection_with_options(
                &counter.collection,
                CollectionOptions::builder()
                    .write_concern(concern.clone())
                    .build(),
            ),
            _ => self.database.collection(&counter.collection),
        }
    }

    /// A failed counter write as a typed error: a duplicate key on a unique index other
    /// than the locator's is an `INDEX_CONFLICT` naming that index.
    fn write_error(&self, counter: &CounterRef, error: &mongodb::error::Error) -> SeqError {
        match duplicate_on_other_index(error, counter.locator.index_name()) {
            Some(index) => SeqError::index_conflict(&counter.label, &counter.collection, &index),
            None => self.error(error),
        }
    }

    /// Creates the unique index over the locator's fields, once per collection for this
    /// client (creating an index that exists is a no-op on the server); nothing for a
    /// counter found by `_id`, whose index always exists.
    pub async fn ensure_unique_index(&self, counter: &CounterRef) -> SeqResult<()> {
        let Locator::ByFields(fields) = &counter.locator else {
            return Ok(());
        };
        let key = (
            self.database.name().to_string(),
            counter.collection.clone(),
            fields.index_name().to_string(),
        );
        if self.indexes.lock().await.contains(&key) {
            return Ok(());
        }
        let model = IndexModel::builder()
            .keys(fields.index_keys())
            .options(IndexOptions::builder().unique(true).build())
            .build();
        self.database
            .collection::<Document>(&counter.collection)
            .create_index(model)
            .await
            .map_err(|e| match is_duplicate_key(&e) {
                true => SeqError::index_conflict(
                    &counter.label,
                    &counter.collection,
                    fields.index_name(),
                ),
                false => self.error(&e),
            })?;
        self.indexes.lock().await.insert(key);
        Ok(())
    }

    /// Sets the field of every plain counter of `counter`'s collection matching `fields`
    /// to `value`; how many matched.
    pub async fn set_where(
        &self,
        counter: &CounterRef,
        fields: Document,
        value: i64,
    ) -> SeqResult<u64> {
        let result = self
            .counters(counter, false)
            .update_many(
                filters::plain_matching(counter, fields),
                filters::set_value(counter, value),
            )
            .await
            .map_err(|e| self.error(&e))?;
        Ok(result.matched_count)
    }

    async fn find_and_update_in(
        &self,
        session: Option<&mut ClientSession>,
        counter: &CounterRef,
        filter: Document,
        update: Document,
        upsert: bool,
    ) -> SeqResult<Option<Bson>> {
        let in_session = session.is_some();
        let collection = self.counters(counter, in_session);
        let action = collection
            .find_one_and_update(filter, update)
            .upsert(upsert)
            .return_document(ReturnDocument::After)
            .projection(filters::value_projection(counter));
        let found = match session {
            Some(session) => action.session(session).await,
            None => action.await,
        };
        match found {
            Ok(found) => Ok(found.and_then(|mut d| d.remove(&counter.field))),
            Err(e) if upsert && is_duplicate_on(&e, counter.locator.index_name()) => Ok(None),
            Err(e) => Err(self.write_error(counter, &e)),
        }
    }

    async fn find_counter_in(
        &self,
        session: Option<&mut ClientSession>,
        counter: &CounterRef,
    ) -> SeqResult<Option<Document>> {
        let collection = self.counters(counter, session.is_some());
        let action = collection
            .find_one(counter.filter())
            .projection(filters::counter_projection(counter));
        match session {
            Some(session) => action.session(session).await,
            None => action.await,
        }
        .map_err(|e| self.error(&e))
    }

    async fn insert_counter_in(
        &self,
        session: Option<&mut ClientSession>,
        counter: &CounterRef,
        document: Document,
    ) -> SeqResult<bool> {
        let collection = self.counters(counter, session.is_some());
        let action = collection.insert_one(document);
        match match session {
            Some(session) => action.session(session).await,
            None => action.await,
        } {
            Ok(_) => Ok(true),
            Err(e) if is_duplicate_on(&e, counter.locator.index_name()) => Ok(false),
            Err(e) => Err(self.write_error(counter, &e)),
        }
    }

    async fn delete_counter_in(
        &self,
        session: Option<&mut ClientSession>,
        counter: &CounterRef,
    ) -> SeqResult<bool> {
        let collection = self.counters(counter, session.is_some());
        let action = collection.delete_one(counter.filter());
        let result = match session {
            Some(session) => action.session(session).await,
            None => action.await,
        }
        .map_err(|e| self.error(&e))?;
        Ok(result.deleted_count == 1)
    }
}

impl CounterDriver for MongoStore {
    async fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
        upsert: bool,
    ) -> SeqResult<Option<Bson>> {
        self.find_and_update_in(None, counter, filter, update, upsert)
            .await
    }

    async fn find_counter(&self, counter: &CounterRef) -> SeqResult<Option<Document>> {
        self.find_counter_in(None, counter).await
    }

    async fn insert_counter(&self, counter: &CounterRef, document: Document) -> SeqResult<bool> {
        self.insert_counter_in(None, counter, document).await
    }

    async fn delete_counter(&self, counter: &CounterRef) -> SeqResult<bool> {
        self.delete_counter_in(None, counter).await
    }

    async fn ensure_unique_index(&self, counter: &CounterRef) -> SeqResult<()> {
        MongoStore::ensure_unique_index(self, counter).await
    }
}

/// The same counters, every operation inside the transaction of one session.
pub struct SessionStore<'a> {
    store: &'a MongoStore,
    session: Mutex<&'a mut ClientSession>,
}

impl<'a> SessionStore<'a> {
    /// `store`'s counters, read and written in `session`.
    pub fn new(store: &'a MongoStore, session: &'a mut ClientSession) -> Self {
        SessionStore {
            store,
            session: Mutex::new(session),
        }
    }
}

impl CounterDriver for SessionStore<'_> {
    async fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
        upsert: bool,
    ) -> SeqResult<Option<Bson>> {
        let mut session = self.session.lock().await;
        self.store
            .find_and_update_in(Some(&mut **session), counter, filter, update, upsert)
            .await
    }

    async fn find_counter(&self, counter: &CounterRef) -> SeqResult<Option<Document>> {
        let mut session = self.session.lock().await;
        self.store
            .find_counter_in(Some(&mut **session), counter)
            .await
    }

    async fn insert_counter(&self, counter: &CounterRef, document: Document) -> SeqResult<bool> {
        let mut session = self.session.lock().await;
        self.store
            .insert_counter_in(Some(&mut **session), counter, document)
            .await
    }

    async fn delete_counter(&self, counter: &CounterRef) -> SeqResult<bool> {
        let mut session = self.session.lock().await;
        self.store
            .delete_counter_in(Some(&mut **session), counter)
            .await
    }

    async fn ensure_unique_index(&self, counter: &CounterRef) -> SeqResult<()> {
        // Outside the transaction: an index is not part of what it commits or aborts.
        self.store.ensure_unique_index(counter).await
    }
}
