//! The `db` argument: a `SequenceDb` of this package, or a Node driver `Db` (also
//! `mongoose.connection.db`) whose connection is derived from its client.

use std::sync::Arc;

use napi::bindgen_prelude::{
    ClassInstance, Env, FromNapiValue, JavaScriptClassExt, Object, Unknown,
};
use napi::JsValue;

use crate::binding::exports::client::SequenceDb;
use crate::binding::read::db_memo;
use crate::binding::read::js::{
    array_items, boolean, describe, for_each_property, number, object, object_property, string,
    string_property, type_of,
};
use crate::engine::client::connection::{derive_from_node_client_cached, ConnectionTarget};
use crate::engine::client::node_options::{rule, NodeOptions, NodeValue, Rule};
use crate::engine::client::registry::{ClientHandle, SHARED_CLIENTS};
use crate::engine::error::{ErrorCode, SeqError, SeqResult};

/// Where a call goes: a client and a database name.
#[derive(Clone)]
pub enum DbTarget {
    /// A client opened with `connect(uri)`.
    Own(Arc<ClientHandle>, String),
    /// A shared client for a connection derived from a Node driver client or `uri`.
    Shared(ConnectionTarget, String),
}

impl DbTarget {
    /// The client and database when no waiting is needed (own client, or a shared client
    /// already open).
    pub fn resolve_now(&self) -> Option<(Arc<ClientHandle>, &str)> {
        match self {
            DbTarget::Own(handle, db) => Some((handle.clone(), db)),
            DbTarget::Shared(target, db) => {
                SHARED_CLIENTS.try_get(target).map(|h| (h, db.as_str()))
            }
        }
    }

    /// The client and database, opening the shared client on first use.
    pub async fn resolve(self) -> SeqResult<(Arc<ClientHandle>, String)> {
        match self {
            DbTarget::Own(handle, db) => Ok((handle, db)),
            DbTarget::Shared(target, db) => Ok((SHARED_CLIENTS.get(&target).await?, db)),
        }
    }
}

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
    if let Some(uri) = uri {
        return Ok(DbTarget::Shared(ConnectionTarget::from_uri(uri)?, database));
    }
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
            let derived = derive_from_node_client_cached(&node_client_options(&options)?)?;
            options_memo::remember(env, &options, &derived);
            derived
        }
    };
    crate::binding::node_close::watch_node_client(env, &client, &connection);
    let target = DbTarget::Shared(connection, database);
    db_memo::remember(env, value, &target);
    Ok(target)
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

/// How deep option values are read (`readPreference.tags[0].dc` is three levels).
const MAX_DEPTH: usize = 4;
/// Longest buffer read from an option (a certificate bundle is a few kilobytes).
const MAX_BYTES: usize = 1 << 20;

/// The effective options of a Node driver client (`client.options`, where the driver
/// merged its connection string and options object), read key by key.
fn node_client_options(options: &Object) -> SeqResult<NodeOptions> {
    let mut out = NodeOptions::new();
    for_each_property(options, "the MongoClient's options", |key, value| {
        // Values of options that cannot matter are not converted (logger settings, driver
        // metadata, pkFactory…): only their presence is kept.
        let value = match rule(key) {
            Some(Rule::Irrelevant(_)) => NodeValue::Other,
            _ => node_value(&value, 0),
        };
        out.insert(key.to_string(), value);
        Ok(())
    })?;
    Ok(out)
}

fn node_value(value: &Unknown, depth: usize) -> NodeValue {
    use napi::ValueType;
    match type_of(value) {
        ValueType::Undefined => NodeValue::Undefined,
        ValueType::Null => NodeValue::Null,
        ValueType::Boolean => boolean(value).map_or(NodeValue::Other, NodeValue::Bool),
        ValueType::Number => number(value).map_or(NodeValue::Other, NodeValue::number),
        ValueType::String => string(value).map_or(NodeValue::Other, NodeValue::Text),
        ValueType::Function => NodeValue::Function,
        ValueType::Object if depth >= MAX_DEPTH => NodeValue::Other,
        ValueType::Object => {
            if value.is_buffer().unwrap_or(false) || value.is_typedarray().unwrap_or(false) {
                return bytes(value).map_or(NodeValue::Other, NodeValue::Bytes);
            }
            if value.is_promise().unwrap_or(false) {
                return NodeValue::Other;
            }
            if value.is_array().unwrap_or(false) {
                return array_items(value, 1024).map_or(NodeValue::Other, |items| {
                    NodeValue::List(items.iter().map(|v| node_value(v, depth + 1)).collect())
                });
            }
            let Some(obj) = crate::binding::read::js::object_or_array(value) else {
                return NodeValue::Other;
            };
            let mut map = std::collections::BTreeMap::new();
            let read = for_each_property(&obj, "an option", |key, v| {
                map.insert(key.to_string(), node_value(&v, depth + 1));
                Ok(())
            });
            read.map_or(NodeValue::Other, |_| NodeValue::Map(map))
        }
        _ => NodeValue::Other,
    }
}

/// The bytes of a `Buffer` or `Uint8Array` (up to [`MAX_BYTES`]).
fn bytes(value: &Unknown) -> Option<Vec<u8>> {
    use napi::sys;
    let env = value.value().env;
    let mut kind = sys::TypedarrayType::uint8_array;
    let mut length = 0usize;
    let mut data = std::ptr::null_mut();
    let mut array_buffer = std::ptr::null_mut();
    let mut offset = 0usize;
    // SAFETY: N-API typed array read of a live value of this env (a Buffer is a
    // Uint8Array); the data pointer is valid for `length` elements during this call.
    unsafe {
        if sys::napi_get_typedarray_info(
            env,
            value.raw(),
            &mut kind,
            &mut length,
            &mut data,
            &mut array_buffer,
            &mut offset,
        ) != sys::Status::napi_ok
            || kind != sys::TypedarrayType::uint8_array
            || length > MAX_BYTES
        {
            return None;
        }
        if length == 0 {
            return Some(Vec::new());
        }
        Some(std::slice::from_raw_parts(data.cast::<u8>(), length).to_vec())
    }
}
