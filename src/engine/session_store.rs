//! [`CounterStore`] inside a transaction: every operation runs in one client session.

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::ReturnDocument;
use mongodb::{ClientSession, Collection, Database};
use tokio::sync::Mutex;

use crate::engine::counter_value::compact_integer;
use crate::engine::driver_error::{from_driver, is_duplicate_id};
use crate::engine::error::SeqResult;
use crate::engine::store::{CounterRef, CounterStore, FieldGuard};

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

    async fn increment_where(
        &self,
        counter: &CounterRef,
        condition: Document,
        by: i64,
    ) -> SeqResult<Option<Bson>> {
        let field = counter.field.as_str();
        let mut session = self.session.lock().await;
        let found = self
            .collection(counter)
            .find_one_and_update(
                doc! { "_id": counter.id(), field: condition },
                doc! { "$inc": { field: compact_integer(by) } },
            )
            .return_document(ReturnDocument::After)
            .projection(doc! { "_id": 0, field: 1 })
            .session(&mut **session)
            .await
            .map_err(|e| from_driver(&e, self.secrets))?;
        Ok(found.and_then(|mut d| d.remove(field)))
    }
}

impl CounterStore for SessionStore<'_> {
    async fn increment_integer(&self, counter: &CounterRef, by: i64) -> SeqResult<Option<Bson>> {
        self.increment_where(counter, doc! { "$type": ["int", "long"] }, by)
            .await
    }

    async fn increment_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        by: i64,
    ) -> SeqResult<Option<Bson>> {
        let condition = match guard {
            FieldGuard::EqualsDouble(d) => doc! { "$type": "double", "$eq": d },
            FieldGuard::Absent => doc! { "$exists": false },
        };
        self.increment_where(counter, condition, by).await
    }

    async fn read(&self, counter: &CounterRef) -> SeqResult<Option<Option<Bson>>> {
        let field = counter.field.as_str();
        let mut session = self.session.lock().await;
        let found = self
            .collection(counter)
            .find_one(doc! { "_id": counter.id() })
            .projection(doc! { field: 1 })
            .session(&mut **session)
            .await
            .map_err(|e| from_driver(&e, self.secrets))?;
        Ok(found.map(|mut d| d.remove(field)))
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
}
