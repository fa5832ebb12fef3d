//! The pipeline of every call that takes values, in its order: read the arguments, resolve
//! the counter, submit the call or wait in line, shape the result. The function form
//! (`getNextSequenceValue` and its siblings), `sequence()` handles and inserts all go
//! through [`reserve`]; the first two through [`reserve_promise`].

use napi::bindgen_prelude::{within_runtime_if_available, Env, PromiseRaw, Unknown};

use crate::binding::js::{describe, number};
use crate::binding::output::Output;
use crate::binding::read::name::read_counter_name;
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::read::option_reader::read_options;
use crate::binding::ready::resolved_now;
use crate::binding::reserve::order::{nobody_waiting, Ticket};
use crate::binding::reserve::prepare::{admitted, kept, open_now, prepare_in, KeptCounter};
use crate::binding::reserve::recent;
use crate::binding::spawn::promise;
use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::counter_state::Outcome;
use crate::engine::alloc::prepared_counter::refused;
use crate::engine::call_options::CallOptions;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::check_count;

/// How a block of values is returned to JavaScript.
pub type Shape = fn(IdRange, &CallOptions) -> Output;

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
    let counter = read_options(options).and_then(|options| {
        let name = read_counter_name(name)?;
        recent::counter(env, db, name, options)
    });
    match counter {
        Ok(counter) => {
            let (named, keep) = &*counter;
            reserve_promise(env, named, count(named), shape, Some(keep))
        }
        Err(error) => refused_promise(env, None, error),
    }
}

/// Reads a count argument: a whole number from 1 to `max`.
pub fn read_count(value: &Unknown, max: i64) -> SeqResult<i64> {
    let n = number(value).ok_or_else(|| {
        SeqError::invalid_argument(format!("count must be a number; got {}", describe(value)))
    })?;
    check_count(n, max)
}

/// A call refused before it was submitted (its arguments), counted (in the handle's
/// statistics too, for a handle's call): its promise rejects.
fn refused_promise<'env>(
    env: &'env Env,
    named: Option<&NamedCounter>,
    error: SeqError,
) -> napi::Result<PromiseRaw<'env, Output>> {
    let error = refused(named.and_then(|n| n.stats.as_ref()), error);
    promise(env, async move { Err(error) })
}

/// A promise for `count` values of `named`, shaped by `shape` ([`reserve`]). A count
/// that could not be read rejects it; a call the block cache serves resolves it at once,
/// without leaving the JavaScript thread.
pub fn reserve_promise<'env>(
    env: &'env Env,
    named: &NamedCounter,
    count: SeqResult<i64>,
    shape: Shape,
    keep: Option<&KeptCounter>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    let count = match count {
        Ok(count) => count,
        Err(error) => return refused_promise(env, Some(named), error),
    };
    // Before anything is submitted: the round trip may end before this thread runs on. Not
    // for a cached counter, whose calls are mostly served at once from memory (a look per
    // call would cost that hot path; a fill's call looks in `promise`).
    if named.options.cache.is_none() {
        crate::binding::diagnostics::before_call(env);
    }
    match reserve(named, count, keep) {
        Err(error) => resolved_now(env, Err(error)),
        Ok(Outcome::Now(range)) => {
            crate::binding::diagnostics::after_quick_settle(env);
            resolved_now(env, Ok(shape(range, &named.options)))
        }
        Ok(Outcome::Later(pending)) => {
            let options = named.options.clone();
            promise(env, async move { Ok(shape(pending.await?, &options)) })
        }
    }
}

/// Submits a call for `count` values of `named`: at once, on the JavaScript thread, when
/// its counter is prepared (kept in `keep`, or for a client already open) and no earlier
/// call of its client waits in line, so that calls keep the order in which JavaScript
/// made them; otherwise it takes a ticket now and submits in ticket order once its client
/// is open. A later outcome must be awaited on the runtime. A call refused before it
/// reaches its prepared counter (a client that could not open, a counter that could not
/// be prepared) is counted here; the engine counts the others. A call whose client the
/// registry let go after it was found open asks the registry again
/// ([`PreparedCounter::try_submit`]), as a call made a moment later would.
pub fn reserve(named: &NamedCounter, count: i64, keep: Option<&KeptCounter>) -> SeqResult<Outcome> {
    if nobody_waiting(|| named.target.line()) {
        // In the runtime's context, so that a client of an ended runtime is recognised
        // and the work the call starts is spawned on the runtime.
        if let Some(submitted) = within_runtime_if_available(|| submit_now(named, count, keep)) {
            return submitted;
        }
    }
    let ticket = Ticket::take(named.target.line());
    let (named, keep) = (named.clone(), keep.cloned());
    Ok(Outcome::Later(Box::pin(async move {
        let submitted = admitted(
            &named,
            keep.as_ref(),
            Some(&ticket),
            |prepared| prepared.try_submit(count),
            |prepared| prepared.submit(count),
            |error| refused(named.stats.as_ref(), error),
        )
        .await;
        drop(ticket);
        submitted?.values().await
    })))
}

/// [`reserve`] for a call that the block cache of the counter kept in `keep` serves at
/// once, and only then (a cached counter, no earlier call of its client waiting in line):
/// its values, or the overflow that fails it. `None`, with nothing done, otherwise:
/// [`reserve`] then serves the call.
pub fn reserve_now(
    named: &NamedCounter,
    count: i64,
    keep: &KeptCounter,
) -> Option<SeqResult<IdRange>> {
    if named.options.cache.is_none() || !nobody_waiting(|| named.target.line()) {
        return None;
    }
    within_runtime_if_available(|| kept(keep, |prepared| prepared.submit_now(count))).flatten()
}

/// [`reserve`]'s submission at once, when the counter needs no waiting; `None` when its
/// client must be opened first.
fn submit_now(
    named: &NamedCounter,
    count: i64,
    keep: Option<&KeptCounter>,
) -> Option<SeqResult<Outcome>> {
    // A client let go since it was found open: on to the client open now, if any.
    if let Some(submitted) = keep
        .and_then(|s| kept(s, |prepared| prepared.try_submit(count)))
        .flatten()
    {
        return Some(submitted);
    }
    let (handle, database) = open_now(&named.target)?;
    match prepare_in(named, &handle, database, keep) {
        Ok(prepared) => prepared.try_submit(count),
        Err(error) => Some(Err(refused(named.stats.as_ref(), error))),
    }
}
