//! The filters and updates of every counter write, shared by the stores that talk to
//! MongoDB (with or without a transaction).

use mongodb::bson::{doc, Bson, Document};

use crate::engine::counter_value::compact_integer;
use crate::engine::sequence_config::{ConfigFields, SequenceConfig};
use crate::engine::store::{CounterDoc, CounterRef, FieldGuard};

fn plain(counter: &CounterRef, condition: Document) -> Document {
    doc! {
        "_id": counter.id(),
        counter.field.as_str(): condition,
        ConfigFields::of(&counter.field).step: { "$exists": false },
    }
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

/// A counter configured exactly as `config`, whose field meets `condition`.
fn configured(counter: &CounterRef, config: &SequenceConfig, condition: Bson) -> Document {
    let mut filter = doc! { "_id": counter.id(), counter.field.as_str(): condition };
    filter.extend(config.to_fields(&counter.field));
    filter
}

/// A counter configured as `config` with room for `span` more before its limit.
pub fn configured_with_room(counter: &CounterRef, config: &SequenceConfig, span: i64) -> Document {
    let mut condition = doc! { "$type": ["int", "long"] };
    condition.extend(config.room_for(span));
    configured(counter, config, Bson::Document(condition))
}

/// A counter configured as `config` still holding `expected`.
pub fn configured_at(counter: &CounterRef, config: &SequenceConfig, expected: i64) -> Document {
    configured(counter, config, compact_integer(expected))
}

/// `$inc` the counter field by `by`.
pub fn increment(counter: &CounterRef, by: i64) -> Document {
    doc! { "$inc": { counter.field.as_str(): compact_integer(by) } }
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
    let names = ConfigFields::of(&counter.field);
    doc! {
        counter.field.as_str(): 1,
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
        config,
    }
}
