//! The napi-free core: sequence logic, client registry, value conversion and errors.
//! Nothing here knows about JavaScript; `crate::binding` converts types at the edge.

pub mod admin;
pub mod allocate;
pub mod block_cache;
pub mod coalesce;
pub mod connection;
pub mod counter_name;
pub mod counter_state;
pub mod counter_value;
pub mod demand;
pub mod driver_counters;
pub mod driver_error;
pub mod error;
pub mod filters;
pub mod format;
pub mod gapless;
pub mod id_range;
pub mod js_number;
pub mod live;
pub mod locator;
#[cfg(test)]
pub mod memory_store;
#[cfg(test)]
mod model_tests;
pub mod mongo_store;
pub mod node_options;
pub mod options;
pub mod panic_safety;
pub mod quote;
pub mod redact;
pub mod registry;
pub mod reserve;
pub mod sequence_config;
pub mod store;
#[cfg(test)]
pub mod test_support;
pub mod validate;
pub mod waiter;
pub mod write_concern;
