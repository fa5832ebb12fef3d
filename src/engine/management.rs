//! Managing counters: read without advancing, set, reset, create, drop, list, and raise a
//! counter to the largest value already used in a collection.
//!
//! Each operation is one atomic single-document write (or read), guarded on the
//! counter's configuration as read, so it can never mix with a concurrent `init` of
//! another configuration. Racing `next()` calls see either the state before it or after
//! it. Like PostgreSQL's `setval`, `set` and `reset` may move a counter backwards, after
//! which values already handed out come again; values outside a configured counter's
//! limits are refused.
//!
//! `raise_to` and `sync_to_source` only ever move a counter on in its own direction,
//! never back over values it handed out: an ascending counter up to a larger value
//! (`$max`), a descending one (negative step) down to a smaller one (`$min`).

use crate::engine::counter::capacity::{capacity, Capacity, StoredType};
use mongodb::bson::{doc, Bson, Document};

use crate::engine::alloc::allocate::{contention, MAX_ATTEMPTS};
use crate::engine::alloc::counter_state::CounterState;
use crate::engine::client::handle::ClientHandle;
use crate::engine::counter::counter_value::integer_after_increment;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::store::counter_store::{CounterRef, CounterStore, Direction, NewCounter};
use crate::engine::store::mongo_driver::MongoDriver;
use crate::engine::text::validate::check_field;

fn value_of(counter: &CounterRef, value: Option<&Bson>) -> SeqResult<i64> {
    integer_after_increment(value)
        .map_err(|found| SeqError::invalid_counter(&counter.label, &counter.field, &found))
}

/// The value a plain counter stores so that its next value is `start`: one step
/// before it (`start - 1` for the helper's counters, `start - step` for a `counterAt`
/// handle with a `step`).
fn before(start: i64, counter: &CounterRef) -> SeqResult<i64> {
    start.checked_sub(counter.step).ok_or_else(|| {
        SeqError::overflow(format!(
            "Sequence '{}' cannot start at {start} with a step of {}: the value before it \
             is outside the 64-bit range",
            counter.label, counter.step
        ))
    })
}

/// 2^63 as a double: the first double beyond the 64-bit integer range.
const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

/// The counter's value (the last value handed out) without advancing it.
pub async fn current<S: CounterStore>(store: &S, counter: &CounterRef) -> SeqResult<i64> {
    let found = store
        .read(counter)
        .await?
        .ok_or_else(|| SeqError::not_found(&counter.label))?;
    value_of(counter, found.value.as_ref())
}

/// Creates the counter so that the next value is `start` (with a configuration, its
/// default start when `None`), storing its step and limits; an existing counter is left
/// as it is. `true` when this call created it.
pub async fn init<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    start: Option<i64>,
    config: Option<SequenceConfig>,
) -> SeqResult<bool> {
    let (start, value) = match &config {
        Some(config) => {
            let start = start.unwrap_or_else(|| config.default_start());
            config.check_start(start)?;
            (start, config.value_before(start)?)
        }
        None => {
            let start = start.unwrap_or(1);
            (start, before(start, counter)?)
        }
    };
    let new = NewCounter {
        value,
        start: Some(start),
        config,
    };
    store.create(counter, new).await
}

/// Sets the counter so that the next value is `value + step` (PostgreSQL's `setval`).
/// With `upsert`, a missing counter is created; otherwise `SEQUENCE_NOT_FOUND`. A value
/// outside a configured counter's limits is refused with `INVALID_ARGUMENT`.
pub async fn set<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    value: i64,
    upsert: bool,
) -> SeqResult<()> {
    for _ in 0..MAX_ATTEMPTS {
        let Some(found) = store.read(counter).await? else {
            if !upsert {
                return Err(SeqError::not_found(&counter.label));
            }
            if store.create(counter, NewCounter::plain(value)).await? {
                return Ok(());
            }
            continue;
        };
        let config = found.configuration(counter)?;
        if let Some(config) = &config {
            if value < config.min || value > config.max {
                return Err(SeqError::invalid_argument(format!(
                    "Sequence '{}' cannot be set to {value}: outside its minValue {} .. \
                     maxValue {}",
                    counter.label, config.min, config.max
                )));
            }
        }
        if store
            .compare_and_set(counter, config.as_ref(), None, value)
            .await?
        {
            return Ok(());
        }
    }
    Err(contention(counter))
}

/// Puts the counter back so that the next value is its start: the one given to `init`,
/// else `default_start` (a configured counter's own default start). Returns that start.
pub async fn reset<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    default_start: i64,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let found = store
            .read(counter)
            .await?
            .ok_or_else(|| SeqError::not_found(&counter.label))?;
        let config = found.configuration(counter)?;
        let start = match (&found.start, &config) {
            (Some(stored), _) => value_of(counter, Some(stored))?,
            (None, Some(config)) => config.default_start(),
            (None, None) => default_start,
        };
        let value = match &config {
            Some(config) => config.value_before(start)?,
            None => before(start, counter)?,
        };
        if store
            .compare_and_set(counter, config.as_ref(), None, value)
            .await?
        {
            return Ok(start);
        }
    }
    Err(contention(counter))
}

/// Deletes the counter. `true` when it existed.
pub async fn drop_counter<S: CounterStore>(store: &S, counter: &CounterRef) -> SeqResult<bool> {
    store.delete(counter).await
}

/// The direction a counter hands out values in: its configured step's, else (plain
/// counters, and missing ones, which a raise creates plain) the handle's step's.
pub fn direction_of(counter: &CounterRef, config: Option<&SequenceConfig>) -> Direction {
    Direction::of_step(config.map_or(counter.step, |c| c.step))
}

/// Moves the counter on to `value` along its direction (`$max` ascending, `$min`
/// descending: never back over values it handed out, and racing `next()` calls are not
/// lost), creating a plain counter at `value` when absent. A configured counter's limit
/// in its direction is checked first (`maxValue` ascending, `minValue` descending).
/// Returns the counter's value afterwards.
pub async fn raise_to<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    value: i64,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let config = match store.read(counter).await? {
            None => None,
            Some(found) => found.configuration(counter)?,
        };
        let direction = direction_of(counter, config.as_ref());
        if let Some(after) = move_on(store, counter, config.as_ref(), value, direction).await? {
            return Ok(after);
        }
    }
    Err(contention(counter))
}

/// One guarded `$max`/`$min` of the counter configured as `config`; `None` when the
/// counter was not configured so any more (the caller starts over).
async fn move_on<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
    value: i64,
    direction: Direction,
) -> SeqResult<Option<i64>> {
    if let Some(config) = config {
        let beyond = match direction {
            Direction::Up => (value > config.max).then_some(("raised", "maxValue", config.max)),
            Direction::Down => (value < config.min).then_some(("lowered", "minValue", config.min)),
        };
        if let Some((verb, which, limit)) = beyond {
            return Err(SeqError::invalid_argument(format!(
                "Sequence '{}' cannot be {verb} to {value}: beyond its {which} {limit}",
                counter.label
            )));
        }
    }
    match store.raise(counter, config, value, direction).await? {
        Some(after) => value_of(counter, Some(&after)).map(Some),
        None => Ok(None),
    }
}

/// Where `syncToMax` finds the values already in use.
pub trait SourceValues: Send + Sync {
    /// The usable value ([`usable_value`]) furthest along `direction` (the largest for
    /// `Up`, the smallest for `Down`); `None` when there is none.
    fn extreme(
        &self,
        direction: Direction,
    ) -> impl std::future::Future<Output = SeqResult<Option<i64>>> + Send;
}

/// Moves the counter on past every value in `source` (`syncToMax`): an ascending counter
/// up to the largest value found, a descending one down to the smallest, as
/// [`raise_to`] does. With no usable value in `source` nothing is moved: an existing
/// counter resolves with its value unchanged, a missing one is created at 0. Returns the
/// counter's value afterwards.
pub async fn sync_to_source<S: CounterStore, V: SourceValues>(
    store: &S,
    counter: &CounterRef,
    source: &V,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let found = store.read(counter).await?;
        let config = match &found {
            None => None,
            Some(found) => found.configuration(counter)?,
        };
        let direction = direction_of(counter, config.as_ref());
        let target = match (source.extreme(direction).await?, &found) {
            (Some(extreme), _) => extreme,
            (None, Some(found)) => return value_of(counter, found.value.as_ref()),
            (None, None) => 0,
        };
        // Guarded on the configuration read with the direction: a counter replaced
        // meanwhile (another direction) makes this start over.
        if let Some(after) = move_on(store, counter, config.as_ref(), target, direction).await? {
            return Ok(after);
        }
    }
    Err(contention(counter))
}

/// The value `syncToMax` takes from a source value, rounded toward `direction`: whole
/// numbers within the 64-bit range as they are, finite doubles rounded up (`Up`) or down
/// (`Down`) so the counter passes them; non-finite or out-of-range ones and every other
/// type give `None`.
pub fn usable_value(value: &Bson, direction: Direction) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        // NaN and infinities round to themselves and fall outside the range below.
        Bson::Double(d) => {
            let rounded = match direction {
                Direction::Up => d.ceil(),
                Direction::Down => d.floor(),
            };
            (-I64_RANGE_END..I64_RANGE_END)
                .contains(&rounded)
                .then_some(rounded as i64)
        }
        _ => None,
    }
}

/// The values a dotted `path` reaches in `value`, as MongoDB's queries see them: each
/// step looks into a document's field and, when it meets an array, into each element of
/// that array (one level: arrays nested in arrays are not looked into); a numeric step
/// also names an array position, whose element is looked into as a value of its own; an
/// array at the end gives each of its elements.
pub fn values_at<'a>(value: &'a Bson, path: &[&str], out: &mut Vec<&'a Bson>) {
    let Some((head, rest)) = path.split_first() else {
        match value {
            Bson::Array(items) => out.extend(items.iter().filter(|i| !matches!(i, Bson::Array(_)))),
            other => out.push(other),
        }
        return;
    };
    match value {
        Bson::Document(doc) => {
            if let Some(inner) = doc.get(*head) {
                values_at(inner, rest, out);
            }
        }
        Bson::Array(items) => {
            if let Some(item) = head.parse::<usize>().ok().and_then(|i| items.get(i)) {
                values_at(item, rest, out);
            }
            for item in items {
                if let Bson::Document(doc) = item {
                    if let Some(inner) = doc.get(*head) {
                        values_at(inner, rest, out);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The usable value furthest along `direction` among every value `path` reaches in
/// `docs` ([`values_at`], [`usable_value`]).
pub fn extreme_of<'a>(
    docs: impl IntoIterator<Item = &'a Document>,
    path: &str,
    direction: Direction,
) -> Option<i64> {
    let steps: Vec<&str> = path.split('.').collect();
    let mut best: Option<i64> = None;
    let mut reached = Vec::new();
    for doc in docs {
        reached.clear();
        if let Some(first) = doc.get(steps[0]) {
            values_at(first, &steps[1..], &mut reached);
        }
        for value in &reached {
            if let Some(v) = usable_value(value, direction) {
                best = Some(best.map_or(v, |b| direction.further(b, v)));
            }
        }
    }
    best
}

/// The field `path` of the documents of collection `collection`, as a `syncToMax` source.
pub struct SourceField<'a> {
    /// The database holding `collection`.
    pub driver: &'a MongoDriver,
    /// The collection.
    pub collection: String,
    /// The (dotted) path of the values.
    pub path: String,
}

impl SourceValues for SourceField<'_> {
    async fn extreme(&self, direction: Direction) -> SeqResult<Option<i64>> {
        self.driver
            .extreme_in(&self.collection, &self.path, direction)
            .await
    }
}

/// One counter of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedCounter {
    /// Its `_id`.
    pub id: Bson,
    /// Its value (the last handed out).
    pub value: i64,
    /// Step, limits and cycle, when configured.
    pub config: Option<SequenceConfig>,
    /// The type its value is stored as.
    pub stored: StoredType,
}

impl ListedCounter {
    /// The range it lives in and how much of it is used, for a caller taking values as
    /// BigInts (`bigint`) or numbers ([`capacity`]).
    pub fn capacity(&self, bigint: bool) -> Capacity {
        capacity(self.value, self.stored, self.config.as_ref(), bigint)
    }
}

impl MongoDriver {
    /// Every counter of `collection` whose `field` holds an integer, sorted by `_id`.
    pub async fn list(&self, collection: &str, field: &str) -> SeqResult<Vec<ListedCounter>> {
        use futures_util::TryStreamExt;
        check_field(field)?;
        let filter = doc! { field: { "$type": ["int", "long", "double"] } };
        // Only the value and configuration fields travel (`_id` always does), and each
        // document is converted as it arrives: a counters collection holding large
        // documents is never loaded whole.
        let mut cursor = self
            .database()
            .collection::<Document>(collection)
            .find(filter)
            .projection(crate::engine::store::filters::value_and_config_projection(
                field,
            ))
            .sort(doc! { "_id": 1 })
            .await
            .map_err(|e| self.error(&e))?;
        let mut listed = Vec::new();
        while let Some(d) = cursor.try_next().await.map_err(|e| self.error(&e))? {
            let Ok(value) = integer_after_increment(d.get(field)) else {
                continue;
            };
            let Some(stored) = d.get(field).and_then(StoredType::of) else {
                continue;
            };
            let config = SequenceConfig::from_doc(&d, field).ok().flatten();
            if let Some(id) = d.get("_id") {
                listed.push(ListedCounter {
                    id: id.clone(),
                    value,
                    config,
                    stored,
                });
            }
        }
        Ok(listed)
    }

    /// The usable value furthest along `direction` that `path` reaches in collection
    /// `source` ([`extreme_of`]); `None` when there is none.
    ///
    /// Without arrays on the path, the first document of a sort on it is the answer (an
    /// index on the path makes that one read). An array anywhere on the path makes a
    /// sort compare each document by one element of its choosing, so then every document
    /// holding a number there is read and every element looked at.
    pub async fn extreme_in(
        &self,
        source: &str,
        path: &str,
        direction: Direction,
    ) -> SeqResult<Option<i64>> {
        use futures_util::TryStreamExt;
        let collection = self.database().collection::<Document>(source);
        // Doubles of 2^63 and more (and infinities) are out of range: skip them on the
        // server, so a stray 1e300 cannot hide the real extreme.
        let filter = doc! {
            path: {
                "$type": ["int", "long", "double"],
                "$lt": I64_RANGE_END,
                "$gte": -I64_RANGE_END,
            }
        };
        // The whole first field of the path: a projection of a numeric step (`a.0.b`)
        // would select a field named "0" in each element, not the element.
        let top = path.split('.').next().unwrap_or(path);
        let projection = if top == "_id" {
            doc! { "_id": 1 }
        } else {
            doc! { "_id": 0, top: 1 }
        };
        if !self.arrays_on(source, path).await? {
            let order = match direction {
                Direction::Up => -1,
                Direction::Down => 1,
            };
            let first = collection
                .find_one(filter)
                .sort(doc! { path: order })
                .projection(projection)
                .await
                .map_err(|e| self.error(&e))?;
            return Ok(extreme_of(first.as_ref(), path, direction));
        }
        // Streamed, one document at a time: a large collection is never held whole.
        let mut cursor = collection
            .find(filter)
            .projection(projection)
            .await
            .map_err(|e| self.error(&e))?;
        let mut best: Option<i64> = None;
        while let Some(doc) = cursor.try_next().await.map_err(|e| self.error(&e))? {
            if let Some(v) = extreme_of([&doc], path, direction) {
                best = Some(best.map_or(v, |b| direction.further(b, v)));
            }
        }
        Ok(best)
    }

    /// Whether some document of `source` holds an array at `path` or at a prefix of it
    /// (never at `_id`, which cannot be an array).
    async fn arrays_on(&self, source: &str, path: &str) -> SeqResult<bool> {
        if path == "_id" {
            return Ok(false);
        }
        let steps: Vec<&str> = path.split('.').collect();
        let any_array: Vec<Bson> = (1..=steps.len())
            .map(|n| Bson::Document(doc! { steps[..n].join("."): { "$type": "array" } }))
            .collect();
        let found = self
            .database()
            .collection::<Document>(source)
            .find_one(doc! { "$or": any_array })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(|e| self.error(&e))?;
        Ok(found.is_some())
    }
}

/// Sets the field of every plain counter of `counter`'s collection in `database` matching
/// `fields` to `value` (mongoose-sequence's `counterReset`); how many matched. Any counter
/// of that collection and field may match, so what this process holds of each is
/// forgotten around the write, as a `set` of one counter forgets its own: no cached block
/// from before the write is handed out after it.
pub async fn set_where(
    handle: &ClientHandle,
    database: &str,
    store: &MongoDriver,
    counter: &CounterRef,
    fields: Document,
    value: i64,
) -> SeqResult<u64> {
    CounterState::managed_all(
        || handle.counter_states_in(database, &counter.collection, &counter.field),
        store.set_where(counter, fields, value),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;
    use crate::engine::store::memory_store::MemoryStore;
    use crate::engine::test_support::run;

    fn counter(name: &str) -> CounterRef {
        let name = crate::engine::counter::counter_name::CounterName::text(name).unwrap();
        CounterRef::new("counters", "seq", name)
    }

    #[test]
    fn set_outside_the_limits_is_refused_and_writes_nothing() {
        let store = MemoryStore::default();
        let c = counter("b");
        let config = SequenceConfig::new(1, Some(100), Some(200), false).unwrap();
        assert!(run(init(&store, &c, None, Some(config))).unwrap());
        let e = run(set(&store, &c, 0, false)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(run(current(&store, &c)).unwrap(), 99);
        run(set(&store, &c, 150, false)).unwrap();
        assert_eq!(run(current(&store, &c)).unwrap(), 150);
    }

    #[test]
    fn set_outside_the_limits_names_both_limits_in_one_phrase() {
        let store = MemoryStore::default();
        let c = counter("m");
        let config = SequenceConfig::new(1, Some(100), Some(200), false).unwrap();
        assert!(run(init(&store, &c, None, Some(config))).unwrap());
        for value in [99, 201] {
            let e = run(set(&store, &c, value, false)).unwrap_err();
            assert_eq!(
                e.message,
                format!("Sequence 'm' cannot be set to {value}: outside its minValue 100 .. maxValue 200")
            );
        }
    }

    #[test]
    fn reset_uses_the_stored_start() {
        let store = MemoryStore::default();
        let c = counter("r");
        assert!(run(init(&store, &c, Some(1000), None)).unwrap());
        run(set(&store, &c, 5000, false)).unwrap();
        assert_eq!(run(reset(&store, &c, 1)).unwrap(), 1000);
        assert_eq!(run(current(&store, &c)).unwrap(), 999);
        assert!(run(drop_counter(&store, &c)).unwrap());
        assert_eq!(
            run(current(&store, &c)).unwrap_err().code,
            ErrorCode::SequenceNotFound
        );
    }

    #[test]
    fn raising_respects_limits_and_never_lowers() {
        let store = MemoryStore::default();
        let c = counter("s");
        assert_eq!(run(raise_to(&store, &c, 40)).unwrap(), 40);
        assert_eq!(run(raise_to(&store, &c, 7)).unwrap(), 40);
        let bounded = counter("bounded");
        let config = SequenceConfig::new(1, Some(1), Some(50), false).unwrap();
        run(init(&store, &bounded, None, Some(config))).unwrap();
        let e = run(raise_to(&store, &bounded, 51)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(run(current(&store, &bounded)).unwrap(), 0);
    }

    #[test]
    fn source_values_out_of_range_are_ignored() {
        use Direction::{Down, Up};
        for d in [Up, Down] {
            assert_eq!(usable_value(&Bson::Double(f64::INFINITY), d), None);
            assert_eq!(usable_value(&Bson::Double(1e300), d), None);
            assert_eq!(usable_value(&Bson::Double(-1e300), d), None);
            assert_eq!(usable_value(&Bson::Double(f64::NAN), d), None);
            assert_eq!(usable_value(&Bson::Int64(7), d), Some(7));
            assert_eq!(usable_value(&Bson::String("9".into()), d), None);
            assert_eq!(
                usable_value(&Bson::Double(-I64_RANGE_END), d),
                Some(i64::MIN)
            );
        }
        assert_eq!(usable_value(&Bson::Double(41.2), Up), Some(42));
        assert_eq!(usable_value(&Bson::Double(41.2), Down), Some(41));
        assert_eq!(usable_value(&Bson::Double(-0.5), Down), Some(-1));
    }

    #[test]
    fn paths_reach_nested_fields_and_array_elements() {
        use mongodb::bson::doc;
        use Direction::{Down, Up};
        let docs = [
            doc! { "meta": { "no": 41 } },
            doc! { "meta": [{ "no": 7 }, { "no": [90, "x", [500]] }, 3] },
            doc! { "meta": { "no": "not a number" } },
            doc! { "meta": [[{ "no": 1000 }]] },
            doc! { "other": 5 },
            doc! { "meta": { "no": -2.5 } },
        ];
        assert_eq!(extreme_of(&docs, "meta.no", Up), Some(90));
        assert_eq!(extreme_of(&docs, "meta.no", Down), Some(-3));
        assert_eq!(extreme_of(&docs[..1], "meta.no", Up), Some(41));
        assert_eq!(extreme_of(&docs[4..5], "meta.no", Up), None);
        let positional = [doc! { "a": [{ "b": 4 }, { "b": 8 }], "c": [[1, 2], 3] }];
        assert_eq!(extreme_of(&positional, "a.1.b", Up), Some(8));
        assert_eq!(extreme_of(&positional, "a.0.b", Up), Some(4));
        assert_eq!(extreme_of(&positional, "c.0", Up), Some(2));
        assert_eq!(extreme_of(&positional, "c", Up), Some(3));
        assert_eq!(extreme_of(&positional, "c.0.x", Up), None);
        // A position names an element, looked into as any value (arrays included); a
        // field step does not look into an array inside an array.
        let nested = [doc! { "c": [[{ "x": 5 }], { "x": 1 }] }];
        assert_eq!(extreme_of(&nested, "c.0.x", Up), Some(5));
        assert_eq!(extreme_of(&nested, "c.x", Up), Some(1));
    }

    fn located(step: i64) -> CounterRef {
        use crate::engine::counter::locator::{FieldsLocator, Locator};
        use mongodb::bson::doc;
        let fields = doc! { "id": "loc", "reference_value": Bson::Null };
        counter("loc").located(
            Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap()),
            step,
        )
    }

    #[test]
    fn init_and_reset_of_a_stepped_counter_make_start_the_next_value() {
        use crate::engine::alloc::allocate::{allocate, CreatePolicy};
        for step in [5, -5] {
            let store = MemoryStore::default();
            let c = located(step);
            assert!(run(init(&store, &c, Some(10), None)).unwrap());
            assert_eq!(run(current(&store, &c)).unwrap(), 10 - step);
            let next = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
            assert_eq!(next.first, 10, "step {step}");
            run(allocate(&store, &c, CreatePolicy::default(), 2)).unwrap();
            assert_eq!(run(reset(&store, &c, 1)).unwrap(), 10);
            let next = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
            assert_eq!(next.first, 10, "after reset, step {step}");
        }
        let e = run(init(
            &MemoryStore::default(),
            &located(-5),
            Some(i64::MAX),
            None,
        ))
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceOverflow);
    }

    #[test]
    fn descending_counters_are_moved_down_never_back() {
        let store = MemoryStore::default();
        let down = located(-1);
        run(init(&store, &down, Some(100), None)).unwrap();
        run(set(&store, &down, 98, false)).unwrap();
        // 100, 99, 98 handed out: 100 is behind it, not ahead.
        assert_eq!(run(raise_to(&store, &down, 100)).unwrap(), 98);
        assert_eq!(run(raise_to(&store, &down, 90)).unwrap(), 90);
        let configured = counter("down");
        let config = SequenceConfig::new(-1, Some(-50), Some(-1), false).unwrap();
        run(init(&store, &configured, None, Some(config))).unwrap();
        assert_eq!(run(raise_to(&store, &configured, -10)).unwrap(), -10);
        assert_eq!(run(raise_to(&store, &configured, -5)).unwrap(), -10);
        let e = run(raise_to(&store, &configured, -51)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.contains("minValue -50"), "{}", e.message);
        assert_eq!(run(current(&store, &configured)).unwrap(), -10);
    }

    #[test]
    fn a_configured_counter_moves_right_up_to_its_limit() {
        let store = MemoryStore::default();
        let up = counter("up_to_max");
        let config = SequenceConfig::new(1, Some(1), Some(50), false).unwrap();
        run(init(&store, &up, None, Some(config))).unwrap();
        assert_eq!(
            run(raise_to(&store, &up, 50)).unwrap(),
            50,
            "maxValue itself"
        );
        let down = counter("down_to_min");
        let config = SequenceConfig::new(-1, Some(-50), Some(-1), false).unwrap();
        run(init(&store, &down, None, Some(config))).unwrap();
        assert_eq!(
            run(raise_to(&store, &down, -50)).unwrap(),
            -50,
            "minValue itself"
        );
    }

    /// Source values in memory, for `sync_to_source`.
    struct Values(Vec<mongodb::bson::Document>);

    impl SourceValues for Values {
        async fn extreme(&self, direction: Direction) -> SeqResult<Option<i64>> {
            Ok(extreme_of(&self.0, "n", direction))
        }
    }

    #[test]
    fn sync_moves_each_way_to_the_used_extreme() {
        use mongodb::bson::doc;
        let store = MemoryStore::default();
        let source = Values(vec![
            doc! { "n": 120 },
            doc! { "n": 95.5 },
            doc! { "n": "x" },
        ]);
        let up = counter("up");
        assert_eq!(run(sync_to_source(&store, &up, &source)).unwrap(), 120);
        let down = located(-1);
        run(init(&store, &down, Some(100), None)).unwrap();
        assert_eq!(run(sync_to_source(&store, &down, &source)).unwrap(), 95);
        assert_eq!(run(set(&store, &down, 10, false)).map(|_| ()), Ok(()));
        assert_eq!(
            run(sync_to_source(&store, &down, &source)).unwrap(),
            10,
            "never back"
        );
        let empty = Values(vec![]);
        assert_eq!(run(sync_to_source(&store, &down, &empty)).unwrap(), 10);
        assert_eq!(
            run(sync_to_source(&store, &counter("new"), &empty)).unwrap(),
            0
        );
    }
}
