//! `SequenceDb`, a database of a `SequenceClient` (`exports::client` makes it): the `db`
//! argument `read::db` recognises without reading anything else.

use std::sync::Arc;

use crate::engine::client::handle::ClientHandle;

/// A database of a `SequenceClient`: pass it where the helper takes a Node driver `Db`.
#[napi]
pub struct SequenceDb {
    handle: Arc<ClientHandle>,
    name: String,
}

#[napi]
impl SequenceDb {
    /// The database name (as on a Node driver `Db`).
    #[napi(getter, catch_unwind)]
    pub fn database_name(&self) -> String {
        self.name.clone()
    }
}

impl SequenceDb {
    /// A handle on database `name` of the client `handle` (`SequenceClient.db`).
    pub fn new(handle: Arc<ClientHandle>, name: String) -> SequenceDb {
        SequenceDb { handle, name }
    }

    /// The client this database belongs to.
    pub fn handle(&self) -> Arc<ClientHandle> {
        self.handle.clone()
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
