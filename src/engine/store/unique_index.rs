//! The unique index a located counter relies on: two creations of a counter found by
//! other fields than `_id` collide on it instead of making two documents. Made sure of
//! once per collection and client (an existing one over exactly the same keys is the one
//! needed).

use mongodb::bson::{doc, Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

use crate::engine::client::driver_error::is_duplicate_key;
use crate::engine::counter::locator::{FieldsLocator, Locator};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::store::counter_store::CounterRef;
use crate::engine::store::mongo_driver::MongoDriver;

impl MongoDriver {
    /// Makes sure of a unique index over the locator's fields, once per collection for
    /// this client; nothing for a counter found by `_id`, whose index always exists. An
    /// existing unique index over exactly these keys is the index needed, whatever its
    /// other options (`background: true`, as mongoose-sequence made it, or another
    /// name): it is looked for first, and again when creating fails (some servers refuse
    /// to create an index that exists with other options; another process may have made
    /// it meanwhile). Creating one is the last resort.
    pub async fn ensure_unique_index(&self, counter: &CounterRef) -> SeqResult<()> {
        let Locator::ByFields(fields) = &counter.locator else {
            return Ok(());
        };
        let key = (
            self.database().name().to_string(),
            counter.collection.clone(),
            fields.index_name().to_string(),
        );
        if self.index_memo().lock().await.contains(&key) {
            return Ok(());
        }
        // A failed look is no answer: creating decides.
        if !matches!(self.has_unique_index(counter, fields).await, Ok(true)) {
            self.create_unique_index(counter, fields).await?;
        }
        self.index_memo().lock().await.insert(key);
        Ok(())
    }

    async fn create_unique_index(
        &self,
        counter: &CounterRef,
        fields: &FieldsLocator,
    ) -> SeqResult<()> {
        let model = IndexModel::builder()
            .keys(fields.index_keys())
            .options(IndexOptions::builder().unique(true).build())
            .build();
        let sent = self.send("createIndexes", &counter.collection, Some(&counter.label));
        let created = self
            .database()
            .collection::<Document>(&counter.collection)
            .create_index(model)
            .await
            .map(|_| ())
            // Refused as the call would be refused: its event carries the call's code.
            .map_err(|e| match is_duplicate_key(&e) {
                true => SeqError::index_conflict(
                    &counter.label,
                    &counter.collection,
                    fields.index_name(),
                ),
                false => self.error(&e),
            });
        self.answered(sent, &created, 0);
        if created.is_err() && matches!(self.has_unique_index(counter, fields).await, Ok(true)) {
            return Ok(());
        }
        created
    }

    /// Whether `counter`'s collection has a unique index over exactly the locator's keys
    /// (in order) that guards every document with the simple collation: not partial,
    /// no other collation. A missing collection has none.
    async fn has_unique_index(
        &self,
        counter: &CounterRef,
        fields: &FieldsLocator,
    ) -> SeqResult<bool> {
        let sent = self.send("listIndexes", &counter.collection, Some(&counter.label));
        let listed = self
            .database()
            .run_command(doc! { "listIndexes": &counter.collection })
            .await;
        let reply = match listed {
            Ok(reply) => Ok(Some(reply)),
            // No collection: no index, an answer like any other.
            Err(e) if is_namespace_not_found(&e) => Ok(None),
            Err(e) => Err(self.error(&e)),
        };
        self.answered(sent, &reply, 0);
        let Some(reply) = reply? else {
            return Ok(false);
        };
        let batch = reply
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .map_err(|_| SeqError::internal("listIndexes answered without a cursor"))?;
        let wanted = fields.index_keys();
        Ok(batch.iter().any(|index| match index {
            Bson::Document(index) => guards_exactly(index, &wanted),
            _ => false,
        }))
    }
}

/// Whether the index described by `index` (a `listIndexes` entry) is unique over
/// exactly the keys `wanted` (same order, each ascending) for every document: not
/// partial, and with no collation other than the simple one.
fn guards_exactly(index: &Document, wanted: &Document) -> bool {
    let Ok(keys) = index.get_document("key") else {
        return false;
    };
    let same_keys = keys.len() == wanted.len()
        && keys
            .iter()
            .zip(wanted.keys())
            .all(|((name, direction), want)| name == want && ascending(direction));
    let unique = match index.get("unique") {
        Some(Bson::Boolean(b)) => *b,
        Some(other) => ascending(other),
        None => false,
    };
    let simple_collation = match index.get_document("collation") {
        Ok(collation) => collation.get_str("locale") == Ok("simple"),
        Err(_) => !index.contains_key("collation"),
    };
    same_keys && unique && simple_collation && !index.contains_key("partialFilterExpression")
}

/// Whether an index key direction (or a numeric flag) is 1, in whatever number type.
fn ascending(value: &Bson) -> bool {
    match value {
        Bson::Int32(v) => *v == 1,
        Bson::Int64(v) => *v == 1,
        Bson::Double(v) => *v == 1.0,
        _ => false,
    }
}

/// Whether the server answered that the collection does not exist (`NamespaceNotFound`).
fn is_namespace_not_found(error: &mongodb::error::Error) -> bool {
    matches!(
        error.kind.as_ref(),
        mongodb::error::ErrorKind::Command(c) if c.code == 26
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_unique_index_over_the_same_keys_is_the_one_needed() {
        let wanted = doc! { "id": 1, "reference_value": 1 };
        let mongoose = doc! {
            "v": 2, "key": { "id": 1, "reference_value": 1 },
            "name": "id_1_reference_value_1", "unique": true, "background": true,
        };
        assert!(guards_exactly(&mongoose, &wanted));
        for (key, value) in [("id", Bson::Int64(1)), ("id", Bson::Double(1.0))] {
            let mut other = mongoose.clone();
            other.insert("key", doc! { key: value, "reference_value": 1 });
            other.insert("name", "another name");
            assert!(guards_exactly(&other, &wanted), "{other}");
        }
        let mut simple = mongoose.clone();
        simple.insert("collation", doc! { "locale": "simple" });
        assert!(guards_exactly(&simple, &wanted));
        let mut numeric_unique = mongoose.clone();
        numeric_unique.insert("unique", 1);
        assert!(guards_exactly(&numeric_unique, &wanted));
    }

    #[test]
    fn an_index_that_does_not_guard_every_counter_is_not() {
        let wanted = doc! { "id": 1, "reference_value": 1 };
        let base = doc! { "key": { "id": 1, "reference_value": 1 }, "unique": true };
        let mut variants = Vec::new();
        for (field, value) in [
            ("unique", Bson::Boolean(false)),
            ("unique", Bson::Int32(0)),
            ("unique", Bson::String("yes".into())),
            (
                "partialFilterExpression",
                Bson::Document(doc! { "id": "a" }),
            ),
            (
                "collation",
                Bson::Document(doc! { "locale": "en", "strength": 2 }),
            ),
            ("collation", Bson::String("simple".into())),
            (
                "key",
                Bson::Document(doc! { "reference_value": 1, "id": 1 }),
            ),
            ("key", Bson::Document(doc! { "id": 1 })),
            (
                "key",
                Bson::Document(doc! { "id": 1, "reference_value": -1 }),
            ),
            (
                "key",
                Bson::Document(doc! { "id": 1, "reference_value": 1, "x": 1 }),
            ),
            (
                "key",
                Bson::Document(doc! { "id": "hashed", "reference_value": 1 }),
            ),
            ("key", Bson::String("id_1".into())),
        ] {
            let mut index = base.clone();
            index.insert(field, value);
            variants.push(index);
        }
        let mut not_unique = base.clone();
        not_unique.remove("unique");
        variants.push(not_unique);
        for index in variants {
            assert!(!guards_exactly(&index, &wanted), "{index}");
        }
        assert!(guards_exactly(&base, &wanted));
    }
}
