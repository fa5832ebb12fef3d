//! Reaching a server: connection targets, the shared driver clients, Node driver options,
//! write concern, and the driver's errors turned into ours.

pub mod connection;
pub mod driver_error;
pub mod node_options;
pub mod registry;
pub mod write_concern;
