//! The counters the function form (`getNextSequenceValue(db, name, options)` and its
//! batch and range siblings) used last, per JavaScript thread, so that a repeated call
//! skips preparing its counter again: it reuses the prepared counter a `sequence()`
//! handle would keep. The arguments are still read and checked on every call; only what
//! follows from equal arguments is reused.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Env, Unknown};

use crate::binding::read::db::read_unremembered_db;
use crate::binding::read::db_memo;
use crate::binding::read::db_target::DbTarget;
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::reserve::prepare::KeptCounter;
use crate::engine::call_options::CallOptions;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::SeqResult;

/// Counters remembered per thread.
const CAPACITY: usize = 32;

/// A counter prepared for the function form.
pub type Prepared = Rc<(NamedCounter, KeptCounter)>;

thread_local! {
    static RECENT: RefCell<(Vec<Prepared>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

fn same_target(a: &DbTarget, b: &DbTarget) -> bool {
    match (a, b) {
        (DbTarget::Own(x, db_x), DbTarget::Own(y, db_y)) => Arc::ptr_eq(x, y) && db_x == db_y,
        // The same TLS contents too: a call that read rotated files must reach the
        // registry, which replaces the client opened before the rotation.
        (DbTarget::Shared(x, db_x, settings_x), DbTarget::Shared(y, db_y, settings_y)) => {
            x == y && db_x == db_y && settings_x == settings_y && x.same_tls_contents(y)
        }
        _ => false,
    }
}

/// The counter prepared earlier for these arguments, if any.
fn find(target: &DbTarget, name: &CounterName, options: &CallOptions) -> Option<Prepared> {
    RECENT.with(|recent| {
        let recent = recent.borrow();
        recent
            .0
            .iter()
            .find(|p| {
                let named = &p.0;
                named.counter.name == *name
                    && named.options == *options
                    && same_target(&named.target, target)
            })
            .cloned()
    })
}

/// A counter of these arguments made now (its options checked), and remembered.
fn remember(target: DbTarget, name: CounterName, options: CallOptions) -> SeqResult<Prepared> {
    let made: Prepared = Rc::new((
        NamedCounter::with_target(target, name, options)?,
        Arc::new(Mutex::new(None)),
    ));
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        if recent.0.len() < CAPACITY {
            recent.0.push(made.clone());
        } else {
            let slot = recent.1 % CAPACITY;
            recent.1 = recent.1.wrapping_add(1);
            recent.0[slot] = made.clone();
        }
    });
    Ok(made)
}

/// The counter of a function-form call's `db` argument and its `name` and `options`
/// (already read): the one prepared for equal arguments by an earlier call, otherwise one
/// made now. Each memo is looked up once: the `Db` object's target (without `uri`), then
/// the counters of this list; the options are checked once, when a counter is made.
pub fn counter(
    env: &Env,
    db: &Unknown,
    name: CounterName,
    options: CallOptions,
) -> SeqResult<Prepared> {
    let target = match options.uri.as_deref() {
        Some(uri) => read_unremembered_db(env, db, Some(uri))?,
        None => {
            // The target is copied only when no counter of this list has it.
            let known = db_memo::recall_with(env, db, |target| {
                find(target, &name, &options).ok_or_else(|| target.clone())
            });
            match known {
                Some(Ok(prepared)) => return Ok(prepared),
                Some(Err(target)) => return remember(target, name, options),
                None => read_unremembered_db(env, db, None)?,
            }
        }
    };
    // A `Db` object not seen before may stand for a target seen before (code that calls
    // `client.db(name)` for every call).
    match find(&target, &name, &options) {
        Some(prepared) => Ok(prepared),
        None => remember(target, name, options),
    }
}
