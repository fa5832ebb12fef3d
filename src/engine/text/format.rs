//! Business numbers: `formatSequence(123, 'ORD{YYYY}{seq:6}')` → `ORD2025000123`.
//!
//! Tokens: `{seq}` the value; `{seq:N}` the value zero-padded to at least N digits (a wider
//! value is never truncated); `{YYYY}`, `{YY}`, `{MM}`, `{DD}` the date (UTC); `{{` and
//! `}}` literal braces. A pattern must contain the value at least once.

use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::quote::quoted;

/// Widest zero padding accepted.
pub const MAX_PAD: usize = 30;
/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Value { pad: usize },
    Year4,
    Year2,
    Month,
    Day,
}

/// A checked pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pieces: Vec<Piece>,
}

fn bad(pattern: &str, why: &str) -> SeqError {
    SeqError::invalid_argument(format!("format pattern {} {why}", quoted(pattern)))
}

impl Pattern {
    /// Parses and checks `pattern`.
    pub fn parse(pattern: &str) -> SeqResult<Pattern> {
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(bad(
                pattern,
                &format!("is longer than {MAX_PATTERN_BYTES} bytes"),
            ));
        }
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = pattern;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("{{") || rest.starts_with("}}") {
                literal.push(c);
                rest = &rest[2..];
                continue;
            }
            if c == '}' {
                return Err(bad(
                    pattern,
                    "has an unmatched '}' (write '}}' for a brace)",
                ));
            }
            if c != '{' {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let end = rest
                .find('}')
                .ok_or_else(|| bad(pattern, "has an unclosed '{' (write '{{' for a brace)"))?;
            let token = &rest[1..end];
            rest = &rest[end + 1..];
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(match token {
                "seq" => Piece::Value { pad: 0 },
                "YYYY" => Piece::Year4,
                "YY" => Piece::Year2,
                "MM" => Piece::Month,
                "DD" => Piece::Day,
                _ => match token.strip_prefix("seq:").map(str::parse::<usize>) {
                    Some(Ok(pad)) if (1..=MAX_PAD).contains(&pad) => Piece::Value { pad },
                    _ => {
                        return Err(bad(
                            pattern,
                            &format!(
                                "has an unknown token {{{token}}}; known: {{seq}}, {{seq:N}} \
                                 (N from 1 to {MAX_PAD}), {{YYYY}}, {{YY}}, {{MM}}, {{DD}}"
                            ),
                        ))
                    }
                },
            });
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        if !pieces.iter().any(|p| matches!(p, Piece::Value { .. })) {
            return Err(bad(pattern, "must contain {seq} or {seq:N}"));
        }
        Ok(Pattern { pieces })
    }

    /// `value` formatted, with the date parts of `unix_millis` (UTC).
    pub fn format(&self, value: i64, unix_millis: i64) -> String {
        let (year, month, day) = civil_date(unix_millis.div_euclid(86_400_000));
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Value { pad } => {
                    if value < 0 {
                        out.push('-');
                    }
                    out.push_str(&format!("{:0pad$}", value.unsigned_abs(), pad = *pad));
                }
                Piece::Year4 => out.push_str(&format!("{year:04}")),
                Piece::Year2 => out.push_str(&format!("{:02}", year.rem_euclid(100))),
                Piece::Month => out.push_str(&format!("{month:02}")),
                Piece::Day => out.push_str(&format!("{day:02}")),
            }
        }
        out
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// (year, month, day) of a count of days since 1970-01-01 (proleptic Gregorian).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2025-03-07T12:00:00Z
    const MARCH_7_2025: i64 = 1_741_348_800_000;

    #[test]
    fn business_numbers() {
        let p = Pattern::parse("ORD{YYYY}{seq:6}").unwrap();
        assert_eq!(p.format(123, MARCH_7_2025), "ORD2025000123");
        assert_eq!(
            p.format(12_345_678, MARCH_7_2025),
            "ORD202512345678",
            "never truncated"
        );
        let p = Pattern::parse("INV-{YY}{MM}{DD}-{seq}").unwrap();
        assert_eq!(p.format(7, MARCH_7_2025), "INV-250307-7");
        let p = Pattern::parse("{{{seq:3}}}").unwrap();
        assert_eq!(p.format(5, 0), "{005}");
        assert_eq!(Pattern::parse("N{seq:4}").unwrap().format(-12, 0), "N-0012");
    }

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(MARCH_7_2025 / 86_400_000), (2025, 3, 7));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(-1), (1969, 12, 31));
    }

    #[test]
    fn bad_patterns() {
        for bad in [
            "ORD", "{seq:0}", "{seq:31}", "{seq:x}", "{year}", "{seq", "a}b{seq}", "",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Pattern::parse(&format!("{}{{seq}}", "x".repeat(300))).is_err());
    }
}
