//! The kinds of value an option takes, and reading a JavaScript value by its kind. Which
//! options each call takes is written once, in the tables of `read::options`.

use napi::bindgen_prelude::Unknown;

use mongodb::bson::Document;

use crate::binding::js::{bigint_i64, boolean, describe, is_nullish, number, object, string};
use crate::binding::read::bson::to_document;
use crate::engine::client::write_concern::{WriteAck, WriteConcernSpec};
use crate::engine::counter::counter_name::CounterName;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::quote::quoted;
use crate::engine::text::validate::check_safe_integer;

/// The type an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A boolean.
    Flag,
    /// A safe-integer number or a 64-bit BigInt.
    Integer,
    /// A number, never a BigInt (whole, range checked by the engine).
    Number,
    /// A sequence name: a string or a scope object.
    Name,
    /// A `{ w, journal, wtimeoutMS }` object.
    WriteConcern,
    /// `w` of a write concern: a number or a string.
    Ack,
    /// Equality fields locating a counter document (`counterAt`'s locator).
    Fields,
}

impl Kind {
    /// The TypeScript type of the option in `index.d.ts`.
    pub fn ts_type(self) -> &'static str {
        match self {
            Kind::Text => "string",
            Kind::Flag => "boolean",
            Kind::Integer => "number | bigint",
            Kind::Number => "number",
            Kind::Name => "string | Record<string, string | number | boolean | bigint>",
            Kind::WriteConcern => "WriteConcernOptions",
            Kind::Ack => "number | 'majority' | string",
            Kind::Fields => "Record<string, unknown>",
        }
    }
}

/// Option names with their kinds.
pub type Spec = &'static [(&'static str, Kind)];

/// An option's value read by its [`Kind`], before it is converted into the engine's
/// options.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// A [`Kind::Text`] value.
    Text(String),
    /// A [`Kind::Flag`] value.
    Flag(bool),
    /// A [`Kind::Integer`] value.
    Integer(i64),
    /// A [`Kind::Number`] value (its range is the engine's to check).
    Number(f64),
    /// A [`Kind::Name`] value.
    Name(CounterName),
    /// A [`Kind::WriteConcern`] value.
    WriteConcern(WriteConcernSpec),
    /// A [`Kind::Ack`] value.
    Ack(WriteAck),
    /// A [`Kind::Fields`] value.
    Fields(Document),
}

impl OptionValue {
    /// The kind of the value.
    pub fn kind(&self) -> Kind {
        match self {
            OptionValue::Text(_) => Kind::Text,
            OptionValue::Flag(_) => Kind::Flag,
            OptionValue::Integer(_) => Kind::Integer,
            OptionValue::Number(_) => Kind::Number,
            OptionValue::Name(_) => Kind::Name,
            OptionValue::WriteConcern(_) => Kind::WriteConcern,
            OptionValue::Ack(_) => Kind::Ack,
            OptionValue::Fields(_) => Kind::Fields,
        }
    }
}

/// Equality fields locating counter documents (`what` names the argument in messages): a
/// plain object, as a BSON document.
pub fn read_fields(what: &str, value: &Unknown) -> SeqResult<Document> {
    if is_nullish(value) || object(value).is_none() {
        return Err(SeqError::invalid_argument(format!(
            "{what} must be an object of fields, e.g. {{ id: 'invoice', reference_value: null }}; \
             got {}",
            describe(value)
        )));
    }
    to_document(value)
}

/// A safe-integer number or a 64-bit BigInt.
pub fn read_integer(key: &str, value: &Unknown) -> SeqResult<i64> {
    if let Some(n) = number(value) {
        return check_safe_integer(key, n);
    }
    bigint_i64(value).ok_or_else(|| wrong_type(key, Kind::Integer, value))
}

/// The kind of `key` in the first of `specs` that lists it.
pub fn kind_of(key: &str, specs: &[Spec]) -> Option<Kind> {
    specs
        .iter()
        .flat_map(|spec| spec.iter())
        .find(|(name, _)| *name == key)
        .map(|(_, kind)| *kind)
}

/// Refuses the first key none of `specs` lists, naming the known ones.
pub fn check_keys(what: &str, keys: &[String], specs: &[Spec]) -> SeqResult<()> {
    let Some(unknown) = keys.iter().find(|k| kind_of(k, specs).is_none()) else {
        return Ok(());
    };
    let mut known: Vec<&str> = Vec::new();
    for (name, _) in specs.iter().flat_map(|spec| spec.iter()) {
        if !known.contains(name) {
            known.push(name);
        }
    }
    Err(SeqError::invalid_argument(format!(
        "unknown {what} {}; known: {}",
        quoted(unknown),
        known.join(", ")
    )))
}

/// The refusal of `value` for an option of `kind`.
pub fn wrong_type(key: &str, kind: Kind, value: &Unknown) -> SeqError {
    let expected = match kind {
        Kind::Text => "a string",
        Kind::Flag => "a boolean",
        Kind::Integer => "a safe integer or a 64-bit BigInt",
        Kind::Number => "a number",
        Kind::Name => "a string or a plain object of scalar fields",
        Kind::WriteConcern => "an object",
        Kind::Ack => "a number or a string",
        Kind::Fields => "a plain object of fields",
    };
    SeqError::invalid_argument(format!(
        "option '{key}' must be {expected}; got {}",
        describe(value)
    ))
}

/// A `Text` option's value.
pub fn text(key: &str, value: &Unknown) -> SeqResult<String> {
    string(value).ok_or_else(|| wrong_type(key, Kind::Text, value))
}

/// A `Flag` option's value.
pub fn flag(key: &str, value: &Unknown) -> SeqResult<bool> {
    boolean(value).ok_or_else(|| wrong_type(key, Kind::Flag, value))
}

/// A `Number` option's value, as the number given (its range is the reader's to check).
pub fn whole(key: &str, value: &Unknown) -> SeqResult<f64> {
    number(value).ok_or_else(|| wrong_type(key, Kind::Number, value))
}
