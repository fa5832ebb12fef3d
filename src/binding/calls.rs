//! What every sequence call does: read `db`, `name` and options, then reserve values,
//! from the block cache at once when possible, otherwise on the tokio runtime.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Env, PromiseRaw, Unknown};

use crate::binding::db_target::{read_db, DbTarget};
use crate::binding::js_read::{describe, number};
use crate::binding::name::read_counter_name;
use crate::binding::options::read_options;
use crate::binding::output::Output;
use crate::binding::settled::settled;
use crate::binding::spawn::promise;
use crate::engine::allocate::IdRange;
use crate::engine::counter_name::CounterName;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::options::SequenceOptions;
use crate::engine::reserve::Reservation;
use crate::engine::validate::check_count;

/// How a block of values is returned to JavaScript.
pub type Shape = fn(&str, IdRange, &SequenceOptions) -> SeqResult<Output>;

/// A reservation prepared by an earlier call, kept to skip the preparation next time.
pub type ReservationSlot = Arc<Mutex<Option<Reservation>>>;

/// A counter named by JavaScript arguments, read and checked.
#[derive(Clone)]
pub struct NamedCounter {
    /// Where the counter lives.
    pub target: DbTarget,
    /// The sequence name.
    pub name: CounterName,
    /// The name as shown in messages.
    pub label: String,
    /// The call's options.
    pub options: SequenceOptions,
}

impl NamedCounter {
    /// Reads the `db`, `name` and `options` arguments.
    pub fn read(
        env: &Env,
        db: &Unknown,
        name: &Unknown,
        options: Option<&Unknown>,
    ) -> SeqResult<NamedCounter> {
        let options = read_options(options)?;
        let name = read_counter_name(name)?;
        NamedCounter::from_parts(env, db, name, options)
    }

    /// A counter from parts already read (`name`, `options`) and the `db` argument.
    pub fn from_parts(
        env: &Env,
        db: &Unknown,
        name: CounterName,
        options: SequenceOptions,
    ) -> SeqResult<NamedCounter> {
        options.counter(&name)?;
        let target = read_db(env, db, options.uri.as_deref())?;
        Ok(NamedCounter {
            target,
            label: name.label(),
            name,
            options,
        })
    }

    /// The prepared reservation, reusing `slot` when it holds one for an open client.
    fn prepared_now(&self, slot: Option<&ReservationSlot>) -> Option<Reservation> {
        if let Some(slot) = slot {
            let kept = slot.lock().expect("reservation slot").clone();
            if let Some(reservation) = kept.filter(|r| !r.is_closed()) {
                return Some(reservation);
            }
        }
        let (handle, database) = self.target.resolve_now()?;
        Reservation::new(&handle, database, &self.name, &self.options).ok()
    }

    /// The reservation for this counter, kept in `slot` when given.
    pub async fn prepare(self, slot: Option<ReservationSlot>) -> SeqResult<Reservation> {
        if let Some(slot) = &slot {
            let kept = slot.lock().expect("reservation slot").clone();
            if let Some(reservation) = kept.filter(|r| !r.is_closed()) {
                return Ok(reservation);
            }
        }
        let (handle, database) = self.target.resolve().await?;
        let reservation = Reservation::new(&handle, &database, &self.name, &self.options)?;
        if let Some(slot) = slot {
            *slot.lock().expect("reservation slot") = Some(reservation.clone());
        }
        Ok(reservation)
    }
}

/// Refuses `format` for calls that return bounds, before any I/O.
pub fn without_format(counter: SeqResult<NamedCounter>) -> SeqResult<NamedCounter> {
    let counter = counter?;
    if counter.options.format.is_some() {
        return Err(SeqError::invalid_argument(
            "option 'format' does not apply to ranges; use getNextSequenceBatch or format the \
             bounds with formatSequence",
        ));
    }
    Ok(counter)
}

/// Reads a count argument: a whole number from 1 to `max`.
pub fn read_count(value: &Unknown, max: i64) -> SeqResult<i64> {
    let n = number(value).ok_or_else(|| {
        SeqError::invalid_argument(format!("count must be a number; got {}", describe(value)))
    })?;
    check_count(n, max)
}

/// A promise for `count` values of `counter`, shaped by `shape`. Argument errors reject
/// it too; a call the block cache can serve settles it at once.
pub fn reserve_promise<'env>(
    env: &'env Env,
    counter: SeqResult<NamedCounter>,
    count: SeqResult<i64>,
    shape: Shape,
    slot: Option<&ReservationSlot>,
) -> napi::Result<PromiseRaw<'env, Output>> {
    if let (Ok(named), Ok(count)) = (&counter, &count) {
        if named.options.cache.is_some() {
            if let Some(reservation) = named.prepared_now(slot) {
                if let Some((range, prefetch)) = reservation.try_cached(*count) {
                    if let Some(prefetch) = prefetch {
                        napi::bindgen_prelude::spawn(prefetch);
                    }
                    return settled(env, shape(&named.label, range, &named.options));
                }
            }
        }
    }
    let slot = slot.cloned();
    promise(env, async move {
        let (named, count) = (counter?, count?);
        let (label, options) = (named.label.clone(), named.options.clone());
        let range = named.prepare(slot).await?.run(count).await?;
        shape(&label, range, &options)
    })
}
