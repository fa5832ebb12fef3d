//! The napi layer: reads JavaScript arguments, calls the engine, converts results and
//! errors back. No sequence logic lives here.
//!
//! - `exports/`: the functions and classes JavaScript calls, one file per group.
//! - `read/`: reading arguments (options through one table per option set, names,
//!   `db`, documents).
//! - `reserve/`: the function form's fast path (values reserved on the JavaScript thread
//!   in call order, prepared counters recalled for equal arguments).
//! - `guard`: the boundary every export runs in; `error`: engine errors as JavaScript
//!   errors; `output`: results as JavaScript values.

pub mod error;
pub mod exports;
pub mod guard;
pub mod node_close;
pub mod output;
pub mod read;
pub mod reserve;
pub mod settled;
pub mod spawn;
