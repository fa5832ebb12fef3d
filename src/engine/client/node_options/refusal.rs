//! The refusal of a Node client whose option cannot be carried over: `UNSUPPORTED_CLIENT`,
//! naming the option and why, with the remedy. Shared by the readers of the options
//! (`derive.rs`, `tls.rs`).

use crate::engine::error::{ErrorCode, SeqError};

/// `UNSUPPORTED_CLIENT`: option `option` is not carried over, for reason `why`.
pub(super) fn refused(option: &str, why: &str) -> SeqError {
    SeqError::new(
        ErrorCode::UnsupportedClient,
        format!(
            "cannot derive a connection from this MongoClient: its option '{option}' is not \
             carried over ({why}). Pass the connection string yourself as {{ uri }} (for \
             example from process.env.MONGODB_URI) or use connect(uri)"
        ),
    )
}

/// `UNSUPPORTED_CLIENT`: option `option` holds a value it cannot have (`what` it is).
pub(super) fn bad(option: &str, what: &str) -> SeqError {
    refused(option, &format!("its value is {what}"))
}
