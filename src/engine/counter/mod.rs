//! What a counter is: its name, where its document is found, its stored configuration,
//! the value its field holds, a block of values reserved from it, and how much of its
//! range it has used, and which document a filter finds (`identity`).

pub(crate) mod capacity;
pub mod counter_name;
pub(crate) mod counter_value;
pub(crate) mod id_range;
pub(crate) mod identity;
pub(crate) mod locator;
pub(crate) mod sequence_config;
