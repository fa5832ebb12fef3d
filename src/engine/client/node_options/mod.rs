//! A connection derived from a Node driver `MongoClient`: its *effective* options
//! (`client.options`, where the driver already merged the connection string and the
//! options object) read through an allow-list. Every key is classified in [`OPTION_TABLE`]:
//! mapped to the same Rust driver setting, irrelevant to a counter call (the reason is
//! written next to it), or refused with `UNSUPPORTED_CLIENT` unless it has the driver's
//! default. A key the table does not know is not a setting when it holds what the same
//! driver gives a client made from a bare connection string (drivers add options with
//! defaults, and hooks such as `toJSON`, every few minors: a driver upgrade must not
//! break a working application); set to anything else it is refused, so a setting this
//! package cannot carry over never slips through. Nothing here reads a connection
//! string: hosts, credentials and settings come from the parsed options, and messages
//! only ever name options.

mod derive;
mod derived;
mod driver_options;
mod refusal;
mod table;
mod tls;
mod value;

pub use derive::*;
pub use derived::*;
pub use table::*;
pub use tls::*;
pub use value::*;

#[cfg(test)]
#[path = "node_options_tests.rs"]
mod tests;
