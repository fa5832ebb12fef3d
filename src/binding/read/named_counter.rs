//! A counter named by JavaScript arguments: the `db`, `name` and `options` of a call,
//! read, and its counter made from them and checked, once (`reserve/prepare.rs` opens
//! its client and prepares it).

use std::sync::Arc;

use napi::bindgen_prelude::{Env, Unknown};

use crate::binding::read::db::read_db;
use crate::binding::read::db_target::DbTarget;
use crate::binding::read::name::read_counter_name;
use crate::binding::read::option_reader::read_options;
use crate::engine::call_options::CallOptions;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::SeqResult;
use crate::engine::stats::Stats;
use crate::engine::store::counter_store::CounterRef;

/// A counter named by JavaScript arguments, read and checked.
#[derive(Clone)]
pub struct NamedCounter {
    /// Where the counter lives.
    pub target: DbTarget,
    /// The counter the name and options make (`CallOptions::counter`: checked here,
    /// and only here).
    pub counter: CounterRef,
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
        let counter = options.counter(&name)?;
        let target = read_db(env, db, options.uri.as_deref())?;
        Ok(NamedCounter::checked(target, counter, options))
    }

    /// A counter of a `db` already read.
    pub fn with_target(
        target: DbTarget,
        name: CounterName,
        options: CallOptions,
    ) -> SeqResult<NamedCounter> {
        let counter = options.counter(&name)?;
        Ok(NamedCounter::checked(target, counter, options))
    }

    /// A counter whose `name` and `options` were checked together.
    fn checked(target: DbTarget, counter: CounterRef, options: CallOptions) -> NamedCounter {
        NamedCounter {
            target,
            label: counter.label.clone(),
            counter,
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
}
