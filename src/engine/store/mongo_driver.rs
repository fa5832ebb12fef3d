//! Counters in a MongoDB database through the official driver: the [`CounterDriver`]
//! primitives, written once for plain use and for use inside a transaction (a session).

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{
    CollectionOptions, IndexOptions, ReadConcern, ReadPreference, ReturnDocument,
    SelectionCriteria, WriteConcern,
};
use mongodb::{ClientSession, Collection, Database, IndexModel};
use tokio::sync::Mutex;

use crate::engine::client::db_reads::DbReads;
use crate::engine::client::driver_error::{
    duplicate_on_other_index, from_driver, is_duplicate_key, is_duplicate_on,
};
use crate::engine::client::writable::WritableServer;
use crate::engine::counter::locator::{FieldsLocator, Locator};
use crate::engine::error::SeqError;
use crate::engine::error::SeqResult;
use crate::engine::store::counter_store::{CounterRef, Endpoint};
use crate::engine::store::driver_counters::CounterDriver;
use crate::engine::store::filters;

/// Where a read that decides a counter write goes, whatever the client's read
/// preference: the primary, which the write goes to. A secondary behind it would show an
/// old counter (a guarded write then fails until the attempts run out) or an old largest
/// number in use (`syncToMax` would raise the counter short of numbers already taken).
pub fn on_primary() -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::Primary)
}

/// The read concern of a read that decides a counter write, whatever the client's or
/// the `Db`'s: the latest the primary holds (`local`). A `majority` read may miss a
/// number written with `w: 1` a moment ago, and `syncToMax` would raise the counter short
/// of it; `local` may see a write that a rollback later removes, which only leaves a gap.
pub fn latest() -> ReadConcern {
    ReadConcern::local()
}

/// Counters in one database, with the secrets to keep out of error messages.
#[derive(Clone)]
pub struct MongoDriver {
    database: Database,
    secrets: std::sync::Arc<Vec<String>>,
    write_concern: Option<WriteConcern>,
    /// The `Db`'s read settings, for the reads that only report.
    reads: DbReads,
    indexes: IndexMemo,
    /// The server its client writes to, when the client watches it.
    writable: Option<std::sync::Arc<WritableServer>>,
}

/// The unique indexes (database, collection, index) this client has made sure of.
pub type IndexMemo = std::sync::Arc<Mutex<std::collections::HashSet<(String, String, String)>>>;

impl MongoDriver {
    /// A driver over `database`; `secrets` are removed from every error message.
    pub fn new(database: Database, secrets: std::sync::Arc<Vec<String>>) -> Self {
        MongoDriver {
            database,
            secrets,
            write_concern: None,
            reads: DbReads::default(),
            indexes: IndexMemo::default(),
            writable: None,
        }
    }

    /// The same driver, remembering made indexes in `indexes` (shared by a client).
    pub fn with_index_memo(mut self, indexes: IndexMemo) -> Self {
        self.indexes = indexes;
        self
    }

    /// The same driver, naming in [`Endpoint`] the server `writable` says its client
    /// writes to.
    pub fn with_writable(mut self, writable: std::sync::Arc<WritableServer>) -> Self {
        self.writable = Some(writable);
        self
    }

    /// The same driver, sending `reads` with the reads that only report.
    pub fn with_reads(mut self, reads: DbReads) -> Self {
        self.reads = reads;
        self
    }

    /// The `Db`'s read settings, for the reads that only report.
    pub fn reads(&self) -> &DbReads {
        &self.reads
    }

    /// The same driver, writing with `concern` (the connection's default for `None`).
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

    /// The counters collection of `counter`, with this driver's write concern (inside a
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

    /// Makes sure of a unique index over the locator's fields, once per collection for
    /// this client; nothing for a counter found by `_id`, whose index always exists. An
    /// existing unique index over exactly these keys is the index needed, whatever its
    /// other options (`background: true`, as mongoose-sequence made it, or another
    /// name): it is looked for first, and again when creating fails (some servers refuse
    /// to create an index that exists with other options; another process may have made
    /// it meanwhile). Creating one is the last resort.
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
        // A failed look is no answer: creating decides.
        if !matches!(self.has_unique_index(counter, fields).await, Ok(true)) {
            self.create_unique_index(counter, fields).await?;
        }
        self.indexes.lock().await.insert(key);
        Ok(())
    }

    async fn create_unique_index(
        &self,
        counter: &CounterRef,
        fields: &FieldsLocator,
    ) -> SeqResult<()> {
        let model = IndexModel::builder()
            .keys(fields.index_keys())
            .options(IndexOptions::builder().unique(true).build())
            .build();
        let created = self
            .database
            .collection::<Document>(&counter.collection)
            .create_index(model)
            .await;
        let Err(e) = created else {
            return Ok(());
        };
        if matches!(self.has_unique_index(counter, fields).await, Ok(true)) {
            return Ok(());
        }
        Err(match is_duplicate_key(&e) {
            true => {
                SeqError::index_conflict(&counter.label, &counter.collection, fields.index_name())
            }
            false => self.error(&e),
        })
    }

    /// Whether `counter`'s collection has a unique index over exactly the locator's keys
    /// (in order) that guards every document with the simple collation: not partial,
    /// no other collation. A missing collection has none.
    async fn has_unique_index(
        &self,
        counter: &CounterRef,
        fields: &FieldsLocator,
    ) -> SeqResult<bool> {
        let listed = self
            .database
            .run_command(doc! { "listIndexes": &counter.collection })
            .await;
        let reply = match listed {
            Ok(reply) => reply,
            Err(e) if is_namespace_not_found(&e) => return Ok(false),
            Err(e) => return Err(self.error(&e)),
        };
        let batch = reply
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .map_err(|_| SeqError::internal("listIndexes answered without a cursor"))?;
        let wanted = fields.index_keys();
        Ok(batch.iter().any(|index| match index {
            Bson::Document(index) => guards_exactly(index, &wanted),
            _ => false,
        }))
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
                filters::set_value_unmarked(counter, value),
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
        let action = || {
            collection
                .find_one_and_update(filter.clone(), update.clone())
                .upsert(upsert)
                .return_document(ReturnDocument::After)
                .projection(filters::value_projection(counter))
        };
        let resend = safe_to_send_twice(counter, &update);
        let found = match session {
            Some(session) => action().session(session).await,
            None => match action().await {
                Err(e) if resend && is_dropped_connection(&e) => action().await,
                found => found,
            },
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
        let action = || {
            collection
                .find_one(counter.filter())
                .projection(filters::counter_projection(counter))
        };
        match session {
            // A transaction reads from the primary already (and refuses a read
            // preference of an operation).
            Some(session) => action().session(session).await,
            None => {
                let latest = || {
                    action()
                        .selection_criteria(on_primary())
                        .read_concern(latest())
                };
                match latest().await {
                    Err(e) if is_dropped_connection(&e) => latest().await,
                    found => found,
                }
            }
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

/// Whether `update` may be sent a second time when the answer to the first was lost (the
/// first may have been applied): only writes that move the counter on along its way and
/// never back. A second `$inc` leaves the first one's values unused (a gap); a second
/// `$max`/`$min` changes nothing; `$setOnInsert` applies once; the cache flag is set to the
/// same value. A `$set` of the value (`set`, `reset`, a give-back, a compare-and-set, a
/// cycle restart) is never sent twice: applied late, after others moved the counter on, it
/// would put the counter back under values they took.
fn safe_to_send_twice(counter: &CounterRef, update: &Document) -> bool {
    let flag = filters::CacheMarks::of(&counter.field).cached;
    update
        .iter()
        .all(|(operator, fields)| match operator.as_str() {
            "$inc" | "$max" | "$min" | "$setOnInsert" => true,
            "$set" => fields
                .as_document()
                .is_some_and(|set| set.keys().all(|key| *key == flag)),
            _ => false,
        })
}

/// Whether `error` is the failure of a connection the network dropped (reset, broken
/// pipe, closed before the answer). A load balancer or NAT resets pooled connections left
/// idle, and on a standalone server the driver retries no write: the first call after such
/// a reset would fail although the server is fine (the documented helper, on the Node
/// driver, succeeds there). The driver has cleared that connection, so counter reads, and
/// the writes [`safe_to_send_twice`] allows, outside a transaction, are sent once more on
/// a new one. Document inserts are never sent twice.
fn is_dropped_connection(error: &mongodb::error::Error) -> bool {
    use std::io::ErrorKind as Io;
    match &*error.kind {
        mongodb::error::ErrorKind::Io(e) => matches!(
            e.kind(),
            Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe | Io::UnexpectedEof
        ),
        _ => false,
    }
}

/// Whether the index described by `index` (a `listIndexes` entry) is unique over
/// exactly the keys `wanted` (same order, each ascending) for every document: not
/// partial, and with no collation other than the simple one.
fn guards_exactly(index: &Document, wanted: &Document) -> bool {
    let Ok(keys) = index.get_document("key") else {
        return false;
    };
    let same_keys = keys.len() == wanted.len()
        && keys
            .iter()
            .zip(wanted.keys())
            .all(|((name, direction), want)| name == want && ascending(direction));
    let unique = match index.get("unique") {
        Some(Bson::Boolean(b)) => *b,
        Some(other) => ascending(other),
        None => false,
    };
    let simple_collation = match index.get_document("collation") {
        Ok(collation) => collation.get_str("locale") == Ok("simple"),
        Err(_) => !index.contains_key("collation"),
    };
    same_keys && unique && simple_collation && !index.contains_key("partialFilterExpression")
}

/// Whether an index key direction (or a numeric flag) is 1, in whatever number type.
fn ascending(value: &Bson) -> bool {
    match value {
        Bson::Int32(v) => *v == 1,
        Bson::Int64(v) => *v == 1,
        Bson::Double(v) => *v == 1.0,
        _ => false,
    }
}

/// Whether the server answered that the collection does not exist (`NamespaceNotFound`).
fn is_namespace_not_found(error: &mongodb::error::Error) -> bool {
    matches!(
        error.kind.as_ref(),
        mongodb::error::ErrorKind::Command(c) if c.code == 26
    )
}

impl CounterDriver for MongoDriver {
    fn endpoint(&self) -> Endpoint {
        Endpoint {
            database: Some(self.database.name().to_string()),
            server: self.writable.as_ref().and_then(|w| w.address()),
        }
    }

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
        MongoDriver::ensure_unique_index(self, counter).await
    }
}

/// The same counters, every operation inside the transaction of one session.
pub struct SessionDriver<'a> {
    driver: &'a MongoDriver,
    session: Mutex<&'a mut ClientSession>,
}

impl<'a> SessionDriver<'a> {
    /// `driver`'s counters, read and written in `session`.
    pub fn new(driver: &'a MongoDriver, session: &'a mut ClientSession) -> Self {
        SessionDriver {
            driver,
            session: Mutex::new(session),
        }
    }
}

impl CounterDriver for SessionDriver<'_> {
    async fn find_and_update(
        &self,
        counter: &CounterRef,
        filter: Document,
        update: Document,
        upsert: bool,
    ) -> SeqResult<Option<Bson>> {
        let mut session = self.session.lock().await;
        self.driver
            .find_and_update_in(Some(&mut **session), counter, filter, update, upsert)
            .await
    }

    async fn find_counter(&self, counter: &CounterRef) -> SeqResult<Option<Document>> {
        let mut session = self.session.lock().await;
        self.driver
            .find_counter_in(Some(&mut **session), counter)
            .await
    }

    async fn insert_counter(&self, counter: &CounterRef, document: Document) -> SeqResult<bool> {
        let mut session = self.session.lock().await;
        self.driver
            .insert_counter_in(Some(&mut **session), counter, document)
            .await
    }

    async fn delete_counter(&self, counter: &CounterRef) -> SeqResult<bool> {
        let mut session = self.session.lock().await;
        self.driver
            .delete_counter_in(Some(&mut **session), counter)
            .await
    }

    async fn ensure_unique_index(&self, counter: &CounterRef) -> SeqResult<()> {
        // Outside the transaction: an index is not part of what it commits or aborts.
        self.driver.ensure_unique_index(counter).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::counter::counter_name::CounterName;
    use crate::engine::store::counter_store::{Direction, FetchToken};

    #[test]
    fn only_writes_that_never_move_a_counter_back_are_sent_twice() {
        let plain = CounterRef::new("counters", "seq", CounterName::Text("x".into()));
        let cached = plain.clone().through_cache(FetchToken::fresh());
        for (what, update) in [
            ("an increment", filters::increment(&plain, 3)),
            ("a cached increment", filters::increment(&cached, 3)),
            ("a descending increment", filters::increment(&plain, -2)),
            ("a raise", filters::raise_value(&plain, 9, Direction::Up)),
            (
                "a marked raise",
                filters::raise_marked(&cached, 9, Direction::Down),
            ),
        ] {
            assert!(safe_to_send_twice(&plain, &update), "{what}: {update}");
        }
        for (what, update) in [
            (
                "a set, a give-back, a compare-and-set",
                filters::set_value(&plain, 5),
            ),
            ("a cached compare-and-set", filters::set_value(&cached, 5)),
            ("a set or reset", filters::set_value_unmarked(&plain, 0)),
            (
                "an unknown operator",
                doc! { "$rename": { "seq": "other" } },
            ),
            (
                "a $set of another field",
                doc! { "$inc": { "seq": 1 }, "$set": { "other": 1 } },
            ),
        ] {
            assert!(!safe_to_send_twice(&plain, &update), "{what}: {update}");
        }
    }

    #[test]
    fn an_existing_unique_index_over_the_same_keys_is_the_one_needed() {
        let wanted = doc! { "id": 1, "reference_value": 1 };
        let mongoose = doc! {
            "v": 2, "key": { "id": 1, "reference_value": 1 },
            "name": "id_1_reference_value_1", "unique": true, "background": true,
        };
        assert!(guards_exactly(&mongoose, &wanted));
        for (key, value) in [("id", Bson::Int64(1)), ("id", Bson::Double(1.0))] {
            let mut other = mongoose.clone();
            other.insert("key", doc! { key: value, "reference_value": 1 });
            other.insert("name", "another name");
            assert!(guards_exactly(&other, &wanted), "{other}");
        }
        let mut simple = mongoose.clone();
        simple.insert("collation", doc! { "locale": "simple" });
        assert!(guards_exactly(&simple, &wanted));
        let mut numeric_unique = mongoose.clone();
        numeric_unique.insert("unique", 1);
        assert!(guards_exactly(&numeric_unique, &wanted));
    }

    #[test]
    fn an_index_that_does_not_guard_every_counter_is_not() {
        let wanted = doc! { "id": 1, "reference_value": 1 };
        let base = doc! { "key": { "id": 1, "reference_value": 1 }, "unique": true };
        let mut variants = Vec::new();
        for (field, value) in [
            ("unique", Bson::Boolean(false)),
            ("unique", Bson::Int32(0)),
            ("unique", Bson::String("yes".into())),
            (
                "partialFilterExpression",
                Bson::Document(doc! { "id": "a" }),
            ),
            (
                "collation",
                Bson::Document(doc! { "locale": "en", "strength": 2 }),
            ),
            ("collation", Bson::String("simple".into())),
            (
                "key",
                Bson::Document(doc! { "reference_value": 1, "id": 1 }),
            ),
            ("key", Bson::Document(doc! { "id": 1 })),
            (
                "key",
                Bson::Document(doc! { "id": 1, "reference_value": -1 }),
            ),
            (
                "key",
                Bson::Document(doc! { "id": 1, "reference_value": 1, "x": 1 }),
            ),
            (
                "key",
                Bson::Document(doc! { "id": "hashed", "reference_value": 1 }),
            ),
            ("key", Bson::String("id_1".into())),
        ] {
            let mut index = base.clone();
            index.insert(field, value);
            variants.push(index);
        }
        let mut not_unique = base.clone();
        not_unique.remove("unique");
        variants.push(not_unique);
        for index in variants {
            assert!(!guards_exactly(&index, &wanted), "{index}");
        }
        assert!(guards_exactly(&base, &wanted));
    }
}
