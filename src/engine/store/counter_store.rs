//! The storage operations a sequence needs, as a trait: MongoDB implements it for real
//! use (`driver_store` over `mongo_driver`), and unit tests implement it in memory.

use std::future::Future;

use mongodb::bson::oid::ObjectId;
use mongodb::bson::{doc, Bson, Document};

use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::id_range::IdRange;
use crate::engine::counter::identity::{equality_key, filter_key};
use crate::engine::counter::locator::{FieldsLocator, Locator};
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::SeqResult;

/// Which counter: a document `{ _id: <name>, <field>: <value> }` in `collection`, or one
/// found by other fields ([`Locator`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterRef {
    /// Collection holding the counter documents.
    pub collection: String,
    /// Field holding the value.
    pub field: String,
    /// The counter's name (its `_id` when found by `_id`).
    pub name: CounterName,
    /// The name as shown in messages.
    pub label: String,
    /// How the document is found.
    pub locator: Locator,
    /// Distance between the values a plain counter hands out (its `$inc` per value;
    /// not stored with the counter). 1 for the documented helper's counters.
    pub step: i64,
    /// Values are fetched into a cache, by the fetch this token names: the writes that
    /// hand them out flag the document with it
    /// ([`CacheMarks`](crate::engine::store::filters::CacheMarks)), so that a raise by
    /// any process leaves a mark the give-back of those values sees, and so that the
    /// give-back finds the counter as this very fetch left it.
    pub cached: Option<FetchToken>,
}

/// What one cache fetch writes as the counter's flag, unique to that fetch (in every
/// process): a give-back applies only where the flag is still the one its own fetch
/// wrote. The counter's value alone cannot tell: after a `reset`, numbering by anyone
/// brings the counter back to the very value a held give-back expects, and a flag that
/// only says "cached" survives that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FetchToken(ObjectId);

impl FetchToken {
    /// A token no other fetch has: an `ObjectId`, whose process-unique random part and
    /// counter keep two fetches, in any processes, apart.
    pub fn fresh() -> FetchToken {
        FetchToken(ObjectId::new())
    }

    /// As stored in the counter document.
    pub fn to_bson(self) -> Bson {
        Bson::ObjectId(self.0)
    }
}

impl CounterRef {
    /// A counter of `name` in `collection`, counting in `field`, found by `_id`.
    pub fn new(collection: &str, field: &str, name: CounterName) -> Self {
        CounterRef {
            collection: collection.to_string(),
            field: field.to_string(),
            label: name.label(),
            name,
            locator: Locator::ById,
            step: 1,
            cached: None,
        }
    }

    /// The same counter, its values fetched into a cache by the fetch `token` names
    /// ([`CounterRef::cached`]).
    pub fn through_cache(mut self, token: FetchToken) -> Self {
        self.cached = Some(token);
        self
    }

    /// The same counter found by `locator`, handing out values `step` apart.
    pub fn located(mut self, locator: Locator, step: i64) -> Self {
        self.locator = locator;
        self.step = step;
        self
    }

    /// The `_id` of the counter document.
    pub fn id(&self) -> Bson {
        self.name.to_id()
    }

    /// Which document this reference finds, as the server's equality decides: equal for
    /// every way of naming one counter document (`1`, `1.0`, `1n` in a locator; any
    /// `step`; fields in another order), so that they share one state in a process.
    pub fn document_key(&self) -> DocumentKey {
        let identity = match &self.locator {
            Locator::ById => filter_key(&doc! { "_id": self.id() }),
            Locator::ByFields(fields) => {
                let mut key = vec![b'F'];
                key.extend(filter_key(fields.fields()));
                key
            }
        };
        DocumentKey {
            collection: self.collection.clone(),
            field: self.field.clone(),
            identity,
        }
    }

    /// Whether the document this reference finds may be the one `other` finds: the same
    /// document ([`CounterRef::document_key`]), or two locators (other sets of fields,
    /// e.g. `{ model, field }` and `{ model, field, groupingField }`) of one collection
    /// and field that agree on every field both name ([`LocatorFields::agree`]). Locators
    /// that differ on a field they share are taken to find different documents, which
    /// holds while the counter documents hold scalars in those fields (a document holding
    /// an array there is found by each element); an `_id`-named counter is its own.
    pub fn may_find_the_same_document(&self, other: &CounterRef) -> bool {
        if self.collection != other.collection || self.field != other.field {
            return false;
        }
        match (&self.locator, &other.locator) {
            // Two namings of one document agree on every field.
            (Locator::ByFields(mine), Locator::ByFields(theirs)) => {
                LocatorFields::of(mine).agree(&LocatorFields::of(theirs))
            }
            (Locator::ById, Locator::ById) => self.document_key() == other.document_key(),
            // Their document keys never agree.
            _ => false,
        }
    }

    /// The filter that finds the counter document.
    pub fn filter(&self) -> Document {
        match &self.locator {
            Locator::ById => doc! { "_id": self.id() },
            Locator::ByFields(fields) => fields.fields().clone(),
        }
    }
}

/// The counter document a [`CounterRef`] finds, and its field ([`CounterRef::document_key`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocumentKey {
    collection: String,
    field: String,
    identity: Vec<u8>,
}

/// A locator's fields, each with the key of its value ([`equality_key`]): what
/// [`CounterRef::may_find_the_same_document`] compares, made only when it is asked.
struct LocatorFields(Vec<(String, Vec<u8>)>);

impl LocatorFields {
    /// The fields of `locator`.
    fn of(locator: &FieldsLocator) -> LocatorFields {
        let each = locator
            .fields()
            .iter()
            .map(|(name, value)| {
                let mut one = Vec::new();
                equality_key(value, &mut one);
                (name.clone(), one)
            })
            .collect();
        LocatorFields(each)
    }

    /// Whether the two locators agree on every field both name.
    fn agree(&self, other: &LocatorFields) -> bool {
        self.0.iter().all(|(name, value)| {
            other
                .0
                .iter()
                .all(|(other_name, other_value)| other_name != name || other_value == value)
        })
    }
}

impl DocumentKey {
    /// Whether it is a counter of `field` in `collection`.
    pub fn counts_in(&self, collection: &str, field: &str) -> bool {
        self.collection == collection && self.field == field
    }
}

/// A condition on the counter field for a guarded increment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldGuard {
    /// The field holds exactly this double.
    EqualsDouble(f64),
    /// The field does not exist.
    Absent,
}

/// Which way a counter hands out values: its used values lie below its current value
/// (`Up`) or above it (`Down`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Ascending (positive step): the largest value is the one used last.
    Up,
    /// Descending (negative step): the smallest value is the one used last.
    Down,
}

impl Direction {
    /// The direction of a counter moving by `step` per value.
    pub fn of_step(step: i64) -> Direction {
        if step < 0 {
            Direction::Down
        } else {
            Direction::Up
        }
    }

    /// Of `a` and `b`, the one further along this direction (the larger when `Up`).
    pub fn further(self, a: i64, b: i64) -> i64 {
        match self {
            Direction::Up => a.max(b),
            Direction::Down => a.min(b),
        }
    }
}

/// A counter document as read: its value and its configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterDoc {
    /// The counter field (`None`: the document has no such field).
    pub value: Option<Bson>,
    /// Step and limits stored by `init` (`Ok(None)`: a plain counter; `Err`: damaged).
    pub config: Result<Option<SequenceConfig>, String>,
    /// The start stored by `init` (`<field>_start`), for `reset`.
    pub start: Option<Bson>,
}

impl CounterDoc {
    /// The stored configuration, or `INVALID_COUNTER` naming the damage.
    pub fn configuration(&self, counter: &CounterRef) -> SeqResult<Option<SequenceConfig>> {
        self.config.clone().map_err(|damage| {
            crate::engine::error::SeqError::damaged_configuration(
                &counter.label,
                &counter.field,
                &damage,
            )
        })
    }
}

/// A counter document to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewCounter {
    /// The stored value (the last value handed out).
    pub value: i64,
    /// The start to remember for `reset`.
    pub start: Option<i64>,
    /// Step and limits (`None`: a plain counter).
    pub config: Option<SequenceConfig>,
}

impl NewCounter {
    /// A plain counter holding `value`.
    pub fn plain(value: i64) -> Self {
        NewCounter {
            value,
            start: None,
            config: None,
        }
    }
}

/// Where a store's round trips go, for round-trip events (never credentials).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// The database of the counters.
    pub database: Option<String>,
    /// Host and port of the server that takes the writes, when known.
    pub server: Option<(String, u16)>,
}

/// Atomic single-document operations on counters: everything allocation and management
/// need, so both run (and are tested) over the same primitives.
pub trait CounterStore: Send + Sync {
    /// Where the round trips go (nothing known by default).
    fn endpoint(&self) -> Endpoint {
        Endpoint::default()
    }

    /// Adds `by` to the field of a plain (unconfigured) counter when it holds an Int32 or
    /// Int64, and returns the field's new value; `None` when no document matched (missing,
    /// configured, or the field holds another type). With `upsert`, a missing counter is
    /// created holding `by` (only ever asked after [`CounterStore::prepare_upsert`]); a
    /// document of another kind still gives `None`.
    fn increment_integer(
        &self,
        counter: &CounterRef,
        by: i64,
        upsert: bool,
    ) -> impl Future<Output = SeqResult<Option<Bson>>> + Send;

    /// Makes sure an upsert of the counter can only ever create one document: the unique
    /// index its locator relies on exists (made here, once per collection and client,
    /// when missing).
    fn prepare_upsert(&self, counter: &CounterRef) -> impl Future<Output = SeqResult<()>> + Send;

    /// Adds `by` to the field only when `guard` holds; returns the new value, or `None`
    /// when it did not hold (the counter changed meanwhile).
    fn increment_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        by: i64,
    ) -> impl Future<Output = SeqResult<Option<Bson>>> + Send;

    /// Sets the field of a plain counter to `value` only when `guard` holds (keeping
    /// the cache marks, as a fetch does); `false` when it did not hold.
    fn set_guarded(
        &self,
        counter: &CounterRef,
        guard: FieldGuard,
        value: i64,
    ) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Reads the counter: `None` when there is no document.
    fn read(
        &self,
        counter: &CounterRef,
    ) -> impl Future<Output = SeqResult<Option<CounterDoc>>> + Send;

    /// Adds `config.step * count` to a counter configured exactly as `config` whose value
    /// lies within [`SequenceConfig::room_bounds`] for `count`; returns the new value, or
    /// `None` when not (no room, or another configuration).
    fn advance_configured(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        count: i64,
    ) -> impl Future<Output = SeqResult<Option<Bson>>> + Send;

    /// Sets the field to `value` (a new cycle) when the counter is configured exactly as
    /// `config` and its value leaves no room for `needs` more values (it lies outside
    /// [`SequenceConfig::room_bounds`] for `needs`); `false` when it did not match.
    fn restart_cycle(
        &self,
        counter: &CounterRef,
        config: &SequenceConfig,
        needs: i64,
        value: i64,
    ) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Sets the field to `value` when the counter is configured exactly as `config`
    /// (`None`: a plain counter) and, when `expected` is given, holds exactly that; `false`
    /// when it did not match. An unconditional set (`expected: None`: `set`, `reset`)
    /// also removes the cache marks ([`CacheMarks`](crate::engine::store::filters::CacheMarks)):
    /// numbers given before it no longer hold back a give-back of values fetched after
    /// it, and no give-back of values fetched before it applies any more. A conditional
    /// one (a fetch) keeps the raised mark: an older tail may still hold those numbers.
    fn compare_and_set(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        expected: Option<i64>,
        value: i64,
    ) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Puts a counter back from the last value of `tail` to `before` (the value before
    /// its first), when it is configured as `config`, holds exactly `tail.last`, its
    /// flag is still `token` (the fetch that left it there was the last cache fetch, and
    /// no `set`, `reset` or `setCountersWhere` came since) and no raise marked a value of
    /// `tail` since ([`CacheMarks`](crate::engine::store::filters::CacheMarks)); `false`
    /// when it did not match.
    fn give_back(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        tail: IdRange,
        token: FetchToken,
        before: i64,
    ) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Inserts a new counter document. `Ok(false)` when a document with this `_id`
    /// already exists (another caller created it first).
    fn create(
        &self,
        counter: &CounterRef,
        new: NewCounter,
    ) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Deletes the counter; `true` when it existed.
    fn delete(&self, counter: &CounterRef) -> impl Future<Output = SeqResult<bool>> + Send;

    /// Moves the field on to `value` along `direction`, never back (`$max` when `Up`,
    /// `$min` when `Down`), when the counter is configured exactly as `config` (`None`:
    /// plain, created when missing); returns the field afterwards, or `None` when it
    /// did not match. On a counter whose values are fetched into a cache it also marks
    /// `value` as raised (moved on the same way), also when the counter was already past
    /// it: a give-back never puts the counter back over a raised value.
    fn raise(
        &self,
        counter: &CounterRef,
        config: Option<&SequenceConfig>,
        value: i64,
        direction: Direction,
    ) -> impl Future<Output = SeqResult<Option<Bson>>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(collection: &str, field: &str, fields: Document) -> CounterRef {
        let name = CounterName::text("located").unwrap();
        let locator = Locator::ByFields(FieldsLocator::new(fields, field).unwrap());
        CounterRef::new(collection, field, name).located(locator, 1)
    }

    #[test]
    fn locators_that_agree_on_the_fields_both_name_may_find_one_document() {
        let mai = located("ids", "count", doc! { "model": "A", "field": "no" });
        let mpa = located(
            "ids",
            "count",
            doc! { "model": "A", "field": "no", "groupingField": "" },
        );
        assert!(mai.may_find_the_same_document(&mpa) && mpa.may_find_the_same_document(&mai));
        assert!(mai.may_find_the_same_document(&mai));
        // One shared field differs: never one document.
        let other_model = located("ids", "count", doc! { "model": "B", "field": "no" });
        assert!(!mai.may_find_the_same_document(&other_model));
        let other_group = located(
            "ids",
            "count",
            doc! { "model": "A", "field": "no", "groupingField": "x" },
        );
        assert!(!mpa.may_find_the_same_document(&other_group));
        assert!(
            mai.may_find_the_same_document(&other_group),
            "{{model, field}} finds either"
        );
        // Values compare as the server compares them.
        let double = located("ids", "count", doc! { "model": "A", "n": 1.0 });
        let int = located("ids", "count", doc! { "model": "A", "n": 1 });
        assert!(double.may_find_the_same_document(&int));
        // Another collection or counter field, and counters named by `_id`.
        assert!(!mai.may_find_the_same_document(&located("other", "count", doc! { "model": "A" })));
        assert!(!mai.may_find_the_same_document(&located("ids", "seq", doc! { "model": "A" })));
        let by_id = CounterRef::new("ids", "count", CounterName::text("A").unwrap());
        assert!(!mai.may_find_the_same_document(&by_id) && !by_id.may_find_the_same_document(&mai));
        assert!(by_id.may_find_the_same_document(&by_id.clone()));
        let other_id = CounterRef::new("ids", "count", CounterName::text("B").unwrap());
        assert!(!by_id.may_find_the_same_document(&other_id));
    }

    /// The documented caveat: locators that differ on a field they share are taken to find
    /// different documents. That holds for scalar values only: a counter document holding
    /// an array there (`kind: ['x', 'y']`) is found by each of `{ kind: 'x' }` and
    /// `{ kind: 'y' }`, and the fence of one does not reach the other's state.
    #[test]
    fn locators_differing_on_a_shared_field_are_different_documents_for_scalar_values_only() {
        let x = located("ids", "count", doc! { "model": "A", "kind": "x" });
        let y = located("ids", "count", doc! { "model": "A", "kind": "y" });
        assert!(!x.may_find_the_same_document(&y) && !y.may_find_the_same_document(&x));
        let y_grouped = located(
            "ids",
            "count",
            doc! { "model": "A", "kind": "y", "group": 1 },
        );
        assert!(!x.may_find_the_same_document(&y_grouped));
    }

    #[test]
    fn a_document_key_counts_in_its_own_collection_and_field_only() {
        let key =
            CounterRef::new("counters", "seq", CounterName::text("a").unwrap()).document_key();
        assert!(key.counts_in("counters", "seq"));
        assert!(!key.counts_in("other", "seq"));
        assert!(!key.counts_in("counters", "other"));
        assert!(!key.counts_in("other", "other"));
    }
}
