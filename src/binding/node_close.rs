//! Releasing a shared client when the Node driver clients it was derived from close:
//! each Node driver `MongoClient` seen through a `Db` gets one `topologyClosed` listener
//! (the event its `close()` emits once it had connected), and the shared client closes
//! with the last of them.

use napi::bindgen_prelude::{Env, FnArgs, Function, JsObjectValue, Object, Unknown};

use crate::binding::boundary::take_exception;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::registry::SHARED_CLIENTS;

/// The symbol (from `Symbol.for`) that marks a Node driver client as watched.
const WATCHED: &str = "mongodb-sequence.watched";
/// The event a Node driver `MongoClient` emits when `close()` closes its topology.
const CLOSED_EVENT: &str = "topologyClosed";

/// `emitter.once(event, listener)`.
type AddListener<'env> = Function<'env, FnArgs<(String, Function<'env, (), ()>)>, Unknown<'env>>;

/// Watches the Node driver client `client`, from which `target` was derived, once: when
/// it closes, the shared client of `target` is released (unless other live Node driver
/// clients use it). Best effort: a client that cannot be watched (not an event emitter)
/// is left to the idle and count limits.
pub fn watch_node_client(env: &Env, client: &Object, target: &ConnectionTarget) {
    if try_watch(env, client, target).is_err() {
        // Whatever threw (a getter, a replaced `on`) must not fail the call.
        take_exception(env);
    }
}

fn try_watch(env: &Env, client: &Object, target: &ConnectionTarget) -> napi::Result<()> {
    let symbols: Function<(), Unknown> = env.get_global()?.get_named_property("Symbol")?;
    let symbol_for: Function<String, Unknown> = symbols.get_named_property("for")?;
    let marker = symbol_for.apply(symbols, WATCHED.to_string())?;
    if client.has_own_property_js(marker)? {
        return Ok(());
    }
    // `once`: a client's first close releases; a closed client used again is left to
    // the idle and count limits (it is not watched twice, so it never releases a shared
    // client that another live Node driver client still uses).
    let once: AddListener = client.get_named_property("once")?;
    let released = target.clone();
    let listener =
        env.create_function_from_closure::<(), (), _>("mongoSequenceRelease", move |_| {
            let target = released.clone();
            // Never a panic out of an event listener (no runtime: nothing to release).
            let _ = std::panic::catch_unwind(move || {
                napi::bindgen_prelude::spawn(async move { SHARED_CLIENTS.release(&target).await })
            });
            Ok(())
        })?;
    once.apply(*client, (CLOSED_EVENT.to_string(), listener).into())?;
    let mut client = *client;
    client.set_property(marker, Object::new(env)?)?;
    SHARED_CLIENTS.watch(target);
    Ok(())
}
