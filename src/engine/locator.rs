//! Where a counter document is found: by its `_id` (the documented helper's counters,
//! `{ _id: <name>, <field>: <value> }`), or by equality on other fields guarded by a
//! unique index over exactly those fields (mongoose-sequence's counters,
//! `{ _id: ObjectId, id, reference_value, seq }` under `id_1_reference_value_1`).

use std::hash::{Hash, Hasher};

use mongodb::bson::{Bson, Document};

use crate::engine::error::{SeqError, SeqResult};
use crate::engine::validate::{check_field_name, FieldUse};

/// Most fields a locator may name.
pub const MAX_LOCATOR_FIELDS: usize = 8;

/// How a counter document is found.
#[derive(Debug, Clone, Default)]
pub enum Locator {
    /// By `_id` (the counter's name).
    #[default]
    ById,
    /// By equality on `fields` (in this order), which a unique index over them guards.
    ByFields(FieldsLocator),
}

/// A counter found by equality on several fields.
#[derive(Debug, Clone)]
pub struct FieldsLocator {
    fields: Document,
    index: String,
    /// The fields' BSON bytes: what equality and hashing compare.
    key: Vec<u8>,
}

impl FieldsLocator {
    /// A locator over `fields` (1 to [`MAX_LOCATOR_FIELDS`] top-level names, none `_id`
    /// or `counter_field`); values may be any BSON value, `null` included.
    pub fn new(fields: Document, counter_field: &str) -> SeqResult<FieldsLocator> {
        if fields.is_empty() || fields.len() > MAX_LOCATOR_FIELDS {
            return Err(SeqError::invalid_argument(format!(
                "a counter locator names 1 to {MAX_LOCATOR_FIELDS} fields; got {}",
                fields.len()
            )));
        }
        for name in fields.keys() {
            check_field_name("locator field", name, FieldUse::CounterValue)?;
            if name == counter_field {
                return Err(SeqError::invalid_argument(format!(
                    "the locator field '{name}' is also the counter field"
                )));
            }
        }
        let mut key = Vec::new();
        fields.to_writer(&mut key).map_err(|e| {
            SeqError::invalid_argument(format!("the counter locator cannot be stored: {e}"))
        })?;
        if key.len() > 16 * 1024 {
            return Err(SeqError::invalid_argument(
                "the counter locator is larger than 16 KiB",
            ));
        }
        let index = fields
            .keys()
            .map(|k| format!("{k}_1"))
            .collect::<Vec<_>>()
            .join("_");
        Ok(FieldsLocator { fields, index, key })
    }

    /// The equality fields.
    pub fn fields(&self) -> &Document {
        &self.fields
    }

    /// The equality fields, taken.
    pub fn into_fields(self) -> Document {
        self.fields
    }

    /// The name MongoDB gives the unique index over the fields (`id_1_reference_value_1`).
    pub fn index_name(&self) -> &str {
        &self.index
    }

    /// The index keys `{ <field>: 1, … }`.
    pub fn index_keys(&self) -> Document {
        self.fields
            .keys()
            .map(|k| (k.clone(), Bson::Int32(1)))
            .collect()
    }
}

impl PartialEq for FieldsLocator {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for FieldsLocator {}

impl Hash for FieldsLocator {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl PartialEq for Locator {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Locator::ById, Locator::ById) => true,
            (Locator::ByFields(a), Locator::ByFields(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Locator {}

impl Hash for Locator {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Locator::ById => 0u8.hash(state),
            Locator::ByFields(f) => {
                1u8.hash(state);
                f.hash(state);
            }
        }
    }
}

impl Locator {
    /// The name of the unique index that makes two creations of the counter collide.
    pub fn index_name(&self) -> &str {
        match self {
            Locator::ById => "_id_",
            Locator::ByFields(f) => f.index_name(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn names_its_index_as_mongodb_does() {
        let l =
            FieldsLocator::new(doc! { "id": "n", "reference_value": Bson::Null }, "seq").unwrap();
        assert_eq!(l.index_name(), "id_1_reference_value_1");
        assert_eq!(l.index_keys(), doc! { "id": 1, "reference_value": 1 });
        assert_eq!(Locator::ById.index_name(), "_id_");
    }

    #[test]
    fn equal_fields_are_the_same_counter() {
        let a = FieldsLocator::new(doc! { "id": "n", "reference_value": { "a": 1 } }, "seq");
        let b = FieldsLocator::new(doc! { "id": "n", "reference_value": { "a": 1 } }, "seq");
        let c = FieldsLocator::new(doc! { "id": "n", "reference_value": { "a": 2 } }, "seq");
        assert_eq!(a.as_ref().unwrap(), b.as_ref().unwrap());
        assert_ne!(a.unwrap(), c.unwrap());
    }

    #[test]
    fn bad_locators_are_refused() {
        for bad in [
            doc! {},
            doc! { "_id": 1 },
            doc! { "seq": 1 },
            doc! { "$id": 1 },
            doc! { "a.b": 1 },
        ] {
            assert!(FieldsLocator::new(bad.clone(), "seq").is_err(), "{bad}");
        }
        let many: Document = (0..9).map(|i| (format!("f{i}"), Bson::Int32(i))).collect();
        assert!(FieldsLocator::new(many, "seq").is_err());
    }
}
