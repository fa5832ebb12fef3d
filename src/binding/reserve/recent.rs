//! The counters the function form (`getNextSequenceValue(db, name, options)` and its
//! batch and range siblings) used last, per JavaScript thread, so that a repeated call
//! skips preparing its counter again: it reuses the reservation a `sequence()` handle
//! would keep. The arguments are still read and checked on every call; only what follows
//! from equal arguments is reused.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::binding::read::db_target::DbTarget;
use crate::binding::read::named_counter::{NamedCounter, PreparedSlot};
use crate::engine::call_options::CallOptions;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::SeqResult;

/// Counters remembered per thread.
const CAPACITY: usize = 32;

/// A counter prepared for the function form.
pub type Prepared = Rc<(NamedCounter, PreparedSlot)>;

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
pub fn find(target: &DbTarget, name: &CounterName, options: &CallOptions) -> Option<Prepared> {
    RECENT.with(|recent| {
        let recent = recent.borrow();
        recent
            .0
            .iter()
            .find(|p| {
                let named = &p.0;
                named.name == *name
                    && named.options == *options
                    && same_target(&named.target, target)
            })
            .cloned()
    })
}

/// The counter prepared for these arguments, from the last ones used or made now.
pub fn prepared(target: DbTarget, name: CounterName, options: CallOptions) -> SeqResult<Prepared> {
    if let Some(found) = find(&target, &name, &options) {
        return Ok(found);
    }
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
