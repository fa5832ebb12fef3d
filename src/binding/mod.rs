//! The napi layer: reads JavaScript arguments, calls the engine, converts results and
//! errors back. No sequence logic lives here.
//!
//! Its files form layers, each using only its own and lower ones, with no files using
//! each other in a circle (checked by `layer_tests`):
//!
//! - `exports/`: the functions and classes JavaScript calls, one file per group.
//! - `reserve/`: the pipeline of a call that takes values (its counter resolved: recalled
//!   for equal arguments, its client opened, prepared; then submitted in call order or
//!   waiting in line, and its result shaped), and the opening of a `db`'s client for
//!   the other calls.
//! - `read/`: reading arguments (options through one table per option set, names,
//!   `db`, documents) into a `NamedCounter`; reading opens and prepares nothing.
//! - the root: `boundary`, the wrapper every export runs in (a panic or error becomes a
//!   JavaScript `Error`); `error`: engine errors as JavaScript errors; `output`: results
//!   as JavaScript values; `js`: loosely typed JavaScript values; `spawn` and `ready`:
//!   promises; `diagnostics`: the round-trip channel; `node_close`: the Node client's
//!   close.

pub mod boundary;
pub mod diagnostics;
pub mod error;
pub mod exports;
pub mod js;
#[cfg(test)]
mod layer_tests;
pub mod node_close;
pub mod output;
pub mod read;
pub mod ready;
pub mod reserve;
pub mod spawn;
