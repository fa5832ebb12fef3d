//! Every error the library can report, defined in one place.
//!
//! Each [`SeqError`] carries a stable [`ErrorCode`] that reaches JavaScript as the `code`
//! property of the rejected `Error`; messages are for people, codes are for programs.

use std::fmt;

/// Stable, machine-readable error codes (the `code` property seen from JavaScript).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The counter document does not exist and `upsert` is off.
    SequenceNotFound,
    /// An argument or option is of the wrong type or out of range; nothing was sent.
    InvalidArgument,
    /// The stored counter is not an integer (string, null, object, fractional double…).
    InvalidCounter,
    /// The value does not fit: beyond 2^53-1 as a number, or beyond the 64-bit range.
    SequenceOverflow,
    /// The server could not be reached (selection timeout, network, DNS, authentication).
    Connection,
    /// The server answered with an error; its numeric code is kept.
    Server,
    /// The client this call used has been closed.
    ClientClosed,
    /// A Node driver client with an option the derived connection cannot carry (named in the message).
    UnsupportedClient,
    /// The counter kept changing under a bounded number of attempts.
    Contention,
    /// Gapless mode was asked of a server without transactions (a standalone).
    TransactionsUnsupported,
    /// A configured counter reached its limit and does not cycle.
    SequenceExhausted,
    /// A bug in this package (a panic caught at the boundary); the call did nothing more.
    Internal,
    /// Another unique index of the counters collection refuses the counter document
    /// (e.g. mongoose-sequence's `id_1_reference_value_1` next to helper-style counters).
    IndexConflict,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; 13] = [
        ErrorCode::SequenceNotFound,
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidCounter,
        ErrorCode::SequenceOverflow,
        ErrorCode::Connection,
        ErrorCode::Server,
        ErrorCode::ClientClosed,
        ErrorCode::UnsupportedClient,
        ErrorCode::Contention,
        ErrorCode::TransactionsUnsupported,
        ErrorCode::SequenceExhausted,
        ErrorCode::Internal,
        ErrorCode::IndexConflict,
    ];

    /// The string exposed to JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SequenceNotFound => "SEQUENCE_NOT_FOUND",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::InvalidCounter => "INVALID_COUNTER",
            ErrorCode::SequenceOverflow => "SEQUENCE_OVERFLOW",
            ErrorCode::Connection => "CONNECTION",
            ErrorCode::Server => "SERVER",
            ErrorCode::ClientClosed => "CLIENT_CLOSED",
            ErrorCode::UnsupportedClient => "UNSUPPORTED_CLIENT",
            ErrorCode::Contention => "CONTENTION",
            ErrorCode::TransactionsUnsupported => "TRANSACTIONS_UNSUPPORTED",
            ErrorCode::SequenceExhausted => "SEQUENCE_EXHAUSTED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::IndexConflict => "INDEX_CONFLICT",
        }
    }
}

/// A failure with a stable code, a message safe to show (no passwords), and for server
/// errors the server's own numeric code and code name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqError {
    /// Stable code.
    pub code: ErrorCode,
    /// Human-readable message, already redacted.
    pub message: String,
    /// The server's numeric error code, for [`ErrorCode::Server`] (and overflow reported by it).
    pub server_code: Option<i32>,
    /// The server's code name, when it sent one.
    pub server_code_name: Option<String>,
    /// The server's error labels (`TransientTransactionError`, …), which decide retries.
    pub labels: Vec<String>,
}

/// Result alias used across the engine.
pub type SeqResult<T> = Result<T, SeqError>;

impl SeqError {
    /// A new error with no server details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SeqError {
            code,
            message: message.into(),
            server_code: None,
            server_code_name: None,
            labels: Vec::new(),
        }
    }

    /// `Sequence '<name>' not found. Please initialize it.`: the documented helper's message.
    pub fn not_found(name: &str) -> Self {
        Self::new(
            ErrorCode::SequenceNotFound,
            format!("Sequence '{name}' not found. Please initialize it."),
        )
    }

    /// A panic caught at the boundary, reported without its payload (which could hold a
    /// secret or user data). `place` says where, for the bug report.
    pub fn internal(place: &str) -> Self {
        Self::new(
            ErrorCode::Internal,
            format!(
                "internal error in mongodb-sequence ({place}); this is a bug, please report it \
                 with the call that caused it. The process is unaffected"
            ),
        )
    }

    /// `INDEX_CONFLICT`: unique index `index` of `collection` refuses counter `label`.
    pub fn index_conflict(label: &str, collection: &str, index: &str) -> Self {
        Self::new(
            ErrorCode::IndexConflict,
            format!(
                "Sequence '{label}' cannot be stored in collection '{collection}': its unique \
                 index '{index}' refuses the counter document. mongoose-sequence's \
                 'id_1_reference_value_1' treats a missing field as null, so it holds only one \
                 counter without those fields: keep helper-style counters and mongoose \
                 counters in different collections"
            ),
        )
    }

    /// A bad argument or option.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    /// A stored counter that is not an integer.
    pub fn invalid_counter(name: &str, field: &str, found: &str) -> Self {
        Self::new(
            ErrorCode::InvalidCounter,
            format!(
                "Sequence '{name}' has a counter field '{field}' holding {found}; \
                 expected an int, a long or an integral double"
            ),
        )
    }

    /// A value that does not fit.
    pub fn overflow(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::SequenceOverflow, message)
    }

    /// An error answered by the server.
    pub fn server(code: i32, code_name: Option<String>, message: &str) -> Self {
        let label = match &code_name {
            Some(name) if !name.is_empty() => format!("{code} ({name})"),
            _ => code.to_string(),
        };
        SeqError {
            code: ErrorCode::Server,
            message: format!("MongoDB server error {label}: {message}"),
            server_code: Some(code),
            server_code_name: code_name.filter(|n| !n.is_empty()),
            labels: Vec::new(),
        }
    }

    /// Whether the server labelled the error `label`.
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    /// Removes every occurrence of each secret from the message.
    pub fn redacted(mut self, secrets: &[String]) -> Self {
        self.message = crate::engine::text::redact::redact(&self.message, secrets);
        self
    }
}

impl fmt::Display for SeqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for SeqError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_the_documented_helper() {
        let e = SeqError::not_found("productId");
        assert_eq!(
            e.message,
            "Sequence 'productId' not found. Please initialize it."
        );
        assert_eq!(e.code.as_str(), "SEQUENCE_NOT_FOUND");
    }

    #[test]
    fn server_error_keeps_code_and_name() {
        let e = SeqError::server(40, Some("ConflictingUpdateOperators".into()), "conflict");
        assert_eq!(e.server_code, Some(40));
        assert_eq!(e.code, ErrorCode::Server);
        assert!(e.message.contains("40 (ConflictingUpdateOperators)"));
        let e = SeqError::server(2, Some(String::new()), "bad");
        assert_eq!(e.server_code_name, None);
        assert!(e.message.contains("error 2: bad"));
    }

    #[test]
    fn codes_are_distinct() {
        let all = ErrorCode::ALL;
        let set: std::collections::HashSet<_> = all.iter().map(|c| c.as_str()).collect();
        assert_eq!(set.len(), all.len());
    }
}
