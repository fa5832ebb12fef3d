//! What every sequence call does: read `db`, `name` and options, then reserve values,
//! from the block cache at once when possible, otherwise on the tokio runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use napi::bindgen_prelude::{within_runtime_if_available, Env, PromiseRaw, Unknown};

use crate::binding::js::{describe, number};
use crate::binding::output::Output;
use crate::binding::read::db::read_db;
use crate::binding::read::db_memo;
use crate::binding::read::db_target::DbTarget;
use crate::binding::read::name::read_counter_name;
use crate::binding::read::named_counter::{kept, NamedCounter, PreparedSlot};
use crate::binding::read::option_reader::read_options;
use crate::binding::reserve::order::{nobody_waiting, Ticket};
use crate::binding::reserve::recent;
use crate::binding::settled::settled;
use crate::binding::spawn::promise;
use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::counter_state::{Outcome, Submitted};
use crate::engine::alloc::prepared_counter::PreparedCounter;
use crate::engine::call_options::CallOptions;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::panic_safety::lock;
use crate::engine::stats::{Recorder, Stats};
use crate::engine::text::validate::check_count;

/// How a block of values is returned to JavaScript.
pub type Shape = fn(&str, IdRange, &CallOptions) -> SeqResult<Output>;

/// The promise of a function-form call (`getNextSequenceValue` and siblings): reads
/// `db`, `name` and `options` on every call, then reuses the counter prepared for equal
/// arguments by an earlier call, as a `sequence()` handle would.
pub fn function_promise<'env>(
    env: &'env Env,
    db: &Unknown,
    name: &Unknown,
    options: Option<&Unknown>,
    count: impl FnOnce(&NamedCounter) -> SeqResult<i64>,
    shape: Shape,
) -> napi::Result<PromiseRaw<'env, Output>> {
    let prepared = read_options(options).and_then(|options| {
        let name = read_counter_name(name)?;
        if options.uri.is_none() {
            let find = |target: &DbTarget| recent::find(target, &name, &options);
            if let Some(found) = db_memo::recall_with(env, db, find).flatten() {
                return Ok(found);
            }
        }
        let target = read_db(env, db, options.uri.as_deref())?;
        recent::prepared(target, name, options)
    });
    match prepared {
        Ok(prepared) => {
            let (named, slot) = &*prepared;
            reserve_promise(env, Ok(named), count(named), shape, Some(slot))
        }
        Err(error) => reserve_promise(env, Err(&error), Ok(1), shape, None),
    }
}

/// Submits the call at once when its counter is prepared (kept in `slot`, or for a
/// client already open), so that calls keep the order in which JavaScript made them;
/// `None` when the client must be opened first.
fn submit_now(
    named: &NamedCounter,
    count: i64,
    slot: Option<&PreparedSlot>,
) -> Option<SeqResult<Submitted>> {
    if let Some(submitted) = slot.and_then(|s| kept(s, |r| r.submit(count))) {
        return Some(submitted);
    }
    let (handle, database) = named.target.resolve_now()?;
    let prepared =
        match PreparedCounter::new(&handle, database, &named.name, &named.effective_options()) {
            Ok(prepared) => prepared.recording(named.stats.clone()),
            Err(error) => return Some(Err(counted_in(named.stats.clone(), error))),
        };
    let submitted = prepared.submit(count);
    if let Some(slot) = slot {
        *lock(slot) = Some(prepared);
    }
    Some(submitted)
}

/// `error`, counted as a failed call in the process's statistics and in `stats` (a
/// handle's): for calls that fail before the engine sees them (a client that could not
/// open), which the engine does not count.
fn counted_in(stats: Option<Arc<Stats>>, error: SeqError) -> SeqError {
    Recorder::new(stats).failed(error.code);
    error
}

/// Reads a count argument: a whole number from 1 to `max`.
pub fn read_count(value: &Unknown, max: i64) -> SeqResult<i64> {
    let n = number(value).ok_or_else(|| {
        SeqError::invalid_argument(format!("count must be a number; got {}", describe(value)))
    })?;
    check_count(n, max)
}

/// A promise for `count` values of `counter`, shaped by `shape`. Argument errors reject
/// it too (and count as failed calls in the statistics, as every rejection does); a call
/// the block cache can serve settles it at once, without leaving the JavaScript thread.
pub fn reserve_promise<'env>(
    env: &'env Env,
    counter: Result<&NamedCounter, &SeqError>,
    count: SeqResult<i64>,
    shape: Shape,
    slot: Option<&PreparedSlot>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    match (counter, &count) {
        (Err(error), _) => Recorder::default().failed(error.code),
        (Ok(named), Err(error)) => Recorder::new(named.stats.clone()).failed(error.code),
        _ => {}
    }
    // Before anything is submitted: the round trip may end before this thread runs on. Not
    // for a cached counter, whose calls are mostly served at once from memory (a look per
    // call would cost that hot path; a fill's call looks in `promise`).
    if counter.is_ok_and(|named| named.options.cache.is_none()) {
        crate::binding::diagnostics::before_call(env);
    }
    let line = || counter.map_or(0, |named| named.target.line());
    if let (Ok(named), Ok(count), true) = (counter, &count, nobody_waiting(line)) {
        // In the runtime's context, so that a client of an ended runtime is recognised.
        if let Some(submitted) = within_runtime_if_available(|| submit_now(named, *count, slot)) {
            let Submitted {
                outcome,
                background,
            } = match submitted {
                Ok(submitted) => submitted,
                Err(error) => return settled(env, Err(error)),
            };
            if let Some(background) = background {
                napi::bindgen_prelude::spawn(background);
            }
            return match outcome {
                Outcome::Now(range) => {
                    crate::binding::diagnostics::after_quick_settle(env);
                    settled(env, shape(&named.label, range, &named.options))
                }
                Outcome::Later(pending) => {
                    let (label, options) = (named.label.clone(), named.options.clone());
                    promise(env, async move { shape(&label, pending.await?, &options) })
                }
            };
        }
    }
    // The client is still opening (or earlier calls wait for it): submit in call order.
    let ticket = Ticket::take(line());
    let counter = counter.cloned().map_err(Clone::clone);
    let slot = slot.cloned();
    promise(env, async move {
        let (named, count) = (counter?, count?);
        let (label, options) = (named.label.clone(), named.options.clone());
        let stats = named.stats.clone();
        let prepared = named.prepare(slot).await;
        ticket.front_of_line().await;
        let submitted = prepared.map_err(|e| counted_in(stats, e))?.submit(count);
        drop(ticket);
        shape(&label, submitted?.finish().await?, &options)
    })
}

/// A call's values, still to come.
pub type Reserved = Pin<Box<dyn Future<Output = SeqResult<IdRange>> + Send + 'static>>;

/// `count` values of `named`, submitted now, on the JavaScript thread, when its client
/// is at hand (so that concurrent calls are served in the order they were made, as
/// `reserve_promise` does), otherwise in call order once the client is open. The future must
/// be awaited on the runtime.
pub fn reserve_in_order(named: &NamedCounter, count: i64) -> Reserved {
    if nobody_waiting(|| named.target.line()) {
        if let Some(submitted) = within_runtime_if_available(|| submit_now(named, count, None)) {
            return match submitted {
                Ok(submitted) => Box::pin(submitted.finish()),
                Err(error) => Box::pin(async move { Err(error) }),
            };
        }
    }
    let ticket = Ticket::take(named.target.line());
    let named = named.clone();
    Box::pin(async move {
        let stats = named.stats.clone();
        let prepared = named.prepare(None).await;
        ticket.front_of_line().await;
        let submitted = prepared
            .map_err(|e| counted_in(stats, e))
            .and_then(|r| r.submit(count));
        drop(ticket);
        submitted?.finish().await
    })
}
