//! How much of its range a counter has used: the classic sequence outage is a counter
//! running out of its integer type (PostgreSQL's `int4`), so a listing shows, per
//! counter, the end it moves towards and the share of the way already gone.
//!
//! The range a counter lives in is its `maxValue` (`minValue` when descending) when it is
//! configured; else the range of its stored type: Int32 (MongoDB promotes an Int32 that
//! overflows to Int64, but an application storing the values as 32-bit numbers breaks
//! there), Double (exact up to 2^53), Int64; and values JavaScript gets as `number`
//! (without `bigint`) end at 2^53 - 1, whatever the stored type or limit beyond it.

use mongodb::bson::Bson;

use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::text::validate::MAX_SAFE_INTEGER;

/// What bounds a counter's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeKind {
    /// Its configured `maxValue` (ascending) or `minValue` (descending).
    Limit,
    /// The 32-bit integer type it is stored as.
    Int32,
    /// The 64-bit integer type.
    Int64,
    /// Doubles count exactly up to 2^53.
    Double,
    /// JavaScript numbers are exact up to 2^53 - 1 (listed without `bigint`).
    Number,
}

impl RangeKind {
    /// The name shown to JavaScript and in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            RangeKind::Limit => "limit",
            RangeKind::Int32 => "int32",
            RangeKind::Int64 => "int64",
            RangeKind::Double => "double",
            RangeKind::Number => "number",
        }
    }
}

/// The range a counter lives in and how much of it is used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// The last value the counter can reach.
    pub end: i64,
    /// What sets that end.
    pub kind: RangeKind,
    /// The share of the way from the counter's origin to `end` already gone, 0 to 100.
    pub used_percent: f64,
}

/// The stored type of a counter value, as far as its range goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredType {
    /// Int32.
    Int32,
    /// Int64.
    Int64,
    /// Double.
    Double,
}

impl StoredType {
    /// The stored type of `value`, when it is a number.
    pub fn of(value: &Bson) -> Option<StoredType> {
        match value {
            Bson::Int32(_) => Some(StoredType::Int32),
            Bson::Int64(_) => Some(StoredType::Int64),
            Bson::Double(_) => Some(StoredType::Double),
            _ => None,
        }
    }

    /// The name MongoDB's `$type` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            StoredType::Int32 => "int",
            StoredType::Int64 => "long",
            StoredType::Double => "double",
        }
    }
}

/// The capacity of a counter holding `value` of type `stored`, configured as `config`
/// (`None`: plain), as seen by a caller taking values as BigInts (`bigint`) or numbers.
///
/// A configured counter moves from the value before its first (`min - step` ascending,
/// `max - step` descending) to its limit; a plain one from 0 towards the end of its type
/// on the side of its sign (plain counters do not store their direction: a negative
/// value is taken as descending).
pub fn capacity(
    value: i64,
    stored: StoredType,
    config: Option<&SequenceConfig>,
    bigint: bool,
) -> Capacity {
    let ascending = match config {
        Some(c) => c.step > 0,
        None => value >= 0,
    };
    let (mut end, mut kind) = match (config, stored) {
        (Some(c), _) => (if ascending { c.max } else { c.min }, RangeKind::Limit),
        (None, StoredType::Int32) => (
            if ascending {
                i64::from(i32::MAX)
            } else {
                i64::from(i32::MIN)
            },
            RangeKind::Int32,
        ),
        (None, StoredType::Double) => (
            if ascending { 1 << 53 } else { -(1 << 53) },
            RangeKind::Double,
        ),
        (None, StoredType::Int64) => (
            if ascending { i64::MAX } else { i64::MIN },
            RangeKind::Int64,
        ),
    };
    if !bigint && end.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
        end = if ascending {
            MAX_SAFE_INTEGER
        } else {
            -MAX_SAFE_INTEGER
        };
        kind = RangeKind::Number;
    }
    let origin = match config {
        Some(c) => i128::from(if ascending { c.min } else { c.max }) - i128::from(c.step),
        None => 0,
    };
    let (gone, way) = (i128::from(value) - origin, i128::from(end) - origin);
    let used_percent = if way == 0 {
        100.0
    } else {
        // Scaled before the one division, so that a counter exactly at a whole
        // percentage reports exactly it (0.57 * 100 would be 56.99999999999999 and
        // miss a threshold of 57).
        ((gone * 100) as f64 / way as f64).clamp(0.0, 100.0)
    };
    Capacity {
        end,
        kind,
        used_percent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(step: i64, min: i64, max: i64) -> SequenceConfig {
        SequenceConfig::new(step, Some(min), Some(max), false).unwrap()
    }

    #[test]
    fn a_plain_int32_counter_lives_in_the_int32_range() {
        let c = capacity(1_739_461_754, StoredType::Int32, None, false);
        assert_eq!((c.end, c.kind), (i64::from(i32::MAX), RangeKind::Int32));
        assert!((c.used_percent - 81.0).abs() < 0.01, "{}", c.used_percent);
        let down = capacity(-1_073_741_824, StoredType::Int32, None, false);
        assert_eq!(down.end, i64::from(i32::MIN));
        assert!((down.used_percent - 50.0).abs() < 1e-9);
    }

    #[test]
    fn int64_counters_end_at_2_53_as_numbers_and_at_2_63_as_bigints() {
        let c = capacity(1 << 52, StoredType::Int64, None, false);
        assert_eq!((c.end, c.kind), (MAX_SAFE_INTEGER, RangeKind::Number));
        assert!((c.used_percent - 50.0).abs() < 1e-6);
        let b = capacity(1 << 62, StoredType::Int64, None, true);
        assert_eq!((b.end, b.kind), (i64::MAX, RangeKind::Int64));
        assert!((b.used_percent - 50.0).abs() < 1e-6);
        let d = capacity(1 << 51, StoredType::Double, None, true);
        assert_eq!((d.end, d.kind), (1 << 53, RangeKind::Double));
        assert!((d.used_percent - 25.0).abs() < 1e-9);
    }

    #[test]
    fn a_configured_counter_goes_from_before_its_first_value_to_its_limit() {
        let c = config(1, 1, 100);
        let at = |v| capacity(v, StoredType::Int32, Some(&c), false);
        assert_eq!(at(0).used_percent, 0.0, "nothing handed out yet");
        assert_eq!(at(100).used_percent, 100.0);
        assert!((at(81).used_percent - 81.0).abs() < 1e-9);
        assert_eq!((at(1).end, at(1).kind), (100, RangeKind::Limit));
        let down = config(-2, -100, -1);
        let d = capacity(-49, StoredType::Int64, Some(&down), false);
        assert_eq!(d.end, -100);
        // From 1 (the value before -1) towards -100: 50 of 101 steps of 1 gone.
        assert!((d.used_percent - 50.0 / 101.0 * 100.0).abs() < 1e-9);
        let wide = config(1, 1, i64::MAX);
        let n = capacity(10, StoredType::Int64, Some(&wide), false);
        assert_eq!((n.end, n.kind), (MAX_SAFE_INTEGER, RangeKind::Number));
        let b = capacity(i64::MAX, StoredType::Int64, Some(&wide), true);
        assert_eq!((b.kind, b.used_percent), (RangeKind::Limit, 100.0));
    }

    #[test]
    fn descending_plain_counters_go_towards_the_negative_end_of_their_type() {
        let d = capacity(-(1 << 51), StoredType::Double, None, true);
        assert_eq!((d.end, d.kind), (-(1 << 53), RangeKind::Double));
        assert!((d.used_percent - 25.0).abs() < 1e-9);
        let n = capacity(-(1 << 52), StoredType::Int64, None, false);
        assert_eq!((n.end, n.kind), (-MAX_SAFE_INTEGER, RangeKind::Number));
        assert!((n.used_percent - 50.0).abs() < 1e-6);
        let b = capacity(-1, StoredType::Int64, None, true);
        assert_eq!((b.end, b.kind), (i64::MIN, RangeKind::Int64));
    }

    #[test]
    fn a_limit_of_exactly_2_53_minus_1_stays_the_limit() {
        let c = config(1, 1, MAX_SAFE_INTEGER);
        let at = capacity(10, StoredType::Int64, Some(&c), false);
        assert_eq!((at.end, at.kind), (MAX_SAFE_INTEGER, RangeKind::Limit));
    }

    #[test]
    fn a_counter_exactly_at_a_whole_percentage_reports_exactly_that_percentage() {
        // `check --warn 57` must warn at a counter exactly 57 % along: a percentage
        // computed as a share first (0.57 * 100 = 56.99999999999999) falls short of it.
        let c = config(1, 1, 100);
        for p in 0..=100 {
            assert_eq!(
                capacity(p, StoredType::Int32, Some(&c), false).used_percent,
                p as f64,
                "{p} of 100"
            );
        }
        let d = config(-1, -100, -1);
        for p in 0..=100i64 {
            let at = capacity(-p, StoredType::Int32, Some(&d), false).used_percent;
            assert_eq!(at, p as f64, "-{p} of -100");
        }
    }

    #[test]
    fn stored_types_and_kinds_have_their_names() {
        use mongodb::bson::Bson;
        assert_eq!(StoredType::of(&Bson::Int32(1)), Some(StoredType::Int32));
        assert_eq!(StoredType::of(&Bson::Int64(1)), Some(StoredType::Int64));
        assert_eq!(StoredType::of(&Bson::Double(1.0)), Some(StoredType::Double));
        assert_eq!(StoredType::of(&Bson::String("1".into())), None);
        let names: Vec<_> = [StoredType::Int32, StoredType::Int64, StoredType::Double]
            .iter()
            .map(|t| t.as_str())
            .collect();
        assert_eq!(
            names,
            ["int", "long", "double"],
            "as MongoDB's $type names them"
        );
        let kinds: Vec<_> = [
            RangeKind::Limit,
            RangeKind::Int32,
            RangeKind::Int64,
            RangeKind::Double,
            RangeKind::Number,
        ]
        .iter()
        .map(|k| k.as_str())
        .collect();
        assert_eq!(kinds, ["limit", "int32", "int64", "double", "number"]);
    }

    #[test]
    fn extremes_never_overflow_and_stay_within_0_and_100() {
        for value in [i64::MIN, -1, 0, 1, i64::MAX] {
            for stored in [StoredType::Int32, StoredType::Int64, StoredType::Double] {
                for bigint in [false, true] {
                    let c = capacity(value, stored, None, bigint);
                    assert!(
                        (0.0..=100.0).contains(&c.used_percent),
                        "{value} {stored:?}"
                    );
                }
            }
            let full = config(1, i64::MIN, i64::MAX);
            let c = capacity(value, StoredType::Int64, Some(&full), true);
            assert!((0.0..=100.0).contains(&c.used_percent));
        }
    }
}
