//! The `db` argument: a `SequenceDb` of this package, or a Node driver `Db` (also
//! `mongoose.connection.db`) whose connection is derived from its client.

use std::sync::Arc;

use napi::bindgen_prelude::{
    ClassInstance, Env, FromNapiValue, JavaScriptClassExt, Object, Unknown,
};
use napi::JsValue;

use crate::binding::client::SequenceDb;
use crate::binding::db_memo;
use crate::binding::js_read::{
    describe, number, object, object_property, property, string_property,
};
use crate::engine::connection::{
    derive_from_node_client_cached, ConnectionTarget, NodeClientFacts,
};
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::registry::{ClientHandle, SHARED_CLIENTS};

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
    let facts = node_client_facts(&client)?;
    let target = DbTarget::Shared(derive_from_node_client_cached(&facts)?, database);
    if let DbTarget::Shared(derived, _) = &target {
        crate::binding::node_close::watch_node_client(env, &client, derived);
    }
    db_memo::remember(env, value, &target);
    Ok(target)
}

/// Options of a Node driver client that no connection string can carry.
const OBJECT_ONLY_OPTIONS: [&str; 3] = ["autoEncryption", "secureContext", "serverApi"];

fn node_client_facts(client: &Object) -> SeqResult<NodeClientFacts> {
    let url = object_property(client, "s")
        .and_then(|s| string_property(&s, "url"))
        .ok_or_else(|| {
            SeqError::new(
                ErrorCode::UnsupportedClient,
                "cannot find this MongoClient's connection string; pass { uri: '...' } \
                 as the options argument, or use connect(uri)",
            )
        })?;
    let mut facts = NodeClientFacts {
        url,
        ..Default::default()
    };
    let Some(options) = object_property(client, "options") else {
        return Ok(facts);
    };
    if let Some(credentials) = object_property(&options, "credentials") {
        facts.username = string_property(&credentials, "username").filter(|s| !s.is_empty());
        facts.password = string_property(&credentials, "password").filter(|s| !s.is_empty());
        facts.auth_source = string_property(&credentials, "source");
        facts.auth_mechanism = string_property(&credentials, "mechanism");
    }
    let flag = |key: &str| {
        property(&options, key)
            .ok()
            .as_ref()
            .and_then(crate::binding::js_read::boolean)
            .unwrap_or(false)
    };
    facts.tls = flag("tls");
    facts.direct_connection = flag("directConnection");
    facts.load_balanced = flag("loadBalanced");
    facts.replica_set = string_property(&options, "replicaSet");
    let millis = |key: &str| {
        property(&options, key)
            .ok()
            .as_ref()
            .and_then(number)
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n as u64)
    };
    facts.server_selection_timeout_ms = millis("serverSelectionTimeoutMS");
    facts.connect_timeout_ms = millis("connectTimeoutMS");
    facts.object_options = OBJECT_ONLY_OPTIONS
        .iter()
        .filter(|key| {
            property(&options, key)
                .map(|v| !crate::binding::js_read::is_nullish(&v))
                .unwrap_or(false)
        })
        .map(|key| key.to_string())
        .collect();
    Ok(facts)
}
