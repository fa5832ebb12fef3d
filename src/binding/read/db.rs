//! The `db` argument: a `SequenceDb` of this package, or a Node driver `Db` (also
//! `mongoose.connection.db`) whose connection is derived from its client.

use napi::bindgen_prelude::{ClassInstance, Env, FromNapiValue, JavaScriptClassExt, Unknown};
use napi::JsValue;

use crate::binding::js::{
    boolean, describe, is_nullish, number, object, object_property, property, string_property,
};
use crate::binding::read::db_memo;
use crate::binding::read::db_target::{DbSettings, DbTarget};
use crate::binding::read::kinds::{Kind, OptionValue};
use crate::binding::read::node_client;
use crate::binding::read::option_reader::read_value;
use crate::binding::read::sequence_db::SequenceDb;
use crate::engine::client::connection::{derive_from_node_client_cached, ConnectionTarget};
use crate::engine::client::db_reads::DbReads;
use crate::engine::client::node_options::NodeValue;
use crate::engine::client::write_concern::WriteConcernSpec;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};

const NOT_A_DB: &str = "db must be a Db of the MongoDB Node driver (client.db(name)), \
                        mongoose.connection.db, or a SequenceDb from connect(uri)";

/// Reads the `db` argument; `uri` (the `uri` option) replaces the derived connection.
pub fn read_db(env: &Env, value: &Unknown, uri: Option<&str>) -> SeqResult<DbTarget> {
    // A `Db` or `SequenceDb` seen before: its database and connection cannot change.
    if uri.is_none() {
        if let Some(known) = db_memo::recall(env, value) {
            return Ok(known);
        }
    }
    read_unremembered_db(env, value, uri)
}

/// [`read_db`] for a `db` the caller already looked up in `db_memo` and did not find
/// there (or with `uri`): read from its properties, then remembered.
pub fn read_unremembered_db(env: &Env, value: &Unknown, uri: Option<&str>) -> SeqResult<DbTarget> {
    if SequenceDb::instance_of(env, value).unwrap_or(false) {
        // SAFETY: instance_of checked that the value wraps a SequenceDb.
        let db = unsafe { ClassInstance::<SequenceDb>::from_napi_value(env.raw(), value.raw()) }
            .map_err(|e| SeqError::invalid_argument(e.to_string()))?;
        let target = DbTarget::Own(db.handle(), db.name().to_string());
        db_memo::remember(env, value, &target);
        return Ok(target);
    }
    let Some(db) = object(value) else {
        return Err(SeqError::invalid_argument(format!(
            "{NOT_A_DB}; got {}",
            describe(value)
        )));
    };
    let database = string_property(&db, "databaseName")
        .ok_or_else(|| SeqError::invalid_argument(format!("{NOT_A_DB}; it has no databaseName")))?;
    let write_concern = db_write_concern(&db)?;
    if let Some(uri) = uri {
        // The connection string's own read settings, not those the `Db` took from a
        // client of perhaps another deployment (tags that match none of its members).
        let settings = DbSettings {
            write_concern,
            reads: Ok(DbReads::default()),
        };
        return Ok(DbTarget::Shared(
            ConnectionTarget::from_uri(uri)?,
            database,
            std::sync::Arc::new(settings),
        ));
    }
    let settings = std::sync::Arc::new(DbSettings {
        write_concern,
        reads: db_reads(&db),
    });
    let client = object_property(&db, "client")
        .ok_or_else(|| SeqError::invalid_argument(format!("{NOT_A_DB}; it has no client")))?;
    let options = object_property(&client, "options").ok_or_else(|| {
        SeqError::new(
            ErrorCode::UnsupportedClient,
            "cannot read this MongoClient's options; pass { uri } as the options argument, \
             or use connect(uri)",
        )
    })?;
    let connection = match options_memo::recall(env, &options) {
        Some(known) => known,
        None => {
            let derived = derive_from_node_client_cached(&node_client::effective_options(
                env, &client, &options,
            )?)?;
            options_memo::remember(env, &options, &derived);
            derived
        }
    };
    crate::binding::node_close::watch_node_client(env, &client, &connection);
    let target = DbTarget::Shared(connection, database, settings);
    db_memo::remember(env, value, &target);
    Ok(target)
}

/// The Node driver `Db`'s `writeConcern` (given to `client.db(name, options)`, or
/// inherited from its client): what the driver's own writes on that `Db` wait for, so
/// the counter writes made through it wait for the same. One that cannot return a
/// counter (`w: 0`) is refused.
fn db_write_concern(db: &napi::bindgen_prelude::Object) -> SeqResult<Option<WriteConcernSpec>> {
    let Some(concern) = object_property(db, "writeConcern") else {
        return Ok(None);
    };
    let refused = |e: SeqError| {
        SeqError::invalid_argument(format!(
            "the Db's writeConcern cannot be used for counters: {}",
            e.message
        ))
    };
    let w = property(&concern, "w")?;
    // `w` as the writeConcern option reads it.
    let w = if is_nullish(&w) {
        None
    } else if let OptionValue::Ack(w) =
        read_value("writeConcern.w", Kind::Ack, &w).map_err(refused)?
    {
        Some(w)
    } else {
        None
    };
    let journal = property(&concern, "journal")?;
    let wtimeout = property(&concern, "wtimeoutMS")?;
    let spec = WriteConcernSpec {
        w,
        journal: boolean(&journal),
        wtimeout_ms: number(&wtimeout)
            .filter(|ms| ms.is_finite() && *ms >= 0.0 && ms.fract() == 0.0)
            .map(|ms| ms as u64),
    };
    Ok((spec != WriteConcernSpec::default()).then_some(spec))
}

/// The Node driver `Db`'s `readConcern` and `readPreference` (its own, else its
/// client's: `client.db()` copies the client's options into the `Db`), read as a
/// client's are.
fn db_reads(db: &napi::bindgen_prelude::Object) -> SeqResult<DbReads> {
    let read =
        |key: &str| -> SeqResult<NodeValue> { Ok(node_client::node_value(&property(db, key)?)) };
    DbReads::from_node(&read("readConcern")?, &read("readPreference")?)
}

/// The connection derived from a client's options object, remembered per object (weakly,
/// as `db_memo` does for `Db` objects): code that calls `client.db(name)` for every call
/// makes a new `Db` each time but keeps one client. The Node driver's own later changes to
/// the object (files read into `ca`/`cert`/`key`, SRV results) derive the same connection.
mod options_memo {
    use std::cell::RefCell;

    use napi::bindgen_prelude::{Env, Object};

    use crate::binding::read::object_memo::ObjectMemo;
    use crate::engine::client::connection::ConnectionTarget;

    /// How many options objects are remembered per JavaScript thread.
    const CAPACITY: usize = 8;

    thread_local! {
        static MEMO: RefCell<ObjectMemo<ConnectionTarget>> =
            const { RefCell::new(ObjectMemo::new(CAPACITY)) };
    }

    /// The connection remembered for this very options object, if any.
    pub fn recall(env: &Env, options: &Object) -> Option<ConnectionTarget> {
        MEMO.with(|memo| {
            memo.borrow()
                .recall_with(env, options, ConnectionTarget::clone)
        })
    }

    /// Remembers `target` for `options`, replacing the oldest entry when full.
    pub fn remember(env: &Env, options: &Object, target: &ConnectionTarget) {
        MEMO.with(|memo| memo.borrow_mut().remember(env, options, target.clone()));
    }
}
