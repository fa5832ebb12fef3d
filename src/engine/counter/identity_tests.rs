use std::str::FromStr;

use mongodb::bson::{doc, oid::ObjectId, Bson, Decimal128};
use proptest::prelude::*;

use super::*;

fn key(value: Bson) -> Vec<u8> {
    let mut out = Vec::new();
    equality_key(&value, &mut out);
    out
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(Decimal128::from_str(s).unwrap())
}

#[test]
fn numbers_equal_by_value_share_a_key() {
    let one = key(Bson::Int32(1));
    for same in [
        Bson::Int64(1),
        Bson::Double(1.0),
        dec("1"),
        dec("1.0"),
        dec("1.000"),
        dec("0.01E+2"),
    ] {
        assert_eq!(key(same.clone()), one, "{same:?}");
    }
    let zero = key(Bson::Int32(0));
    for same in [
        Bson::Double(-0.0),
        Bson::Int64(0),
        dec("0"),
        dec("-0"),
        dec("0E-20"),
        dec("-0.000"),
    ] {
        assert_eq!(key(same.clone()), zero, "{same:?}");
    }
    assert_eq!(key(Bson::Double(1.5)), key(dec("1.50")));
    assert_eq!(key(Bson::Double(-2.25)), key(dec("-2.250")));
    assert_eq!(key(Bson::Double(f64::NAN)), key(dec("NaN")));
    assert_eq!(key(Bson::Double(f64::NAN)), key(Bson::Double(-f64::NAN)));
    assert_eq!(key(Bson::Double(f64::INFINITY)), key(dec("Infinity")));
    assert_eq!(key(Bson::Double(f64::NEG_INFINITY)), key(dec("-Infinity")));
    assert_eq!(
        key(Bson::Double(1152921504606846976.0)),
        key(Bson::Int64(1 << 60))
    );
    assert_eq!(key(Bson::Double(1e20)), key(dec("1E+20")));
    assert_eq!(
        key(Bson::Int64(i64::MIN)),
        key(Bson::Double(-9_223_372_036_854_775_808.0))
    );
}

/// A decimal from its bits (IEEE 754 decimal128, binary integer encoding).
fn decimal_bits(bits: u128) -> Bson {
    Bson::Decimal128(Decimal128::from_bytes(bits.to_le_bytes()))
}

#[test]
fn decimals_whose_coefficient_is_past_34_digits_are_zero() {
    let zero = key(Bson::Int32(0));
    // The "11" form (the two bits after the sign are 11, and not infinity or NaN): its
    // coefficient is 2^113 or more, past the largest valid one, so it encodes zero, of
    // whatever sign and exponent; a small coefficient in its low bits changes nothing.
    for (sign, exponent, low) in [(0u128, 6176u128, 1u128), (1, 0, 7), (0, 12_287, 0)] {
        let bits = sign << 127 | 0b11 << 125 | exponent << 111 | low;
        assert_eq!(key(decimal_bits(bits)), zero, "{bits:#x}");
    }
    // The usual form with a coefficient past 34 digits (but below 2^113) is zero too.
    let bits = 6176u128 << 113 | (MAX_COEFFICIENT + 1);
    assert_eq!(key(decimal_bits(bits)), zero);
    // 34 digits are a number, the largest coefficient there is.
    let largest = dec("9999999999999999999999999999999999");
    assert_ne!(key(largest.clone()), zero);
    assert_eq!(
        key(decimal_bits(6176u128 << 113 | MAX_COEFFICIENT)),
        key(largest)
    );
    assert_ne!(key(dec("12345678901234567890123456789012")), zero);
    assert_eq!(
        key(decimal_bits(6176u128 << 113 | 12_345)),
        key(Bson::Int32(12_345))
    );
}

#[test]
fn numbers_that_differ_do_not() {
    let pairs = [
        // MongoDB's own example: a decimal equals a double only when exactly the same.
        (Bson::Double(0.1), dec("0.1")),
        (Bson::Double(9.99), dec("9.99")),
        (Bson::Int32(1), Bson::Int32(2)),
        (
            Bson::Int64(i64::MAX),
            Bson::Double(9_223_372_036_854_775_807.0),
        ),
        (Bson::Double(f64::INFINITY), Bson::Double(f64::NEG_INFINITY)),
        (Bson::Double(f64::NAN), Bson::Int32(0)),
        (dec("1E+300"), Bson::Double(1e300)),
        (Bson::Int32(1), Bson::String("1".into())),
        (Bson::Int32(0), Bson::Boolean(false)),
        (Bson::Null, Bson::Int32(0)),
        (Bson::Double(0.5), dec("0.50001")),
    ];
    for (a, b) in pairs {
        assert_ne!(key(a.clone()), key(b.clone()), "{a:?} vs {b:?}");
    }
}

#[test]
fn documents_compare_in_order_and_arrays_by_element() {
    assert_eq!(
        key(Bson::Document(doc! { "a": 1, "b": [1, { "c": 2 }] })),
        key(Bson::Document(
            doc! { "a": 1.0, "b": [1_i64, { "c": dec("2.0") }] }
        ))
    );
    assert_ne!(
        key(Bson::Document(doc! { "a": 1, "b": 2 })),
        key(Bson::Document(doc! { "b": 2, "a": 1 }))
    );
    assert_ne!(
        key(Bson::Array(vec![1.into(), 2.into()])),
        key(Bson::Array(vec![2.into(), 1.into()]))
    );
    assert_ne!(key(Bson::Array(vec![1.into()])), key(Bson::Int32(1)));
    assert_ne!(
        key(Bson::Document(doc! { "a": 1 })),
        key(Bson::Document(doc! { "a": 1, "b": Bson::Null }))
    );
    // Strings and symbols compare by their bytes.
    assert_eq!(key(Bson::String("x".into())), key(Bson::Symbol("x".into())));
    // Keys carry their lengths: no two documents run together into the same bytes.
    assert_ne!(
        key(Bson::Document(doc! { "ab": "c" })),
        key(Bson::Document(doc! { "a": "bc" }))
    );
}

#[test]
fn other_types_compare_by_type_and_bytes() {
    let id = ObjectId::new();
    assert_eq!(key(Bson::ObjectId(id)), key(Bson::ObjectId(id)));
    assert_ne!(
        key(Bson::ObjectId(id)),
        key(Bson::ObjectId(ObjectId::new()))
    );
    assert_ne!(key(Bson::Boolean(true)), key(Bson::Boolean(false)));
}

#[test]
fn a_filter_s_top_level_order_does_not_matter() {
    assert_eq!(
        filter_key(&doc! { "id": "x", "ref": 1 }),
        filter_key(&doc! { "ref": 1.0, "id": "x" })
    );
    assert_ne!(
        filter_key(&doc! { "id": "x", "ref": { "a": 1, "b": 2 } }),
        filter_key(&doc! { "id": "x", "ref": { "b": 2, "a": 1 } })
    );
}

proptest! {
    #[test]
    fn integers_of_every_type_agree(i in any::<i32>()) {
        let k = key(Bson::Int32(i));
        prop_assert_eq!(&k, &key(Bson::Int64(i64::from(i))));
        prop_assert_eq!(&k, &key(Bson::Double(f64::from(i))));
        prop_assert_eq!(&k, &key(dec(&format!("{i}.00"))));
    }

    #[test]
    fn longs_and_doubles_agree_exactly_when_equal(i in any::<i64>()) {
        let d = i as f64;
        let same = d < 9_223_372_036_854_775_808.0 && d as i64 == i;
        prop_assert_eq!(key(Bson::Int64(i)) == key(Bson::Double(d)), same);
    }

    /// `n / 2^j` is exactly the decimal `n·5^j × 10^-j`, and no decimal one unit off.
    #[test]
    fn doubles_and_decimals_agree_exactly_when_equal(n in -(1i64 << 40)..(1i64 << 40), j in 0u32..=20) {
        let d = n as f64 / f64::from(1u32 << j);
        let coefficient = i128::from(n) * 5i128.pow(j);
        prop_assert_eq!(key(Bson::Double(d)), key(dec(&format!("{coefficient}E-{j}"))));
        prop_assert_ne!(key(Bson::Double(d)), key(dec(&format!("{}E-{j}", coefficient + 1))));
        prop_assert_ne!(key(Bson::Double(d)), key(dec(&format!("{coefficient}1E-{}", j + 1))));
    }
}
