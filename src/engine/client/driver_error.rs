//! Turning the mongodb driver's errors into [`SeqError`]s, with secrets removed.

use mongodb::error::{Error, ErrorKind, WriteFailure};

use crate::engine::error::{ErrorCode, SeqError};

/// MongoDB's duplicate key error code.
pub const DUPLICATE_KEY: i32 = 11000;

/// Maps a driver error to a typed error whose message contains none of `secrets`.
pub fn from_driver(error: &Error, secrets: &[String]) -> SeqError {
    let mapped = match &*error.kind {
        ErrorKind::Command(e) => SeqError::server(e.code, Some(e.code_name.clone()), &e.message),
        ErrorKind::Write(WriteFailure::WriteError(e)) => {
            SeqError::server(e.code, e.code_name.clone(), &e.message)
        }
        ErrorKind::InsertMany(e) => match (&e.write_errors, &e.write_concern_error) {
            (Some(errors), _) if !errors.is_empty() => {
                let first = &errors[0];
                let message = format!("document {} of the insert: {}", first.index, first.message);
                SeqError::server(first.code, first.code_name.clone(), &message)
            }
            (_, Some(e)) => SeqError::server(
                e.code,
                Some(e.code_name.clone()),
                &format!("write concern: {}", e.message),
            ),
            _ => SeqError::new(ErrorCode::Server, format!("MongoDB driver error: {error}")),
        },
        ErrorKind::Write(WriteFailure::WriteConcernError(e)) => SeqError::server(
            e.code,
            Some(e.code_name.clone()),
            &format!("write concern: {}", e.message),
        ),
        ErrorKind::ServerSelection { message, .. }
        | ErrorKind::ConnectionPoolCleared { message, .. }
        | ErrorKind::DnsResolve { message, .. }
        | ErrorKind::InvalidTlsConfig { message, .. } => connection(message),
        ErrorKind::Authentication { message, .. } => {
            connection(&format!("authentication failed: {message}"))
        }
        ErrorKind::Io(e) => connection(&e.to_string()),
        ErrorKind::InvalidArgument { message, .. } => SeqError::invalid_argument(message.clone()),
        ErrorKind::Shutdown => SeqError::new(ErrorCode::ClientClosed, "the client was closed"),
        _ => SeqError::new(ErrorCode::Server, format!("MongoDB driver error: {error}")),
    };
    let mut mapped = mapped.redacted(secrets);
    mapped.labels = error.labels().iter().cloned().collect();
    mapped
}

fn connection(message: &str) -> SeqError {
    SeqError::new(
        ErrorCode::Connection,
        format!("cannot reach MongoDB: {message}"),
    )
}

/// The server's code and message of a write or command error.
fn code_and_message(error: &Error) -> Option<(i32, &str)> {
    match &*error.kind {
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some((e.code, e.message.as_str())),
        ErrorKind::Command(e) => Some((e.code, e.message.as_str())),
        _ => None,
    }
}

/// True when `error` is a duplicate key, on whichever unique index.
pub fn is_duplicate_key(error: &Error) -> bool {
    code_and_message(error).is_some_and(|(code, _)| code == DUPLICATE_KEY)
}

/// True when `error` is a duplicate key on the unique index named `index` (or on an
/// index the server does not name).
pub fn is_duplicate_on(error: &Error, index: &str) -> bool {
    code_and_message(error).is_some_and(|(code, message)| {
        code == DUPLICATE_KEY
            && (!message.contains("index:") || message.contains(&format!("index: {index} ")))
    })
}

/// The name of the unique index a duplicate-key `error` names, when it is not `index`.
pub fn duplicate_on_other_index(error: &Error, index: &str) -> Option<String> {
    let (_, message) = code_and_message(error)?;
    if !is_duplicate_key(error) || is_duplicate_on(error, index) {
        return None;
    }
    let after = &message[message.find("index: ")? + "index: ".len()..];
    Some(after.split_whitespace().next().unwrap_or("").to_string())
}
