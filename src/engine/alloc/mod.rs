//! Handing out values: one round trip per call, merged round trips, cached blocks, and the
//! one per-counter state every call for a counter goes through.

pub mod allocate;
pub mod block_cache;
pub mod coalesce;
pub mod counter_state;
pub mod demand;
pub mod live;
pub mod prepared_counter;
pub mod waiter;
