//! Listing the counters of a collection (`listSequences`).

use mongodb::action::Action;
use mongodb::bson::{doc, Bson, Document};

use crate::engine::counter::capacity::{capacity, Capacity, StoredType};
use crate::engine::counter::counter_value::{counted_value, integer_after_increment};
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::SeqResult;
use crate::engine::store::mongo_driver::MongoDriver;
use crate::engine::text::validate::check_field;

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
        check_field(field)?;
        let filter = doc! { field: { "$type": ["int", "long", "double"] } };
        // Only the value and configuration fields travel (`_id` always does), and each
        // document is converted as it arrives: a counters collection holding large
        // documents is never loaded whole.
        // One event for the whole read, the `getMore`s of a long listing included.
        let sent = self.send("find", collection, None);
        let read = async {
            let cursor = self
                .database()
                .collection::<Document>(collection)
                .find(filter)
                .projection(crate::engine::store::filters::value_and_config_projection(
                    field,
                ))
                .sort(doc! { "_id": 1 })
                // A listing only reports: it reads where and how the `Db` reads.
                .optional(self.reads().concern(), |find, c| find.read_concern(c))
                .optional(self.reads().criteria(), |find, c| {
                    find.selection_criteria(c)
                })
                .await
                .map_err(|e| self.error(&e))?;
            self.listed(cursor, field).await
        };
        let listed = read.await;
        self.answered(sent, &listed, 0);
        listed
    }

    /// The counters `cursor` finds, converted as they arrive.
    async fn listed(
        &self,
        mut cursor: mongodb::Cursor<Document>,
        field: &str,
    ) -> SeqResult<Vec<ListedCounter>> {
        use futures_util::TryStreamExt;
        let mut listed = Vec::new();
        while let Some(d) = cursor.try_next().await.map_err(|e| self.error(&e))? {
            let parsed = SequenceConfig::from_doc(&d, field);
            // A plain counter may hold a fraction another plugin left: listed as the
            // whole number an ascending counter reads it as (the step of a plain
            // counter is its callers', unknown here).
            let value = match &parsed {
                Ok(None) => counted_value(d.get(field), 1),
                _ => integer_after_increment(d.get(field)),
            };
            let config = parsed.ok().flatten();
            let Ok(value) = value else {
                continue;
            };
            let Some(stored) = d.get(field).and_then(StoredType::of) else {
                continue;
            };
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
}
