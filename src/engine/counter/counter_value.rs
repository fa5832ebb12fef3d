//! What a stored counter field holds, read from BSON.

use mongodb::bson::Bson;

/// 2^53: from here on a double no longer holds every integer, so `$inc` on it can repeat.
pub const DOUBLE_EXACT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// The state of the counter field of an existing counter document.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredCounter {
    /// An Int32 or Int64: `$inc` works on it exactly.
    Integer(i64),
    /// A double holding a whole number below 2^53 in magnitude.
    IntegralDouble(f64),
    /// A double with a fraction, below 2^53 in magnitude: mongoose-auto-increment and
    /// mongoose-plugin-autoinc leave one when a document is saved with a fractional
    /// number, and count on from it. It stands for [`whole_past`] of itself.
    FractionalDouble(f64),
    /// The document exists but has no such field (`$inc` would create it from 0).
    Missing,
    /// Anything else: named for the error message.
    Unusable(String),
}

/// Classifies a counter field (`None` when the field is absent).
pub fn classify(value: Option<&Bson>) -> StoredCounter {
    match value {
        None => StoredCounter::Missing,
        Some(Bson::Int32(v)) => StoredCounter::Integer(i64::from(*v)),
        Some(Bson::Int64(v)) => StoredCounter::Integer(*v),
        Some(Bson::Double(d)) => classify_double(*d),
        Some(other) => StoredCounter::Unusable(type_name(other).to_string()),
    }
}

fn classify_double(d: f64) -> StoredCounter {
    if !d.is_finite() {
        StoredCounter::Unusable(format!("a non-finite double ({d})"))
    } else if d.abs() >= DOUBLE_EXACT_LIMIT {
        StoredCounter::Unusable(format!(
            "a double ({d:e}) too large to count exactly (2^53 or more)"
        ))
    } else if d.fract() != 0.0 {
        StoredCounter::FractionalDouble(d)
    } else {
        StoredCounter::IntegralDouble(d)
    }
}

/// The whole number an ascending counter holding the fraction `d` stands for: `d` rounded
/// up (3.5 is 4). Every value it hands out from there lies above `d`; the peers only ever
/// move their counter up, so none equals a number given before, fractional or whole.
/// `None` for a descending counter (`step` < 0): those plugins move it up to a number
/// given on save too, behind values it already handed out, so counting down from the
/// fraction could give them again.
pub fn whole_past(d: f64, step: i64) -> Option<i64> {
    (step > 0).then(|| d.ceil() as i64)
}

/// The counter's value read from its field, for a counter moving by `step`: a whole
/// number, or a fraction as the whole number it stands for ([`whole_past`]). `Err` names
/// what was found instead.
pub fn counted_value(value: Option<&Bson>, step: i64) -> Result<i64, String> {
    match classify(value) {
        StoredCounter::FractionalDouble(d) => {
            whole_past(d, step).ok_or_else(|| fraction_counting_down(d))
        }
        _ => integer_after_increment(value),
    }
}

/// What a descending counter holding the fraction `d` is refused with.
pub fn fraction_counting_down(d: f64) -> String {
    format!(
        "a fractional double ({d}) in a descending counter, which may lie behind values \
         already handed out (set it, or sync it to the smallest number used, to go on)"
    )
}

/// The BSON type name of a value, as MongoDB's `$type` spells it, with an article.
pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "a double",
        Bson::String(_) => "a string",
        Bson::Array(_) => "an array",
        Bson::Document(_) => "an object",
        Bson::Boolean(_) => "a bool",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "a regex",
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) => "javascript",
        Bson::Int32(_) => "an int",
        Bson::Int64(_) => "a long",
        Bson::Timestamp(_) => "a timestamp",
        Bson::Binary(_) => "binary data",
        Bson::ObjectId(_) => "an objectId",
        Bson::DateTime(_) => "a date",
        Bson::Symbol(_) => "a symbol",
        Bson::Decimal128(_) => "a decimal",
        Bson::Undefined => "undefined",
        Bson::MaxKey => "maxKey",
        Bson::MinKey => "minKey",
        Bson::DbPointer(_) => "a dbPointer",
    }
}

/// The integer value a counter holds right after an increment, as returned by the server.
/// `Err` names what was found instead.
pub fn integer_after_increment(value: Option<&Bson>) -> Result<i64, String> {
    match classify(value) {
        StoredCounter::Integer(v) => Ok(v),
        StoredCounter::IntegralDouble(d) => Ok(d as i64),
        StoredCounter::Missing => Err("no value".to_string()),
        StoredCounter::FractionalDouble(d) => Err(format!("a fractional double ({d})")),
        StoredCounter::Unusable(found) => Err(found),
    }
}

/// The BSON integer to store or send for `v`: Int32 when it fits (as the Node driver and
/// mongosh write small integers), otherwise Int64.
pub fn compact_integer(v: i64) -> Bson {
    match i32::try_from(v) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_doubles() {
        assert_eq!(classify(Some(&Bson::Int32(5))), StoredCounter::Integer(5));
        assert_eq!(
            classify(Some(&Bson::Int64(1 << 40))),
            StoredCounter::Integer(1 << 40)
        );
        assert_eq!(
            classify(Some(&Bson::Double(7.0))),
            StoredCounter::IntegralDouble(7.0)
        );
        assert_eq!(classify(None), StoredCounter::Missing);
    }

    #[test]
    fn unusable_values_are_named() {
        let cases = [
            (Bson::Double(f64::NAN), "non-finite"),
            (Bson::Double(-DOUBLE_EXACT_LIMIT), "too large"),
            (Bson::Double(DOUBLE_EXACT_LIMIT), "too large"),
            (Bson::String("7".into()), "a string"),
            (Bson::Null, "null"),
            (Bson::Document(Default::default()), "an object"),
        ];
        for (value, needle) in cases {
            match classify(Some(&value)) {
                StoredCounter::Unusable(found) => assert!(found.contains(needle), "{found}"),
                other => panic!("{value:?} classified as {other:?}"),
            }
        }
    }

    #[test]
    fn a_fraction_stands_for_the_whole_number_past_it_in_the_counting_direction() {
        assert_eq!(
            classify(Some(&Bson::Double(3.5))),
            StoredCounter::FractionalDouble(3.5)
        );
        for (d, step, whole) in [(3.5, 1, 4), (3.5, 5, 4), (-3.5, 1, -3), (0.25, 1, 1)] {
            assert_eq!(whole_past(d, step), Some(whole), "{d} by {step}");
            assert_eq!(counted_value(Some(&Bson::Double(d)), step), Ok(whole));
        }
        for (d, step) in [(3.5, -1), (-0.25, -2)] {
            assert_eq!(whole_past(d, step), None);
            let refused = counted_value(Some(&Bson::Double(d)), step).unwrap_err();
            assert!(refused.contains("descending"), "{refused}");
        }
        // Whole numbers and other types read as before.
        assert_eq!(counted_value(Some(&Bson::Double(7.0)), -1), Ok(7));
        assert_eq!(counted_value(Some(&Bson::Int32(7)), 1), Ok(7));
        assert!(counted_value(Some(&Bson::String("7".into())), 1).is_err());
        // After an increment a fraction is never a value handed out.
        assert!(integer_after_increment(Some(&Bson::Double(3.5)))
            .unwrap_err()
            .contains("fractional"));
    }

    #[test]
    fn compact_integers() {
        assert_eq!(compact_integer(1), Bson::Int32(1));
        assert_eq!(
            compact_integer(i32::MAX as i64 + 1),
            Bson::Int64(2_147_483_648)
        );
        assert_eq!(compact_integer(-1), Bson::Int32(-1));
    }

    #[test]
    fn after_increment() {
        assert_eq!(integer_after_increment(Some(&Bson::Double(3.0))), Ok(3));
        assert!(integer_after_increment(Some(&Bson::String("x".into()))).is_err());
        assert!(integer_after_increment(None).is_err());
    }
}
