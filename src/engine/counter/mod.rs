//! What a counter is: its name, where its document is found, its stored configuration,
//! the value its field holds, and a block of values reserved from it.

pub mod counter_name;
pub(crate) mod counter_value;
pub(crate) mod id_range;
pub(crate) mod locator;
pub(crate) mod sequence_config;
