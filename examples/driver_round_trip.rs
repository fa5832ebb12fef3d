//! The Rust driver alone, for `benches/latency-breakdown.mjs`: `findOneAndUpdate` of a
//! counter awaited one at a time, as the engine's fast path sends it (same filter,
//! update and projection), without napi, the engine or any thread hop of ours. Prints
//! one line per call: the monotonic clock (nanoseconds) before the call and after it.
//!
//! `cargo run --release --example driver_round_trip -- <uri> <database> <calls>`

use mongodb::bson::{doc, Document};
use mongodb::options::ReturnDocument;
use std::time::Instant;

/// The monotonic clock in nanoseconds, the clock `process.hrtime` reads on Linux
/// (`Instant` is `CLOCK_MONOTONIC` there; its `Debug` form carries the raw reading).
fn monotonic_ns(at: Instant) -> u128 {
    let text = format!("{at:?}");
    let number = |key: &str| -> u128 {
        let start = text.find(key).map(|i| i + key.len()).unwrap_or(text.len());
        text[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    };
    number("tv_sec: ") * 1_000_000_000 + number("tv_nsec: ")
}

fn main() -> mongodb::error::Result<()> {
    let mut args = std::env::args().skip(1);
    let uri = args.next().expect("uri");
    let database = args.next().expect("database");
    let calls: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(200);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async move {
            let client = mongodb::Client::with_uri_str(&uri).await?;
            let counters = client
                .database(&database)
                .collection::<Document>("counters");
            counters
                .update_one(
                    doc! { "_id": "rust_driver" },
                    doc! { "$setOnInsert": { "sequence_value": 0 } },
                )
                .upsert(true)
                .await?;
            let mut lines = String::new();
            for i in 0..calls + 20 {
                let before = Instant::now();
                counters
                    .find_one_and_update(
                        doc! {
                            "_id": "rust_driver",
                            "sequence_value_step": { "$exists": false },
                            "sequence_value": { "$type": ["int", "long"] },
                        },
                        doc! { "$inc": { "sequence_value": 1 } },
                    )
                    .return_document(ReturnDocument::After)
                    .projection(doc! { "sequence_value": 1, "_id": 0 })
                    .await?;
                let after = Instant::now();
                // The first 20 warm the connection up and are not printed.
                if i >= 20 {
                    lines.push_str(&format!(
                        "{} {}\n",
                        monotonic_ns(before),
                        monotonic_ns(after)
                    ));
                }
            }
            print!("{lines}");
            Ok(())
        })
}
