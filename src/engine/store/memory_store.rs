//! An in-memory [`CounterStore`] for unit tests, with MongoDB's `$inc` type rules and
//! hooks to inject failures and races.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use mongodb::bson::Bson;

use crate::engine::counter::counter_value::compact_integer;
use crate::engine::counter::id_range::IdRange;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::store::counter_store::{
    CounterDoc, CounterRef, CounterStore, Direction, FetchToken, FieldGuard, NewCounter,
};

type Key = (
    String,
    crate::engine::counter::counter_name::CounterName,
    crate::engine::counter::locator::Locator,
);

/// A stored counter: its field (`None`: document without the field) and configuration,
/// and its cache marks ([`CacheMarks`](crate::engine::store::filters::CacheMarks)).
#[derive(Clone, Default)]
struct Entry {
    value: Option<Bson>,
    config: Option<SequenceConfig>,
    start: Option<i64>,
    /// The token of the last cache fetch ([`CounterRef::cached`]).
    cached: Option<FetchToken>,
    raised: Option<i64>,
}

impl Entry {
    /// Flags the entry with the fetch's token when `counter` fetches into a cache, as
    /// every write of such a fetch does.
    fn flag(&mut self, counter: &CounterRef) {
        if let Some(token) = counter.cached {
            self.cached = Some(token);
        }
    }
}

/// Whether the field `value` satisfies `guard`.
fn guard_holds(guard: FieldGuard, value: &Option<Bson>) -> bool {
    match (guard, value) {
        (FieldGuard::Absent, None) => true,
        (FieldGuard::EqualsDouble(d), Some(Bson::Double(v))) => *v == d,
        _ => false,
    }
}

/// Counters in a map: `(collection, name) -> entry`.
#[derive(Default)]
pub struct MemoryStore {
    docs: Mutex<HashMap<Key, Entry>>,
    /// Fail this many upcoming operations with a server error.
    pub fail_next: AtomicUsize,
    /// Before the next `create`, insert the document as another process would.
    pub race_create_with: Mutex<Option<i64>>,
    /// Round trips made (every operation counts one).
    pub round_trips: AtomicUsize,
    /// Fail this many upcoming reads with a server error (a transaction aborted by a
    /// failed write refuses the reads after it).
    pub fail_reads: AtomicUsize,
    /// Every operation first spins for a pseudo-random time below this many
    /// microseconds (0: none), on its own thread: a round trip of varying latency at a
    /// finer grain than the runtime's timers.
    pub max_spin_us: AtomicU64,
    /// The state of the spin times' pseudo-random source.
    spin_seed: AtomicU64,
    /// Never answer a `give_back` (a server that stopped answering).
    pub stall_give_back: std::sync::atomic::AtomicBool,
}

fn key(counter: &CounterRef) -> Key {
    (
        counter.collection.clone(),
        counter.name.clone(),
        counter.locator.clone(),
    )
}

impl MemoryStore {
    /// Stores `value` in the counter field (or a document without the field for `None`).
    pub fn put(&self, counter: &CounterRef, value: Option<Bson>) {
        let entry = Entry {
            value,
            ..Entry::default()
        };
        self.docs.lock().unwrap().insert(key(counter), entry);
    }

    /// Replaces the field of an existing counter, keeping its configuration.
    pub fn put_value(&self, counter: &CounterRef, value: Option<Bson>) {
        if let Some(entry) = self.docs.lock().unwrap().get_mut(&key(counter)) {
            entry.value = value;
        }
    }

    /// Stores a configured counter holding `value`.
    pub fn put_configured(&self, counter: &CounterRef, value: i64, config: SequenceConfig) {
        let entry = Entry {
            value: Some(Bson::Int64(value)),
            config: Some(config),
            start: None,
            ..Entry::default()
        };
        self.docs.lock().unwrap().insert(key(counter), entry);
    }

    /// Flags the counter as cached, as a cache's fetch does; the fetch's token.
    pub fn flag_cached(&self, counter: &CounterRef) -> FetchToken {
        let token = FetchToken::fresh();
        if let Some(entry) = self.docs.lock().unwrap().get_mut(&key(counter)) {
            entry.cached = Some(token);
        }
        token
    }

    /// Whether the counter carries a cache flag (any fetch's token).
    pub fn is_flagged(&self, counter: &CounterRef) -> bool {
        self.docs
            .lock()
            .unwrap()
            .get(&key(counter))
            .is_some_and(|e| e.cached.is_some())
    }

    /// The stored counter field: `None` when there is no document.
    pub fn get(&self, counter: &CounterRef) -> Option<Option<Bson>> {
        self.docs
            .lock()
            .unwrap()
            .get(&key(counter))
            .map(|e| e.value.clone())
    }

    /// Spins for up to [`MemoryStore::max_spin_us`].
    fn spin(&self) {
        let max = self.max_spin_us.load(Ordering::Relaxed);
        if max == 0 {
            return;
        }
        let seed = self
            .spin_seed
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_mul(0x2545_F491_4F6C_DD1D);
        let until =
            std::time::Instant::now() + std::time::Duration::from_micros((seed >> 33) % max);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    fn begin(&self) -> SeqResult<()> {
        self.spin();
        self.round_trips.fetch_add(1, Ordering::SeqCst);
        let injected = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if injected {
            return Err(SeqError::server(
                91,
                Some("ShutdownInProgress".into()),
                "injected",
            ));
        }
        Ok(())
    }

    fn add(current: &Bson, by: i64) -> SeqResult<Bson> {
        let overflow = || SeqError::server(2, Some("BadValue".into()), "Failed to apply $inc");
        Ok(match current {
            Bson::Int32(v) => match i32::try_from(by) {
                Ok(by32) => match v.checked_add(by32) {
                    Some(sum) => Bson::Int32(sum),
                    None => Bson::Int64(i64::from(*v) + by),
                },
                Err(_) => Bson::Int64(i64::from(*v).checked_add(by).ok_or_else(overflow)?),
            },
            Bson::Int64(v) => Bson::Int64(v.checked_add(by).ok_or_else(overflow)?),
            Bson::Double(d) => Bson::Double(d + by as f64),
            _ => {
                return Err(SeqError::server(
                    14,
                    Some("TypeMismatch".into()),
                    "not a number",
                ))
            }
        })
    }
}

impl CounterStore for MemoryStore {
    async fn prepare_upsert(&self, _counter: &CounterRef) -> SeqResult<()> {
        Ok(())
    }

    async fn increment_integer(
        &self,
        counter: &CounterRef,
        by: i64,
        upsert: bool,
    ) -> SeqResult<Option<Bson>> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        if upsert && !docs.contains_key(&key(counter)) {
            let mut created = Entry {
                value: Some(compact_integer(by)),
                ..Entry::default()
            };
            created.flag(counter);
            docs.insert(key(counter), created.clone());
            return Ok(created.value);
        }
        let plain = docs.get_mut(&key(counter)).filter(|e| e.config.is_none());
        match plain {
            Some(
                entry @ Entry {
                    value: Some(Bson::Int32(_) | Bson::Int64(_)),
                    ..
                },
            ) => {
                let value = entry.value.as_ref().expect("an integer");
                entry.value = Some(Self::add(value, by)?);
                entry.flag(counter);
                Ok(entry.value.clone())
            }
            // Like MongoDB: `$type` matches an array holding an integer; `$inc` refuses it.
            Some(Entry {
                value: Some(Bson::Array(items)),
                ..
            }) if items
                .iter()
                .any(|i| matches!(i, Bson::Int32(_) | Bson::Int64(_))) =>
            {
                Err(SeqError::server(
                    14,
                    Some("TypeMismatch".into()),
                    "not a number",
                ))
            }
            _ => Ok(None),
        }
    }

    async fn increment_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        by: i64,
    ) -> SeqResult<Option<Bson>> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        let Some(entry) = docs.get_mut(&key(counter)).filter(|e| e.config.is_none()) else {
            return Ok(None);
        };
        if !guard_holds(guard, &entry.value) {
            return Ok(None);
        }
        let next = Self::add(entry.value.as_ref().unwrap_or(&Bson::Int32(0)), by)?;
        entry.value = Some(next.clone());
        entry.flag(counter);
        Ok(Some(next))
    }

    async fn set_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        value: i64,
    ) -> SeqResult<bool> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        let Some(entry) = docs.get_mut(&key(counter)).filter(|e| e.config.is_none()) else {
            return Ok(false);
        };
        if !guard_holds(guard, &entry.value) {
            return Ok(false);
        }
        entry.value = Some(compact_integer(value));
        entry.flag(counter);
        Ok(true)
    }

    async fn read(&self, counter: &CounterRef) -> SeqResult<Option<CounterDoc>> {
        self.begin()?;
        let refused = self
            .fail_reads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(SeqError::server(
                251,
                Some("NoSuchTransaction".into()),
                "transaction aborted",
            ));
        }
        let docs = self.docs.lock().unwrap();
        Ok(docs.get(&key(counter)).map(|e| CounterDoc {
            value: e.value.clone(),
            config: Ok(e.config),
            start: e.start.map(Bson::Int64),
        }))
    }

    async fn create(&self, counter: &CounterRef, new: NewCounter) -> SeqResult<bool> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        if let Some(other) = self.race_create_with.lock().unwrap().take() {
            let winner = Entry {
                value: Some(Bson::Int32(other as i32)),
                config: None,
                start: None,
                ..Entry::default()
            };
            docs.insert(key(counter), winner);
        }
        if docs.contains_key(&key(counter)) {
            return Ok(false);
        }
        let mut created = Entry {
            value: Some(compact_integer(new.value)),
            config: new.config,
            start: new.start,
            ..Entry::default()
        };
        created.flag(counter);
        docs.insert(key(counter), created);
        Ok(true)
    }

    async fn advance_configured(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        count: i64,
    ) -> SeqResult<Option<Bson>> {
        self.begin()?;
        let (Some((low, high)), Some(span)) = (config.room_bounds(count), config.span(count))
        else {
            return Ok(None);
        };
        let mut docs = self.docs.lock().unwrap();
        let Some(entry) = docs
            .get_mut(&key(counter))
            .filter(|e| e.config == Some(*config))
        else {
            return Ok(None);
        };
        match integer(&entry.value) {
            Some(current) if (low..=high).contains(&current) => {
                let value = entry.value.as_ref().expect("an integer");
                entry.value = Some(Self::add(value, span)?);
                entry.flag(counter);
                Ok(entry.value.clone())
            }
            _ => Ok(None),
        }
    }

    async fn restart_cycle(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        needs: i64,
        value: i64,
    ) -> SeqResult<bool> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        let Some(entry) = docs
            .get_mut(&key(counter))
            .filter(|e| e.config == Some(*config))
        else {
            return Ok(false);
        };
        let Some(current) = integer(&entry.value) else {
            return Ok(false);
        };
        let restarts = config
            .restart_bounds(needs)
            .is_some_and(|(low, high)| (low..=high).contains(&current));
        if !restarts {
            return Ok(false);
        }
        entry.value = Some(compact_integer(value));
        entry.flag(counter);
        Ok(true)
    }

    async fn compare_and_set(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        expected: Option<i64>,
        value: i64,
    ) -> SeqResult<bool> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        let Some(entry) = configured_as(&mut docs, counter, config) else {
            return Ok(false);
        };
        if expected.is_some() && integer(&entry.value) != expected {
            return Ok(false);
        }
        entry.value = Some(compact_integer(value));
        entry.flag(counter);
        if expected.is_none() {
            entry.cached = None;
            entry.raised = None;
        }
        Ok(true)
    }

    async fn delete(&self, counter: &CounterRef) -> SeqResult<bool> {
        self.begin()?;
        Ok(self.docs.lock().unwrap().remove(&key(counter)).is_some())
    }

    async fn raise(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        value: i64,
        direction: Direction,
    ) -> SeqResult<Option<Bson>> {
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        let entry = match docs.get_mut(&key(counter)) {
            None if config.is_none() => {
                let created = Entry {
                    value: Some(compact_integer(value)),
                    config: None,
                    start: None,
                    ..Entry::default()
                };
                docs.insert(key(counter), created);
                return Ok(Some(compact_integer(value)));
            }
            Some(entry) if entry.config.as_ref() == config => entry,
            _ => return Ok(None),
        };
        // Like `$max` / `$min` across numeric types: compare the numbers exactly, keep
        // the one further along; a missing field takes the value.
        let further = match &entry.value {
            None => true,
            Some(Bson::Int32(v)) => direction.further(i64::from(*v), value) != i64::from(*v),
            Some(Bson::Int64(v)) => direction.further(*v, value) != *v,
            Some(Bson::Double(d)) => match direction {
                Direction::Up => (value as f64) > *d,
                Direction::Down => (value as f64) < *d,
            },
            _ => false,
        };
        if further {
            entry.value = Some(compact_integer(value));
        }
        if entry.cached.is_some() {
            entry.raised = Some(entry.raised.map_or(value, |r| direction.further(r, value)));
        }
        Ok(entry.value.clone())
    }

    async fn give_back(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        tail: IdRange,
        token: FetchToken,
        before: i64,
    ) -> SeqResult<bool> {
        if self.stall_give_back.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        self.begin()?;
        let mut docs = self.docs.lock().unwrap();
        let Some(entry) = configured_as(&mut docs, counter, config) else {
            return Ok(false);
        };
        let direction = Direction::of_step(tail.step);
        let raised_into = entry
            .raised
            .is_some_and(|r| direction.further(r, tail.first) == r);
        if integer(&entry.value) != Some(tail.last) || entry.cached != Some(token) || raised_into {
            return Ok(false);
        }
        entry.value = Some(compact_integer(before));
        Ok(true)
    }
}

/// The entry of `counter` when it is configured exactly as `config` (`None`: plain).
fn configured_as<'a>(
    docs: &'a mut HashMap<Key, Entry>,
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
) -> Option<&'a mut Entry> {
    docs.get_mut(&key(counter))
        .filter(|e| e.config.as_ref() == config)
}

/// The integer an Int32 or Int64 field holds.
fn integer(value: &Option<Bson>) -> Option<i64> {
    match value {
        Some(Bson::Int32(v)) => Some(i64::from(*v)),
        Some(Bson::Int64(v)) => Some(*v),
        _ => None,
    }
}
