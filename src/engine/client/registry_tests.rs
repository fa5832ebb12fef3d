use std::time::Instant;

use super::*;
use crate::engine::alloc::counter_state::Pending;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn run<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// Waits until `handle` takes no more calls (retiring or closed), woken by the move;
/// fails with `what` past a generous bound.
async fn left_open(what: &str, handle: &ClientHandle) {
    let moved = handle.reached(crate::engine::client::lifecycle::Phase::Retiring);
    tokio::time::timeout(Duration::from_secs(10), moved)
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

/// A call timeout (serverSelectionTimeoutMS) that no test waits for: a client's pending
/// calls settle, and a replaced client retires, when the test says so, not when a loaded
/// machine has been slow for a moment.
const NEVER_MS: u32 = 600_000;

fn leaked(limits: Limits) -> &'static ClientRegistry {
    Box::leak(Box::new(ClientRegistry::with_limits(limits)))
}

/// A registry whose openings wait twice at the returned barrier (see `opening_gate`).
fn gated() -> (&'static ClientRegistry, Arc<tokio::sync::Barrier>) {
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    let registry = ClientRegistry {
        opening_gate: Some(gate.clone()),
        ..ClientRegistry::default()
    };
    (Box::leak(Box::new(registry)), gate)
}

#[test]
fn a_client_still_opening_when_the_clients_close_is_closed_and_never_handed_out() {
    run(async {
        let (registry, gate) = gated();
        let a = target(50);
        let open = |a: &ConnectionTarget| {
            let a = a.clone();
            tokio::spawn(async move { registry.get(&a).await })
        };
        // closeSharedClients() while a call's client is opening.
        let call = open(&a);
        gate.wait().await;
        assert_eq!(registry.len(), 0, "still opening");
        assert!(registry.close_all(DEFAULT_CLOSE_TIMEOUT).await);
        gate.wait().await;
        let e = call
            .await
            .unwrap()
            .err()
            .expect("the call was pending at the close");
        assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
        assert_eq!(registry.len(), 0, "no client is left that nothing tracks");
        // The last Node client closing while a call's client is opening: the same.
        registry.watch(&a);
        let call = open(&a);
        gate.wait().await;
        registry.release(&a).await;
        gate.wait().await;
        let e = call.await.unwrap().err().expect("its Node client closed");
        assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
        assert_eq!(registry.len(), 0);
        // A later call opens a client that the next close closes.
        let later = open(&a);
        gate.wait().await;
        gate.wait().await;
        let later = later.await.unwrap().unwrap();
        assert_eq!(registry.len(), 1);
        assert!(Arc::ptr_eq(&registry.try_get(&a).unwrap(), &later));
        registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
        assert!(later.is_closed());
    });
}

#[test]
fn a_client_opening_after_its_predecessor_closed_is_not_pruned_by_another_release() {
    run(async {
        let (registry, gate) = gated();
        let a = target(51);
        let open = |a: &ConnectionTarget| {
            let a = a.clone();
            tokio::spawn(async move { registry.get(&a).await })
        };
        // A worker's Node client closes: its shared client is released and leaves a
        // slot for the next one, which opens once the release has given back.
        registry.watch(&a);
        let first = open(&a);
        gate.wait().await;
        gate.wait().await;
        first.await.unwrap().unwrap();
        registry.release(&a).await;
        // The next worker's call opens into that slot while a call for another
        // connection releases unused clients: the slot is in use, not spent.
        let call = open(&a);
        gate.wait().await;
        registry.release_unused(None);
        gate.wait().await;
        let handle = call.await.unwrap().expect("the opening slot was kept");
        assert!(Arc::ptr_eq(&registry.try_get(&a).unwrap(), &handle));
        assert_eq!(registry.len(), 1);
        registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
    });
}

#[test]
fn a_call_on_an_open_client_is_not_failed_by_the_release_of_unused_clients() {
    run(async {
        let gate = Arc::new(tokio::sync::Barrier::new(2));
        let registry: &'static ClientRegistry = Box::leak(Box::new(ClientRegistry {
            checked_gate: Some(CheckedGate::Pairs(gate.clone())),
            limits: Limits {
                max_clients: 1,
                ..Limits::default()
            },
            ..ClientRegistry::default()
        }));
        let (a, b) = (target(60), target(61));
        let get = |t: &ConnectionTarget| {
            let t = t.clone();
            tokio::spawn(async move { registry.get(&t).await })
        };
        let first = get(&a);
        gate.wait().await;
        let first = first.await.unwrap().unwrap();
        // A call holds A's slot (its client open, no call pending on it yet) while a
        // call for B opens a client past the limit and releases the unused ones.
        let call = get(&a);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // B's call and the call for A meet at the gate; B's then releases A.
        let other = get(&b).await.unwrap().unwrap();
        let outcome = call.await.unwrap();
        let handle = outcome.expect("A was in use: a call held its slot");
        assert!(Arc::ptr_eq(&handle, &first) && handle.is_usable());
        assert!(other.is_usable());
        registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
    });
}

#[test]
fn a_slot_is_spent_once_its_predecessor_has_left_and_no_call_holds_it() {
    run(async {
        let handle = Arc::new(ClientHandle::open(&target(70)).await.unwrap());
        let leaving = SlotCell::after(Leaving::spawn(handle.clone(), std::future::pending()));
        assert!(
            !leaving.is_spent(),
            "the next client waits for one still leaving"
        );
        let left = SlotCell::after(Leaving::spawn(handle.clone(), async {}));
        let waited = Instant::now();
        while !left.replaces.as_ref().unwrap().is_finished() {
            assert!(
                waited.elapsed() < Duration::from_secs(10),
                "the leaving task ends"
            );
            tokio::task::yield_now().await;
        }
        let held = left.clone();
        assert!(!left.is_spent(), "a call holds it");
        drop(held);
        assert!(left.is_spent());
        let empty: Slot = Arc::default();
        assert!(empty.is_spent());
        let _ = empty.cell.set(Opened {
            handle,
            files: target(70),
        });
        assert!(!empty.is_spent(), "it holds a client");
    });
}

#[test]
fn a_client_whose_runtime_ended_has_left() {
    // A worker thread's runtime ended: the client's leaving task was dropped without
    // saying it finished, and nothing is left to wait for.
    let ended = runtime();
    let abandoned = ended.block_on(async {
        let handle = Arc::new(ClientHandle::open(&target(71)).await.unwrap());
        Leaving::spawn(handle, std::future::pending())
    });
    assert!(
        !abandoned.is_finished(),
        "still leaving while its runtime runs"
    );
    drop(ended);
    assert!(abandoned.is_finished());
    assert!(SlotCell::after(abandoned).is_spent());
}

fn target(n: u32) -> ConnectionTarget {
    ConnectionTarget::from_uri(&format!(
        "mongodb://127.0.0.1:1/?appName=t{n}&serverSelectionTimeoutMS=300"
    ))
    .unwrap()
}

#[test]
fn a_tls_file_rotated_in_place_replaces_the_client_once_it_has_retired() {
    use crate::engine::client::connection::derive_from_node_client;
    use crate::engine::client::node_options::{NodeOptions, NodeValue};
    use crate::engine::counter::id_range::IdRange;
    let dir = std::env::temp_dir().join(format!("mongodb-sequence-{}-open", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ca.pem");
    let uri = format!(
        "mongodb://127.0.0.1:1/?tls=true&serverSelectionTimeoutMS={NEVER_MS}&tlsCAFile={}",
        path.to_str().unwrap()
    );
    let mut host = std::collections::BTreeMap::new();
    host.insert("host".to_string(), NodeValue::Text("127.0.0.1".into()));
    host.insert("port".to_string(), NodeValue::number(2.0));
    let mut o = NodeOptions::new();
    o.insert("hosts".into(), NodeValue::List(vec![NodeValue::Map(host)]));
    o.insert(
        "serverSelectionTimeoutMS".into(),
        NodeValue::number(f64::from(NEVER_MS)),
    );
    o.insert("tls".into(), NodeValue::Bool(true));
    o.insert(
        "tlsCAFile".into(),
        NodeValue::Text(path.to_str().unwrap().into()),
    );
    let made: [&dyn Fn() -> ConnectionTarget; 2] =
        [&|| ConnectionTarget::from_uri(&uri).unwrap(), &|| {
            derive_from_node_client(&o).unwrap()
        }];
    for make in made {
        std::fs::write(&path, b"alice's CA").unwrap();
        let before = make();
        run(async {
            let registry = leaked(Limits::default());
            let first = registry.get(&before).await.unwrap();
            // Rotated in place while the client is open: targets made before keep it.
            std::fs::write(&path, b"alice's renewed CA").unwrap();
            assert!(Arc::ptr_eq(&registry.get(&before).await.unwrap(), &first));
            assert!(registry.try_get(&before).is_some());
            let (settle, settled) = tokio::sync::oneshot::channel();
            let pending = first.bounded(Box::pin(async move { settled.await.unwrap() }));
            // A target that read the new contents replaces it, never beside it: the old
            // one takes no more calls, its pending call settles, it closes (its cached
            // tails given back), and only then does the new one open.
            let renewed = make();
            assert_eq!(renewed, before, "one connection");
            assert!(
                registry.try_get(&renewed).is_none(),
                "left to get, which replaces"
            );
            let replacing = {
                let renewed = renewed.clone();
                tokio::spawn(async move { registry.get(&renewed).await })
            };
            left_open("the old client takes no more calls", &first).await;
            // Time for a replacement that does not wait to open (it would at once).
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(
                !replacing.is_finished(),
                "the new one waits for the pending call"
            );
            settle.send(Ok(IdRange::contiguous(7, 7))).unwrap();
            let outcome = pending.await.unwrap();
            assert_eq!((outcome.first, outcome.last), (7, 7), "not rejected");
            let second = replacing.await.unwrap().unwrap();
            assert!(!Arc::ptr_eq(&second, &first));
            assert!(
                first.phase() == crate::engine::client::lifecycle::Phase::Closed,
                "closed before the new one opened"
            );
            assert_eq!(registry.len(), 1);
            // Targets made before it opened use it: they never reopen the old contents.
            assert!(Arc::ptr_eq(&registry.get(&before).await.unwrap(), &second));
            assert!(Arc::ptr_eq(&registry.try_get(&before).unwrap(), &second));
            assert!(Arc::ptr_eq(&registry.get(&renewed).await.unwrap(), &second));
            // Rotated again with a call pending: the clients closing meanwhile reject it
            // at once, and the replacement with it.
            std::fs::write(&path, b"alice's CA, third").unwrap();
            let pending = second.bounded(Box::pin(std::future::pending()));
            let third = make();
            let replacing = tokio::spawn(async move { registry.get(&third).await });
            left_open("the rotation retires the second client", &second).await;
            assert!(registry.close_all(DEFAULT_CLOSE_TIMEOUT).await);
            assert_eq!(pending.await.unwrap_err().code, ErrorCode::ClientClosed);
            let e = replacing.await.unwrap().err().expect("rejected");
            assert_eq!(e.code, ErrorCode::ClientClosed, "{}", e.message);
            assert!(registry.is_empty());
            // Released: the next client of the oldest target opens with the files as
            // they are now, instead of failing for good.
            let reopened = registry.get(&before).await.unwrap();
            assert!(reopened.is_usable() && !Arc::ptr_eq(&reopened, &second));
            registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
        });
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_call_whose_new_client_a_rotation_replaced_asks_again() {
    let dir = std::env::temp_dir().join(format!("mongodb-sequence-{}-again", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ca.pem");
    std::fs::write(&path, b"alice's CA").unwrap();
    let uri = format!(
        "mongodb://127.0.0.1:1/?tls=true&serverSelectionTimeoutMS={NEVER_MS}&tlsCAFile={}",
        path.to_str().unwrap()
    );
    let before = ConnectionTarget::from_uri(&uri).unwrap();
    run(async {
        let gate = crate::engine::test_support::Gate::default();
        let registry: &'static ClientRegistry = Box::leak(Box::new(ClientRegistry {
            checked_gate: Some(CheckedGate::Held(gate.clone())),
            ..ClientRegistry::default()
        }));
        let call = {
            let before = before.clone();
            tokio::spawn(async move { registry.get(&before).await })
        };
        // Its client is open; the call has not checked it yet.
        gate.reached(1).await;
        let opened = registry.try_get(&before).expect("the first client is open");
        // A call that read the rotated file replaces it meanwhile.
        std::fs::write(&path, b"alice's renewed CA").unwrap();
        let renewed = ConnectionTarget::from_uri(&uri).unwrap();
        let replacing = {
            let renewed = renewed.clone();
            tokio::spawn(async move { registry.get(&renewed).await })
        };
        // The replacement is open once its call reaches the gate too.
        gate.reached(2).await;
        assert!(
            opened.is_closed(),
            "the first client retired for the replacement"
        );
        gate.open();
        let first = call.await.unwrap().expect("asked again, not refused");
        let second = replacing.await.unwrap().expect("opened");
        assert!(Arc::ptr_eq(&first, &second), "the replacement");
        assert!(opened.is_closed() && !Arc::ptr_eq(&first, &opened));
        assert_eq!(registry.len(), 1);
        registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn same_target_shares_one_client_and_different_ones_do_not() {
    run(async {
        let registry = leaked(Limits::default());
        let a = ConnectionTarget::from_uri("mongodb://127.0.0.1:1/").unwrap();
        let b = ConnectionTarget::from_uri("mongodb://u:p@127.0.0.1:1/").unwrap();
        let (x, y) = tokio::join!(registry.get(&a), registry.get(&a));
        assert!(Arc::ptr_eq(&x.unwrap(), &y.unwrap()));
        let z = registry.get(&b).await.unwrap();
        assert_eq!(registry.len(), 2);
        assert!(!z.is_closed());
        registry.close_all(DEFAULT_CLOSE_TIMEOUT).await;
        assert!(registry.is_empty());
        assert!(z.is_closed());
        assert_eq!(z.driver("db").err().unwrap().code, ErrorCode::ClientClosed);
    });
}

#[test]
fn a_client_of_an_ended_runtime_is_replaced_not_reused() {
    let registry = leaked(Limits::default());
    let a = target(1);
    let old = runtime().block_on(registry.get(&a)).unwrap();
    // The runtime that opened `old` is gone (dropped above); a new one takes over.
    let rt = runtime();
    let _guard = rt.enter();
    assert!(
        old.is_stale(),
        "seen from the new runtime, the old client is stale"
    );
    assert!(
        registry.try_get(&a).is_none(),
        "never handed out without waiting"
    );
    assert_eq!(old.ensure_open().unwrap_err().code, ErrorCode::ClientClosed);
    let new = rt.block_on(registry.get(&a)).unwrap();
    assert!(!Arc::ptr_eq(&old, &new));
    assert!(old.is_closed(), "the replaced client is marked closed");
    assert!(new.is_usable());
    assert!(Arc::ptr_eq(&registry.try_get(&a).unwrap(), &new));
    assert_eq!(registry.len(), 1);
}

#[test]
fn outside_any_runtime_try_get_hands_out_nothing() {
    let registry = leaked(Limits::default());
    let a = target(2);
    let rt = runtime();
    rt.block_on(registry.get(&a)).unwrap();
    assert!(registry.try_get(&a).is_none());
    let _guard = rt.enter();
    assert!(registry.try_get(&a).is_some());
}

#[test]
fn clients_past_the_limit_are_closed_least_recently_used_first() {
    run(async {
        let registry = leaked(Limits {
            max_clients: 3,
            ..Limits::default()
        });
        let mut handles = Vec::new();
        for n in 0..3 {
            handles.push(registry.get(&target(10 + n)).await.unwrap());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The first is used again: the second is now the least recently used.
        registry.get(&target(10)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let fourth = registry.get(&target(13)).await.unwrap();
        assert_eq!(registry.len(), 3);
        assert!(handles[1].is_closed(), "the least recently used one closed");
        assert!(!handles[0].is_closed() && !handles[2].is_closed());
        assert!(!fourth.is_closed());
    });
}

#[test]
fn a_client_with_a_pending_call_is_not_released() {
    run(async {
        let registry = leaked(Limits {
            max_clients: 1,
            idle_after: Duration::from_millis(1),
            sweep_every: Duration::from_millis(5),
        });
        let busy = registry.get(&target(20)).await.unwrap();
        let never: Pending = Box::pin(std::future::pending());
        let guarded = busy.bounded(never);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!busy.is_closed(), "a pending call keeps its client");
        let other = registry.get(&target(21)).await.unwrap();
        assert!(!busy.is_closed(), "even past the limit");
        // The pending call times out (serverSelectionTimeoutMS=300) and settles.
        let outcome = guarded.await;
        assert_eq!(outcome.unwrap_err().code, ErrorCode::Connection);
        // Released by a sweep to come, whenever its tick comes: woken by the release.
        left_open("the idle busy one is released", &busy).await;
        left_open("the idle other one is released", &other).await;
        assert!(registry.is_empty());
    });
}

#[test]
fn a_pending_call_waits_at_most_its_timeout_and_rejects_at_close() {
    run(async {
        let registry = leaked(Limits::default());
        let handle = registry.get(&target(30)).await.unwrap();
        assert_eq!(handle.call_timeout(), Duration::from_millis(300));
        let started = Instant::now();
        let timed_out = handle.bounded(Box::pin(std::future::pending())).await;
        let took = started.elapsed();
        assert_eq!(timed_out.unwrap_err().code, ErrorCode::Connection);
        // Its own 300 ms, not the driver's 30 s: never sooner, and loose above, where a
        // loaded machine runs timers late.
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");

        // Closed in the same poll as the call's first wait, with no timer run in between:
        // the close comes first however slowly the machine runs, not the 300 ms timeout.
        let pending = handle.bounded(Box::pin(std::future::pending()));
        let closer = registry.close_all(Duration::from_millis(200));
        let started = Instant::now();
        let (outcome, _) = tokio::join!(pending, closer);
        assert_eq!(outcome.unwrap_err().code, ErrorCode::ClientClosed);
        // The code already tells the close from the 300 ms timeout; the bound only
        // catches a call left hanging.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(handle.busy(), 0);
    });
}

#[test]
fn the_shared_client_closes_with_its_last_node_client() {
    run(async {
        let registry = leaked(Limits::default());
        let a = target(40);
        registry.watch(&a);
        registry.watch(&a);
        let handle = registry.get(&a).await.unwrap();
        registry.release(&a).await;
        assert!(!handle.is_closed(), "another Node client still uses it");
        registry.release(&a).await;
        assert!(handle.is_closed(), "the last one closed");
        // Closed for good: its driver was shut down (after its give-back), not only
        // marked closed to calls.
        let after = handle
            .client()
            .database("x")
            .run_command(mongodb::bson::doc! { "ping": 1 })
            .await
            .unwrap_err();
        assert!(
            matches!(*after.kind, mongodb::error::ErrorKind::Shutdown),
            "{after}"
        );
        assert!(registry.is_empty());
        let reopened = registry.get(&a).await.unwrap();
        assert!(!reopened.is_closed(), "a later call opens a new one");
        registry.release(&a).await;
        assert!(!reopened.is_closed(), "an unwatched target is not released");
    });
}

#[test]
fn closing_all_says_whether_every_leaving_client_left_in_time() {
    run(async {
        // A client still retiring (it replaces nothing yet: its slot waits for it) that
        // never finishes leaving: the close cannot say it finished.
        let registry = leaked(Limits::default());
        let handle = Arc::new(ClientHandle::open(&target(80)).await.unwrap());
        let never = SlotCell::after(Leaving::spawn(handle, std::future::pending()));
        lock(&registry.slots).insert(target(80), never);
        assert!(!registry.close_all(Duration::from_millis(50)).await);
    });
}

#[test]
fn the_slot_a_closed_client_leaves_stays_until_a_later_release_prunes_it() {
    run(async {
        // A call made while the client closes must find its slot, and wait there for the
        // client to have left before opening the next (one state per counter at a time).
        let registry = leaked(Limits::default());
        let a = target(82);
        let handle = registry.get(&a).await.unwrap();
        assert!(registry.close_all(DEFAULT_CLOSE_TIMEOUT).await);
        assert!(handle.is_closed());
        let slots = lock(&registry.slots);
        let slot = slots.get(&a).expect("the slot the closing client left");
        assert!(slot.replaces.is_some() && !slot.cell.initialized());
    });
}

#[test]
fn a_client_released_for_idleness_does_not_count_toward_the_limit() {
    run(async {
        let registry = leaked(Limits {
            max_clients: 2,
            idle_after: Duration::from_secs(2),
            sweep_every: Duration::from_secs(3600),
        });
        let idle = registry.get(&target(93)).await.unwrap();
        let recent = registry.get(&target(94)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        recent.touch();
        // A third: the idle one leaves, and the two live ones are within the limit.
        let new = registry.get(&target(95)).await.unwrap();
        assert!(idle.is_closed(), "idle for longer than idle_after");
        assert!(
            !recent.is_closed(),
            "within the limit once the idle one has left"
        );
        assert!(!new.is_closed());
        assert_eq!(registry.len(), 2);
    });
}

#[test]
fn past_the_limit_as_many_clients_close_as_exceed_it() {
    run(async {
        let registry = leaked(Limits {
            max_clients: 2,
            sweep_every: Duration::from_secs(3600),
            ..Limits::default()
        });
        // Three clients with a call pending cannot be released: a fourth goes past the limit.
        let mut pending = Vec::new();
        for n in 0..3 {
            let handle = registry.get(&target(100 + n)).await.unwrap();
            pending.push(handle.bounded(Box::pin(std::future::pending())));
        }
        registry.get(&target(103)).await.unwrap();
        assert_eq!(registry.len(), 4, "busy clients stay, whatever the limit");
        drop(pending);
        // The fifth: five open, two allowed, three (the least recently used) close.
        registry.get(&target(104)).await.unwrap();
        assert_eq!(registry.len(), 2);
    });
}

#[test]
fn idle_clients_are_released_by_the_sweeper_without_another_call() {
    run(async {
        let registry = leaked(Limits {
            idle_after: Duration::from_millis(100),
            sweep_every: Duration::from_millis(50),
            ..Limits::default()
        });
        let handle = registry.get(&target(110)).await.unwrap();
        left_open("the sweeper released the idle client", &handle).await;
        assert!(registry.is_empty());
    });
}
