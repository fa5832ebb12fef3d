//! The arguments of `insertOne` / `insertMany`, read and checked before anything is
//! reserved: every document must be able to take its number (one that cannot be
//! extended — frozen, sealed — or whose field is inherited or not enumerable, which the
//! driver would not store, is refused), and in gapless mode the documents are converted
//! here, with `_id`s from the Node client's `pkFactory` and `undefined` fields following
//! its `ignoreUndefined`, as the driver's own insert does.
use napi::bindgen_prelude::{Env, Function, JsObjectValue, Object, Unknown};
use napi::ValueType;

use crate::binding::js::{
    boolean, describe, has_property, is_extensible, is_nullish, is_own_enumerable, object,
    property, required_string, type_of,
};
use crate::binding::read::bson::{to_document_with, DocumentRules};
use crate::binding::read::named_counter::NamedCounter;
use crate::binding::read::option_reader::read_insert_options;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::check_collection;
use mongodb::bson::Document;

/// Whether the driver stores what the document's `toBSON()` returns (a mongoose document,
/// a class that says how it is stored) rather than its own enumerable fields.
pub fn serializes_itself(doc: &Object) -> bool {
    property(doc, "toBSON").is_ok_and(|f| type_of(&f) == ValueType::Function)
}

/// An insert call whose arguments were read and checked.
pub struct Insert {
    /// The collection the documents go into.
    pub collection: String,
    /// The field that takes the numbers.
    pub field: String,
    /// `insertMany` (an array of documents) rather than `insertOne`.
    pub many: bool,
    /// The counter and the call's options.
    pub named: NamedCounter,
    /// How many documents, so how many numbers.
    pub count: i64,
    /// The documents as BSON, in gapless mode.
    pub gapless: Option<Vec<Document>>,
}

/// Reads and checks the arguments of an insert of `docs` (one for `insertOne`) into
/// `collection` through `db`.
pub fn read_insert(
    env: &Env,
    db: &Unknown,
    collection: &Unknown,
    docs: &[Unknown],
    options: Option<&Unknown>,
    many: bool,
) -> SeqResult<Insert> {
    let collection = required_string("collection", collection)?;
    check_collection(&collection)?;
    let applied = read_insert_options(options)?.apply_rules(&collection)?;
    let (field, gapless) = (applied.field, applied.gapless);
    let mut objects = Vec::with_capacity(docs.len());
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
        match is_extensible(&doc) {
            Some(true) => {}
            Some(false) => {
                return Err(SeqError::invalid_argument(format!(
                    "document {index} is frozen, sealed or not extensible, so it cannot take \
                     its number in '{field}'; insert a copy of it"
                )))
            }
            None => {
                return Err(SeqError::invalid_argument(format!(
                    "document {index}: asking whether it can take its number threw"
                )))
            }
        }
        if !serializes_itself(&doc) {
            match (has_property(&doc, &field), is_own_enumerable(&doc, &field)) {
                (Some(false), _) | (Some(true), Some(true)) => {}
                (Some(true), Some(false)) => {
                    return Err(SeqError::invalid_argument(format!(
                        "document {index} has '{field}' as an inherited or non-enumerable \
                         property (a class accessor, a prototype's field): the driver stores \
                         only a document's own enumerable fields, so a number written there \
                         would not be stored; insert a plain object"
                    )))
                }
                _ => {
                    return Err(SeqError::invalid_argument(format!(
                        "document {index}: asking whether '{field}' is its own field threw"
                    )))
                }
            }
        }
        objects.push(doc);
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
    let named = NamedCounter::from_parts(env, db, applied.name, applied.options)?;
    let gapless = if gapless {
        let writes = DriverWrites::of(db)?;
        if field != "_id" {
            for (index, doc) in objects.iter_mut().enumerate() {
                writes.give_id(index, doc)?;
            }
        }
        Some(
            docs.iter()
                .map(|doc| to_document_with(doc, writes.rules))
                .collect::<SeqResult<Vec<_>>>()?,
        )
    } else {
        None
    };
    Ok(Insert {
        named,
        collection,
        field,
        many,
        count: docs.len() as i64,
        gapless,
    })
}

/// How the Node driver would write documents through `db.collection(name)`: the settings
/// its insert takes from the `Db` (the Node client's, unless the `Db` has its own), which
/// a gapless insert honours since it writes the documents itself (`checkKeys` is left
/// out: the driver's inserts do not check keys). For anything else
/// than a Node driver `Db` (a `SequenceDb`), the driver's defaults.
#[derive(Default)]
struct DriverWrites<'a> {
    /// `db.options.pkFactory`: what makes the `_id` of a document that has none.
    pk_factory: Option<Object<'a>>,
    /// `db.options.forceServerObjectId`: the driver leaves `_id` to the server.
    force_server_object_id: bool,
    /// `db.bsonOptions`' `ignoreUndefined` and `serializeFunctions`.
    rules: DocumentRules,
}

impl<'a> DriverWrites<'a> {
    /// The settings of `db`; what its getters throw fails the call.
    fn of(db: &Unknown<'a>) -> SeqResult<DriverWrites<'a>> {
        let Some(db) = object(db) else {
            return Ok(DriverWrites::default());
        };
        let child = |from: &Object<'a>, key: &str| -> SeqResult<Option<Object<'a>>> {
            Ok(object(&property(from, key)?))
        };
        let flag = |from: &Option<Object<'a>>, key: &str| -> SeqResult<bool> {
            Ok(match from {
                Some(from) => boolean(&property(from, key)?).unwrap_or(false),
                None => false,
            })
        };
        let options = child(&db, "options")?;
        let bson_options = child(&db, "bsonOptions")?;
        Ok(DriverWrites {
            pk_factory: match &options {
                Some(options) => child(options, "pkFactory")?,
                None => None,
            },
            force_server_object_id: flag(&options, "forceServerObjectId")?,
            rules: DocumentRules {
                ignore_undefined: flag(&bson_options, "ignoreUndefined")?,
                serialize_functions: flag(&bson_options, "serializeFunctions")?,
            },
        })
    }

    /// Gives `doc` an `_id` from the `pkFactory` when it has none (`null` or `undefined`),
    /// as the driver does before it inserts: set on the document itself. Without a
    /// `pkFactory` (or with `forceServerObjectId`), the engine gives it an ObjectId.
    fn give_id(&self, index: usize, doc: &mut Object) -> SeqResult<()> {
        let Some(factory) = self
            .pk_factory
            .as_ref()
            .filter(|_| !self.force_server_object_id)
        else {
            return Ok(());
        };
        if !is_nullish(&property(doc, "_id")?) {
            return Ok(());
        }
        let fail = |what: &str| {
            SeqError::invalid_argument(format!(
                "document {index}: the client's pkFactory.createPk() {what}"
            ))
        };
        let create: Function<(), Unknown> = factory
            .get_named_property("createPk")
            .map_err(|_| fail("cannot be read"))?;
        let id = create.apply(*factory, ()).map_err(|_| fail("threw"))?;
        doc.set_named_property("_id", id)
            .map_err(|_| fail("made an _id that cannot be set on the document"))
    }
}
