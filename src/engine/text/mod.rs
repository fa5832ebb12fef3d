//! Text in and out: checks on user input, quoting it in messages, keeping passwords out
//! of them, and business-number patterns.

pub mod format;
pub mod quote;
pub mod redact;
pub mod validate;
