//! Round-trip events on the `mongodb-sequence:round-trip` diagnostics channel: where a
//! promise settles, this thread looks whether the channel has subscribers (turning the
//! engine's event recording on or off) and publishes the round trips recorded since.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;

use napi::bindgen_prelude::{Env, Function, JsObjectValue, Object, ObjectRef};

use crate::binding::boundary::{exception_pending, take_exception};
use crate::engine::stats;

/// The diagnostics channel round trips are published on.
pub const ROUND_TRIP_CHANNEL: &str = "mongodb-sequence:round-trip";

thread_local! {
    /// This JavaScript thread's round-trip channel (`None` inside: none can be had, as
    /// on Node versions without `process.getBuiltinModule`). Never dropped: a reference
    /// must not be released after its environment ends.
    static CHANNEL: RefCell<Option<ManuallyDrop<Option<ObjectRef>>>> = const { RefCell::new(None) };
    /// Settles at once since the subscribers were last looked at.
    static QUICK_SETTLES: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread's channel had subscribers when last looked at (counted by
    /// the engine among the listening threads).
    static LISTENING: Cell<bool> = const { Cell::new(false) };
}

/// Records whether this thread's channel has subscribers, telling the engine when that
/// changes.
fn set_listening(now: bool) {
    if LISTENING.with(|l| l.replace(now)) != now {
        stats::thread_listening(now);
    }
}

/// How many promises settled at once (from the cache) between two looks at the
/// channel's subscribers.
const QUICK_SETTLES_PER_LOOK: u32 = 256;

/// `diagnostics_channel.channel(ROUND_TRIP_CHANNEL)`, looked up through
/// `process.getBuiltinModule`.
fn open_channel(env: &Env) -> napi::Result<Object<'_>> {
    let process: Object = env.get_global()?.get_named_property("process")?;
    let get: Function<String, Object> = process.get_named_property("getBuiltinModule")?;
    let module = get.apply(process, "node:diagnostics_channel".to_string())?;
    let channel: Function<String, Object> = module.get_named_property("channel")?;
    channel.apply(module, ROUND_TRIP_CHANNEL.to_string())
}

/// This thread's channel, opened on first use.
fn channel(env: &Env) -> Option<Object<'_>> {
    CHANNEL.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let opened = open_channel(env).and_then(|c| c.create_ref()).ok();
            if opened.is_none() {
                take_exception(env);
            }
            // A thread that ends while it listens stops counting among the listeners
            // (the hook runs on this thread, at its environment's teardown).
            if env
                .add_env_cleanup_hook((), |()| set_listening(false))
                .is_err()
            {
                take_exception(env);
            }
            *cell = Some(ManuallyDrop::new(opened));
        }
        let reference = cell.as_ref()?.as_ref()?;
        reference.get_value(env).ok()
    })
}

/// Where an asynchronous call starts, before it submits anything (it may make a round
/// trip): a thread that did not
/// listen looks whether the channel has subscribers now, so that the round trip of the
/// first call after a subscriber subscribed is recorded too (the engine records while
/// some thread listens, and the round trip ends after this look).
pub fn before_call(env: &Env) {
    // An argument's getter or trap that threw left its exception pending: it becomes the
    // rejection's `cause`, so nothing here may run JavaScript (or clear it) before that.
    if LISTENING.with(Cell::get) || exception_pending(env) {
        return;
    }
    let Some(channel) = channel(env) else {
        return;
    };
    match channel.get_named_property::<bool>("hasSubscribers") {
        Ok(listening) => set_listening(listening),
        Err(_) => {
            take_exception(env);
        }
    }
}

/// Where an asynchronous call's promise settles: looks whether the channel has
/// subscribers (turning the engine's event recording on or off) and publishes the round
/// trips recorded since.
pub fn after_settle(env: &Env) {
    if publish(env).is_err() {
        take_exception(env);
    }
}

/// Where a cached call's promise settles at once: publishes what is recorded while
/// this thread listens, and looks at the subscribers only every so often (a thread that
/// does not listen only looks, even while another thread listens).
pub fn after_quick_settle(env: &Env) {
    let look = QUICK_SETTLES.with(|n| {
        let seen = n.get() + 1;
        n.set(seen % QUICK_SETTLES_PER_LOOK);
        seen >= QUICK_SETTLES_PER_LOOK
    });
    if look || LISTENING.with(Cell::get) {
        after_settle(env);
    }
}

fn publish(env: &Env) -> napi::Result<()> {
    let Some(channel) = channel(env) else {
        return Ok(());
    };
    let listening: bool = channel.get_named_property("hasSubscribers")?;
    set_listening(listening);
    if !listening {
        return Ok(());
    }
    let events = stats::take_events();
    if events.is_empty() {
        return Ok(());
    }
    let send: Function<Object, ()> = channel.get_named_property("publish")?;
    for event in events {
        let mut message = Object::new(env)?;
        if let Some(database) = event.database {
            message.set("database", database)?;
        }
        message.set("collection", event.collection)?;
        message.set("operation", event.operation)?;
        if let Some((host, port)) = event.server {
            message.set("serverAddress", host)?;
            message.set("serverPort", port)?;
        }
        if let Some(counter) = event.counter {
            message.set("counter", counter)?;
        }
        message.set("values", event.values as f64)?;
        message.set("calls", event.calls as f64)?;
        message.set("durationMs", event.duration.as_secs_f64() * 1000.0)?;
        message.set("retries", event.retries)?;
        match event.error {
            None => message.set("outcome", "ok")?,
            Some(code) => {
                message.set("outcome", "error")?;
                message.set("code", code.as_str())?;
            }
        }
        send.apply(channel, message)?;
    }
    Ok(())
}
