//! The napi-free core: sequence logic, client registry, value conversion and errors.
//! Nothing here knows about JavaScript; `crate::binding` converts types at the edge.

pub(crate) mod alloc;
pub(crate) mod call_options;
pub mod client;
pub mod counter;
pub mod error;
pub(crate) mod gapless;
pub(crate) mod management;
#[cfg(test)]
mod model_tests;
pub(crate) mod panic_safety;
pub(crate) mod store;
#[cfg(test)]
pub(crate) mod test_support;
pub mod text;
