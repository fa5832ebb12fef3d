//! Counters in a MongoDB database through the official driver: the [`CounterDriver`]
//! primitives without a transaction.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{CollectionOptions, ReturnDocument, WriteConcern};
use mongodb::{Collection, Database};

use crate::engine::driver_counters::CounterDriver;
use crate::engine::driver_error::{from_driver, is_duplicate_id};
use crate::engine::error::SeqResult;
use crate::engine::filters;
use crate::engine::store::CounterRef;

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
}

impl CounterDriver for MongoStore {
    async fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
    ) -> SeqResult<Option<Bson>> {
        let found = self
            .counters(counter)
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .projection(filters::value_projection(counter))
            .await
            .map_err(|e| from_driver(&e, &self.secrets))?;
        Ok(found.and_then(|mut d| d.remove(&counter.field)))
    }

    async fn find_counter(&self, counter: &CounterRef) -> SeqResult<Option<Document>> {
        self.counters(counter)
            .find_one(doc! { "_id": counter.id() })
            .projection(filters::counter_projection(counter))
            .await
            .map_err(|e| from_driver(&e, &self.secrets))
    }

    async fn insert_counter(&self, counter: &CounterRef, document: Document) -> SeqResult<bool> {
        match self.counters(counter).insert_one(document).await {
            Ok(_) => Ok(true),
            Err(e) if is_duplicate_id(&e) => Ok(false),
            Err(e) => Err(from_driver(&e, &self.secrets)),
        }
    }
}
