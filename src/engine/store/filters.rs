//! The filters and updates of every counter write, shared by the stores that talk to
//! MongoDB (with or without a transaction).

use mongodb::bson::{doc, Document};

use crate::engine::counter::counter_value::compact_integer;
use crate::engine::counter::id_range::IdRange;
use crate::engine::counter::locator::Locator;
use crate::engine::counter::sequence_config::{ConfigFields, SequenceConfig};
use crate::engine::store::counter_store::{
    CounterDoc, CounterRef, Direction, FetchToken, FieldGuard,
};

/// The fields that let a give-back see raises by other processes and whether the counter
/// is still as its own fetch left it. A process giving back its unused cached values puts
/// the counter back only where nobody moved it; a raise (`$max`) to a value the counter
/// is already past moves nothing, so without a mark the give-back would put the counter
/// back below a number given explicitly, and the number would be handed out again. Only
/// counters numbered through a cache carry them: the documents of everyone else stay as
/// they were.
///
/// They live under one top-level field, [`CacheMarks::ROOT`], which no counter field and
/// no locator field may be: a document holds several counters (other fields), and marks
/// named after their counter (`seq_cached`) would overwrite a counter of that name.
pub struct CacheMarks {
    /// `_mseq_marks.<field>`: every mark of the counter, removed as one.
    pub all: String,
    /// `_mseq_marks.<field>.cached`: the token of the last fetch of the counter's values
    /// into a cache ([`FetchToken`], written by each such fetch with its increment,
    /// removed by `set`, `reset` and `setCountersWhere`).
    pub cached: String,
    /// `_mseq_marks.<field>.raised`: the furthest value a raise moved the counter on
    /// to, or found it already past, since it was flagged `cached`.
    pub raised: String,
}

impl CacheMarks {
    /// The top-level field holding the marks of every counter of a document.
    pub const ROOT: &'static str = "_mseq_marks";
    /// The flag's name under a counter's marks.
    const CACHED: &'static str = "cached";
    /// The raised mark's name under a counter's marks.
    const RAISED: &'static str = "raised";

    /// The paths for counter field `field`.
    pub fn of(field: &str) -> CacheMarks {
        let all = format!("{}.{field}", CacheMarks::ROOT);
        CacheMarks {
            cached: format!("{all}.{}", CacheMarks::CACHED),
            raised: format!("{all}.{}", CacheMarks::RAISED),
            all,
        }
    }
}

/// `update` also flagging the counter with the fetch's token when `counter` fetches
/// into a cache (beside what it already `$set`s).
fn flagged(counter: &CounterRef, mut update: Document) -> Document {
    if let Some(token) = counter.cached {
        let flag = CacheMarks::of(&counter.field).cached;
        match update.get_document_mut("$set") {
            Ok(set) => {
                set.insert(flag, token.to_bson());
            }
            Err(_) => {
                update.insert("$set", doc! { flag: token.to_bson() });
            }
        }
    }
    update
}

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

/// `$inc` the counter field by `by` (flagging a cached counter).
pub fn increment(counter: &CounterRef, by: i64) -> Document {
    flagged(
        counter,
        doc! { "$inc": { counter.field.as_str(): compact_integer(by) } },
    )
}

/// The operator that moves a value only along `direction`.
fn further_operator(direction: Direction) -> &'static str {
    match direction {
        Direction::Up => "$max",
        Direction::Down => "$min",
    }
}

/// `$max` (`Up`) or `$min` (`Down`) the counter field with `value`: it only ever moves
/// along the counter's direction.
pub fn raise_value(counter: &CounterRef, value: i64, direction: Direction) -> Document {
    doc! { further_operator(direction): { counter.field.as_str(): compact_integer(value) } }
}

/// [`raise_value`], and the raised mark ([`CacheMarks::raised`]) moved on the same way,
/// for a counter flagged as cached.
pub fn raise_marked(counter: &CounterRef, value: i64, direction: Direction) -> Document {
    let value = compact_integer(value);
    doc! {
        further_operator(direction): {
            counter.field.as_str(): value.clone(),
            CacheMarks::of(&counter.field).raised: value,
        }
    }
}

/// A counter flagged as cached ([`CacheMarks::cached`], whichever fetch's token it
/// holds), or (`false`) one that is not.
pub fn cached_flag(counter: &CounterRef, mut filter: Document, cached: bool) -> Document {
    filter.insert(
        CacheMarks::of(&counter.field).cached,
        doc! { "$exists": cached },
    );
    filter
}

/// The counter a give-back of `tail` may put back: configured as `config`, holding
/// exactly `tail.last`, flagged with `token` (the fetch that left it there, and nothing
/// that removes the flag since), with no raise marked at a value of `tail` or beyond (a
/// mark is never beyond the counter, so "beyond" only matters after a `set` moved the
/// counter back, where refusing costs a gap, never a number twice).
pub fn returnable(
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
    tail: IdRange,
    token: FetchToken,
) -> Document {
    let mut filter = configured_at(counter, config, Some(tail.last));
    filter.insert(CacheMarks::of(&counter.field).cached, token.to_bson());
    let reaches = if tail.step > 0 { "$gte" } else { "$lte" };
    filter.insert(
        CacheMarks::of(&counter.field).raised,
        doc! { "$not": { reaches: compact_integer(tail.first) } },
    );
    filter
}

/// `$set` the counter field to `value` for a management write that puts the counter
/// anywhere (`set`, `reset`, `setCountersWhere`): the cache marks go too
/// ([`CounterStore::compare_and_set`]). The flag, because a give-back computed before
/// the write must not apply after it, however the counter comes back to the value it
/// expects; the raised mark, because numbers given before the write no longer hold
/// back the give-back of values fetched after it.
///
/// [`CounterStore::compare_and_set`]: crate::engine::store::counter_store::CounterStore::compare_and_set
pub fn set_value_unmarked(counter: &CounterRef, value: i64) -> Document {
    doc! {
        "$set": { counter.field.as_str(): compact_integer(value) },
        "$unset": { CacheMarks::of(&counter.field).all: "" },
    }
}

/// `$set` the counter field to `value` (flagging a cached counter).
pub fn set_value(counter: &CounterRef, value: i64) -> Document {
    flagged(
        counter,
        doc! { "$set": { counter.field.as_str(): compact_integer(value) } },
    )
}

/// The filter of a creation that stores `fields` (the counter's value, start and
/// configuration): the counter's document holding none of them. It matches a document
/// that holds other counters and not this one, which the creation fills in; without one,
/// the creation's upsert inserts the document. A document where the counter exists, or
/// where another counter is named like one of the fields (`<field>_start` beside
/// `<field>`), matches nothing: the upsert then collides with it on the locator's index
/// and the counter is not created, nothing overwritten.
pub fn without_counter(counter: &CounterRef, fields: &Document) -> Document {
    let mut filter = counter.filter();
    for name in fields.keys() {
        filter.insert(name.as_str(), doc! { "$exists": false });
    }
    filter
}

/// The update of a creation ([`without_counter`]): `$set` each of `fields`, and the
/// counter's marks made anew (left by a counter of the same field removed by other code,
/// they would not be this one's): a cached fetch's flag alone, or none.
pub fn creation(counter: &CounterRef, fields: Document) -> Document {
    let marks = CacheMarks::of(&counter.field).all;
    match counter.cached {
        Some(token) => {
            let mut set = fields;
            set.insert(marks, doc! { CacheMarks::CACHED: token.to_bson() });
            doc! { "$set": set }
        }
        None => doc! { "$set": fields, "$unset": { marks: "" } },
    }
}

/// The top-level fields the document of `counter` holds for it alone: its field, its
/// configuration and start, and its marks' root. A document with nothing else (but its
/// `_id`, the locator's fields, and mongoose's version key) is the counter's own.
fn own_top_fields(counter: &CounterRef) -> Vec<String> {
    let names = ConfigFields::of(&counter.field);
    let mut own = vec![
        "_id".to_string(),
        "__v".to_string(),
        CacheMarks::ROOT.to_string(),
        counter.field.clone(),
        names.start,
        names.step,
        names.min,
        names.max,
        names.cycle,
    ];
    if let Locator::ByFields(located) = &counter.locator {
        // Top-level names (`FieldsLocator::new` refuses paths).
        own.extend(located.fields().keys().cloned());
    }
    own
}

/// The filter of a drop that deletes the counter's document: the counter exists, and the
/// document holds nothing besides it ([`own_top_fields`]). A document that also holds
/// other counters, or anything else another program keeps there, is never deleted by a
/// drop: [`removal`] takes only the counter out of it.
pub fn alone_in_document(counter: &CounterRef) -> Document {
    let mut filter = with_counter(counter);
    let keys = doc! { "$map": { "input": { "$objectToArray": "$$ROOT" }, "in": "$$this.k" } };
    filter.insert(
        "$expr",
        doc! { "$setIsSubset": [keys, own_top_fields(counter)] },
    );
    filter
}

/// The counter's document while the counter exists in it.
pub fn with_counter(counter: &CounterRef) -> Document {
    let mut filter = counter.filter();
    filter.insert(counter.field.as_str(), doc! { "$exists": true });
    filter
}

/// The update of a drop that keeps the document ([`with_counter`]): the counter's field,
/// configuration, start and marks removed, whatever else the document holds left as it is.
pub fn removal(counter: &CounterRef) -> Document {
    let names = ConfigFields::of(&counter.field);
    doc! {
        "$unset": {
            counter.field.as_str(): "",
            names.start: "",
            names.step: "",
            names.min: "",
            names.max: "",
            names.cycle: "",
            CacheMarks::of(&counter.field).all: "",
        }
    }
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
    use crate::engine::counter::locator::FieldsLocator;
    use crate::engine::text::validate::check_field;
    use mongodb::bson::Bson;

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
    fn a_cache_fetch_flags_the_counter_with_its_token_and_nothing_else_does() {
        let plain = counter();
        let token = FetchToken::fresh();
        let cached = counter().through_cache(token);
        assert_eq!(increment(&plain, 3), doc! { "$inc": { "seq": 3 } });
        assert_eq!(
            increment(&cached, 3),
            doc! { "$inc": { "seq": 3 }, "$set": { "_mseq_marks.seq.cached": token.to_bson() } }
        );
        assert_eq!(set_value(&plain, 7), doc! { "$set": { "seq": 7 } });
        assert_eq!(
            set_value(&cached, 7),
            doc! { "$set": { "seq": 7, "_mseq_marks.seq.cached": token.to_bson() } }
        );
        assert_ne!(FetchToken::fresh(), token, "one token per fetch");
    }

    #[test]
    fn a_write_that_puts_the_counter_anywhere_removes_both_marks() {
        assert_eq!(
            set_value_unmarked(&counter(), 7),
            doc! {
                "$set": { "seq": 7 },
                "$unset": { "_mseq_marks.seq": "" },
            }
        );
    }

    #[test]
    fn a_raise_marks_only_on_a_flagged_counter_in_its_direction() {
        let c = counter();
        assert_eq!(
            raise_value(&c, 5, Direction::Up),
            doc! { "$max": { "seq": 5 } }
        );
        assert_eq!(
            raise_marked(&c, 5, Direction::Up),
            doc! { "$max": { "seq": 5, "_mseq_marks.seq.raised": 5 } }
        );
        assert_eq!(
            raise_marked(&c, -5, Direction::Down),
            doc! { "$min": { "seq": -5, "_mseq_marks.seq.raised": -5 } }
        );
        // Flagged by any fetch's token (or any value at all).
        let mut flagged = configured_as(&c, None);
        flagged.insert("_mseq_marks.seq.cached", doc! { "$exists": true });
        assert_eq!(cached_flag(&c, configured_as(&c, None), true), flagged);
        let mut unflagged = configured_as(&c, None);
        unflagged.insert("_mseq_marks.seq.cached", doc! { "$exists": false });
        assert_eq!(cached_flag(&c, configured_as(&c, None), false), unflagged);
    }

    #[test]
    fn a_give_back_needs_its_own_fetchs_flag_and_no_mark_reaching_its_tail() {
        let c = counter();
        let token = FetchToken::fresh();
        let up = IdRange::contiguous(4, 9);
        let mut expected = configured_at(&c, None, Some(9));
        expected.insert("_mseq_marks.seq.cached", token.to_bson());
        expected.insert("_mseq_marks.seq.raised", doc! { "$not": { "$gte": 4 } });
        assert_eq!(returnable(&c, None, up, token), expected);
        let down = IdRange {
            first: -4,
            last: -9,
            step: -1,
        };
        let mut expected = configured_at(&c, None, Some(-9));
        expected.insert("_mseq_marks.seq.cached", token.to_bson());
        expected.insert("_mseq_marks.seq.raised", doc! { "$not": { "$lte": -4 } });
        assert_eq!(returnable(&c, None, down, token), expected);
    }

    /// Every path a document of `docs` names: the keys of a filter, the keys under each
    /// operator of an update.
    fn paths(docs: &[Document]) -> Vec<String> {
        let mut out = Vec::new();
        for doc in docs {
            for (key, value) in doc {
                match (key.starts_with('$'), value) {
                    (true, Bson::Document(inner)) => out.extend(inner.keys().cloned()),
                    _ => out.push(key.clone()),
                }
            }
        }
        out
    }

    /// A document holds several counters, in other fields: what the writes of a cached
    /// counter `seq` name beyond its own field and configuration (its fetches, raises,
    /// `set`/`reset` and give-back) lies under the reserved field, which no counter field
    /// may be, so counters named `seq_cached` or `seq_raised` keep their values.
    #[test]
    fn the_marks_of_a_counter_name_no_field_another_counter_may_hold() {
        let c = counter();
        let token = FetchToken::fresh();
        let cached = counter().through_cache(token);
        let tail = IdRange::contiguous(4, 9);
        let written = paths(&[
            plain_integer(&cached),
            increment(&cached, 3),
            set_value(&cached, 7),
            cached_flag(&c, configured_as(&c, None), true),
            cached_flag(&c, configured_as(&c, None), false),
            raise_marked(&c, 5, Direction::Up),
            set_value_unmarked(&c, 0),
            returnable(&c, None, tail, token),
            set_value(&c, 3),
        ]);
        let own = ["_id", "seq", "seq_step"];
        for path in &written {
            let root = path.split('.').next().unwrap_or_default();
            assert!(
                own.contains(&path.as_str()) || check_field(root).is_err(),
                "{path} may be another counter's field"
            );
        }
        for neighbour in ["seq_cached", "seq_raised"] {
            assert!(check_field(neighbour).is_ok());
            assert!(!written.iter().any(|p| p == neighbour), "{neighbour}");
        }
        assert!(written.iter().any(|p| p == "_mseq_marks.seq.cached"));
        assert!(written.iter().any(|p| p == "_mseq_marks.seq.raised"));
        // A fetch that creates the counter stores the flag where its updates find it.
        assert_eq!(
            creation(&cached, doc! { "seq": 1 }),
            doc! { "$set": { "seq": 1, "_mseq_marks.seq": { "cached": token.to_bson() } } }
        );
        assert_eq!(
            creation(&c, doc! { "seq": 1 }),
            doc! { "$set": { "seq": 1 }, "$unset": { "_mseq_marks.seq": "" } },
            "only a cache's fetch flags; marks left by an earlier counter go"
        );
    }

    /// A drop deletes a document only when it holds nothing but the counter: its `_id`,
    /// its fields, its marks' root, mongoose's version key and, for a located counter,
    /// the locator's top-level fields. Otherwise it removes only what is the counter's.
    #[test]
    fn a_drop_deletes_only_a_document_the_counter_has_alone() {
        let named = CounterRef::new("counters", "seq", CounterName::text("a").unwrap());
        let allowed = |filter: &Document| -> Vec<String> {
            let subset = filter.get_document("$expr").unwrap();
            let args = subset.get_array("$setIsSubset").unwrap();
            args[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        let alone = alone_in_document(&named);
        assert_eq!(alone.get_str("_id").unwrap(), "a");
        assert_eq!(
            alone.get_document("seq").unwrap(),
            &doc! { "$exists": true }
        );
        let own = allowed(&alone);
        for field in ["_id", "__v", "_mseq_marks", "seq", "seq_start", "seq_step"] {
            assert!(own.iter().any(|f| f == field), "{field}");
        }
        for field in ["seq_min", "seq_max", "seq_cycle"] {
            assert!(own.iter().any(|f| f == field), "{field}");
        }
        assert_eq!(own.len(), 9, "nothing else: {own:?}");
        let fields = doc! { "model": "M", "field": "n" };
        let locator = Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap());
        let located = named.clone().located(locator, 1);
        let own = allowed(&alone_in_document(&located));
        assert!(own.iter().any(|f| f == "model") && own.iter().any(|f| f == "field"));
        assert_eq!(own.len(), 11, "{own:?}");
        assert_eq!(
            removal(&named),
            doc! { "$unset": {
                "seq": "", "seq_start": "", "seq_step": "", "seq_min": "", "seq_max": "",
                "seq_cycle": "", "_mseq_marks.seq": "",
            } }
        );
        assert_eq!(
            without_counter(&named, &doc! { "seq": 0, "seq_start": 1 }),
            doc! { "_id": "a", "seq": { "$exists": false }, "seq_start": { "$exists": false } },
            "a neighbour named like one of its fields is never overwritten"
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
