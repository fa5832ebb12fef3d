//! Handing out values: one round trip per call, merged round trips, cached blocks, and the
//! one per-counter state every call for a counter goes through.

pub(crate) mod allocate;
pub(crate) mod block_cache;
pub(crate) mod coalesce;
pub(crate) mod counter_state;
pub(crate) mod demand;
pub(crate) mod live;
pub(crate) mod prepared_counter;
pub(crate) mod waiter;
