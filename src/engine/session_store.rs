//! The [`CounterDriver`] primitives inside a transaction: every operation runs in one
//! client session.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Collection, Database};
use tokio::sync::Mutex;

use crate::engine::driver_counters::CounterDriver;
use crate::engine::driver_error::{from_driver, is_duplicate_id};
use crate::engine::error::SeqResult;
use crate::engine::filters;
use crate::engine::store::CounterRef;

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
}

impl CounterDriver for SessionStore<'_> {
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

    async fn find_counter(&self, counter: &CounterRef) -> SeqResult<Option<Document>> {
        let mut session = self.session.lock().await;
        self.collection(counter)
            .find_one(doc! { "_id": counter.id() })
            .projection(filters::counter_projection(counter))
            .session(&mut **session)
            .await
            .map_err(|e| from_driver(&e, self.secrets))
    }

    async fn insert_counter(&self, counter: &CounterRef, document: Document) -> SeqResult<bool> {
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
}
