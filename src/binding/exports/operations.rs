//! Running the package in production: statistics (`stats()` on a handle and for the
//! process), a handle's `release()` (give back its cached tail), and round-trip events
//! on the `mongodb-sequence:round-trip` diagnostics channel.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::mem::ManuallyDrop;

use napi::bindgen_prelude::{Env, Function, JsObjectValue, Object, ObjectRef, PromiseRaw};

use crate::binding::exports::sequence_handle::Sequence;
use crate::binding::guard::{promise_call, sync_call, take_exception};
use crate::binding::spawn::promise;
use crate::engine::error::ErrorCode;
use crate::engine::panic_safety::lock;
use crate::engine::stats::{self, Snapshot, PROCESS};

/// The diagnostics channel round trips are published on.
pub const ROUND_TRIP_CHANNEL: &str = "mongodb-sequence:round-trip";

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
    /// Round-trip latency.
    pub latency: RoundTripLatency,
    /// Round-trip events dropped because the diagnostics channel's subscribers were not
    /// served in time (more than 4096 waiting; process-wide).
    pub events_dropped: f64,
}

/// A snapshot in the shape JavaScript sees.
fn to_js(s: Snapshot, events_dropped: u64) -> SequenceStats {
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

/// What `release()` did with the handle's cached values.
#[napi(object)]
pub struct Released {
    /// Values given back to the counter: the next call, in any process, gets the first.
    pub returned: f64,
    /// Values left unused, because the counter had moved on since this process fetched
    /// them (another process took values, or a `set`), or because it cycles.
    pub abandoned: f64,
}

#[napi]
impl Sequence {
    /// Statistics of the calls made through this handle, and of the round trips they
    /// started (`discarded` and `givenBack` are counted for the process only).
    #[napi(js_name = "stats")]
    pub fn handle_stats(&self, env: &Env) -> napi::Result<SequenceStats> {
        sync_call(env, "Sequence.stats", || {
            let stats = self.named().stats.as_ref().map(|s| s.snapshot());
            Ok(to_js(stats.unwrap_or_default(), 0))
        })
    }

    /// Gives back the unused tail of this counter's cached blocks in this process (in the
    /// client this handle's calls used; nothing before its first call), when the counter
    /// still holds exactly the value this process's last fetch left there (one
    /// conditional update); otherwise they are abandoned, as at process exit. The handle
    /// stays usable: its next call fetches again. `close()` and `closeSharedClients()`
    /// do the same for every counter of their clients.
    #[napi(ts_return_type = "Promise<{ returned: number; abandoned: number }>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Released>> {
        promise_call(env, "Sequence.release", || {
            let kept = lock(self.reservation_slot()).take();
            promise(env, async move {
                let outcome = match kept.filter(|r| !r.is_closed()) {
                    Some(reservation) => reservation.give_back().await?,
                    None => Default::default(),
                };
                Ok(Released {
                    returned: outcome.returned as f64,
                    abandoned: outcome.abandoned as f64,
                })
            })
        })
    }
}

thread_local! {
    /// This JavaScript thread's round-trip channel (`None` inside: none can be had, as
    /// on Node versions without `process.getBuiltinModule`). Never dropped: a reference
    /// must not be released after its environment ends.
    static CHANNEL: RefCell<Option<ManuallyDrop<Option<ObjectRef>>>> = const { RefCell::new(None) };
    /// Settles at once since the subscribers were last looked at.
    static QUICK_SETTLES: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread's channel had subscribers when last looked at (counted by
    /// the engine among the listening threads).
    static LISTENING: Cell<bool> = const { Cell::new(false) };
}

/// Records whether this thread's channel has subscribers, telling the engine when that
/// changes.
fn set_listening(now: bool) {
    if LISTENING.with(|l| l.replace(now)) != now {
        stats::thread_listening(now);
    }
}

/// How many promises settled at once (from the cache) between two looks at the
/// channel's subscribers.
const QUICK_SETTLES_PER_LOOK: u32 = 256;

/// `diagnostics_channel.channel(ROUND_TRIP_CHANNEL)`, looked up through
/// `process.getBuiltinModule`.
fn open_channel(env: &Env) -> napi::Result<Object<'_>> {
    let process: Object = env.get_global()?.get_named_property("process")?;
    let get: Function<String, Object> = process.get_named_property("getBuiltinModule")?;
    let module = get.apply(process, "node:diagnostics_channel".to_string())?;
    let channel: Function<String, Object> = module.get_named_property("channel")?;
    channel.apply(module, ROUND_TRIP_CHANNEL.to_string())
}

/// This thread's channel, opened on first use.
fn channel(env: &Env) -> Option<Object<'_>> {
    CHANNEL.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let opened = open_channel(env).and_then(|c| c.create_ref()).ok();
            if opened.is_none() {
                take_exception(env);
            }
            // A thread that ends while it listens stops counting among the listeners
            // (the hook runs on this thread, at its environment's teardown).
            if env
                .add_env_cleanup_hook((), |()| set_listening(false))
                .is_err()
            {
                take_exception(env);
            }
            *cell = Some(ManuallyDrop::new(opened));
        }
        let reference = cell.as_ref()?.as_ref()?;
        reference.get_value(env).ok()
    })
}

/// Where an asynchronous call's promise settles: looks whether the channel has
/// subscribers (turning the engine's event recording on or off) and publishes the round
/// trips recorded since.
pub fn after_settle(env: &Env) {
    if publish(env).is_err() {
        take_exception(env);
    }
}

/// Where a cached call's promise settles at once: publishes what is recorded while
/// this thread listens, and looks at the subscribers only every so often (a thread that
/// does not listen only looks, even while another thread listens).
pub fn after_quick_settle(env: &Env) {
    let look = QUICK_SETTLES.with(|n| {
        let seen = n.get() + 1;
        n.set(seen % QUICK_SETTLES_PER_LOOK);
        seen >= QUICK_SETTLES_PER_LOOK
    });
    if look || LISTENING.with(Cell::get) {
        after_settle(env);
    }
}

fn publish(env: &Env) -> napi::Result<()> {
    let Some(channel) = channel(env) else {
        return Ok(());
    };
    let listening: bool = channel.get_named_property("hasSubscribers")?;
    set_listening(listening);
    if !listening {
        return Ok(());
    }
    let events = stats::take_events();
    if events.is_empty() {
        return Ok(());
    }
    let send: Function<Object, ()> = channel.get_named_property("publish")?;
    for event in events {
        let mut message = Object::new(env)?;
        if let Some(database) = event.database {
            message.set("database", database)?;
        }
        message.set("collection", event.collection)?;
        message.set("operation", event.operation)?;
        if let Some((host, port)) = event.server {
            message.set("serverAddress", host)?;
            message.set("serverPort", port)?;
        }
        message.set("counter", event.counter)?;
        message.set("values", event.values as f64)?;
        message.set("calls", event.calls as f64)?;
        message.set("durationMs", event.duration.as_secs_f64() * 1000.0)?;
        message.set("retries", event.retries)?;
        match event.error {
            None => message.set("outcome", "ok")?,
            Some(code) => {
                message.set("outcome", "error")?;
                message.set("code", code.as_str())?;
            }
        }
        send.apply(channel, message)?;
    }
    Ok(())
}
