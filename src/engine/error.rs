//! Every error the library can report, defined in one place.
//!
//! Each [`SeqError`] carries a stable [`ErrorCode`] that reaches JavaScript as the `code`
//! property of the rejected `Error`; messages are for people, codes are for programs.

use std::fmt;

/// Hands every error code, in order, to the macro named `$then`: each code's doc comment,
/// its Rust variant and its JavaScript string (written as an identifier, exactly as
/// JavaScript sees it). This list is the one definition of the codes: [`ErrorCode`] below
/// and the binding's `ErrorCode` export and typings (the string union of `index.d.ts`)
/// are all expanded from it, so a code added here reaches each of them with no second edit.
macro_rules! with_error_codes {
    ($then:ident) => {
        $then! {
            /// The counter document does not exist and `upsert` is off.
            SequenceNotFound => SEQUENCE_NOT_FOUND,
            /// An argument or option is of the wrong type or out of range; nothing was sent.
            InvalidArgument => INVALID_ARGUMENT,
            /// The stored counter is not an integer (string, null, object, fractional double…).
            InvalidCounter => INVALID_COUNTER,
            /// The value does not fit: beyond 2^53-1 as a number, or beyond the 64-bit range.
            SequenceOverflow => SEQUENCE_OVERFLOW,
            /// The server could not be reached (selection timeout, network, DNS, authentication).
            Connection => CONNECTION,
            /// The server answered with an error; its numeric code is kept.
            Server => SERVER,
            /// The client this call used has been closed.
            ClientClosed => CLIENT_CLOSED,
            /// A Node driver client with an option the derived connection cannot carry (named in the message).
            UnsupportedClient => UNSUPPORTED_CLIENT,
            /// The counter kept changing under a bounded number of attempts.
            Contention => CONTENTION,
            /// Gapless mode was asked of a server without transactions (a standalone).
            TransactionsUnsupported => TRANSACTIONS_UNSUPPORTED,
            /// A configured counter reached its limit and does not cycle.
            SequenceExhausted => SEQUENCE_EXHAUSTED,
            /// A bug in this package (a panic caught at the boundary); the call did nothing more.
            Internal => INTERNAL,
            /// Another unique index of the counters collection refuses the counter document
            /// (e.g. mongoose-sequence's `id_1_reference_value_1` next to helper-style counters).
            IndexConflict => INDEX_CONFLICT,
            /// (mongoose plugin, `gapless: true`) an operation that cannot join the numbering
            /// transaction: `doc.save()` of a new document, a `bulkWrite` insert, an upsert.
            GaplessUnsupportedOperation => GAPLESS_UNSUPPORTED_OPERATION,
            /// (JavaScript loader) this platform's binary is not installed or cannot be loaded;
            /// raised by `lib/native.js`, which names the package to install.
            BindingNotLoaded => BINDING_NOT_LOADED,
        }
    };
}
pub(crate) use with_error_codes;

/// Defines [`ErrorCode`], [`ErrorCode::ALL`] and [`ErrorCode::as_str`] from the list of
/// [`with_error_codes!`].
macro_rules! define_error_code {
    ($( $(#[doc = $doc:tt])* $variant:ident => $js:ident, )*) => {
        /// Stable, machine-readable error codes (the `code` property seen from JavaScript).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, in the order of the list.
            pub const ALL: [ErrorCode; [$(stringify!($js)),*].len()] = [$(ErrorCode::$variant),*];

            /// The string exposed to JavaScript.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => stringify!($js),)*
                }
            }
        }
    };
}
with_error_codes!(define_error_code);

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

    /// A counter configured by `init` whose configuration other code damaged (`damage`
    /// names what is wrong).
    pub fn damaged_configuration(name: &str, field: &str, damage: &str) -> Self {
        Self::new(
            ErrorCode::InvalidCounter,
            format!(
                "Sequence '{name}' (counter field '{field}') has {damage}; init stores the                  whole configuration: restore that field, or drop the counter and init it again"
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
    fn each_code_is_its_variant_in_screaming_snake_case() {
        for code in ErrorCode::ALL {
            let mut expected = String::new();
            for (i, c) in format!("{code:?}").chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    expected.push('_');
                }
                expected.push(c.to_ascii_uppercase());
            }
            assert_eq!(code.as_str(), expected);
        }
    }

    #[test]
    fn codes_are_distinct() {
        let all = ErrorCode::ALL;
        let set: std::collections::HashSet<_> = all.iter().map(|c| c.as_str()).collect();
        assert_eq!(set.len(), all.len());
    }
}
