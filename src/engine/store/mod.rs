//! Where counter documents live: the storage trait, the filters and updates of every
//! counter write, its implementation on the MongoDB driver (with the unique index a
//! located counter relies on), and an in-memory one for tests.

pub(crate) mod counter_store;
pub(crate) mod driver_store;
pub(crate) mod filters;
#[cfg(test)]
pub(crate) mod memory_store;
pub(crate) mod mongo_driver;
pub(crate) mod unique_index;
