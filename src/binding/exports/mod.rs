//! What JavaScript calls: each file holds the exports of one group.

pub mod client;
pub mod db_like;
pub mod format;
pub mod insert;
pub mod located;
pub mod manage;
pub mod next_value;
pub mod package_support;
pub mod sequence_handle;
pub mod shared_clients;
pub mod stats;
