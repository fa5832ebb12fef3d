//! Remembering which connection a Node driver `Db` object stands for, so that repeated
//! calls with the same `Db` skip re-reading its client's options (about twenty property
//! reads). Entries hold weak references: a `Db` that is collected simply drops out.

use std::cell::RefCell;

use napi::bindgen_prelude::{Env, Unknown};

use crate::binding::read::db_target::DbTarget;
use crate::binding::read::object_memo::ObjectMemo;

/// How many `Db` objects are remembered per JavaScript thread.
const CAPACITY: usize = 16;

thread_local! {
    static MEMO: RefCell<ObjectMemo<DbTarget>> = const { RefCell::new(ObjectMemo::new(CAPACITY)) };
}

/// The target remembered for this very `db` object, if any.
pub fn recall(env: &Env, db: &Unknown) -> Option<DbTarget> {
    recall_with(env, db, DbTarget::clone)
}

/// `use_it` applied to the target remembered for this very `db` object, if any (without
/// copying the target).
pub fn recall_with<T>(env: &Env, db: &Unknown, use_it: impl FnOnce(&DbTarget) -> T) -> Option<T> {
    MEMO.with(|memo| memo.borrow().recall_with(env, db, use_it))
}

/// Remembers `target` for `db`, replacing the oldest entry when full.
pub fn remember(env: &Env, db: &Unknown, target: &DbTarget) {
    MEMO.with(|memo| memo.borrow_mut().remember(env, db, target.clone()));
}
