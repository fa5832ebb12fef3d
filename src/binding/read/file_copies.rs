//! The `Buffer`s seen holding what their TLS file held (`ca` and `tlsCAFile`, `key` or
//! `cert` and `tlsCertificateKeyFile`): the copy the Node driver reads into a client's
//! options when it connects, and keeps after the file is rotated in place. Remembered per
//! `Buffer` object for as long as it lives, never evicted, in a JavaScript `WeakSet` the
//! addon holds per thread: a later difference from the file is then a rotation, not a
//! certificate given in memory.

use std::cell::RefCell;
use std::ptr;

use napi::bindgen_prelude::{Env, Unknown};
use napi::{sys, JsValue};

use crate::binding::boundary::take_exception;

/// The set and its `has` and `add` methods (taken when the set is made), held by strong
/// references in the env that made them.
struct Seen {
    env: sys::napi_env,
    set: sys::napi_ref,
    has: sys::napi_ref,
    add: sys::napi_ref,
}

thread_local! {
    static SEEN: RefCell<Option<Seen>> = const { RefCell::new(None) };
}

/// A strong reference to `value`.
///
/// # Safety
/// `value` is a live value of `env`, on this thread.
unsafe fn strong(env: sys::napi_env, value: sys::napi_value) -> Option<sys::napi_ref> {
    let mut reference = ptr::null_mut();
    (sys::napi_create_reference(env, value, 1, &mut reference) == sys::Status::napi_ok)
        .then_some(reference)
}

/// The value `reference` holds.
///
/// # Safety
/// `reference` was made in `env`, on this thread.
unsafe fn value_of(env: sys::napi_env, reference: sys::napi_ref) -> Option<sys::napi_value> {
    let mut value = ptr::null_mut();
    (sys::napi_get_reference_value(env, reference, &mut value) == sys::Status::napi_ok
        && !value.is_null())
    .then_some(value)
}

/// `object[name]`.
///
/// # Safety
/// `object` is a live value of `env`, on this thread.
unsafe fn named(
    env: sys::napi_env,
    object: sys::napi_value,
    name: &std::ffi::CStr,
) -> Option<sys::napi_value> {
    let mut value = ptr::null_mut();
    (sys::napi_get_named_property(env, object, name.as_ptr(), &mut value) == sys::Status::napi_ok)
        .then_some(value)
}

/// A new `WeakSet` with its methods, from the global `WeakSet`.
fn make(env: &Env) -> Option<Seen> {
    let raw = env.raw();
    // SAFETY: N-API calls on live values of this env, on its thread.
    unsafe {
        let mut global = ptr::null_mut();
        if sys::napi_get_global(raw, &mut global) != sys::Status::napi_ok {
            return None;
        }
        let class = named(raw, global, c"WeakSet")?;
        let mut set = ptr::null_mut();
        if sys::napi_new_instance(raw, class, 0, ptr::null(), &mut set) != sys::Status::napi_ok {
            return None;
        }
        let has = named(raw, set, c"has")?;
        let add = named(raw, set, c"add")?;
        Some(Seen {
            env: raw,
            set: strong(raw, set)?,
            has: strong(raw, has)?,
            add: strong(raw, add)?,
        })
    }
}

/// `set.has(value)` (`method` `has`) or `set.add(value)` (`add`) on this thread's set,
/// made on first use; `None` when that fails (an exception is cleared). The cell is never
/// borrowed while JavaScript runs: a replaced `WeakSet` may call the addon again.
fn call(
    env: &Env,
    value: &Unknown,
    method: impl Fn(&Seen) -> sys::napi_ref,
) -> Option<sys::napi_value> {
    let result = call_set(env, value, method);
    if result.is_none() {
        // Whatever threw (a replaced `WeakSet`) must not fail the call: the value is then
        // compared with its file as if never seen.
        take_exception(env);
    }
    result
}

fn call_set(
    env: &Env,
    value: &Unknown,
    method: impl Fn(&Seen) -> sys::napi_ref,
) -> Option<sys::napi_value> {
    let raw = env.raw();
    // A set of another env (one that ended on this thread) is not used again.
    let held = SEEN.with(|seen| {
        seen.borrow()
            .as_ref()
            .filter(|s| s.env == raw)
            .map(|s| (s.set, method(s)))
    });
    let (set, function) = match held {
        Some(held) => held,
        None => {
            let made = make(env)?;
            let held = (made.set, method(&made));
            SEEN.with(|seen| *seen.borrow_mut() = Some(made));
            held
        }
    };
    // SAFETY: the references were made in this env, on this thread; `value` is a live
    // value of it. The values are taken before the call, so a set replaced during it
    // (by a nested call) does not matter.
    unsafe {
        let set = value_of(raw, set)?;
        let function = value_of(raw, function)?;
        let mut result = ptr::null_mut();
        let argument = value.raw();
        (sys::napi_call_function(raw, set, function, 1, &argument, &mut result)
            == sys::Status::napi_ok)
            .then_some(result)
    }
}

/// Whether `value` (an object) was remembered as the driver's copy of its file.
pub fn seen(env: &Env, value: &Unknown) -> bool {
    call(env, value, |s| s.has).is_some_and(|result| {
        let mut yes = false;
        // SAFETY: `result` is a live value this env just returned.
        unsafe {
            sys::napi_get_value_bool(env.raw(), result, &mut yes) == sys::Status::napi_ok && yes
        }
    })
}

/// Remembers `value` (an object) as the driver's copy of its file.
pub fn remember(env: &Env, value: &Unknown) {
    call(env, value, |s| s.add);
}
