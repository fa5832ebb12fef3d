//! The napi-free core: sequence logic, client registry, value conversion and errors.
//! Nothing here knows about JavaScript; `crate::binding` converts types at the edge.

pub mod admin;
pub mod alloc;
pub mod call_options;
pub mod client;
pub mod counter;
pub mod error;
pub mod gapless;
#[cfg(test)]
mod model_tests;
pub mod panic_safety;
pub mod store;
#[cfg(test)]
pub mod test_support;
pub mod text;
