//! The napi layer: reads JavaScript arguments, calls the engine, converts results and
//! errors back. No sequence logic lives here.

pub mod admin;
pub mod call_order;
pub mod calls;
pub mod client;
pub mod db_memo;
pub mod db_target;
pub mod format_fn;
pub mod functions;
pub mod guard;
pub mod insert;
pub mod js_error;
pub mod js_number;
pub mod js_read;
pub mod js_to_bson;
pub mod located;
pub mod name;
pub mod node_close;
pub mod object_memo;
pub mod option_specs;
pub mod options;
pub mod output;
pub mod recent_counters;
pub mod sequence_handle;
pub mod settled;
pub mod shared;
pub mod spawn;
pub mod types;
