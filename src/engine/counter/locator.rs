//! Where a counter document is found: by its `_id` (the documented helper's counters,
//! `{ _id: <name>, <field>: <value> }`), or by equality on other fields guarded by a
//! unique index over exactly those fields (mongoose-sequence's counters,
//! `{ _id: ObjectId, id, reference_value, seq }` under `id_1_reference_value_1`).

use std::hash::{Hash, Hasher};

use mongodb::bson::{Bson, Document};

use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::quote::quoted;
use crate::engine::text::validate::{check_field_name, FieldUse};

/// Most fields a locator may name.
pub const MAX_LOCATOR_FIELDS: usize = 8;

/// Characters of a locator's label shown in messages at most.
pub const LABEL_CHARS: usize = 200;

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
    /// or `counter_field`); values may be any BSON value, `null` included, except what a
    /// query would not compare by equality ([`check_equality_value`]).
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
        for (name, value) in &fields {
            check_equality_value(name, value)?;
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

    /// How the counter appears in messages: its fields as relaxed extended JSON, e.g.
    /// `{"id":"invoice","reference_value":null}`, cut after [`LABEL_CHARS`] characters
    /// (`…(N bytes)` follows).
    pub fn label(&self) -> String {
        let text = Bson::Document(self.fields.clone())
            .into_relaxed_extjson()
            .to_string();
        match text.char_indices().nth(LABEL_CHARS) {
            None => text,
            Some((at, _)) => format!("{}…({} bytes)", &text[..at], text.len()),
        }
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

/// Refuses a locator value that a MongoDB query would not compare by equality: a
/// document with a key starting with `$` at any depth (`{ $gt: '' }`, `{ $ne: null }`,
/// `{ a: { $in: [] } }`: an operator at the top, a key no counter document can hold
/// below), a regular expression (a pattern match) or an array (which also matches a
/// document whose field is an array containing it). An embedded document compares
/// exactly, field order included, as MongoDB compares it.
pub fn check_equality_value(field: &str, value: &Bson) -> SeqResult<()> {
    let refused = |what: String| {
        SeqError::invalid_argument(format!(
            "locator field {} {what}: a counter is found by equality on plain values",
            quoted(field)
        ))
    };
    match value {
        Bson::RegularExpression(_) => {
            return Err(refused("is a regular expression (a pattern match)".into()))
        }
        Bson::Array(_) => {
            return Err(refused(
                "is an array (it would also match arrays containing it)".into(),
            ))
        }
        _ => {}
    }
    match operator_key(value) {
        Some(key) => Err(refused(format!(
            "holds the key {} (an operator, or a key starting with '$')",
            quoted(key)
        ))),
        None => Ok(()),
    }
}

/// The first key starting with `$` in `value`, at any depth of documents and arrays.
fn operator_key(value: &Bson) -> Option<&str> {
    match value {
        Bson::Document(doc) => doc
            .iter()
            .find_map(|(key, inner)| match key.starts_with('$') {
                true => Some(key.as_str()),
                false => operator_key(inner),
            }),
        Bson::Array(items) => items.iter().find_map(operator_key),
        _ => None,
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
    use crate::engine::error::ErrorCode;
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
    fn the_field_of_the_cache_marks_is_no_locator_field() {
        let e = FieldsLocator::new(doc! { "id": "n", "_mseq_marks": 1 }, "seq").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(
            e.message
                .contains("\"_mseq_marks\": that field is reserved"),
            "{}",
            e.message
        );
        assert!(FieldsLocator::new(doc! { "id": "n", "_mseq_marks_": 1 }, "seq").is_ok());
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
    fn values_that_a_query_would_not_compare_by_equality_are_refused() {
        let refused = [
            doc! { "id": { "$gt": "" }, "reference_value": Bson::Null },
            doc! { "id": "invoice", "reference_value": { "$ne": Bson::Null } },
            doc! { "id": "invoice", "reference_value": { "$ne": { "tenant": "A" } } },
            doc! { "id": "invoice", "reference_value": { "tenant": { "$in": ["A"] } } },
            doc! { "id": "i", "reference_value": { "a": [1, { "b": { "$exists": true } }] } },
            doc! { "id": "i", "reference_value": { "a": { "b": { "c": { "$": 1 } } } } },
            doc! { "id": { "$eq": "x" } },
            doc! { "id": ["a", "b"] },
            doc! { "id": Bson::RegularExpression(mongodb::bson::Regex {
                pattern: ".*".into(),
                options: String::new(),
            }) },
        ];
        for bad in refused {
            let error = FieldsLocator::new(bad.clone(), "seq").unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidArgument, "{bad}");
        }
        let e = FieldsLocator::new(doc! { "id": "i", "r": { "t": { "$ne": 1 } } }, "seq");
        assert!(e.unwrap_err().message.contains(r#""$ne""#));
        // Plain values at any depth are kept as given: embedded documents, arrays
        // below the top, regular expressions inside documents, keys with '$' elsewhere.
        for good in [
            doc! { "id": "i", "reference_value": { "tenant": "A", "tags": ["x", { "k": 1 }] } },
            doc! { "id": "i", "reference_value": { "a$": 1, "b": { "c": Bson::Null } } },
            doc! { "id": "i", "reference_value": { "re": Bson::RegularExpression(
                mongodb::bson::Regex { pattern: "a".into(), options: String::new() },
            ) } },
        ] {
            assert!(FieldsLocator::new(good.clone(), "seq").is_ok(), "{good}");
        }
    }

    #[test]
    fn embedded_documents_compare_exactly_with_their_field_order() {
        let ab = FieldsLocator::new(doc! { "id": "n", "r": { "a": 1, "b": 2 } }, "seq");
        let ba = FieldsLocator::new(doc! { "id": "n", "r": { "b": 2, "a": 1 } }, "seq");
        assert_ne!(ab.unwrap(), ba.unwrap(), "MongoDB's equality on documents");
    }

    #[test]
    fn labels_quote_values_as_json() {
        let l = FieldsLocator::new(doc! { "id": "x", "reference_value": Bson::Null }, "seq");
        assert_eq!(l.unwrap().label(), r#"{"id":"x","reference_value":null}"#);
        let l = FieldsLocator::new(doc! { "id": "a\"b\\", "n": 2_i64, "r": { "k": 1.5 } }, "s");
        assert_eq!(l.unwrap().label(), r#"{"id":"a\"b\\","n":2,"r":{"k":1.5}}"#);
        let long = "é".repeat(500);
        let label = FieldsLocator::new(doc! { "id": &long }, "seq")
            .unwrap()
            .label();
        let shown = format!(r#"{{"id":"{}"#, "é".repeat(LABEL_CHARS - 7));
        assert_eq!(label, format!("{shown}…(1009 bytes)"));
        let exact = "x".repeat(LABEL_CHARS - 9);
        let label = FieldsLocator::new(doc! { "id": &exact }, "seq")
            .unwrap()
            .label();
        assert_eq!(label, format!(r#"{{"id":"{exact}"}}"#));
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
