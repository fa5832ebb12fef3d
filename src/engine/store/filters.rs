//! The filters and updates of every counter write, shared by the stores that talk to
//! MongoDB (with or without a transaction).

use mongodb::bson::{doc, Document};

use crate::engine::counter::counter_value::compact_integer;
use crate::engine::counter::sequence_config::{ConfigFields, SequenceConfig};
use crate::engine::store::counter_store::{CounterDoc, CounterRef, Direction, FieldGuard};

fn plain(counter: &CounterRef, condition: Document) -> Document {
    let mut filter = configured_as(counter, None);
    filter.insert(counter.field.as_str(), condition);
    filter
}

/// A plain (unconfigured) counter holding an Int32 or Int64.
pub fn plain_integer(counter: &CounterRef) -> Document {
    plain(counter, doc! { "$type": ["int", "long"] })
}

/// A plain counter in the state `guard` describes.
pub fn plain_guarded(counter: &CounterRef, guard: FieldGuard) -> Document {
    let condition = match guard {
        FieldGuard::EqualsDouble(d) => doc! { "$type": "double", "$eq": d },
        FieldGuard::Absent => doc! { "$exists": false },
    };
    plain(counter, condition)
}

/// The counter configured exactly as `config` (`None`: a plain counter, without a step).
pub fn configured_as(counter: &CounterRef, config: Option<&SequenceConfig>) -> Document {
    with_configuration(counter.filter(), counter, config)
}

/// Every plain counter of `counter`'s collection matching `fields` (equality on each).
pub fn plain_matching(counter: &CounterRef, fields: Document) -> Document {
    with_configuration(fields, counter, None)
}

/// `filter` narrowed to counters configured exactly as `config` (`None`: plain).
fn with_configuration(
    mut filter: Document,
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
) -> Document {
    match config {
        Some(config) => filter.extend(config.to_fields(&counter.field)),
        None => {
            filter.insert(
                ConfigFields::of(&counter.field).step,
                doc! { "$exists": false },
            );
        }
    }
    filter
}

/// A counter configured as `config` whose value leaves room for `count` more values
/// within its limits ([`SequenceConfig::room_bounds`]); `None` when no value does.
pub fn configured_with_room(
    counter: &CounterRef,
    config: &SequenceConfig,
    count: i64,
) -> Option<Document> {
    let (low, high) = config.room_bounds(count)?;
    let mut filter = configured_as(counter, Some(config));
    filter.insert(
        counter.field.as_str(),
        doc! {
            "$type": ["int", "long"],
            "$gte": compact_integer(low),
            "$lte": compact_integer(high),
        },
    );
    Some(filter)
}

/// A counter configured as `config` whose value leaves no room for `count` more values,
/// among the values the configuration holds ([`SequenceConfig::restart_bounds`]); a value
/// outside them is a damaged counter, reported by the read of the next attempt, never
/// overwritten.
pub fn configured_without_room(
    counter: &CounterRef,
    config: &SequenceConfig,
    count: i64,
) -> Document {
    let mut filter = configured_as(counter, Some(config));
    // No stored value qualifies: an impossible range matches nothing.
    let (low, high) = config.restart_bounds(count).unwrap_or((1, 0));
    let value = doc! {
        "$type": ["int", "long"],
        "$gte": compact_integer(low),
        "$lte": compact_integer(high),
    };
    filter.insert(counter.field.as_str(), value);
    filter
}

/// The counter configured as `config` (`None`: plain) still holding `expected`, when given.
pub fn configured_at(
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
    expected: Option<i64>,
) -> Document {
    let mut filter = configured_as(counter, config);
    if let Some(expected) = expected {
        filter.insert(
            counter.field.as_str(),
            doc! { "$type": ["int", "long"], "$eq": compact_integer(expected) },
        );
    }
    filter
}

/// `$inc` the counter field by `by`.
pub fn increment(counter: &CounterRef, by: i64) -> Document {
    doc! { "$inc": { counter.field.as_str(): compact_integer(by) } }
}

/// `$max` (`Up`) or `$min` (`Down`) the counter field with `value`: it only ever moves
/// along the counter's direction.
pub fn raise_value(counter: &CounterRef, value: i64, direction: Direction) -> Document {
    let operator = match direction {
        Direction::Up => "$max",
        Direction::Down => "$min",
    };
    doc! { operator: { counter.field.as_str(): compact_integer(value) } }
}

/// `$set` the counter field to `value`.
pub fn set_value(counter: &CounterRef, value: i64) -> Document {
    doc! { "$set": { counter.field.as_str(): compact_integer(value) } }
}

/// Only the counter field.
pub fn value_projection(counter: &CounterRef) -> Document {
    doc! { "_id": 0, counter.field.as_str(): 1 }
}

/// The counter field, its configuration and its start.
pub fn counter_projection(counter: &CounterRef) -> Document {
    value_and_config_projection(&counter.field)
}

/// The projection of counter field `field` and its configuration fields: what reading a
/// counter (or listing counters) needs, nothing else of the document.
pub fn value_and_config_projection(field: &str) -> Document {
    let names = ConfigFields::of(field);
    doc! {
        field: 1,
        names.start: 1,
        names.step: 1,
        names.min: 1,
        names.max: 1,
        names.cycle: 1,
    }
}

/// A read counter document.
pub fn counter_doc(counter: &CounterRef, mut doc: Document) -> CounterDoc {
    let config = SequenceConfig::from_doc(&doc, &counter.field);
    CounterDoc {
        value: doc.remove(&counter.field),
        start: doc.remove(ConfigFields::of(&counter.field).start),
        config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::counter::counter_name::CounterName;

    fn counter() -> CounterRef {
        CounterRef::new("counters", "seq", CounterName::text("a").unwrap())
    }

    /// The filter `configured_as` gives, with `seq` held between `low` and `high`.
    fn held_between(config: &SequenceConfig, low: i64, high: i64) -> Document {
        let mut expected = configured_as(&counter(), Some(config));
        expected.insert(
            "seq",
            doc! {
                "$type": ["int", "long"],
                "$gte": compact_integer(low),
                "$lte": compact_integer(high),
            },
        );
        expected
    }

    #[test]
    fn a_cycle_restarts_only_from_a_value_without_room_of_its_own_counter() {
        let config = SequenceConfig::new(1, Some(1), Some(10), true).unwrap();
        let filter = configured_without_room(&counter(), &config, 3);
        assert_eq!(filter.get_str("_id").unwrap(), "a", "{filter}");
        // 7 leaves room for 8, 9, 10; 8 ..= 10 do not.
        assert_eq!(filter, held_between(&config, 8, 10));
        // More than a whole pass: every value the configuration holds restarts.
        assert_eq!(
            configured_without_room(&counter(), &config, 20),
            held_between(&config, 0, 10)
        );
        // Room for nothing asked: no stored value qualifies, so nothing matches.
        assert_eq!(
            configured_without_room(&counter(), &config, 0),
            held_between(&config, 1, 0)
        );
        // Descending: the mirror image.
        let down = SequenceConfig::new(-1, Some(1), Some(10), true).unwrap();
        assert_eq!(
            configured_without_room(&counter(), &down, 3),
            held_between(&down, 1, 3)
        );
    }

    #[test]
    fn an_increment_needs_room_for_every_value_it_takes() {
        let config = SequenceConfig::new(2, Some(1), Some(10), false).unwrap();
        // 1 + 2·4 = 9 fits, 3 + 8 = 11 does not; -1 is the value before the first.
        assert_eq!(
            configured_with_room(&counter(), &config, 4).unwrap(),
            held_between(&config, -1, 2)
        );
        assert_eq!(configured_with_room(&counter(), &config, 6), None);
    }
}
