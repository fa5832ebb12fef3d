//! Statistics in the shape JavaScript sees: `stats()` for the process, and the figures
//! a handle's `stats()` returns (`exports::sequence_handle`).

use std::collections::HashMap;

use napi::bindgen_prelude::Env;

use crate::binding::boundary::sync_call;
use crate::engine::error::ErrorCode;
use crate::engine::stats::{self, Snapshot, PROCESS};

/// Round-trip latency, in milliseconds (from buckets at most 19 % wide; `max` exact).
#[napi(object)]
pub struct RoundTripLatency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Cached values that were never handed out, by cause.
#[napi(object)]
pub struct DiscardedValues {
    /// Thrown away by management writes of this process (`set`, `reset`, `init`,
    /// `drop`, `raiseTo`, `syncToMax`).
    pub management: f64,
    /// Abandoned at close or `release()` (the counter had moved on, so they could not be
    /// given back, or the close ran out of time before their update answered).
    pub close: f64,
    /// Dropped with counters no longer in use (more than 1024 idle ones) or with a
    /// client whose JavaScript environment ended without a close.
    pub dropped: f64,
    /// Skipped because a batch needed more contiguous values than the rest of their
    /// cached block held (the batch is served from the next block).
    pub short_block: f64,
    /// Reserved for calls that did not take them: the call gave up first (its deadline
    /// passed, its client closed) or could not receive them (past 2^53 - 1 without
    /// `bigint`).
    pub unclaimed: f64,
}

/// Statistics of a `sequence()` handle or of the process (`stats()`).
#[napi(object)]
pub struct SequenceStats {
    /// Calls made (`next`, `nextBatch`, `nextRange`, inserts, …), each counting one.
    pub calls: f64,
    /// Values handed out to calls that succeeded: the values callers received.
    pub values: f64,
    /// Calls served from the block cache at once.
    pub cache_hits: f64,
    /// Round trips to MongoDB that reserved values (one per fetch, however many
    /// requests a race made it take).
    pub round_trips: f64,
    /// Calls served per round trip, on average (merged calls count each).
    pub calls_per_round_trip: f64,
    /// Cache blocks fetched.
    pub blocks_fetched: f64,
    /// Attempts started over after another process changed the counter.
    pub retries: f64,
    /// Calls that failed with `CONTENTION`.
    pub contention: f64,
    /// Failed calls by error code: every rejected call, also one that failed before any
    /// round trip (a bad argument, a client that could not open).
    pub errors: HashMap<String, f64>,
    /// Values reserved and never handed out, by cause (process-wide figures; 0 on a handle).
    pub discarded: DiscardedValues,
    /// Cached values given back at close or `release()` (process-wide; 0 on a handle).
    pub given_back: f64,
    /// Latency of the round trips counted in `roundTrips` (not of management commands).
    pub latency: RoundTripLatency,
    /// Round-trip events dropped because the diagnostics channel's subscribers were not
    /// served in time (more than 4096 waiting; process-wide).
    pub events_dropped: f64,
}

/// A snapshot in the shape JavaScript sees.
pub(crate) fn to_js(s: Snapshot, events_dropped: u64) -> SequenceStats {
    let ms = |us: u64| us as f64 / 1000.0;
    SequenceStats {
        calls: s.calls as f64,
        values: s.values as f64,
        cache_hits: s.cache_hits as f64,
        round_trips: s.round_trips as f64,
        calls_per_round_trip: if s.round_trips == 0 {
            0.0
        } else {
            s.merged_calls as f64 / s.round_trips as f64
        },
        blocks_fetched: s.blocks_fetched as f64,
        retries: s.retries as f64,
        contention: s.errors_of(ErrorCode::Contention) as f64,
        errors: s
            .errors
            .iter()
            .map(|(code, n)| (code.to_string(), *n as f64))
            .collect(),
        discarded: DiscardedValues {
            management: s.discarded_by_writes as f64,
            close: s.discarded_at_close as f64,
            dropped: s.discarded_dropped as f64,
            short_block: s.discarded_short as f64,
            unclaimed: s.discarded_unclaimed as f64,
        },
        given_back: s.given_back as f64,
        latency: RoundTripLatency {
            p50: ms(s.latency_p50_us),
            p99: ms(s.latency_p99_us),
            max: ms(s.latency_max_us),
        },
        events_dropped: events_dropped as f64,
    }
}

/// Statistics of the whole process: every call of every handle and function, every
/// round trip, and the cached values discarded or given back. Counted with relaxed
/// atomics; each figure is read on its own, so one snapshot may be a few calls apart.
#[napi(js_name = "stats")]
pub fn process_stats(env: &Env) -> napi::Result<SequenceStats> {
    sync_call(env, "stats", || {
        Ok(to_js(PROCESS.snapshot(), stats::events_dropped()))
    })
}
