//! Which counter document a filter finds, as the server decides it: two filters that
//! MongoDB's equality cannot tell apart find the same document, so they must share one
//! counter state in a process (one fence for management writes, one give-back turn).
//!
//! MongoDB compares numbers by value across types (`1`, `NumberLong(1)`, `1.0` and
//! `NumberDecimal("1.00")` are equal; `-0` equals `0`; every NaN equals every NaN), a
//! decimal and a double only when they are exactly the same number (`NumberDecimal("0.1")`
//! is not the double `0.1`), strings and symbols by their bytes, embedded documents field
//! by field in order (`{ a: 1, b: 2 }` is not `{ b: 2, a: 1 }`) and arrays element by
//! element. The order of a filter's own top-level fields does not matter. Everything
//! else (booleans, dates, ObjectIds, binaries…) is equal only to the same type and bytes.
//! [`equality_key`] writes a value in a form where those equalities are byte equality.

use mongodb::bson::{Bson, Decimal128, Document};

/// A number as MongoDB compares it, in one form per value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    /// Every whole number within 64 bits, whatever its type.
    Int(i64),
    /// Any other finite double, or a decimal exactly equal to one (its bits; never -0).
    Double(u64),
    /// A decimal no double equals: sign, coefficient without trailing zeros, exponent.
    Decimal(bool, u128, i32),
    /// Either infinity (`true`: negative).
    Infinity(bool),
    /// Every NaN.
    NaN,
}

/// The number a double is.
fn double(d: f64) -> Number {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d.is_nan() {
        Number::NaN
    } else if d.is_infinite() {
        Number::Infinity(d < 0.0)
    } else if d.fract() == 0.0 && (-TWO_63..TWO_63).contains(&d) {
        // -0.0 lands here too: 0.
        Number::Int(d as i64)
    } else {
        Number::Double(d.to_bits())
    }
}

/// Largest coefficient of a valid decimal (34 digits); a larger one encodes zero.
const MAX_COEFFICIENT: u128 = 9_999_999_999_999_999_999_999_999_999_999_999;
/// The exponent bias of IEEE 754 decimal128.
const EXPONENT_BIAS: i32 = 6176;

/// The number a decimal is (IEEE 754 decimal128, binary integer encoding, as BSON
/// stores it, little-endian).
fn decimal(value: &Decimal128) -> Number {
    let bits = u128::from_le_bytes(value.bytes());
    let negative = bits >> 127 == 1;
    let top = (bits >> 122) & 0b1_1111;
    let (exponent, coefficient) = match top {
        0b1_1111 => return Number::NaN,
        0b1_1110 => return Number::Infinity(negative),
        // The "11" form: its coefficient is past 34 digits, which encodes zero.
        _ if top >> 3 == 0b11 => (0, 0),
        _ => (((bits >> 113) & 0x3fff) as i32, bits & ((1 << 113) - 1)),
    };
    let coefficient = if coefficient > MAX_COEFFICIENT {
        0
    } else {
        coefficient
    };
    exact(negative, coefficient, exponent - EXPONENT_BIAS)
}

/// The number `±coefficient × 10^exponent` is.
fn exact(negative: bool, mut coefficient: u128, mut exponent: i32) -> Number {
    if coefficient == 0 {
        return Number::Int(0);
    }
    while coefficient.is_multiple_of(10) {
        coefficient /= 10;
        exponent += 1;
    }
    let signed = |d: f64| if negative { -d } else { d };
    if exponent >= 0 {
        // A whole number: within 64 bits it is an Int; past them, a double when one
        // holds it exactly.
        let whole = 10u128
            .checked_pow(exponent as u32)
            .and_then(|scale| coefficient.checked_mul(scale));
        if let Some(whole) = whole.filter(|w| *w < 1u128 << 127) {
            let whole = if negative {
                -(whole as i128)
            } else {
                whole as i128
            };
            if let Ok(int) = i64::try_from(whole) {
                return Number::Int(int);
            }
            let d = whole as f64;
            if d as i128 == whole {
                return double(d);
            }
        }
    } else {
        // A fraction: a double holds it exactly when it is m / 2^k with m of at most 53
        // bits, that is when 5^k divides the coefficient.
        let k = exponent.unsigned_abs();
        if let Some(five_k) = 5u128.checked_pow(k) {
            if coefficient.is_multiple_of(five_k) {
                let m = coefficient / five_k;
                let mf = m as f64;
                if mf as u128 == m {
                    return double(signed(mf / 2f64.powi(k as i32)));
                }
            }
        }
    }
    Number::Decimal(negative, coefficient, exponent)
}

/// Appends the form of `value` under which values MongoDB's equality cannot tell apart
/// are the same bytes, and others are not.
pub fn equality_key(value: &Bson, out: &mut Vec<u8>) {
    let number = match value {
        Bson::Int32(i) => Some(Number::Int(i64::from(*i))),
        Bson::Int64(i) => Some(Number::Int(*i)),
        Bson::Double(d) => Some(double(*d)),
        Bson::Decimal128(d) => Some(decimal(d)),
        _ => None,
    };
    if let Some(number) = number {
        out.push(b'n');
        match number {
            Number::Int(i) => {
                out.push(b'i');
                out.extend(i.to_be_bytes());
            }
            Number::Double(bits) => {
                out.push(b'd');
                out.extend(bits.to_be_bytes());
            }
            Number::Decimal(negative, coefficient, exponent) => {
                out.push(if negative { b'-' } else { b'+' });
                out.extend(coefficient.to_be_bytes());
                out.extend(exponent.to_be_bytes());
            }
            Number::Infinity(negative) => out.extend([b'f', u8::from(negative)]),
            Number::NaN => out.push(b'N'),
        }
        return;
    }
    match value {
        Bson::String(s) | Bson::Symbol(s) => {
            out.push(b's');
            text(s, out);
        }
        Bson::Document(fields) => {
            out.push(b'o');
            fields_key(fields.len(), fields.iter(), out);
        }
        Bson::Array(items) => {
            out.push(b'a');
            out.extend((items.len() as u64).to_be_bytes());
            for item in items {
                equality_key(item, out);
            }
        }
        other => {
            // Type and bytes, as BSON writes them.
            out.push(b'b');
            let mut one = Document::new();
            one.insert("", other.clone());
            let mut bytes = Vec::new();
            // A single-element document of a value already read as BSON always writes.
            let _ = one.to_writer(&mut bytes);
            out.extend((bytes.len() as u64).to_be_bytes());
            out.extend(bytes);
        }
    }
}

fn text(s: &str, out: &mut Vec<u8>) {
    out.extend((s.len() as u64).to_be_bytes());
    out.extend(s.as_bytes());
}

fn fields_key<'a>(
    count: usize,
    fields: impl Iterator<Item = (&'a String, &'a Bson)>,
    out: &mut Vec<u8>,
) {
    out.extend((count as u64).to_be_bytes());
    for (name, value) in fields {
        text(name, out);
        equality_key(value, out);
    }
}

/// The key of the document an equality filter on `fields` finds: its top-level fields in
/// any order (a filter's own field order selects nothing), each value by
/// [`equality_key`].
pub fn filter_key(fields: &Document) -> Vec<u8> {
    let mut sorted: Vec<(&String, &Bson)> = fields.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::new();
    fields_key(sorted.len(), sorted.into_iter(), &mut out);
    out
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
