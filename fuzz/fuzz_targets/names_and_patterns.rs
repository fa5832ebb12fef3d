//! Names, options and format patterns: every check and the formatter must return, not
//! panic, for any input; messages quote a bounded prefix of it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mongo_sequence::engine::counter::counter_name::CounterName;
use mongo_sequence::engine::text::format::Pattern;
use mongo_sequence::engine::text::quote::quoted;
use mongo_sequence::engine::text::validate::{
    check_cache_size, check_collection, check_count, check_database, check_field,
    check_safe_integer,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let number = data
        .get(..8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .unwrap_or(1.0);
    let value = data
        .get(..8)
        .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
        .unwrap_or(0);
    let bounded = |message: &str| assert!(message.len() < 1024, "{} bytes", message.len());
    for result in [
        check_collection(&text),
        check_database(&text),
        check_field(&text),
        CounterName::text(&text).map(|_| ()),
    ] {
        if let Err(e) = result {
            bounded(&e.message);
        }
    }
    let _ = check_count(number, i64::from(i32::MAX));
    let _ = check_cache_size(number);
    let _ = check_safe_integer("start", number);
    // 64 characters, each escaped to at most 10 bytes (`\u{10ffff}`), and the length note.
    assert!(quoted(&text).len() <= 64 * 10 + 40);
    match Pattern::parse(&text) {
        Ok(pattern) => {
            let _ = pattern.format(value, value.wrapping_mul(7));
        }
        Err(e) => bounded(&e.message),
    }
});
