//! What a counter is: its name, where its document is found, its stored configuration,
//! the value its field holds, and a block of values reserved from it.

pub mod counter_name;
pub mod counter_value;
pub mod id_range;
pub mod locator;
pub mod sequence_config;
