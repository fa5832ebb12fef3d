//! The entry point of the engine: reserve values from a named counter, directly, through
//! the coalescer, or from the block cache, as the options say.

use std::future::Future;
use std::sync::{Arc, LazyLock};

use crate::engine::allocate::{allocate, CreatePolicy, IdRange};
use crate::engine::block_cache::BlockCache;
use crate::engine::coalesce::Coalescer;
use crate::engine::error::SeqResult;
use crate::engine::mongo_store::MongoStore;
use crate::engine::options::SequenceOptions;
use crate::engine::registry::ClientHandle;
use crate::engine::store::CounterRef;

/// Identifies one counter as seen by one client with one creation policy: calls with
/// equal keys may share round trips and cached blocks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterKey {
    client: usize,
    database: String,
    counter: CounterRef,
    policy: CreatePolicy,
    /// Block size for cached allocation (0 for none).
    cache: i64,
}

impl CounterKey {
    fn uncached(&self) -> CounterKey {
        CounterKey {
            cache: 0,
            ..self.clone()
        }
    }
}

static COALESCER: LazyLock<Coalescer<CounterKey>> = LazyLock::new(Coalescer::default);
static CACHE: LazyLock<BlockCache<CounterKey>> = LazyLock::new(BlockCache::default);

/// A counter ready to reserve from: its key and its store. Reusable for many calls.
#[derive(Clone)]
pub struct Reservation {
    key: CounterKey,
    store: MongoStore,
    coalesce: bool,
    handle: Arc<ClientHandle>,
}

impl Reservation {
    /// Prepares reservations of values of `name` in `database`.
    pub fn new(
        handle: &Arc<ClientHandle>,
        database: &str,
        name: &str,
        options: &SequenceOptions,
    ) -> SeqResult<Reservation> {
        let counter = options.counter(name)?;
        let store = handle.store(database)?;
        Ok(Reservation {
            key: CounterKey {
                client: Arc::as_ptr(handle) as usize,
                database: database.to_string(),
                counter,
                policy: options.policy(),
                cache: options.cache.unwrap_or(0),
            },
            store,
            coalesce: options.coalesce,
            handle: handle.clone(),
        })
    }

    /// Whether the client of this reservation was closed.
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Whether `count` values are served from the block cache (batch calls larger than a
    /// block bypass it).
    fn cached(&self, count: i64) -> bool {
        self.key.cache > 0 && count <= self.key.cache
    }

    fn fetcher(&self) -> impl Fn(i64) -> BoxedFetch + Send + 'static {
        let store = self.store.clone();
        let counter = self.key.counter.clone();
        let policy = self.key.policy;
        move |total| {
            let store = store.clone();
            let counter = counter.clone();
            Box::pin(async move { allocate(&store, &counter, policy, total).await })
        }
    }

    /// Serves the call from the block cache without waiting, when it uses the cache and
    /// the cache has the values. The returned future, when present, fetches the next
    /// block and must be spawned.
    pub fn try_cached(
        &self,
        count: i64,
    ) -> Option<(IdRange, Option<impl Future<Output = ()> + Send>)> {
        if !self.cached(count) || self.handle.is_closed() {
            return None;
        }
        let taken = CACHE.try_take(&self.key, count, self.key.cache)?;
        let prefetch = taken
            .prefetch
            .then(|| CACHE.prefetch(self.key.clone(), self.key.cache, self.fetcher()));
        Some((taken.range, prefetch))
    }

    /// Reserves `count` values.
    pub async fn run(self, count: i64) -> SeqResult<IdRange> {
        self.handle.store(&self.key.database)?;
        let fetch = self.fetcher();
        if self.cached(count) {
            let size = self.key.cache;
            CACHE.reserve(self.key, count, size, fetch).await
        } else if self.coalesce {
            COALESCER.reserve(self.key.uncached(), count, fetch).await
        } else {
            fetch(count).await
        }
    }
}

type BoxedFetch = std::pin::Pin<Box<dyn Future<Output = SeqResult<IdRange>> + Send>>;
