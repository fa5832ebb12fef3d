//! Connection strings: the checked parse (which runs the MongoDB driver's parser after
//! refusing the shapes it panics on) and password redaction must never panic, and a
//! redacted message never holds the password, whatever the string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mongo_sequence::engine::client::connection::parse;
use mongo_sequence::engine::text::redact::{redact, uri_secrets};

fuzz_target!(|data: &[u8]| {
    let uri = String::from_utf8_lossy(data);
    let secrets = uri_secrets(&uri);
    let message = format!("failed: {uri}");
    // No piece of text between the masks may hold a secret.
    let clean = redact(&message, &secrets);
    for secret in secrets.iter().filter(|s| !s.is_empty() && !s.contains('*')) {
        for piece in clean.split("****") {
            assert!(!piece.contains(secret.as_str()), "{secret:?} left in {clean:?}");
        }
    }
    if let Err(error) = parse(&uri) {
        for secret in secrets.iter().skip(1).filter(|s| s.len() > 3) {
            assert!(!error.message.contains(secret.as_str()));
        }
    }
});
