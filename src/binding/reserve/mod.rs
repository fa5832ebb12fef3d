//! The pipeline of a call that takes values, on the JavaScript thread: its counter
//! resolved (recalled for equal arguments, its client opened, prepared), the call
//! submitted in the order JavaScript made it (or waiting in line while its client
//! opens), and its result shaped.

pub mod order;
pub mod prepare;
pub mod recent;
pub mod values;
