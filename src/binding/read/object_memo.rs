//! A small per-thread memo keyed by JavaScript object identity: what was derived from an
//! object (a `Db`, a client's options object) is found again for that very object without
//! re-reading it. Entries hold weak references, so a collected object simply drops out;
//! when full, the oldest entry is replaced.

use std::ptr;

use napi::bindgen_prelude::Env;
use napi::{sys, JsValue};

struct Entry<T> {
    env: sys::napi_env,
    object: sys::napi_ref,
    value: T,
}

/// Up to `capacity` values remembered by object identity (kept in a `thread_local!`).
pub struct ObjectMemo<T> {
    entries: Vec<Entry<T>>,
    next: usize,
    capacity: usize,
}

fn same_object(env: &Env, reference: sys::napi_ref, object: sys::napi_value) -> bool {
    let mut held = ptr::null_mut();
    let mut equal = false;
    // SAFETY: `reference` was created in this env on this thread; a collected object
    // yields a null value, which is never equal.
    unsafe {
        sys::napi_get_reference_value(env.raw(), reference, &mut held) == sys::Status::napi_ok
            && !held.is_null()
            && sys::napi_strict_equals(env.raw(), held, object, &mut equal) == sys::Status::napi_ok
            && equal
    }
}

impl<T> ObjectMemo<T> {
    /// An empty memo of at most `capacity` entries.
    pub const fn new(capacity: usize) -> Self {
        ObjectMemo {
            entries: Vec::new(),
            next: 0,
            capacity,
        }
    }

    /// `use_it` applied to the value remembered for this very `object`, if any.
    pub fn recall_with<'o, R>(
        &self,
        env: &Env,
        object: &impl JsValue<'o>,
        use_it: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        let object = object.raw();
        self.entries
            .iter()
            .find(|e| e.env == env.raw() && same_object(env, e.object, object))
            .map(|e| use_it(&e.value))
    }

    /// Remembers `value` for `object`, replacing the oldest entry when full.
    pub fn remember<'o>(&mut self, env: &Env, object: &impl JsValue<'o>, value: T) {
        let object = object.raw();
        let mut reference = ptr::null_mut();
        // SAFETY: a weak (count 0) reference to a live object of this env.
        let created = unsafe { sys::napi_create_reference(env.raw(), object, 0, &mut reference) };
        if created != sys::Status::napi_ok {
            return;
        }
        let entry = Entry {
            env: env.raw(),
            object: reference,
            value,
        };
        if self.entries.len() < self.capacity {
            self.entries.push(entry);
            return;
        }
        let at = self.next % self.capacity;
        self.next = self.next.wrapping_add(1);
        let old = std::mem::replace(&mut self.entries[at], entry);
        if old.env == env.raw() {
            // SAFETY: the reference belongs to this env, which is alive (we are in a call).
            unsafe { sys::napi_delete_reference(env.raw(), old.object) };
        }
    }
}
