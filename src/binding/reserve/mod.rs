//! The function form's fast path: values reserved on the JavaScript thread in the order
//! the calls were made, settled at once when the block cache holds them, and counters
//! prepared by an earlier call recalled for equal arguments.

pub mod order;
pub mod recent;
pub mod values;
