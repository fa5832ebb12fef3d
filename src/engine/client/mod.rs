//! Reaching a server: connection targets, the shared driver clients, Node driver options,
//! write concern, a `Db`'s read settings, and the driver's errors turned into ours.

pub(crate) mod call_bound;
pub(crate) mod client_certificate;
pub mod connection;
pub(crate) mod db_reads;
pub(crate) mod driver_error;
pub(crate) mod handle;
pub(crate) mod lifecycle;
pub(crate) mod node_options;
pub(crate) mod registry;
mod slot;
pub(crate) mod writable;
pub(crate) mod write_concern;
