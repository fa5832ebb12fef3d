//! Where counter documents live: the storage trait, the filters and updates of every
//! counter write, its implementation on the MongoDB driver, and an in-memory one for tests.

pub mod counter_store;
pub mod driver_counters;
pub mod filters;
#[cfg(test)]
pub mod memory_store;
pub mod mongo_driver;
