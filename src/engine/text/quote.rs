//! Quoting user input in messages: a short prefix only, so that an error about a huge
//! argument stays small and cheap to build.

/// Characters of an input shown in a message at most.
pub const QUOTED_CHARS: usize = 64;

/// `text` as a double-quoted, escaped literal of at most [`QUOTED_CHARS`] characters,
/// followed by `…(N bytes)` when it was cut. A connection string in it is shown without
/// its credentials, masked before the text is cut (a cut could otherwise keep a
/// password and drop the `@` that shows where it ends).
pub fn quoted(text: &str) -> String {
    let redacted = crate::engine::text::redact::redact_connection_strings(text);
    let text = redacted.as_str();
    let mut chars = text.char_indices();
    let cut = chars.nth(QUOTED_CHARS).map(|(at, _)| at);
    match cut {
        None => format!("{text:?}"),
        Some(at) => format!("{:?}…({} bytes)", &text[..at], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(quoted("abc"), "\"abc\"");
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(quoted("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(1000);
        let q = quoted(&long);
        assert!(
            q.starts_with(&format!("\"{}\"", "é".repeat(QUOTED_CHARS))),
            "{q}"
        );
        assert!(q.ends_with("…(2000 bytes)"), "{q}");
        let exact = "x".repeat(QUOTED_CHARS);
        assert_eq!(quoted(&exact), format!("{exact:?}"));
    }

    #[test]
    fn a_connection_string_is_masked_before_it_is_cut() {
        let long = format!("mongodb://app:{}@host/db", "SECRET".repeat(20));
        let q = quoted(&long);
        assert_eq!(q, "\"mongodb://****@host/db\"");
        let longer = format!("mongodb://app:pw@{}", "h".repeat(100));
        assert!(
            quoted(&longer).starts_with("\"mongodb://****@hhh"),
            "{}",
            quoted(&longer)
        );
    }
}
