//! `insertOne` / `insertMany` with a sequence-assigned field: all values of a call are
//! reserved in one round trip, set on the documents, and the documents are inserted with
//! the Node driver's own `db.collection(name).insertOne/insertMany`.
//!
//! The arguments are read and checked first (`read/insert_documents.rs`: every document
//! must be able to take its number, and gapless documents are converted when the call is
//! made). Each number written is read back as the driver reads it, so that a setter or
//! Proxy that drops it fails the call instead of a document being inserted without its
//! number. `insertMany` numbers and inserts its own copy of the array, made when the call
//! is made, and refuses one object twice in it.
use crate::binding::boundary::{promise_call, sync_call};
use crate::engine::panic_safety::caught;
use napi::bindgen_prelude::{
    Env, Function, JsObjectValue, Object, ObjectRef, PromiseRaw, ToNapiValue, Unknown,
};
use napi::{sys, JsValue};

use crate::binding::error::OrThrow;
use crate::binding::js::{
    array_items, array_length, describe, distinct_count, element, is_own_enumerable, object,
    object_or_array, set_and_check,
};
use crate::binding::output::Value;
use crate::binding::read::insert_documents::{read_insert, serializes_itself, Insert};
use crate::binding::reserve::prepare::{open, prepare};
use crate::binding::reserve::values::reserve;
use crate::engine::alloc::allocate::IdRange;
use crate::engine::alloc::prepared_counter::refused;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::gapless::{insert_gapless, NumberedInsert};
use crate::engine::text::format::now_millis;
use crate::engine::text::validate::MAX_BATCH_COUNT;
use mongodb::bson::Bson;

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

/// "number 7", or "numbers 7 to 9": the numbers of `range`, for a message.
fn numbers_of(range: &IdRange) -> String {
    if range.first == range.last {
        format!("number {}", range.first)
    } else {
        format!("numbers {} to {}", range.first, range.last)
    }
}

/// What became of the numbers of an insert whose documents could not all be numbered:
/// spent and written nowhere (the driver was not called), or written with the documents
/// (gapless: the transaction committed before the numbers are written back).
fn fate(insert: &Insert, range: &IdRange) -> String {
    if insert.gapless.is_some() {
        format!(
            "the documents were inserted all the same (gapless), with {}",
            numbers_of(range)
        )
    } else {
        format!(
            "{} of this call {} left unused and nothing was inserted",
            numbers_of(range),
            if range.first == range.last {
                "is"
            } else {
                "are"
            }
        )
    }
}

/// Sets `field` on each document (the array items, or the one document) from `range`,
/// and checks that each document kept its number.
fn number_docs(env: &Env, target: &Object, insert: &Insert, range: IdRange) -> napi::Result<()> {
    let options = &insert.named.options;
    let now = now_millis();
    for (index, v) in range.values().enumerate() {
        // `target` is the call's own copy of the array (`insert_many`), so its elements
        // are the documents read when the call was made; a document itself may have been
        // changed since, which the read-back below catches.
        let doc = if insert.many {
            element(&target.to_unknown(), index as u32)
        } else {
            Some(target.to_unknown())
        };
        let doc = doc
            .as_ref()
            .and_then(object)
            .ok_or_else(|| {
                SeqError::invalid_argument(format!(
                    "document {index} was replaced by something else than a plain object \
                     during the call; its number {v} is left unused"
                ))
            })
            .or_throw(env)?;
        // SAFETY: values converted on the JavaScript thread of `env`, and used there.
        let value = unsafe {
            let raw: sys::napi_value = match &options.format {
                Some(pattern) => String::to_napi_value(env.raw(), pattern.format(v, now))?,
                // A reserved value: the engine refused those past 2^53 - 1 as numbers.
                None => Value::to_napi_value(env.raw(), Value::of(v, options.bigint))?,
            };
            Unknown::from_raw_unchecked(env.raw(), raw)
        };
        // Read back as the driver will read it: an own enumerable field, unless the
        // document says itself how it is stored.
        let kept = set_and_check(&doc, &insert.field, &value)?
            && (serializes_itself(&doc) || is_own_enumerable(&doc, &insert.field) == Some(true));
        if !kept {
            return Err(SeqError::invalid_argument(format!(
                "document {index} did not keep its number {v} in '{}' as a field the driver \
                 stores (a setter, a Proxy or a property definition dropped it); {}",
                insert.field,
                fate(insert, &range)
            )))
            .or_throw(env);
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
                let value = Value::checked(&insert.named.label, *v, bigint).or_throw(env)?;
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
            let e = refused(None, e);
            return env.spawn_future_with_callback(async { Ok(()) }, move |env, ()| {
                Err::<Unknown, _>(e).or_throw(env)
            });
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
    let ordered = gapless.is_none().then(|| reserve(&named, count, None));
    let work = async move {
        match (ordered, gapless) {
            (Some(ordered), _) => ordered?.values().await.map(|range| (range, None)),
            (None, None) => Err(SeqError::internal("insert without reserved values")),
            (None, Some((docs, collection, field))) => {
                let prepared = prepare(named.clone(), None).await?;
                let concern = named
                    .effective_options()
                    .write_concern
                    .as_ref()
                    .map(|w| w.to_driver());
                let (handle, database) = open(named.target.clone()).await?;
                let numbered = NumberedInsert {
                    collection: &collection,
                    field: &field,
                    docs,
                    format: named.options.format.as_ref(),
                    as_numbers: named.options.returns_numbers(),
                };
                insert_gapless(
                    &handle,
                    &database,
                    prepared.counter(),
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
            // throws rejects the promise instead of leaving it pending, saying what became
            // of the numbers.
            let place = match &reserved {
                Ok((range, Some(_))) => format!(
                    "writing the numbers into the documents, which were inserted (gapless) \
                     with {}",
                    numbers_of(range)
                ),
                _ => "writing the numbers into the documents".to_string(),
            };
            let outcome = sync_call(env, &place, || {
                match (reserved, db_ref.get_value(env), target_ref.get_value(env)) {
                    (Err(e), _, _) => Err(e).or_throw(env),
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

/// A new array holding `items`, which the caller cannot change.
fn copy_of<'env>(env: &'env Env, items: &[Unknown<'env>]) -> napi::Result<Unknown<'env>> {
    let mut array = env.create_array(items.len() as u32)?;
    for (index, item) in items.iter().enumerate() {
        array.set(index as u32, *item)?;
    }
    Ok(array.to_unknown())
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
                Some(items) => {
                    // The documents read now are the ones numbered and inserted, whatever
                    // happens to the caller's array meanwhile.
                    let copy = copy_of(env, &items)?;
                    let insert = match object_or_array(&copy).and_then(|a| distinct_count(&a)) {
                        Some(distinct) if distinct == n => {
                            read_insert(env, &db, &collection, &items, options.as_ref(), true)
                        }
                        Some(_) => Err(SeqError::invalid_argument(
                            "docs holds one document object more than once; each document \
                             takes a number of its own, so insert copies",
                        )),
                        None => Err(SeqError::invalid_argument(
                            "docs: telling its documents apart threw",
                        )),
                    };
                    return spawn_insert(env, &db, &copy, insert);
                }
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
