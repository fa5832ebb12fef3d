//! Checks on names, counts and options, done before any I/O.

use crate::engine::error::{SeqError, SeqResult};
use crate::engine::store::filters::CacheMarks;
use crate::engine::text::quote::quoted;

/// Longest sequence name accepted, in UTF-8 bytes.
pub const MAX_NAME_BYTES: usize = 1024;
/// Largest count for a batch returned as an array.
pub const MAX_BATCH_COUNT: i64 = 1_000_000;
/// Largest count for a batch returned as a range.
pub const MAX_RANGE_COUNT: i64 = i32::MAX as i64;
/// Largest block size for the `cache` option.
pub const MAX_CACHE_SIZE: i64 = 1_000_000;
/// Largest integer a JavaScript number holds exactly (2^53 - 1).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// A sequence name: a non-empty string of at most [`MAX_NAME_BYTES`] bytes without NUL.
pub fn check_name(name: &str) -> SeqResult<()> {
    if name.is_empty() {
        return Err(SeqError::invalid_argument(
            "sequence name must be a non-empty string",
        ));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(SeqError::invalid_argument(format!(
            "sequence name is {} bytes long; at most {MAX_NAME_BYTES} are allowed",
            name.len()
        )));
    }
    if name.contains('\0') {
        return Err(SeqError::invalid_argument(
            "sequence name must not contain a NUL character",
        ));
    }
    Ok(())
}

/// A collection name MongoDB accepts for the counters.
pub fn check_collection(name: &str) -> SeqResult<()> {
    let bad = name.is_empty()
        || name.contains('\0')
        || name.contains('$')
        || name.starts_with("system.")
        || name.starts_with('.')
        || name.ends_with('.');
    if bad {
        return Err(SeqError::invalid_argument(format!(
            "option 'collection' is not a valid collection name: {}",
            quoted(name)
        )));
    }
    Ok(())
}

/// A database name MongoDB accepts.
pub fn check_database(name: &str) -> SeqResult<()> {
    let bad = name.is_empty()
        || name.len() > 63
        || name
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '.' | ' ' | '"' | '$' | '\0'));
    if bad {
        return Err(SeqError::invalid_argument(format!(
            "database name is not valid: {}",
            quoted(name)
        )));
    }
    Ok(())
}

/// What a field name may be where it is used.
#[derive(Debug, Clone, Copy)]
pub enum FieldUse {
    /// The counter's value field (`field` option): a top-level field, not `_id`.
    CounterValue,
    /// The document field an insert numbers (`_id` allowed): a top-level field.
    NumberedDocument,
    /// A field of a scoped name: a top-level field.
    ScopeKey,
    /// A field to read (`syncToMax`'s source): a dotted path is allowed.
    SourcePath,
}

/// The one check of field names: not empty, at most [`MAX_NAME_BYTES`] bytes, no `$`
/// prefix (an operator), no NUL; no `.` unless a path is wanted; not `_id` for the
/// counter's value. `what` names the argument in the message.
pub fn check_field_name(what: &str, name: &str, usage: FieldUse) -> SeqResult<()> {
    let dotted = !matches!(usage, FieldUse::SourcePath) && name.contains('.');
    let bad = name.is_empty()
        || name.len() > MAX_NAME_BYTES
        || name.starts_with('$')
        || name.contains('\0')
        || dotted
        || (matches!(usage, FieldUse::CounterValue) && name == "_id");
    if bad {
        let rules = match usage {
            FieldUse::CounterValue => "a top-level field name other than '_id'",
            FieldUse::SourcePath => "a field path",
            FieldUse::NumberedDocument | FieldUse::ScopeKey => "a top-level field name",
        };
        return Err(SeqError::invalid_argument(format!(
            "{what} must be {rules} (not empty, at most {MAX_NAME_BYTES} bytes, no '$' \
             prefix{}, no NUL); got {}",
            if matches!(usage, FieldUse::SourcePath) {
                ""
            } else {
                ", no '.'"
            },
            quoted(name)
        )));
    }
    // The marks of cached counters live there, beside the counters of a document
    // (counter fields, and the locator fields that find it).
    let reserved = name.split('.').next() == Some(CacheMarks::ROOT);
    if matches!(usage, FieldUse::CounterValue) && reserved {
        return Err(SeqError::invalid_argument(format!(
            "{what} cannot be {}: that field is reserved for the marks of cached counters",
            quoted(name)
        )));
    }
    Ok(())
}

/// The counter field: a plain top-level field name, not `_id`.
pub fn check_field(field: &str) -> SeqResult<()> {
    check_field_name("option 'field'", field, FieldUse::CounterValue)
}

/// How many values one call reserves: a whole number from 1 to `max`.
pub fn check_count(count: f64, max: i64) -> SeqResult<i64> {
    if !count.is_finite() || count.fract() != 0.0 || count < 1.0 || count > max as f64 {
        return Err(SeqError::invalid_argument(format!(
            "count must be a whole number from 1 to {max}; got {count}"
        )));
    }
    Ok(count as i64)
}

/// The `cache` option: a block size from 1 to [`MAX_CACHE_SIZE`].
pub fn check_cache_size(size: f64) -> SeqResult<i64> {
    if !size.is_finite() || size.fract() != 0.0 || size < 1.0 || size > MAX_CACHE_SIZE as f64 {
        return Err(SeqError::invalid_argument(format!(
            "option 'cache' must be a whole number from 1 to {MAX_CACHE_SIZE}; got {size}"
        )));
    }
    Ok(size as i64)
}

/// A JavaScript number that must be a safe integer (for `start`).
pub fn check_safe_integer(option: &str, value: f64) -> SeqResult<i64> {
    let max = MAX_SAFE_INTEGER as f64;
    if !value.is_finite() || value.fract() != 0.0 || value > max || value < -max {
        return Err(SeqError::invalid_argument(format!(
            "option '{option}' must be a safe integer or a BigInt; got {value}"
        )));
    }
    Ok(value as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;

    #[test]
    fn field_names_follow_one_rule_set_per_use() {
        use FieldUse::*;
        let long = "f".repeat(MAX_NAME_BYTES + 1);
        for bad in ["", "$inc", "a\0b", long.as_str()] {
            for usage in [CounterValue, NumberedDocument, ScopeKey, SourcePath] {
                let e = check_field_name("x", bad, usage).unwrap_err();
                assert_eq!(e.code, ErrorCode::InvalidArgument);
                assert!(e.message.len() < 400, "{}", e.message);
            }
        }
        assert!(check_field_name("x", "a.b", CounterValue).is_err());
        assert!(check_field_name("x", "a.b", NumberedDocument).is_err());
        assert!(check_field_name("x", "a.b", ScopeKey).is_err());
        assert!(check_field_name("x", "a.b", SourcePath).is_ok());
        assert!(check_field_name("x", "_id", CounterValue).is_err());
        for usage in [NumberedDocument, ScopeKey, SourcePath] {
            assert!(check_field_name("x", "_id", usage).is_ok());
        }
        assert!(check_field("sequence_value").is_ok());
    }

    /// The field holding the marks of cached counters is no counter's and no locator's
    /// (both checked as `CounterValue`); other uses, in other collections, may name it.
    #[test]
    fn the_field_of_the_cache_marks_is_reserved_for_them() {
        use FieldUse::*;
        let e = check_field("_mseq_marks").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(
            e.message,
            "option 'field' cannot be \"_mseq_marks\": that field is reserved for the marks of \
             cached counters"
        );
        let e = check_field_name("locator field", "_mseq_marks", CounterValue).unwrap_err();
        assert!(
            e.message.starts_with("locator field cannot be"),
            "{}",
            e.message
        );
        for near in [
            "_mseq_marks_",
            "_mseq_mark",
            "mseq_marks",
            "_MSEQ_MARKS",
            "seq_cached",
        ] {
            assert!(check_field(near).is_ok(), "{near}");
        }
        for usage in [NumberedDocument, ScopeKey, SourcePath] {
            assert!(check_field_name("x", "_mseq_marks", usage).is_ok());
        }
        assert!(check_field_name("x", "_mseq_marks.seq", SourcePath).is_ok());
    }

    #[test]
    fn names() {
        assert!(check_name("productId").is_ok());
        assert!(check_name("é".repeat(512).as_str()).is_ok());
        for bad in ["", "a\0b"] {
            assert_eq!(
                check_name(bad).unwrap_err().code,
                ErrorCode::InvalidArgument
            );
        }
        assert!(check_name(&"x".repeat(MAX_NAME_BYTES + 1)).is_err());
        assert!(check_name(&"x".repeat(10_000)).is_err());
    }

    #[test]
    fn counts() {
        assert_eq!(check_count(1.0, 10).unwrap(), 1);
        assert_eq!(check_count(10.0, 10).unwrap(), 10);
        for bad in [
            0.0,
            -1.0,
            1.5,
            f64::NAN,
            f64::INFINITY,
            11.0,
            9007199254740992.0,
        ] {
            assert!(check_count(bad, 10).is_err(), "{bad}");
        }
    }

    #[test]
    fn fields_and_collections() {
        for ok in ["sequence_value", "seq", "seq_value"] {
            assert!(check_field(ok).is_ok());
        }
        for bad in ["", "$inc", "a.b", "_id", "a\0"] {
            assert!(check_field(bad).is_err(), "{bad}");
        }
        assert!(check_collection("counters").is_ok());
        for bad in ["", "a$b", "system.users", ".x", "x."] {
            assert!(check_collection(bad).is_err(), "{bad}");
        }
        assert!(check_database("my_app_db").is_ok());
        for bad in ["", "a.b", "a b", "a/b"] {
            assert!(check_database(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn safe_integers() {
        assert_eq!(check_safe_integer("start", -5.0).unwrap(), -5);
        assert!(check_safe_integer("start", 9007199254740992.0).is_err());
        assert!(check_safe_integer("start", 0.5).is_err());
    }
}
