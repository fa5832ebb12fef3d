//! Counters in a MongoDB database through the official driver: the [`CounterDriver`]
//! primitives, written once for plain use and for use inside a transaction (a session).

use mongodb::bson::{Bson, Document};
use mongodb::options::{
    CollectionOptions, ReadConcern, ReadPreference, ReturnDocument, SelectionCriteria, WriteConcern,
};
use mongodb::{ClientSession, Collection, Database};
use std::time::Instant;
use tokio::sync::Mutex;

use crate::engine::client::db_reads::DbReads;
use crate::engine::client::driver_error::{duplicate_on_other_index, from_driver, is_duplicate_on};
use crate::engine::client::writable::WritableServer;
use crate::engine::error::SeqError;
use crate::engine::error::SeqResult;
use crate::engine::stats::{self, Trip};
use crate::engine::store::counter_store::{CounterRef, Endpoint};
use crate::engine::store::driver_store::CounterDriver;
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
    /// Each command it sends is published as a round-trip event (management calls). A
    /// fetch of values publishes its own event, one per round trip whatever commands it
    /// took, so the drivers of fetches leave this off and nothing is published twice.
    publishes: bool,
}

/// One command a driver sends, for its round-trip event: the command's name, the
/// collection it goes to, the counter it is for (none for a listing), and when it started
/// (`None`: not published).
pub(crate) struct Sent<'a> {
    operation: &'static str,
    collection: &'a str,
    counter: Option<&'a str>,
    started: Option<Instant>,
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
            publishes: false,
        }
    }

    /// The same driver, publishing each command it sends as a round-trip event while
    /// events are on: the driver of management calls and give-backs, whose commands no
    /// fetch's event covers.
    pub fn publishing_commands(mut self) -> Self {
        self.publishes = true;
        self
    }

    /// Starts the command `operation` to `collection` for the counter named `counter`.
    pub(crate) fn send<'a>(
        &self,
        operation: &'static str,
        collection: &'a str,
        counter: Option<&'a str>,
    ) -> Sent<'a> {
        Sent {
            operation,
            collection,
            counter,
            started: self.publishes.then(Instant::now),
        }
    }

    /// `sent` answered `answer` (as this driver reads the answer: a duplicate key that
    /// means "exists already" is no failure), after `retries` resends: its event.
    pub(crate) fn answered<T>(&self, sent: Sent<'_>, answer: &SeqResult<T>, retries: u32) {
        let Some(started) = sent.started else {
            return;
        };
        let trip = Trip {
            operation: sent.operation,
            collection: sent.collection,
            counter: sent.counter,
            values: 0,
            calls: 0,
            retries,
            took: started.elapsed(),
            error: answer.as_ref().err().map(|e| e.code),
        };
        stats::record_trip(|| self.endpoint(), trip);
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

    /// The unique indexes this driver's client has made sure of
    /// (`ensure_unique_index`).
    pub(crate) fn index_memo(&self) -> &IndexMemo {
        &self.indexes
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

    /// Sets the field of every plain counter of `counter`'s collection matching `fields`
    /// to `value`; how many matched.
    pub async fn set_where(
        &self,
        counter: &CounterRef,
        fields: Document,
        value: i64,
    ) -> SeqResult<u64> {
        let sent = self.send("update", &counter.collection, Some(&counter.label));
        let result = self
            .counters(counter, false)
            .update_many(
                filters::plain_matching(counter, fields),
                filters::set_value_unmarked(counter, value),
            )
            .await
            .map_err(|e| self.error(&e));
        self.answered(sent, &result, 0);
        Ok(result?.matched_count)
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
        let sent = self.send("findAndModify", &counter.collection, Some(&counter.label));
        let mut resent = 0;
        let found = match session {
            Some(session) => action().session(session).await,
            None => match action().await {
                Err(e) if resend && is_dropped_connection(&e) => {
                    resent = 1;
                    action().await
                }
                found => found,
            },
        };
        let answer = match found {
            Ok(found) => Ok(found.and_then(|mut d| d.remove(&counter.field))),
            Err(e) if upsert && is_duplicate_on(&e, counter.locator.index_name()) => Ok(None),
            Err(e) => Err(self.write_error(counter, &e)),
        };
        self.answered(sent, &answer, resent);
        answer
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
        let sent = self.send("find", &counter.collection, Some(&counter.label));
        let mut resent = 0;
        let answer = match session {
            // A transaction reads from the primary already (and refuses a read
            // preference of an operation).
            Some(session) => action().session(session).await,
            None => {
                let read = || {
                    action()
                        .selection_criteria(on_primary())
                        .read_concern(latest())
                };
                match read().await {
                    Err(e) if is_dropped_connection(&e) => {
                        resent = 1;
                        read().await
                    }
                    found => found,
                }
            }
        }
        .map_err(|e| self.error(&e));
        self.answered(sent, &answer, resent);
        answer
    }

    async fn create_counter_in(
        &self,
        session: Option<&mut ClientSession>,
        counter: &CounterRef,
        fields: Document,
    ) -> SeqResult<bool> {
        let collection = self.counters(counter, session.is_some());
        let action = collection
            .update_one(
                filters::without_counter(counter, &fields),
                filters::creation(counter, fields),
            )
            .upsert(true);
        let sent = self.send("update", &counter.collection, Some(&counter.label));
        let answer = match match session {
            Some(session) => action.session(session).await,
            None => action.await,
        } {
            Ok(done) => Ok(done.upserted_id.is_some() || done.matched_count == 1),
            // The counter exists already: the answer `init` and a creation race expect.
            Err(e) if is_duplicate_on(&e, counter.locator.index_name()) => Ok(false),
            Err(e) => Err(self.write_error(counter, &e)),
        };
        self.answered(sent, &answer, 0);
        answer
    }

    async fn delete_counter_in(
        &self,
        mut session: Option<&mut ClientSession>,
        counter: &CounterRef,
    ) -> SeqResult<bool> {
        let collection = self.counters(counter, session.is_some());
        // The document, when it holds nothing but the counter; otherwise (or when it
        // gained something else meanwhile) only the counter's fields.
        let deleted = {
            let action = collection.delete_one(filters::alone_in_document(counter));
            let sent = self.send("delete", &counter.collection, Some(&counter.label));
            let result = match session.as_deref_mut() {
                Some(session) => action.session(session).await,
                None => action.await,
            }
            .map_err(|e| self.error(&e));
            self.answered(sent, &result, 0);
            result?.deleted_count == 1
        };
        if deleted {
            return Ok(true);
        }
        let action =
            collection.update_one(filters::with_counter(counter), filters::removal(counter));
        let sent = self.send("update", &counter.collection, Some(&counter.label));
        let result = match session {
            Some(session) => action.session(session).await,
            None => action.await,
        }
        .map_err(|e| self.error(&e));
        self.answered(sent, &result, 0);
        Ok(result?.matched_count == 1)
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

    async fn create_counter(&self, counter: &CounterRef, fields: Document) -> SeqResult<bool> {
        self.create_counter_in(None, counter, fields).await
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

    async fn create_counter(&self, counter: &CounterRef, fields: Document) -> SeqResult<bool> {
        let mut session = self.session.lock().await;
        self.driver
            .create_counter_in(Some(&mut **session), counter, fields)
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
    use crate::engine::client::connection::ConnectionTarget;
    use crate::engine::client::handle::ClientHandle;
    use crate::engine::counter::counter_name::CounterName;
    use crate::engine::error::ErrorCode;
    use crate::engine::store::counter_store::{CounterStore, Direction, FetchToken};
    use crate::engine::store::driver_store::DriverStore;
    use crate::engine::test_support::run;
    use mongodb::bson::doc;

    /// A management call's driver publishes each command it sends, failed ones with their
    /// code; a fetch's driver (the default) publishes none, its round trip being
    /// published once by the fetch.
    #[test]
    fn a_publishing_driver_records_each_command_and_a_fetch_driver_none() {
        let _only = stats::listening_test();
        run(async {
            // Nothing answers there: each command fails once server selection gives up.
            let target = ConnectionTarget::from_uri(
                "mongodb://app:s3cr3t-pw@127.0.0.1:1/?serverSelectionTimeoutMS=200",
            )
            .unwrap();
            let handle = ClientHandle::open(&target).await.unwrap();
            let name = "mongodb://carol:s3cr3t-pw@h/published";
            let counter = CounterRef::new("ids", "seq", CounterName::Text(name.into()));
            let fetches = DriverStore(handle.driver("events_db").unwrap());
            let managing = DriverStore(handle.driver("events_db").unwrap().publishing_commands());
            stats::thread_listening(true);
            let ours =
                |events: Vec<stats::RoundTripEvent>| -> Vec<(&'static str, Option<ErrorCode>)> {
                    events
                        .into_iter()
                        .filter(|e| e.database.as_deref() == Some("events_db"))
                        .map(|e| {
                            assert!(!format!("{e:?}").contains("s3cr3t"), "{e:?}");
                            assert_eq!(e.counter.as_deref(), Some("mongodb://****@h/published"));
                            assert_eq!(e.collection, "ids");
                            (e.operation, e.error)
                        })
                        .collect()
                };
            // Taken after each command: other tests' round trips, recorded meanwhile
            // while this thread listens, would push older events out of the queue.
            assert!(fetches.read(&counter).await.is_err());
            let mut from_fetches = ours(stats::take_events());
            assert!(fetches.delete(&counter).await.is_err());
            from_fetches.extend(ours(stats::take_events()));
            assert!(managing.read(&counter).await.is_err());
            let mut from_managing = ours(stats::take_events());
            assert!(managing.delete(&counter).await.is_err());
            from_managing.extend(ours(stats::take_events()));
            stats::thread_listening(false);
            assert_eq!(
                from_fetches,
                vec![],
                "a fetch's driver publishes no command"
            );
            assert_eq!(
                from_managing,
                vec![
                    ("find", Some(ErrorCode::Connection)),
                    ("delete", Some(ErrorCode::Connection))
                ],
            );
        });
    }

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
}
