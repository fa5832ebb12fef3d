//! `sequence(db, name, options)`: a handle on one counter that keeps its preparation, so
//! repeated calls (above all cached ones) skip reading the arguments again.

use crate::binding::boundary::promise_call;
use crate::binding::boundary::sync_call;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Env, External, FromNapiRef, PromiseRaw, ToNapiValue, Unknown};
use napi::JsValue;

use crate::binding::error::{build, OrThrow};
use crate::binding::exports::manage::{counter_promise, read_source};
use crate::binding::exports::stats::{to_js, SequenceStats};
use crate::binding::output::{Output, Value};
use crate::binding::read::kinds::read_integer;
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::read::option_reader::read_init;
use crate::binding::reserve::prepare::KeptCounter;
use crate::binding::reserve::values::{read_count, reserve_now, reserve_promise, Shape};
use crate::binding::spawn::promise;
use crate::engine::error::SeqResult;
use crate::engine::management::managed::Managed;
use crate::engine::option_rules::refuse_format;
use crate::engine::panic_safety::lock;
use crate::engine::text::validate::{MAX_BATCH_COUNT, MAX_RANGE_COUNT};

/// A handle on one sequence with fixed options, from `sequence(db, name, options)`.
/// Its methods behave like the functions of the same purpose, with the same errors.
#[napi]
pub struct Sequence {
    counter: NamedCounter,
    keep: KeptCounter,
}

impl Sequence {
    /// A handle on `counter`, with statistics of its own.
    pub fn new(mut counter: NamedCounter) -> Sequence {
        counter.stats = Some(Arc::default());
        Sequence {
            counter,
            keep: Arc::new(Mutex::new(None)),
        }
    }

    /// A management write of this counter with an argument read first (by `arg`, inside
    /// the export's boundary): rejects with the argument's error, else runs `op`, which
    /// resolves with the counter's value afterwards (`None`: nothing).
    fn managed_with<'env, A, F, Fut>(
        &self,
        env: &'env Env,
        call: &'static str,
        arg: impl FnOnce() -> SeqResult<A>,
        op: F,
    ) -> napi::Result<PromiseRaw<'env, Output>>
    where
        A: Send + 'static,
        F: FnOnce(Managed, NamedCounter, A) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = SeqResult<Option<i64>>> + Send + 'static,
    {
        promise_call(env, call, || {
            let arg = arg();
            let named = arg
                .as_ref()
                .map(|_| self.counter.clone())
                .map_err(Clone::clone);
            counter_promise(env, named, Some(&self.keep), move |r, named| async move {
                let label = named.label.clone();
                let bigint = named.options.bigint;
                match op(r, named, arg?).await? {
                    Some(after) => Ok(Output::Single(Value::checked(&label, after, bigint)?)),
                    None => Ok(Output::Nothing),
                }
            })
        })
    }

    fn reserve<'env>(
        &self,
        env: &'env Env,
        count: crate::engine::error::SeqResult<i64>,
        shape: Shape,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        reserve_promise(env, &self.counter, count, shape, Some(&self.keep))
    }
}

/// A handle's counter and kept preparation, shared with it ([`Sequence::taker`]): the
/// same statistics and the same kept counter, so a value taken through it is the one
/// `next()` would have served.
pub struct Taker {
    counter: NamedCounter,
    keep: KeptCounter,
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
            let stats = self.counter.stats.as_ref().map(|s| s.snapshot());
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
            let kept = lock(&self.keep).take();
            promise(env, async move {
                let outcome = match kept.filter(|r| !r.is_closed()) {
                    Some(prepared) => prepared.give_back().await?,
                    None => Default::default(),
                };
                Ok(Released {
                    returned: outcome.returned as f64,
                    abandoned: outcome.abandoned as f64,
                })
            })
        })
    }

    /// The next value (as `getNextSequenceValue`).
    #[napi(ts_return_type = "Promise<number | bigint | string>")]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.next", || {
            self.reserve(env, Ok(1), Output::single)
        })
    }

    /// What `Sequence.takeCached` needs of this handle, in a value JavaScript keeps with
    /// it. The package's entry serves a handle's `next()` through the two in a promise
    /// made in JavaScript: a native promise, and a native method call on the handle, each
    /// cost more than the rest of a cached call. Not part of the typed API.
    #[napi(skip_typescript)]
    pub fn taker(&self, env: &Env) -> napi::Result<External<Taker>> {
        sync_call(env, "Sequence.next", || {
            Ok(External::new(Taker {
                counter: self.counter.clone(),
                keep: self.keep.clone(),
            }))
        })
    }

    /// `next()` of the handle whose `taker()` this is, for a call its block cache serves
    /// at once, and only then: the value; `undefined`, with nothing done, when the call
    /// would wait (or is refused: `next()` then says why); an `Error`, returned rather
    /// than thrown, when the value cannot be received as a number (`SEQUENCE_OVERFLOW`).
    /// A static method, so that no handle is unwrapped on the way. Not part of the typed
    /// API.
    #[napi(skip_typescript)]
    pub fn take_cached<'env>(env: &'env Env, taker: Unknown<'env>) -> napi::Result<Unknown<'env>> {
        sync_call(env, "Sequence.next", || {
            // Read here rather than by napi-rs before the call: a value that is no taker
            // then throws like any argument of ours (`INVALID_ARGUMENT`).
            // SAFETY: a value of this call, on the JavaScript thread of `env`.
            let taker = unsafe { External::<Taker>::from_napi_ref(env.raw(), taker.raw()) }?;
            let raw = match reserve_now(&taker.counter, 1, &taker.keep) {
                // SAFETY: converting on the JavaScript thread of `env`.
                None => unsafe { <() as ToNapiValue>::to_napi_value(env.raw(), ())? },
                Some(Ok(range)) => {
                    crate::binding::diagnostics::after_quick_settle(env);
                    let value = Output::single(range, &taker.counter.options);
                    // SAFETY: converting on the JavaScript thread of `env`.
                    unsafe { Output::to_napi_value(env.raw(), value)? }
                }
                Some(Err(error)) => {
                    // As the native next() does where its promise rejects.
                    crate::binding::diagnostics::after_settle(env);
                    build(env, &error)?.raw()
                }
            };
            // SAFETY: a value just made on the JavaScript thread of `env`.
            Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
        })
    }

    /// The next `count` values, in the order the counter hands them out (as
    /// `getNextSequenceBatch`): `step` apart, descending for a negative `step`.
    #[napi(
        ts_args_type = "count: number",
        ts_return_type = "Promise<Array<number | bigint | string>>"
    )]
    pub fn next_batch<'env>(
        &self,
        env: &'env Env,
        count: Unknown<'env>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.nextBatch", || {
            self.reserve(env, read_count(&count, MAX_BATCH_COUNT), Output::values)
        })
    }

    /// The next `count` values as `{ first, last, count, step }`: `first` to `last`, `step`
    /// apart (as `getNextSequenceRange`).
    #[napi(
        ts_args_type = "count: number",
        ts_return_type = "Promise<{ first: number | bigint; last: number | bigint; count: number; step: number }>"
    )]
    pub fn next_range<'env>(
        &self,
        env: &'env Env,
        count: Unknown<'env>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.nextRange", || {
            if let Err(e) = refuse_format(&self.counter.options) {
                return self.reserve(env, Err(e), Output::range);
            }
            self.reserve(env, read_count(&count, MAX_RANGE_COUNT), Output::range)
        })
    }

    /// The counter's value — the last value handed out — without advancing it.
    /// Rejects with `SEQUENCE_NOT_FOUND` when it does not exist.
    #[napi(ts_return_type = "Promise<number | bigint>")]
    pub fn current<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.current", || {
            counter_promise(
                env,
                Ok(self.counter.clone()),
                Some(&self.keep),
                |r, named| async move {
                    let value = r.current().await?;
                    Ok(Output::Single(Value::checked(
                        &named.label,
                        value,
                        named.options.bigint,
                    )?))
                },
            )
        })
    }

    /// Creates the counter so that the next value is `start`, remembering that start for
    /// `reset()`, and stores its `step` (negative: descending), `minValue`, `maxValue` and
    /// `cycle` with it, so every call obeys them: past a limit, calls reject with
    /// `SEQUENCE_EXHAUSTED`, or with `cycle` restart at the other end. Defaults as in
    /// PostgreSQL: ascending 1 .. 2^63-1 starting at minValue, descending -1 .. -2^63
    /// starting at maxValue; without any of these, start is the handle's `start` option
    /// (else 1) and the counter stays a plain one. Never overwrites: resolves `true` when
    /// it created the counter, `false` when it existed.
    #[napi(
        ts_args_type = "options?: InitOptions",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn init<'env>(
        &self,
        env: &'env Env,
        options: Option<Unknown<'env>>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.init", || {
            let spec = read_init(options.as_ref(), self.counter.options.start);
            let named = spec
                .as_ref()
                .map(|_| self.counter.clone())
                .map_err(Clone::clone);
            counter_promise(env, named, Some(&self.keep), move |r, _| async move {
                let spec = spec?;
                let created = r.init(spec.start, spec.config).await?;
                Ok(Output::Flag(created))
            })
        })
    }

    /// Sets the counter so that the next value is `value + 1` (`value + step` for a
    /// `counterAt` handle with a `step`), like PostgreSQL's `setval`
    /// (with the handle's `upsert`, a missing counter is created). Moving it backwards
    /// makes values come again; blocks already cached by processes are still handed out.
    #[napi(
        ts_args_type = "value: number | bigint",
        ts_return_type = "Promise<void>"
    )]
    pub fn set<'env>(
        &self,
        env: &'env Env,
        value: Unknown<'env>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        self.managed_with(
            env,
            "Sequence.set",
            || read_integer("value", &value),
            |r, named, value| async move {
                r.set(value, named.options.upsert).await?;
                Ok(None)
            },
        )
    }

    /// Raises the counter to at least `value` (an atomic `$max`: never lowers it, never
    /// loses a racing call), creating it when absent; resolves with its value afterwards.
    /// A descending counter (negative step) is lowered to at most `value` instead
    /// (`$min`): never moved back over values it handed out. For taking over counters
    /// kept elsewhere (another library's last value).
    #[napi(
        ts_args_type = "value: number | bigint",
        ts_return_type = "Promise<number | bigint>"
    )]
    pub fn raise_to<'env>(
        &self,
        env: &'env Env,
        value: Unknown<'env>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        self.managed_with(
            env,
            "Sequence.raiseTo",
            || read_integer("value", &value),
            |r, _, value| async move { r.raise_to(value).await.map(Some) },
        )
    }

    /// Raises the counter to at least the largest integer in `field` (a dotted path
    /// allowed, array elements included) of collection `source`, as `syncToMax` does (a
    /// descending counter is lowered to the smallest); resolves with its value
    /// afterwards.
    #[napi(
        ts_args_type = "source: string, field: string",
        ts_return_type = "Promise<number | bigint>"
    )]
    pub fn sync_to_max<'env>(
        &self,
        env: &'env Env,
        source: Unknown<'env>,
        field: Unknown<'env>,
    ) -> napi::Result<PromiseRaw<'env, Output>> {
        self.managed_with(
            env,
            "Sequence.syncToMax",
            || read_source(&source, &field),
            |r, _, (source, field)| async move { r.sync_to(source, field).await.map(Some) },
        )
    }

    /// Puts the counter back so that the next value is its start (the one given to
    /// `init`, else the handle's `start` option, else 1). Resolves with that start.
    #[napi(ts_return_type = "Promise<number | bigint>")]
    pub fn reset<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.reset", || {
            counter_promise(
                env,
                Ok(self.counter.clone()),
                Some(&self.keep),
                |r, named| async move {
                    let start = r.reset(named.options.start).await?;
                    Ok(Output::Single(Value::checked(
                        &named.label,
                        start,
                        named.options.bigint,
                    )?))
                },
            )
        })
    }

    /// Deletes the counter: its document, unless the document holds something else (other
    /// counters), of which only the counter's fields are removed. Resolves `true` when it existed.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn drop<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Output>> {
        promise_call(env, "Sequence.drop", || {
            counter_promise(
                env,
                Ok(self.counter.clone()),
                Some(&self.keep),
                |r, _| async move {
                    let existed = r.drop_counter().await?;
                    Ok(Output::Flag(existed))
                },
            )
        })
    }

    /// The sequence name as shown in messages: the string, or the scope's fields as JSON.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.counter.label.clone()
    }
}

/// A handle on sequence `name` with fixed `options` (the same as the functions take).
/// Throws `INVALID_ARGUMENT` at once for a bad `db`, name or option. Prefer it for hot
/// paths, above all with `cache`: a cached `next()` then settles without leaving the
/// JavaScript thread.
#[napi(
    ts_generic_types = "O extends SequenceOptions = {}",
    ts_args_type = "db: SequenceDbLike, name: string | Record<string, string | number | boolean | bigint>, options?: O",
    ts_return_type = "SequenceOf<O>"
)]
pub fn sequence<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    name: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<Sequence> {
    sync_call(env, "sequence", || {
        let counter = NamedCounter::read(env, &db, &name, options.as_ref()).or_throw(env)?;
        Ok(Sequence::new(counter))
    })
}
