//! Gapless mode: the counter increment and the insert of the numbered documents commit in
//! one transaction, so a failed insert gives its numbers back.
//!
//! The price: the transaction holds the counter document until it commits, so writers of
//! one counter run one at a time (conflicting transactions are retried), and transactions
//! need a replica set or a sharded cluster; a standalone server refuses them.

use std::time::Duration;

use mongodb::bson::{oid::ObjectId, Bson, Document};
use mongodb::options::WriteConcern;

use crate::engine::alloc::allocate::{allocate, CreatePolicy, IdRange};
use crate::engine::client::driver_error::from_driver;
use crate::engine::client::handle::ClientHandle;
use crate::engine::counter::counter_value::compact_integer;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::store::counter_store::{CounterRef, CounterStore, NewCounter};
use crate::engine::store::driver_store::DriverStore;
use crate::engine::store::mongo_driver::{latest, on_primary, SessionDriver};
use crate::engine::text::format::{now_millis, Pattern};

/// Most attempts at one transaction that conflicts with others.
pub const MAX_TRANSACTION_ATTEMPTS: u32 = 50;

/// The label after which the whole transaction is tried again.
const TRANSIENT: &str = "TransientTransactionError";
/// The label after which only the commit is tried again (it may have been applied).
const UNKNOWN_COMMIT: &str = "UnknownTransactionCommitResult";
/// Most attempts at committing when the outcome of the last one is unknown.
const MAX_COMMIT_ATTEMPTS: u32 = 5;
/// IllegalOperation: what a standalone answers to a transaction.
const ILLEGAL_OPERATION: i32 = 20;

/// Documents to insert, numbered in `field`.
pub struct NumberedInsert<'a> {
    /// Target collection.
    pub collection: &'a str,
    /// Field receiving the numbers.
    pub field: &'a str,
    /// The documents, in numbering order.
    pub docs: Vec<Document>,
    /// Store formatted business numbers instead of integers.
    pub format: Option<&'a Pattern>,
    /// The caller receives the numbers as JavaScript numbers (no `bigint`, no `format`):
    /// numbers past 2^53 - 1 then fail the insert before it commits (`SEQUENCE_OVERFLOW`),
    /// instead of after it, with the documents written.
    pub as_numbers: bool,
}

fn retryable(error: &SeqError) -> bool {
    error.has_label(TRANSIENT)
}

/// What the driver and servers say when a deployment has no transactions.
const NO_TRANSACTIONS: [&str; 2] = [
    "not supported by this deployment",
    "Transaction numbers are only allowed",
];

fn unsupported(error: SeqError) -> SeqError {
    let refused = error.server_code == Some(ILLEGAL_OPERATION)
        || NO_TRANSACTIONS.iter().any(|m| error.message.contains(m));
    if refused {
        return SeqError::new(
            ErrorCode::TransactionsUnsupported,
            format!(
                "gapless mode needs transactions, which need a replica set or a sharded \
                 cluster; this server refused: {}",
                error.message
            ),
        );
    }
    error
}

/// Inserts the documents numbered from `counter` in one transaction; returns the block.
pub async fn insert_gapless(
    handle: &ClientHandle,
    database: &str,
    counter: &CounterRef,
    policy: CreatePolicy,
    write_concern: Option<WriteConcern>,
    mut insert: NumberedInsert<'_>,
) -> SeqResult<(IdRange, Vec<Bson>)> {
    let driver = handle.driver(database)?;
    if insert.field != "_id" {
        // Give every document without one (no `_id`, or `null`, as the Node driver
        // sees it) its `_id` now, so a retried transaction writes the same ones and the
        // caller learns them (the driver's insertedIds).
        for doc in &mut insert.docs {
            if matches!(doc.get("_id"), None | Some(Bson::Null)) {
                doc.insert("_id", ObjectId::new());
            }
        }
    }
    // One gapless transaction per counter at a time in this process: concurrent ones
    // would only conflict on the counter document and retry (across processes they do).
    let turn = handle.counter_state(database, counter).gapless_turn();
    let _my_turn = turn.lock().await;
    if policy.upsert {
        // Created outside the transaction, one step before `start`: creation hands out
        // nothing, so it needs no rollback (and a counter found by other fields gets its
        // unique index here, never inside the transaction, where building it would wait
        // for the transaction itself).
        let start_before = policy.start.checked_sub(counter.step).ok_or_else(|| {
            SeqError::overflow("cannot start one step before the 64-bit range".to_string())
        })?;
        DriverStore(driver.clone())
            .create(counter, NewCounter::plain(start_before))
            .await?;
    }
    let secrets = handle.secrets();
    let mut session = handle
        .client()
        .start_session()
        .await
        .map_err(|e| from_driver(&e, secrets))?;
    let count = insert.docs.len() as i64;
    let mut last_error = None;
    for attempt in 0..MAX_TRANSACTION_ATTEMPTS {
        if attempt > 0 {
            // Back off, with jitter, from other processes' transactions on this counter.
            let jitter = u64::from(now_millis().rem_euclid(7) as u32);
            tokio::time::sleep(Duration::from_millis(
                u64::from(attempt.min(20)) * 5 + jitter,
            ))
            .await;
        }
        // Not the client's read settings, which the driver would carry into the
        // transaction: a read preference other than primary fails the transaction's first
        // read, and real servers refuse the `available` and `linearizable` read concerns
        // in one. The transaction reads as every read that decides a counter write does.
        let mut start = session
            .start_transaction()
            .selection_criteria(on_primary())
            .read_concern(latest());
        if let Some(concern) = &write_concern {
            start = start.write_concern(concern.clone());
        }
        start
            .await
            .map_err(|e| unsupported(from_driver(&e, secrets)))?;
        let outcome = async {
            let range = {
                let in_session = DriverStore(SessionDriver::new(&driver, &mut session));
                let no_create = CreatePolicy {
                    upsert: false,
                    ..policy
                };
                allocate(&in_session, counter, no_create, count).await?
            };
            if insert.as_numbers {
                range.check_safe_for_numbers(&counter.label)?;
            }
            let now = now_millis();
            let docs: Vec<Document> = insert
                .docs
                .iter()
                .zip(range.values())
                .map(|(doc, v)| {
                    let mut doc = doc.clone();
                    match insert.format {
                        Some(pattern) => doc.insert(insert.field, pattern.format(v, now)),
                        None => doc.insert(insert.field, compact_integer(v)),
                    };
                    doc
                })
                .collect();
            let ids: Vec<Bson> = docs
                .iter()
                .map(|d| d.get("_id").cloned().unwrap_or(Bson::Null))
                .collect();
            driver
                .database()
                .collection::<Document>(insert.collection)
                .insert_many(docs)
                .session(&mut session)
                .await
                .map_err(|e| from_driver(&e, secrets))?;
            commit(&mut session, secrets).await?;
            Ok::<(IdRange, Vec<Bson>), SeqError>((range, ids))
        }
        .await;
        match outcome {
            Ok(done) => return Ok(done),
            Err(error) => {
                let _ = session.abort_transaction().await;
                let error = unsupported(error);
                if !retryable(&error) {
                    return Err(error);
                }
                last_error = Some(error);
            }
        }
    }
    Err(SeqError::new(
        ErrorCode::Contention,
        format!(
            "Sequence '{}': the gapless transaction conflicted {MAX_TRANSACTION_ATTEMPTS} \
             times; last: {}",
            counter.label,
            last_error.map(|e| e.message).unwrap_or_default()
        ),
    ))
}

/// Commits, trying again while the server says the outcome is unknown (the driver's
/// own commit retry rules: committing twice is safe, inserting twice would not be).
async fn commit(session: &mut mongodb::ClientSession, secrets: &[String]) -> SeqResult<()> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match session.commit_transaction().await {
            Ok(()) => return Ok(()),
            Err(e) => {
                let error = from_driver(&e, secrets);
                if !error.has_label(UNKNOWN_COMMIT) || attempt >= MAX_COMMIT_ATTEMPTS {
                    return Err(error);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_without_transactions_are_named() {
        let standalone = SeqError::server(20, Some("IllegalOperation".into()), "no txn");
        assert_eq!(
            unsupported(standalone).code,
            ErrorCode::TransactionsUnsupported
        );
        let driver = SeqError::new(
            ErrorCode::Server,
            "MongoDB driver error: Transactions are not supported by this deployment",
        );
        assert_eq!(unsupported(driver).code, ErrorCode::TransactionsUnsupported);
        let mut other = SeqError::server(112, None, "WriteConflict");
        assert!(!retryable(&other), "codes alone decide nothing");
        other.labels.push(TRANSIENT.to_string());
        assert!(retryable(&other));
        assert_eq!(unsupported(other).code, ErrorCode::Server);
    }
}
