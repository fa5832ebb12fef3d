//! How long a call through a client may wait, and which setting says so.
//!
//! Every call is bounded by its connection's `serverSelectionTimeoutMS` (the driver's
//! default, 30 s, when unset). A connection that also sets `socketTimeoutMS` (above 0; 0 is
//! no socket timeout, as in the Node driver) asks for an answer sooner: the Node driver
//! gives up on a server that stops answering after about that long, so a call here must
//! not wait the longer bound. The Rust driver has no socket timeout (it refuses the option
//! in a connection string), so it is taken out of the string and applied as the call's
//! bound instead.

use std::time::Duration;

use crate::engine::error::{SeqError, SeqResult};

/// The driver's default server selection timeout, which is also a call's timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest a call waits, and the setting that decided it (named in the message of a
/// call that times out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBound {
    /// From the call's submission.
    pub timeout: Duration,
    /// `serverSelectionTimeoutMS` or `socketTimeoutMS`.
    pub setting: &'static str,
}

impl CallBound {
    /// The smaller of the server selection timeout (the driver's default when `None`) and
    /// the socket timeout when there is one; the server selection timeout when they are
    /// equal (the setting every call has).
    pub fn of(server_selection: Option<Duration>, socket: Option<Duration>) -> CallBound {
        let selection = CallBound {
            timeout: server_selection.unwrap_or(DEFAULT_CALL_TIMEOUT),
            setting: "serverSelectionTimeoutMS",
        };
        match socket {
            Some(socket) if !socket.is_zero() && socket < selection.timeout => CallBound {
                timeout: socket,
                setting: "socketTimeoutMS",
            },
            _ => selection,
        }
    }
}

/// `uri` without its `socketTimeoutMS` option, and that option's value in milliseconds
/// (`None` when absent or 0). The options are found as the driver finds them (after the
/// first `?` that follows the scheme, `&`-separated, keys in any case, values
/// percent-encoded); everything else is left as written, so the driver parses the same
/// string less that one option. A value that is not a non-negative integer, or the option
/// given twice, is `INVALID_ARGUMENT`, as the driver reports it (never echoing the string).
pub fn take_socket_timeout(uri: &str) -> SeqResult<(String, Option<u64>)> {
    let Some(scheme_end) = uri.find("://").map(|at| at + 3) else {
        return Ok((uri.to_string(), None));
    };
    let Some(query_at) = uri[scheme_end..].find('?').map(|at| scheme_end + at + 1) else {
        return Ok((uri.to_string(), None));
    };
    let mut kept = Vec::new();
    let mut found: Option<u64> = None;
    let mut seen = false;
    for pair in uri[query_at..].split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !key.eq_ignore_ascii_case("socketTimeoutMS") {
            kept.push(pair);
            continue;
        }
        if seen {
            return Err(SeqError::invalid_argument(
                "invalid MongoDB connection string: repeated options are not allowed in \
                 the connection string (socketTimeoutMS)",
            ));
        }
        seen = true;
        let decoded = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
        let millis = decoded.parse::<u64>().map_err(|_| {
            SeqError::invalid_argument(
                "invalid MongoDB connection string: connection string `sockettimeoutms` \
                 option must be a non-negative integer",
            )
        })?;
        found = (millis > 0).then_some(millis);
    }
    if !seen {
        return Ok((uri.to_string(), None));
    }
    Ok((format!("{}{}", &uri[..query_at], kept.join("&")), found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_options_are_found_after_the_scheme_however_short() {
        // The `?` looked for starts after `://`, wherever the scheme ends.
        let (left, found) = take_socket_timeout("x://h/?socketTimeoutMS=5").unwrap();
        assert_eq!((left.as_str(), found), ("x://h/?", Some(5)));
    }

    #[test]
    fn the_smaller_bound_wins_and_is_named() {
        let default = CallBound::of(None, None);
        assert_eq!(default.timeout, DEFAULT_CALL_TIMEOUT);
        assert_eq!(default.setting, "serverSelectionTimeoutMS");
        let socket = CallBound::of(Some(MS(20_000)), Some(MS(1500)));
        assert_eq!(
            (socket.timeout, socket.setting),
            (MS(1500), "socketTimeoutMS")
        );
        let socket = CallBound::of(None, Some(MS(1500)));
        assert_eq!(
            (socket.timeout, socket.setting),
            (MS(1500), "socketTimeoutMS")
        );
        let selection = CallBound::of(Some(MS(1000)), Some(MS(5000)));
        assert_eq!(
            (selection.timeout, selection.setting),
            (MS(1000), "serverSelectionTimeoutMS")
        );
        let equal = CallBound::of(Some(MS(2000)), Some(MS(2000)));
        assert_eq!(equal.setting, "serverSelectionTimeoutMS");
        // 0 is no socket timeout, as in the Node driver.
        let zero = CallBound::of(Some(MS(2000)), Some(MS(0)));
        assert_eq!(
            (zero.timeout, zero.setting),
            (MS(2000), "serverSelectionTimeoutMS")
        );
        // A socket timeout past the driver's default selection timeout changes nothing.
        assert_eq!(CallBound::of(None, Some(MS(60_000))), default);
    }

    #[test]
    fn socket_timeout_is_taken_out_of_the_string() {
        for (uri, rest, millis) in [
            (
                "mongodb://h/?socketTimeoutMS=1500",
                "mongodb://h/?",
                Some(1500),
            ),
            (
                "mongodb://h/db?appName=a&SOCKETTIMEOUTMS=%31%35&w=1",
                "mongodb://h/db?appName=a&w=1",
                Some(15),
            ),
            (
                "mongodb://h/?w=1&sockettimeoutms=0",
                "mongodb://h/?w=1",
                None,
            ),
            ("mongodb://h/?w=1", "mongodb://h/?w=1", None),
            ("mongodb://h/", "mongodb://h/", None),
            (
                "not a uri?socketTimeoutMS=1",
                "not a uri?socketTimeoutMS=1",
                None,
            ),
            (
                "mongodb+srv://u:p@c.example.net/?retryWrites=true&socketTimeoutMS=9",
                "mongodb+srv://u:p@c.example.net/?retryWrites=true",
                Some(9),
            ),
        ] {
            let (left, found) = take_socket_timeout(uri).unwrap();
            assert_eq!((left.as_str(), found), (rest, millis), "{uri}");
        }
        // The driver parses what is left, and refuses the option itself.
        let (left, _) = take_socket_timeout("mongodb://h/?socketTimeoutMS=1500").unwrap();
        assert!(mongodb::options::ConnectionString::parse(left).is_ok());
    }

    #[test]
    fn a_bad_socket_timeout_is_refused_without_echoing_the_string() {
        for uri in [
            "mongodb://u:hunter2@h/?socketTimeoutMS=-1",
            "mongodb://u:hunter2@h/?socketTimeoutMS=soon",
            "mongodb://u:hunter2@h/?socketTimeoutMS",
            "mongodb://u:hunter2@h/?socketTimeoutMS=1&socketTimeoutMS=2",
        ] {
            let e = take_socket_timeout(uri).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{uri}");
            assert!(!e.message.contains("hunter2"), "{}", e.message);
            assert!(
                e.message.to_lowercase().contains("sockettimeoutms"),
                "{}",
                e.message
            );
        }
    }
}
