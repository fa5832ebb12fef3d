//! `insertOne` / `insertMany` with a sequence-assigned field: all values of a call are
//! reserved in one round trip, set on the documents, and the documents are inserted with
//! the Node driver's own `db.collection(name).insertOne/insertMany`.

use crate::binding::guard::{promise_call, sync_call};
use crate::binding::option_specs;
use crate::engine::panic_safety::caught;
use napi::bindgen_prelude::{Env, Function, JsObjectValue, Object, ObjectRef, PromiseRaw, Unknown};
use napi::{JsValue, ValueType};

use crate::binding::calls::{reserve_in_order, NamedCounter};
use crate::binding::js_error::to_js_error;
use crate::binding::js_read::{
    array_items, array_length, describe, element, is_nullish, object, object_or_array, property,
    required_string, type_of,
};
use crate::binding::js_to_bson::to_document;
use crate::binding::located::read_locator;
use crate::binding::name::read_counter_name;
use crate::binding::options::{read_integer, read_options_from};
use crate::binding::output::Value;
use crate::engine::alloc::allocate::IdRange;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::locator::Locator;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::gapless::{insert_gapless, NumberedInsert};
use crate::engine::text::format::now_millis;
use crate::engine::text::validate::{
    check_collection, check_field_name, FieldUse, MAX_BATCH_COUNT,
};
use mongodb::bson::{Bson, Document};

/// Options of `insertOne` / `insertMany`.
#[napi(object)]
pub struct InsertOptions {
    /// Document field that receives the number. Default `'_id'`.
    pub field: Option<String>,
    /// Sequence name (string or scope object). Default: the collection name.
    #[napi(ts_type = "string | Record<string, string | number | boolean | bigint>")]
    pub sequence: Option<String>,
    /// Collection of counter documents. Default `'counters'`.
    pub counters: Option<String>,
    /// Field of the counter document. Default `'sequence_value'`.
    pub counter_field: Option<String>,
    /// Create the counter on first use. Default `true` here.
    pub upsert: Option<bool>,
    /// First value of a counter created by the call. Default `1`.
    #[napi(ts_type = "number | bigint")]
    pub start: Option<f64>,
    /// Store BigInt values (needed past 2^53 - 1).
    pub bigint: Option<bool>,
    /// Store business numbers formatted by this pattern (see `formatSequence`).
    pub format: Option<String>,
    /// Write concern of the counter write (the insert uses the driver's own settings).
    pub write_concern: Option<crate::binding::options::WriteConcernOptions>,
    /// As for the sequence functions.
    pub uri: Option<String>,
    /// As for the sequence functions.
    pub coalesce: Option<bool>,
    /// As for the sequence functions.
    pub cache: Option<u32>,
    /// Increment the counter and insert the documents in one transaction, so a failed
    /// insert gives its numbers back (no gap). Serialises the writers of the counter and
    /// needs a replica set or sharded cluster (`TRANSACTIONS_UNSUPPORTED` otherwise). The
    /// package then inserts the documents itself (with the client of `db`); the driver's
    /// `_id` is not written back to them. Default `false`.
    pub gapless: Option<bool>,
    /// Find the counter by these fields instead of by its name (as `counterAt`), e.g.
    /// mongoose-sequence's `{ id, reference_value }`; `sequence` then only names it in
    /// messages.
    #[napi(ts_type = "Record<string, unknown>")]
    pub counter_locator: Option<String>,
    /// Distance between the values of a plain counter (as `counterAt`). Default `1`.
    #[napi(ts_type = "number | bigint")]
    pub step: Option<f64>,
}

/// An insert call whose arguments were read and checked.
struct Insert {
    collection: String,
    field: String,
    many: bool,
    named: NamedCounter,
    count: i64,
    /// The documents as BSON, in gapless mode.
    gapless: Option<Vec<Document>>,
}

fn read_insert(
    env: &Env,
    db: &Unknown,
    collection: &Unknown,
    docs: &[Unknown],
    options: Option<&Unknown>,
    many: bool,
) -> SeqResult<Insert> {
    let collection = required_string("collection", collection)?;
    check_collection(&collection)?;
    let mut set_aside: Vec<&str> = option_specs::INSERT.iter().map(|(k, _)| *k).collect();
    set_aside.push(option_specs::INSERT_REFUSED);
    let (mut options, extra) = read_options_from(options, &[option_specs::INSERT], &set_aside)?;
    let mut gapless = false;
    let mut locator = None;
    options.upsert = true;
    let mut field = "_id".to_string();
    let mut sequence = CounterName::text(&collection)?;
    for (key, value) in extra {
        match key.as_str() {
            "field" => field = option_specs::text(&key, &value)?,
            "sequence" => sequence = read_counter_name(&value)?,
            "counters" => options.collection = option_specs::text(&key, &value)?.into(),
            "counterField" => options.field = option_specs::text(&key, &value)?.into(),
            "upsert" => options.upsert = option_specs::flag(&key, &value)?,
            "gapless" => gapless = option_specs::flag(&key, &value)?,
            "counterLocator" => locator = Some(value),
            "step" => options.step = read_integer(&key, &value)?,
            _ => {
                return Err(SeqError::invalid_argument(
                    "insertOne/insertMany take 'counters' for the counters collection, \
                     not 'collection'",
                ))
            }
        }
    }
    if let Some(fields) = locator {
        options.locator = Locator::ByFields(read_locator(
            &fields,
            "option 'counterLocator'",
            &options.field,
        )?);
    }
    check_field_name("option 'field'", &field, FieldUse::NumberedDocument)?;
    for (index, doc) in docs.iter().enumerate() {
        let doc = object(doc).ok_or_else(|| {
            SeqError::invalid_argument(format!(
                "document {index} must be a plain object; got {}",
                describe(doc)
            ))
        })?;
        if !is_nullish(&property(&doc, &field)?) {
            return Err(SeqError::invalid_argument(format!(
                "document {index} already has '{field}'; the sequence assigns it"
            )));
        }
    }
    let has_collection_fn = object(db)
        .and_then(|d| property(&d, "collection").ok())
        .is_some_and(|f| type_of(&f) == ValueType::Function);
    if !gapless && !has_collection_fn {
        return Err(SeqError::invalid_argument(
            "insertOne/insertMany need a Node driver Db (client.db(name) or \
             mongoose.connection.db) to insert through its collection(), or gapless: true",
        ));
    }
    let gapless = if gapless {
        Some(
            docs.iter()
                .map(to_document)
                .collect::<SeqResult<Vec<_>>>()?,
        )
    } else {
        None
    };
    Ok(Insert {
        named: NamedCounter::from_parts(env, db, sequence, options)?,
        collection,
        field,
        many,
        count: docs.len() as i64,
        gapless,
    })
}

/// Numbers the documents, then calls the driver; returns the driver's promise.
fn insert_now<'env>(
    env: &'env Env,
    db: Object<'env>,
    target: Object<'env>,
    insert: &Insert,
    range: IdRange,
) -> napi::Result<Unknown<'env>> {
    number_docs(env, &target, insert, range)?;
    let collection_fn: Function<String, Object> = db.get_named_property("collection")?;
    let collection = collection_fn.apply(db, insert.collection.clone())?;
    let method = if insert.many {
        "insertMany"
    } else {
        "insertOne"
    };
    let call: Function<Object, Unknown> = collection.get_named_property(method)?;
    call.apply(collection, target)
}

/// Sets `field` on each document (the array items, or the one document) from `range`.
fn number_docs(env: &Env, target: &Object, insert: &Insert, range: IdRange) -> napi::Result<()> {
    let options = &insert.named.options;
    let now = now_millis();
    for (index, v) in range.values().enumerate() {
        // Read one element at a time: the array may have been changed (even to a length
        // of 2^32 - 1) while the values were reserved.
        let doc = if insert.many {
            element(&target.to_unknown(), index as u32)
        } else {
            Some(target.to_unknown())
        };
        let mut doc = doc.as_ref().and_then(object).ok_or_else(|| {
            to_js_error(
                env,
                SeqError::invalid_argument(format!(
                    "document {index} was replaced by something else than a plain object \
                     during the call; its number {v} is left unused"
                )),
            )
        })?;
        match &options.format {
            Some(pattern) => doc.set_named_property(&insert.field, pattern.format(v, now))?,
            None => {
                let value = Value::checked(&insert.named.label, v, options.bigint)
                    .map_err(|e| to_js_error(env, e))?;
                doc.set_named_property(&insert.field, value)?
            }
        }
    }
    Ok(())
}

/// The driver's result shapes for a gapless insert: `{ acknowledged, insertedId }` for
/// one document, `{ acknowledged, insertedCount, insertedIds }` for many. Numbered `_id`s
/// come back as the numbers (or business numbers); `_id`s generated here as ObjectId
/// hex strings.
fn gapless_result<'env>(
    env: &'env Env,
    insert: &Insert,
    ids: &[Bson],
) -> napi::Result<Unknown<'env>> {
    let bigint = insert.named.options.bigint;
    let set_id = |target: &mut Object, key: &str, id: &Bson| -> napi::Result<()> {
        match id {
            Bson::Int32(v) => target.set_named_property(key, Value::Number(f64::from(*v))),
            Bson::Int64(v) => {
                let value = Value::checked(&insert.named.label, *v, bigint)
                    .map_err(|e| to_js_error(env, e))?;
                target.set_named_property(key, value)
            }
            Bson::String(s) => target.set_named_property(key, s.as_str()),
            Bson::ObjectId(oid) => target.set_named_property(key, oid.to_hex()),
            other => target.set_named_property(key, other.to_string()),
        }
    };
    let mut result = Object::new(env)?;
    result.set_named_property("acknowledged", true)?;
    if insert.many {
        result.set_named_property("insertedCount", ids.len() as f64)?;
        let mut map = Object::new(env)?;
        for (i, id) in ids.iter().enumerate() {
            set_id(&mut map, &i.to_string(), id)?;
        }
        result.set_named_property("insertedIds", map)?;
    } else if let Some(id) = ids.first() {
        set_id(&mut result, "insertedId", id)?;
    }
    Ok(result.to_unknown())
}

fn spawn_insert<'env>(
    env: &'env Env,
    db: &Unknown<'env>,
    target: &Unknown<'env>,
    insert: SeqResult<Insert>,
) -> napi::Result<PromiseRaw<'env, Unknown<'env>>> {
    let db_object = object(db).or_else(|| object_or_array(db));
    let (insert, db, target) = match (insert, db_object, object_or_array(target)) {
        (Ok(insert), Some(db), Some(target)) => (insert, db, target),
        (Err(e), _, _) => {
            return env.spawn_future_with_callback(async { Ok(()) }, move |env, ()| {
                Err::<Unknown, _>(to_js_error(env, e))
            })
        }
        _ => return Err(napi::Error::from_reason("db and documents must be objects")),
    };
    let db_ref: ObjectRef = db.create_ref()?;
    let target_ref: ObjectRef = target.create_ref()?;
    let (named, count) = (insert.named.clone(), insert.count);
    let gapless = insert
        .gapless
        .clone()
        .map(|docs| (docs, insert.collection.clone(), insert.field.clone()));
    // Submitted now, on the JavaScript thread: concurrent inserts get their numbers in
    // the order they were called.
    let ordered = gapless.is_none().then(|| reserve_in_order(&named, count));
    let work = async move {
        match (ordered, gapless) {
            (Some(ordered), _) => ordered.await.map(|range| (range, None)),
            (None, None) => Err(SeqError::internal("insert without a reservation")),
            (None, Some((docs, collection, field))) => {
                let reservation = named.clone().prepare(None).await?;
                let (handle, database) = named.target.resolve().await?;
                let numbered = NumberedInsert {
                    collection: &collection,
                    field: &field,
                    docs,
                    format: named.options.format.as_ref(),
                };
                let concern = named.options.write_concern.as_ref().map(|w| w.to_driver());
                insert_gapless(
                    &handle,
                    &database,
                    reservation.counter(),
                    named.options.policy(),
                    concern,
                    numbered,
                )
                .await
                .map(|(range, ids)| (range, Some(ids)))
            }
        }
    };
    env.spawn_future_with_callback(
        async move { Ok(caught("insert", work).await) },
        move |env, reserved: SeqResult<(IdRange, Option<Vec<Bson>>)>| {
            // User code runs here (setters, Proxy traps, `db.collection`): whatever it
            // throws rejects the promise instead of leaving it pending.
            let outcome = sync_call(env, "writing the numbers into the documents", || {
                match (reserved, db_ref.get_value(env), target_ref.get_value(env)) {
                    (Err(e), _, _) => Err(to_js_error(env, e)),
                    (Ok((range, ids)), Ok(db), Ok(target)) => match ids {
                        None => insert_now(env, db, target, &insert, range),
                        Some(ids) => number_docs(env, &target, &insert, range)
                            .and_then(|_| gapless_result(env, &insert, &ids)),
                    },
                    (_, Err(e), _) | (_, _, Err(e)) => Err(e),
                }
            });
            let released = db_ref.unref(env).and(target_ref.unref(env));
            outcome.and_then(|value| released.map(|()| value))
        },
    )
}

/// Inserts `doc` into `collection` through the Node driver `db`, with `field` (default
/// `_id`) set to the next value of sequence `sequence` (default: the collection name);
/// resolves with the driver's `InsertOneResult`, and `doc` carries its number. The counter
/// is created on first use (`upsert` defaults to `true` here) at `start`. A failed insert
/// leaves a gap in the sequence, never a duplicate.
#[napi(
    ts_args_type = "db: SequenceDbLike, collection: string, doc: D, options?: O",
    ts_return_type = "Promise<InsertOneResult<O, D>>",
    ts_generic_types = "D extends object, const O extends InsertOptions = {}"
)]
pub fn insert_one<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    collection: Unknown<'env>,
    doc: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Unknown<'env>>> {
    promise_call(env, "insertOne", || {
        let insert = read_insert(env, &db, &collection, &[doc], options.as_ref(), false);
        spawn_insert(env, &db, &doc, insert)
    })
}

/// Inserts `docs` into `collection` through the Node driver `db`, numbering them in array
/// order from one block of the sequence reserved in a single round trip; resolves with the
/// driver's `InsertManyResult`. Same options as `insertOne`.
#[napi(
    ts_args_type = "db: SequenceDbLike, collection: string, docs: ReadonlyArray<D>, options?: O",
    ts_return_type = "Promise<InsertManyResult<O, D>>",
    ts_generic_types = "D extends object, const O extends InsertOptions = {}"
)]
pub fn insert_many<'env>(
    env: &'env Env,
    db: Unknown<'env>,
    collection: Unknown<'env>,
    docs: Unknown<'env>,
    options: Option<Unknown<'env>>,
) -> napi::Result<PromiseRaw<'env, Unknown<'env>>> {
    promise_call(env, "insertMany", || {
        let insert = match array_length(&docs) {
            Some(n) if n == 0 || i64::from(n) > MAX_BATCH_COUNT => Err(SeqError::invalid_argument(
                format!("insertMany takes 1 to {MAX_BATCH_COUNT} documents; got {n}"),
            )),
            Some(n) => match array_items(&docs, n) {
                Some(items) => read_insert(env, &db, &collection, &items, options.as_ref(), true),
                None => Err(SeqError::invalid_argument(
                    "docs: an element of the array cannot be read",
                )),
            },
            None => Err(SeqError::invalid_argument(format!(
                "docs must be an array of documents; got {}",
                describe(&docs)
            ))),
        };
        spawn_insert(env, &db, &docs, insert)
    })
}
