//! A counter named by JavaScript arguments: the `db`, `name` and `options` of a call,
//! read and checked, and prepared on demand (kept in a slot by a `sequence()` handle or
//! the function form's recent counters).

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Env, Unknown};

use crate::binding::read::db::read_db;
use crate::binding::read::db_target::DbTarget;
use crate::binding::read::name::read_counter_name;
use crate::binding::read::option_reader::read_options;
use crate::engine::alloc::prepared_counter::PreparedCounter;
use crate::engine::call_options::CallOptions;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::SeqResult;
use crate::engine::panic_safety::lock;
use crate::engine::stats::Stats;

/// A counter prepared by an earlier call, kept to skip the preparation next time.
pub type PreparedSlot = Arc<Mutex<Option<PreparedCounter>>>;

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
    pub options: CallOptions,
    /// The statistics of the `sequence()` handle this counter belongs to, if any.
    pub stats: Option<Arc<Stats>>,
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
        options: CallOptions,
    ) -> SeqResult<NamedCounter> {
        options.counter(&name)?;
        let target = read_db(env, db, options.uri.as_deref())?;
        Ok(NamedCounter::checked(target, name, options))
    }

    /// A counter of a `db` already read.
    pub fn with_target(
        target: DbTarget,
        name: CounterName,
        options: CallOptions,
    ) -> SeqResult<NamedCounter> {
        options.counter(&name)?;
        Ok(NamedCounter::checked(target, name, options))
    }

    /// A counter whose `name` and `options` were checked together.
    fn checked(target: DbTarget, name: CounterName, options: CallOptions) -> NamedCounter {
        NamedCounter {
            target,
            label: name.label(),
            name,
            options,
            stats: None,
        }
    }

    /// The call's options, with the `Db`'s write concern when the call gives none.
    pub fn effective_options(&self) -> std::borrow::Cow<'_, CallOptions> {
        let own = self.options.write_concern.as_ref();
        match self.target.write_concern(own) {
            Some(concern) if own.is_none() => std::borrow::Cow::Owned(CallOptions {
                write_concern: Some(concern.clone()),
                ..self.options.clone()
            }),
            _ => std::borrow::Cow::Borrowed(&self.options),
        }
    }

    /// The prepared counter: the one kept in `slot` when it holds one, otherwise one
    /// prepared now (and kept in `slot`, when given).
    pub async fn prepare(self, slot: Option<PreparedSlot>) -> SeqResult<PreparedCounter> {
        if let Some(prepared) = slot.as_ref().and_then(|s| kept(s, Clone::clone)) {
            return Ok(prepared);
        }
        let options = self.effective_options();
        let (handle, database) = self.target.clone().resolve().await?;
        let prepared = PreparedCounter::new(&handle, &database, &self.name, &options)?
            .recording(self.stats.clone());
        if let Some(slot) = slot {
            *lock(&slot) = Some(prepared.clone());
        }
        Ok(prepared)
    }
}

/// `use_it` applied to the prepared counter kept in `slot`, when it holds one for an open
/// client.
pub fn kept<T>(slot: &PreparedSlot, use_it: impl FnOnce(&PreparedCounter) -> T) -> Option<T> {
    let kept = lock(slot);
    kept.as_ref().filter(|r| !r.is_closed()).map(use_it)
}
