use super::*;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::lifecycle::Phase;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::test_support::run;

fn counter(collection: &str, field: &str, name: &str) -> CounterRef {
    CounterRef::new(collection, field, CounterName::text(name).unwrap())
}

#[test]
fn one_state_per_counter_document_selected_by_database_collection_and_field() {
    run(async {
        let target = ConnectionTarget::from_uri(
            "mongodb://app:s3cr3t-pw@127.0.0.1:1/?serverSelectionTimeoutMS=300",
        )
        .unwrap();
        let handle = ClientHandle::open(&target).await.unwrap();
        let a = handle.counter_state("db", &counter("counters", "seq", "a"));
        let again = handle.counter_state("db", &counter("counters", "seq", "a"));
        assert!(Arc::ptr_eq(&a, &again), "one document, one state");
        let other_db = handle.counter_state("other", &counter("counters", "seq", "a"));
        assert!(!Arc::ptr_eq(&a, &other_db));
        let b = handle.counter_state("db", &counter("counters", "seq", "b"));
        let _elsewhere = handle.counter_state("db", &counter("ids", "seq", "a"));
        let _other_field = handle.counter_state("db", &counter("counters", "n", "a"));
        let selected = handle.counter_states_in("db", "counters", "seq");
        assert_eq!(
            selected.len(),
            2,
            "a and b, nothing of another database, collection or field"
        );
        assert!(selected.iter().any(|s| Arc::ptr_eq(s, &a)));
        assert!(selected.iter().any(|s| Arc::ptr_eq(s, &b)));
        assert!(handle
            .counter_states_in("none", "counters", "seq")
            .is_empty());
        assert!(handle.secrets().iter().any(|s| s == "s3cr3t-pw"));
    });
}

#[test]
fn a_call_past_its_bound_names_the_last_failed_check_of_a_server_without_secrets() {
    run(async {
        let target = ConnectionTarget::from_uri(
            "mongodb://app:s3cr3t-pw@127.0.0.1:1/?serverSelectionTimeoutMS=200",
        )
        .unwrap();
        let handle = Arc::new(ClientHandle::open(&target).await.unwrap());
        let never = std::future::pending::<SeqResult<()>>();
        let quiet = handle.within(never, Late::Read).await.unwrap_err();
        assert_eq!(quiet.code, ErrorCode::Connection);
        // What the driver's monitoring saw last (the port is closed: refused, or the
        // certificate noted here).
        handle.writable.note_check(
            &mongodb::options::ServerAddress::Tcp {
                host: "127.0.0.1".into(),
                port: Some(1),
            },
            Some("invalid peer certificate: UnknownIssuer (s3cr3t-pw)".into()),
        );
        let named = handle
            .within(std::future::pending::<SeqResult<()>>(), Late::Read)
            .await
            .unwrap_err();
        assert_eq!(named.code, ErrorCode::Connection);
        assert!(
            named
                .message
                .contains("the last check of 127.0.0.1:1 failed: invalid peer certificate"),
            "{}",
            named.message
        );
        assert!(!named.message.contains("s3cr3t-pw"), "{}", named.message);
    });
}

#[test]
fn a_socket_timeout_shorter_than_server_selection_bounds_calls_and_is_named() {
    run(async {
        let cases = [
            (
                "serverSelectionTimeoutMS=5000&socketTimeoutMS=150",
                150,
                "socketTimeoutMS",
            ),
            (
                "serverSelectionTimeoutMS=150&socketTimeoutMS=5000",
                150,
                "serverSelectionTimeoutMS",
            ),
            (
                "serverSelectionTimeoutMS=150&socketTimeoutMS=0",
                150,
                "serverSelectionTimeoutMS",
            ),
        ];
        for (query, millis, setting) in cases {
            let target =
                ConnectionTarget::from_uri(&format!("mongodb://127.0.0.1:1/?{query}")).unwrap();
            let handle = Arc::new(ClientHandle::open(&target).await.unwrap());
            assert_eq!(
                handle.call_timeout(),
                Duration::from_millis(millis),
                "{query}"
            );
            assert_eq!(handle.call_timeout_setting(), setting, "{query}");
            let started = Instant::now();
            let e = handle
                .within(std::future::pending::<SeqResult<()>>(), Late::Values)
                .await
                .unwrap_err();
            assert!(started.elapsed() < Duration::from_millis(4000), "{query}");
            assert_eq!(e.code, ErrorCode::Connection, "{query}");
            let named = format!("within {millis} ms of the call (the {setting} of the connection)");
            assert!(e.message.contains(&named), "{query}: {}", e.message);
            handle.close().await;
        }
    });
}

#[test]
fn a_client_certificate_rotated_to_version_1_is_refused_when_the_client_opens() {
    run(async {
        let dir = std::env::temp_dir().join(format!("mseq-open-v1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("me.pem");
        // A v3 skeleton (`[0] { 2 }`, a serial), then a v1 one (the serial first): only the
        // version is read.
        std::fs::write(
            &path,
            "-----BEGIN CERTIFICATE-----\nMAowCKADAgECAgEB\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let uri = format!(
            "mongodb://127.0.0.1:1/?tls=true&tlsCertificateKeyFile={}",
            path.to_str().unwrap()
        );
        let target = ConnectionTarget::from_uri(&uri).unwrap();
        std::fs::write(
            &path,
            "-----BEGIN CERTIFICATE-----\nMAUwAwIBAQ==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = match ClientHandle::open(&target.with_tls_files_read_now()).await {
            Ok(_) => panic!("opened with a version 1 certificate"),
            Err(e) => e,
        };
        assert_eq!(e.code, ErrorCode::UnsupportedClient);
        assert!(e.message.contains("X.509 version 1"), "{}", e.message);
        std::fs::remove_dir_all(&dir).unwrap();
    });
}

/// A client of this call timeout, which no test waits for.
async fn never_timing_out() -> Arc<ClientHandle> {
    let target =
        ConnectionTarget::from_uri("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=600000")
            .unwrap();
    Arc::new(ClientHandle::open(&target).await.unwrap())
}

#[test]
fn a_retiring_client_closes_when_its_last_pending_call_ends_not_at_its_timeout() {
    use crate::engine::counter::id_range::IdRange;
    run(async {
        let handle = never_timing_out().await;
        let (finish, finished) = tokio::sync::oneshot::channel();
        let pending =
            tokio::spawn(handle.bounded(Box::pin(async move { finished.await.unwrap() })));
        let retiring = handle.retire();
        tokio::pin!(retiring);
        assert!(
            futures_util::poll!(&mut retiring).is_pending(),
            "a call is pending"
        );
        assert_eq!(handle.phase(), Phase::Retiring);
        assert!(handle.is_closed(), "it takes no more calls");
        assert_eq!(handle.busy(), 1);
        finish.send(Ok(IdRange::contiguous(7, 7))).unwrap();
        let outcome = pending.await.unwrap().unwrap();
        assert_eq!((outcome.first, outcome.last), (7, 7), "not rejected");
        tokio::time::timeout(Duration::from_secs(20), retiring)
            .await
            .expect("woken when its last call ended, long before its call timeout");
        assert_eq!(handle.phase(), Phase::Closed);
    });
}

#[test]
fn a_retiring_client_whose_call_never_ends_closes_at_its_call_timeout() {
    run(async {
        let target =
            ConnectionTarget::from_uri("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300")
                .unwrap();
        let handle = Arc::new(ClientHandle::open(&target).await.unwrap());
        // Counted as pending from now on; not polled, so its own bound never fires.
        let pending = handle.bounded(Box::pin(std::future::pending()));
        let started = Instant::now();
        tokio::time::timeout(Duration::from_secs(20), handle.retire())
            .await
            .expect("retired at its deadline");
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(handle.phase(), Phase::Closed);
        // The close rejects the call still pending.
        let e = pending.await.unwrap_err();
        assert_eq!(e.code, ErrorCode::ClientClosed);
        assert_eq!(handle.busy(), 0);
    });
}

#[test]
fn a_client_closed_while_it_retires_stops_waiting_for_its_calls() {
    run(async {
        let handle = never_timing_out().await;
        let pending = handle.bounded(Box::pin(std::future::pending()));
        let retiring = handle.retire();
        tokio::pin!(retiring);
        assert!(
            futures_util::poll!(&mut retiring).is_pending(),
            "a call is pending"
        );
        handle.close().await;
        tokio::time::timeout(Duration::from_secs(20), retiring)
            .await
            .expect("woken by the close");
        assert_eq!(pending.await.unwrap_err().code, ErrorCode::ClientClosed);
    });
}

/// The close that moves a client to closed (its user's, or the one that ends a
/// retirement) takes its counter states, to give back their cached tails: none is left
/// to serve a call, and a later close finds nothing to give back.
#[test]
fn the_close_that_closes_a_client_takes_its_counter_states() {
    run(async {
        for retire in [false, true] {
            let handle = never_timing_out().await;
            let _held = handle.counter_state("db", &counter("counters", "seq", "a"));
            assert_eq!(handle.counter_states_in("db", "counters", "seq").len(), 1);
            if retire {
                handle.retire().await;
            } else {
                handle.close_within(Duration::from_secs(20)).await;
            }
            assert_eq!(handle.phase(), Phase::Closed);
            assert!(
                handle.counter_states_in("db", "counters", "seq").is_empty(),
                "taken by the close (retired: {retire})"
            );
            assert!(
                handle.close_within(Duration::from_secs(20)).await,
                "nothing left to do"
            );
        }
    });
}
