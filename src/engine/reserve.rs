//! The entry point of the engine: reserve values from a named counter, directly, through
//! the coalescer, or from the block cache, as the options say.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex};

use crate::engine::allocate::{allocate_with_hint, CreatePolicy, IdRange};
use crate::engine::block_cache::{BlockCache, CacheSlot};
use crate::engine::coalesce::Coalescer;
use crate::engine::counter_name::CounterName;
use crate::engine::driver_counters::DriverCounters;
use crate::engine::error::SeqResult;
use crate::engine::mongo_store::MongoStore;
use crate::engine::options::SequenceOptions;
use crate::engine::registry::ClientHandle;
use crate::engine::sequence_config::SequenceConfig;
use crate::engine::store::CounterRef;
use crate::engine::write_concern::WriteConcernSpec;

/// Identifies one counter as seen by one client with one creation policy: calls with
/// equal keys may share round trips and cached blocks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterKey {
    client: usize,
    database: String,
    counter: CounterRef,
    policy: CreatePolicy,
    write_concern: Option<WriteConcernSpec>,
}

static COALESCER: LazyLock<Coalescer<CounterKey>> = LazyLock::new(Coalescer::default);
/// The configuration (step, limits) each configured counter had at its last call, so the
/// next call tries it in one round trip (its writes are guarded on it, so a stale one
/// only costs the extra reads).
static CONFIG_HINTS: LazyLock<Mutex<HashMap<CounterKey, SequenceConfig>>> =
    LazyLock::new(Default::default);

fn hint_for(key: &CounterKey) -> Option<SequenceConfig> {
    CONFIG_HINTS.lock().expect("config hints").get(key).copied()
}

fn remember_hint(key: &CounterKey, config: Option<SequenceConfig>) {
    let mut hints = CONFIG_HINTS.lock().expect("config hints");
    match config {
        Some(config) => {
            hints.insert(key.clone(), config);
        }
        None => {
            hints.remove(key);
        }
    }
}
static CACHE: LazyLock<BlockCache<CounterKey>> = LazyLock::new(BlockCache::default);

/// A counter ready to reserve from: its key, its store and its cache slot. Reusable for
/// many calls.
#[derive(Clone)]
pub struct Reservation {
    key: CounterKey,
    store: MongoStore,
    coalesce: bool,
    handle: Arc<ClientHandle>,
    cache: Option<Arc<CacheSlot>>,
}

impl Reservation {
    /// Prepares reservations of values of `name` in `database`.
    pub fn new(
        handle: &Arc<ClientHandle>,
        database: &str,
        name: &CounterName,
        options: &SequenceOptions,
    ) -> SeqResult<Reservation> {
        let counter = options.counter(name)?;
        let store = handle
            .store(database)?
            .with_write_concern(options.write_concern.as_ref().map(|w| w.to_driver()));
        let key = CounterKey {
            client: Arc::as_ptr(handle) as usize,
            database: database.to_string(),
            counter,
            policy: options.policy(),
            write_concern: options.write_concern.clone(),
        };
        let cache = options.cache.map(|size| CACHE.slot(&key, size));
        Ok(Reservation {
            key,
            store,
            coalesce: options.coalesce,
            handle: handle.clone(),
            cache,
        })
    }

    /// The store the counter lives in.
    pub fn store(&self) -> &MongoStore {
        &self.store
    }

    /// The counter.
    pub fn counter(&self) -> &CounterRef {
        &self.key.counter
    }

    /// Whether the client of this reservation was closed.
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// The cache slot serving `count` values (batch calls larger than a block bypass it).
    fn cached(&self, count: i64) -> Option<&Arc<CacheSlot>> {
        self.cache.as_ref().filter(|slot| count <= slot.size())
    }

    fn fetcher(&self) -> impl Fn(i64) -> BoxedFetch + Send + 'static {
        let store = self.store.clone();
        let key = self.key.clone();
        move |total| {
            let store = store.clone();
            let key = key.clone();
            Box::pin(async move {
                let hint = hint_for(&key);
                let (range, config) = allocate_with_hint(
                    &DriverCounters(store),
                    &key.counter,
                    key.policy,
                    total,
                    hint,
                )
                .await?;
                if config != hint {
                    remember_hint(&key, config);
                }
                Ok(range)
            })
        }
    }

    /// Serves the call from the block cache without waiting, when it uses the cache and
    /// the cache has the values. The returned future, when present, fetches the next
    /// block and must be spawned.
    pub fn try_cached(
        &self,
        count: i64,
    ) -> Option<(IdRange, Option<impl Future<Output = ()> + Send>)> {
        if self.handle.is_closed() {
            return None;
        }
        let slot = self.cached(count)?;
        let taken = slot.try_take(count)?;
        let prefetch = taken
            .prefetch
            .then(|| slot.clone().prefetch(self.fetcher()));
        Some((taken.range, prefetch))
    }

    /// Reserves `count` values.
    pub async fn run(self, count: i64) -> SeqResult<IdRange> {
        self.handle.ensure_open()?;
        let fetch = self.fetcher();
        if let Some(slot) = self.cached(count) {
            slot.clone().reserve(count, fetch).await
        } else if self.coalesce {
            COALESCER.reserve(self.key, count, fetch).await
        } else {
            fetch(count).await
        }
    }
}

type BoxedFetch = std::pin::Pin<Box<dyn Future<Output = SeqResult<IdRange>> + Send>>;
