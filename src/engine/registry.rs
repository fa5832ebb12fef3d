//! Driver clients: one per distinct [`ConnectionTarget`], shared by every call.

use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use mongodb::bson::doc;
use mongodb::Client;
use tokio::sync::OnceCell;

use crate::engine::connection::ConnectionTarget;
use crate::engine::counter_state::{CounterState, CounterStates};
use crate::engine::driver_error::from_driver;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::mongo_store::{IndexMemo, MongoStore};
use crate::engine::store::CounterRef;
use crate::engine::validate::check_database;

/// An open driver client with the secrets of its connection string.
pub struct ClientHandle {
    client: Client,
    secrets: Arc<Vec<String>>,
    closed: AtomicBool,
    counters: CounterStates<(String, CounterRef)>,
    indexes: IndexMemo,
}

impl ClientHandle {
    /// Opens a client (resolving `mongodb+srv` names); no round trip to the server yet.
    pub async fn open(target: &ConnectionTarget) -> SeqResult<ClientHandle> {
        let secrets = Arc::new(target.secrets());
        let mut options = target
            .client_options()
            .await
            .map_err(|e| from_driver(&e, &secrets))?;
        if let Some(timeout) = target.server_selection_timeout() {
            options.server_selection_timeout = Some(timeout);
        }
        if let Some(timeout) = target.connect_timeout() {
            options.connect_timeout = Some(timeout);
        }
        if options.app_name.is_none() {
            options.app_name = Some("mongo-sequence".to_string());
        }
        let client = Client::with_options(options).map_err(|e| from_driver(&e, &secrets))?;
        // The driver has read the TLS files by path: they must be the ones the target (the
        // shared-client key) was derived from, or this client could hold another user's
        // certificate under this user's key.
        if !target.tls_files_unchanged() {
            client.shutdown().await;
            return Err(SeqError::new(
                ErrorCode::UnsupportedClient,
                "cannot derive a connection from this MongoClient: its TLS files \
                 (tlsCAFile, tlsCertificateKeyFile) changed while the connection was \
                 opened; retry, or pass the connection string yourself as { uri }",
            ));
        }
        Ok(ClientHandle {
            client,
            secrets,
            closed: AtomicBool::new(false),
            counters: CounterStates::default(),
            indexes: IndexMemo::default(),
        })
    }

    /// Checks that the server answers (`ping`).
    pub async fn ping(&self) -> SeqResult<()> {
        self.ensure_open()?;
        self.client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .map_err(|e| from_driver(&e, &self.secrets))?;
        Ok(())
    }

    /// The counters of database `name`.
    pub fn store(&self, name: &str) -> SeqResult<MongoStore> {
        self.ensure_open()?;
        check_database(name)?;
        Ok(
            MongoStore::new(self.client.database(name), self.secrets.clone())
                .with_index_memo(self.indexes.clone()),
        )
    }

    /// This client's state of counter `counter` in database `database` (queued calls,
    /// cached blocks, configuration hint), created on first use.
    pub fn counter_state(&self, database: &str, counter: &CounterRef) -> Arc<CounterState> {
        self.counters.get(&(database.to_string(), counter.clone()))
    }

    /// The underlying driver client (for tests and admin tools).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The strings to keep out of messages about this client.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// Whether [`ClientHandle::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Refuses further calls and closes the connections. Idempotent.
    pub async fn close(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.counters.clear();
            self.client.clone().shutdown().await;
        }
    }

    /// `CLIENT_CLOSED` once [`ClientHandle::close`] was called.
    pub fn ensure_open(&self) -> SeqResult<()> {
        if self.is_closed() {
            return Err(SeqError::new(
                ErrorCode::ClientClosed,
                "this client was closed; open a new one with connect(uri)",
            ));
        }
        Ok(())
    }
}

type Slot = Arc<OnceCell<Arc<ClientHandle>>>;

/// Shared clients keyed by target, created on first use.
#[derive(Default)]
pub struct ClientRegistry {
    slots: Mutex<HashMap<ConnectionTarget, Slot>>,
}

impl ClientRegistry {
    /// The client for `target`, opened once however many calls ask at the same time.
    pub async fn get(&self, target: &ConnectionTarget) -> SeqResult<Arc<ClientHandle>> {
        let slot = {
            let mut slots = lock(&self.slots);
            slots.entry(target.clone()).or_default().clone()
        };
        let handle = slot
            .get_or_try_init(|| async { ClientHandle::open(target).await.map(Arc::new) })
            .await?;
        Ok(handle.clone())
    }

    /// The client for `target` if it is already open (no waiting).
    pub fn try_get(&self, target: &ConnectionTarget) -> Option<Arc<ClientHandle>> {
        let slots = lock(&self.slots);
        slots.get(target).and_then(|slot| slot.get().cloned())
    }

    /// How many distinct clients are open.
    pub fn len(&self) -> usize {
        let slots = lock(&self.slots);
        slots.values().filter(|s| s.initialized()).count()
    }

    /// Whether no client is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes and forgets every client.
    pub async fn close_all(&self) {
        let slots: Vec<Slot> = {
            let mut slots = lock(&self.slots);
            slots.drain().map(|(_, slot)| slot).collect()
        };
        for slot in slots {
            if let Some(handle) = slot.get() {
                handle.close().await;
            }
        }
    }
}

/// The process-wide registry used for Node driver `Db` handles and `uri` options.
pub static SHARED_CLIENTS: LazyLock<ClientRegistry> = LazyLock::new(ClientRegistry::default);

#[cfg(test)]
mod tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_client_is_never_opened_from_other_tls_files_than_its_key() {
        use crate::engine::connection::derive_from_node_client;
        use crate::engine::node_options::{NodeOptions, NodeValue};
        let dir = std::env::temp_dir().join(format!("mongo-sequence-{}-open", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ca.pem");
        std::fs::write(&path, b"alice's CA").unwrap();
        let mut host = std::collections::BTreeMap::new();
        host.insert("host".to_string(), NodeValue::Text("127.0.0.1".into()));
        host.insert("port".to_string(), NodeValue::number(1.0));
        let mut o = NodeOptions::new();
        o.insert("hosts".into(), NodeValue::List(vec![NodeValue::Map(host)]));
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert(
            "tlsCAFile".into(),
            NodeValue::Text(path.to_str().unwrap().into()),
        );
        let alice = derive_from_node_client(&o).unwrap();
        run(async {
            let registry = ClientRegistry::default();
            // Unchanged: opens.
            registry.get(&alice).await.unwrap();
            registry.close_all().await;
            // Rewritten between the derivation and the opening: refused.
            std::fs::write(&path, b"bob's CA").unwrap();
            let e = registry.get(&alice).await.err().unwrap();
            assert_eq!(e.code, ErrorCode::UnsupportedClient, "{}", e.message);
            assert_eq!(registry.len(), 0);
            // Derived again, it opens with the file as it is now.
            let bob = derive_from_node_client(&o).unwrap();
            registry.get(&bob).await.unwrap();
            registry.close_all().await;
        });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn same_target_shares_one_client_and_different_ones_do_not() {
        run(async {
            let registry = ClientRegistry::default();
            let a = ConnectionTarget::from_uri("mongodb://127.0.0.1:1/").unwrap();
            let b = ConnectionTarget::from_uri("mongodb://u:p@127.0.0.1:1/").unwrap();
            let (x, y) = tokio::join!(registry.get(&a), registry.get(&a));
            assert!(Arc::ptr_eq(&x.unwrap(), &y.unwrap()));
            let z = registry.get(&b).await.unwrap();
            assert_eq!(registry.len(), 2);
            assert!(!z.is_closed());
            registry.close_all().await;
            assert!(registry.is_empty());
            assert!(z.is_closed());
            assert_eq!(z.store("db").err().unwrap().code, ErrorCode::ClientClosed);
        });
    }
}
