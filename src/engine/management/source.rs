//! The values a collection already uses, for `syncToMax`: the values a dotted path
//! reaches in a document as MongoDB's queries see them, the one furthest along a
//! direction, and the query that finds it on the server.

use mongodb::bson::{doc, Bson, Document};

use crate::engine::error::SeqResult;
use crate::engine::management::SourceValues;
use crate::engine::store::counter_store::Direction;
use crate::engine::store::mongo_driver::{latest, on_primary, MongoDriver};

/// 2^63 as a double: the first double beyond the 64-bit integer range.
pub(crate) const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

/// The value `syncToMax` takes from a source value, rounded toward `direction`: whole
/// numbers within the 64-bit range as they are, finite doubles and decimals (an import's
/// `Decimal128` ids, a mongoose `Decimal128` field) rounded up (`Up`) or down (`Down`) so
/// the counter passes them; non-finite or out-of-range ones and every other type give
/// `None`.
pub fn usable_value(value: &Bson, direction: Direction) -> Option<i64> {
    match value {
        Bson::Decimal128(d) => decimal_value(&d.to_string(), direction),
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

/// A decimal as written by `Decimal128`'s `Display` (`"-12.50"`, `"1.2E+3"`, `"NaN"`),
/// rounded toward `direction` to a 64-bit integer, exactly (a double would round
/// `9007199254740993` away); `None` for NaN, infinities and values out of range.
fn decimal_value(text: &str, direction: Direction) -> Option<i64> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (coefficient, exponent) = match text.split_once(['E', 'e']) {
        Some((c, e)) => (c, e.parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = coefficient.split_once('.').unwrap_or((coefficient, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None; // NaN, Infinity
    }
    // At most 34 significant digits: an i128 holds them.
    let magnitude: i128 = digits.parse().ok()?;
    let scale = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
    // |value| = magnitude · 10^scale, rounded away from or toward zero as the sign and
    // the direction ask.
    let away = matches!(
        (negative, direction),
        (false, Direction::Up) | (true, Direction::Down)
    );
    let truncated = if scale >= 0 {
        if magnitude == 0 {
            0
        } else {
            let shift = u32::try_from(scale).ok().filter(|s| *s <= 38)?;
            magnitude.checked_mul(10i128.checked_pow(shift)?)?
        }
    } else {
        let shift = u32::try_from(-scale).unwrap_or(u32::MAX);
        match 10i128.checked_pow(shift) {
            Some(divisor) => {
                let (quotient, rest) = (magnitude / divisor, magnitude % divisor);
                quotient + i128::from(away && rest != 0)
            }
            // 10^39 or more: past every magnitude of 34 digits.
            None => i128::from(away && magnitude != 0),
        }
    };
    i64::try_from(if negative { -truncated } else { truncated }).ok()
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
    /// The name, as shown in messages, of the counter synced (for round-trip events).
    pub counter: &'a str,
}

impl SourceValues for SourceField<'_> {
    async fn extreme(&self, direction: Direction) -> SeqResult<Option<i64>> {
        self.driver
            .extreme_in(&self.collection, &self.path, direction, self.counter)
            .await
    }
}

impl MongoDriver {
    /// The usable value furthest along `direction` that `path` reaches in collection
    /// `source` ([`extreme_of`]); `None` when there is none.
    ///
    /// Without arrays on the path, the first document of a sort on it is the answer (an
    /// index on the path makes that one read). An array anywhere on the path makes a
    /// sort compare each document by one element of its choosing, so then every document
    /// holding a number there is read and every element looked at. Each read is
    /// published as a round-trip event for `counter` (a name as shown in messages) when
    /// this driver publishes its commands.
    pub async fn extreme_in(
        &self,
        source: &str,
        path: &str,
        direction: Direction,
        counter: &str,
    ) -> SeqResult<Option<i64>> {
        let collection = self.database().collection::<Document>(source);
        // Values outside the 64-bit range (a stray 1e300, 2^63 - 0.5 as a decimal, which
        // rounds up past it; infinities, NaN) are skipped on the server: the first
        // document of the sort must be usable, or it would hide the real extreme.
        let filter = doc! {
            path: {
                "$type": ["int", "long", "double", "decimal"],
                "$lte": i64::MAX,
                "$gte": i64::MIN,
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
        if !self.arrays_on(source, path, counter).await? {
            let order = match direction {
                Direction::Up => -1,
                Direction::Down => 1,
            };
            let sent = self.send("find", source, Some(counter));
            let first = collection
                .find_one(filter)
                .sort(doc! { path: order })
                .projection(projection)
                .selection_criteria(on_primary())
                .read_concern(latest())
                .await
                .map_err(|e| self.error(&e));
            self.answered(sent, &first, 0);
            return Ok(extreme_of(first?.as_ref(), path, direction));
        }
        // One event for the whole scan, its `getMore`s included.
        let sent = self.send("find", source, Some(counter));
        let scanned = async {
            let cursor = collection
                .find(filter)
                .projection(projection)
                .selection_criteria(on_primary())
                .read_concern(latest())
                .await
                .map_err(|e| self.error(&e))?;
            self.extreme_streamed(cursor, path, direction).await
        };
        let best = scanned.await;
        self.answered(sent, &best, 0);
        best
    }

    /// The usable value furthest along `direction` that `path` reaches in the documents
    /// of `cursor`, streamed one document at a time: a large collection is never held
    /// whole.
    async fn extreme_streamed(
        &self,
        mut cursor: mongodb::Cursor<Document>,
        path: &str,
        direction: Direction,
    ) -> SeqResult<Option<i64>> {
        use futures_util::TryStreamExt;
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
    async fn arrays_on(&self, source: &str, path: &str, counter: &str) -> SeqResult<bool> {
        if path == "_id" {
            return Ok(false);
        }
        let steps: Vec<&str> = path.split('.').collect();
        let any_array: Vec<Bson> = (1..=steps.len())
            .map(|n| Bson::Document(doc! { steps[..n].join("."): { "$type": "array" } }))
            .collect();
        let sent = self.send("find", source, Some(counter));
        let found = self
            .database()
            .collection::<Document>(source)
            .find_one(doc! { "$or": any_array })
            .projection(doc! { "_id": 1 })
            .selection_criteria(on_primary())
            .read_concern(latest())
            .await
            .map_err(|e| self.error(&e));
        self.answered(sent, &found, 0);
        Ok(found?.is_some())
    }
}
