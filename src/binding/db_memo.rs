//! Remembering which connection a Node driver `Db` object stands for, so that repeated
//! calls with the same `Db` skip re-reading its client's options (about twenty property
//! reads). Entries hold weak references: a `Db` that is collected simply drops out.

use std::cell::RefCell;
use std::ptr;

use napi::bindgen_prelude::{Env, Unknown};
use napi::{sys, JsValue};

use crate::binding::db_target::DbTarget;

/// How many `Db` objects are remembered per JavaScript thread.
const CAPACITY: usize = 16;

struct Entry {
    env: sys::napi_env,
    db: sys::napi_ref,
    target: DbTarget,
}

thread_local! {
    static MEMO: RefCell<(Vec<Entry>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

fn same_object(env: &Env, reference: sys::napi_ref, value: &Unknown) -> bool {
    let mut held = ptr::null_mut();
    let mut equal = false;
    // SAFETY: `reference` was created in this env on this thread; a collected object
    // yields a null value, which is never equal.
    unsafe {
        sys::napi_get_reference_value(env.raw(), reference, &mut held) == sys::Status::napi_ok
            && !held.is_null()
            && sys::napi_strict_equals(env.raw(), held, value.raw(), &mut equal)
                == sys::Status::napi_ok
            && equal
    }
}

/// The target remembered for this very `db` object, if any.
pub fn recall(env: &Env, db: &Unknown) -> Option<DbTarget> {
    recall_with(env, db, DbTarget::clone)
}

/// `use_it` applied to the target remembered for this very `db` object, if any (without
/// copying the target).
pub fn recall_with<T>(env: &Env, db: &Unknown, use_it: impl FnOnce(&DbTarget) -> T) -> Option<T> {
    MEMO.with(|memo| {
        let memo = memo.borrow();
        memo.0
            .iter()
            .find(|e| e.env == env.raw() && same_object(env, e.db, db))
            .map(|e| use_it(&e.target))
    })
}

/// Remembers `target` for `db`, replacing the oldest entry when full.
pub fn remember(env: &Env, db: &Unknown, target: &DbTarget) {
    let mut reference = ptr::null_mut();
    // SAFETY: a weak (count 0) reference to a live object of this env.
    let created = unsafe { sys::napi_create_reference(env.raw(), db.raw(), 0, &mut reference) };
    if created != sys::Status::napi_ok {
        return;
    }
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let entry = Entry {
            env: env.raw(),
            db: reference,
            target: target.clone(),
        };
        if memo.0.len() < CAPACITY {
            memo.0.push(entry);
            return;
        }
        let slot = memo.1 % CAPACITY;
        memo.1 = memo.1.wrapping_add(1);
        let old = std::mem::replace(&mut memo.0[slot], entry);
        if old.env == env.raw() {
            // SAFETY: the reference belongs to this env, which is alive (we are in a call).
            unsafe { sys::napi_delete_reference(env.raw(), old.db) };
        }
    });
}
