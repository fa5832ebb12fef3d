//! Where a call goes (`DbTarget`): a client and a database name, as read from the `db`
//! argument (`read::db`). Reading it opens nothing: `reserve/prepare.rs` opens a shared
//! client on first use.

use std::sync::Arc;

use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::db_reads::DbReads;
use crate::engine::client::handle::ClientHandle;
use crate::engine::client::write_concern::WriteConcernSpec;
use crate::engine::error::{SeqError, SeqResult};

/// Where a call goes: a client and a database name.
#[derive(Clone)]
pub enum DbTarget {
    /// A client opened with `connect(uri)`.
    Own(Arc<ClientHandle>, String),
    /// A shared client for a connection derived from a Node driver client or `uri`, and
    /// the settings of the Node driver `Db` it was read from.
    Shared(ConnectionTarget, String, Arc<DbSettings>),
}

/// What a Node driver `Db` says of its operations (its own, or what it inherited from
/// its client), for the calls made through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbSettings {
    /// Its write concern: the default of a call that gives none.
    pub write_concern: Option<WriteConcernSpec>,
    /// Its read concern and read preference, for the reads that only report; when they
    /// cannot be carried, why: only those reads fail (a `Db` that numbers never uses
    /// them, and a `uri` given to the call replaces them).
    pub reads: Result<DbReads, SeqError>,
}

impl DbTarget {
    /// Which client's line of waiting calls a call stands in (see `reserve::order`):
    /// one per own client, one per shared connection.
    pub fn line(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        match self {
            DbTarget::Own(handle, _) => Arc::as_ptr(handle) as usize as u64,
            DbTarget::Shared(target, _, _) => {
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                target.hash(&mut hasher);
                hasher.finish()
            }
        }
    }

    /// The write concern of a call that gives `call` (its `writeConcern` option): that
    /// one, else the `Db`'s.
    pub fn write_concern<'a>(
        &'a self,
        call: Option<&'a WriteConcernSpec>,
    ) -> Option<&'a WriteConcernSpec> {
        match self {
            DbTarget::Shared(_, _, db) => call.or(db.write_concern.as_ref()),
            _ => call,
        }
    }

    /// The `Db`'s read settings (none for a `SequenceDb`, whose client has its own).
    pub fn reads(&self) -> SeqResult<DbReads> {
        match self {
            DbTarget::Shared(_, _, db) => db.reads.clone(),
            DbTarget::Own(..) => Ok(DbReads::default()),
        }
    }
}
