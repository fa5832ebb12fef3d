//! Which options each call takes and the type of each: one definition. The readers
//! refuse keys not listed here and read each value by its kind; a test holds the
//! interfaces of `index.d.ts` (generated from the `#[napi(object)]` structs, and checked
//! in CI to be what the napi CLI generates) to the same lists, so that what the typings
//! promise and what the readers accept cannot drift apart.

use napi::bindgen_prelude::Unknown;

use crate::binding::js_read::{boolean, describe, number, string};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::quote::quoted;

/// The type an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A boolean.
    Flag,
    /// A safe-integer number or a 64-bit BigInt.
    Integer,
    /// A number (whole, range checked by the reader).
    Whole,
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
            Kind::Whole => "number",
            Kind::Name => "string | Record<string, string | number | boolean | bigint>",
            Kind::WriteConcern => "WriteConcernOptions",
            Kind::Ack => "number | 'majority' | string",
            Kind::Fields => "Record<string, unknown>",
        }
    }
}

/// Option names with their kinds.
pub type Spec = &'static [(&'static str, Kind)];

/// Options of every sequence call (`SequenceOptions`).
pub const SEQUENCE: Spec = &[
    ("collection", Kind::Text),
    ("field", Kind::Text),
    ("upsert", Kind::Flag),
    ("start", Kind::Integer),
    ("bigint", Kind::Flag),
    ("uri", Kind::Text),
    ("coalesce", Kind::Flag),
    ("cache", Kind::Whole),
    ("writeConcern", Kind::WriteConcern),
    ("format", Kind::Text),
];

/// The options of [`SEQUENCE`] that `listSequences` uses (`ListOptions`).
pub const LIST_USES: &[&str] = &["collection", "field", "bigint", "uri"];

/// The options of [`SEQUENCE`] that `syncToMax` uses (`SyncOptions`).
pub const SYNC_USES: &[&str] = &["collection", "field", "bigint", "uri", "writeConcern"];

/// The options of [`SEQUENCE`] that `setCountersWhere` uses.
pub const SET_WHERE_USES: &[&str] = &["collection", "field", "uri", "writeConcern"];

/// Options `insertOne`/`insertMany` take besides [`SEQUENCE`] (`InsertOptions`); these
/// win over the common ones of the same name (`field` is the document field there).
pub const INSERT: Spec = &[
    ("field", Kind::Text),
    ("sequence", Kind::Name),
    ("counters", Kind::Text),
    ("counterField", Kind::Text),
    ("upsert", Kind::Flag),
    ("gapless", Kind::Flag),
    ("counterLocator", Kind::Fields),
    ("step", Kind::Integer),
];

/// The common option `insertOne`/`insertMany` refuse, pointing to `counters` instead.
pub const INSERT_REFUSED: &str = "collection";

/// Options of `connect` (`ConnectOptions`).
pub const CONNECT: Spec = &[
    ("serverSelectionTimeoutMS", Kind::Whole),
    ("connectTimeoutMS", Kind::Whole),
];

/// The `writeConcern` option (`WriteConcernOptions`).
pub const WRITE_CONCERN: Spec = &[
    ("w", Kind::Ack),
    ("journal", Kind::Flag),
    ("wtimeoutMS", Kind::Whole),
];

/// Options of `Sequence.init`.
pub const INIT: Spec = &[
    ("start", Kind::Integer),
    ("step", Kind::Integer),
    ("minValue", Kind::Integer),
    ("maxValue", Kind::Integer),
    ("cycle", Kind::Flag),
];

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
        Kind::Whole => "a number",
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

/// A `Whole` option's value, as the number given (its range is the reader's to check).
pub fn whole(key: &str, value: &Unknown) -> SeqResult<f64> {
    number(value).ok_or_else(|| wrong_type(key, Kind::Whole, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The fields of `export interface <name> { ... }` in `index.d.ts`, with their types.
    fn interface(dts: &str, name: &str) -> BTreeMap<String, String> {
        let start = dts
            .find(&format!("export interface {name} {{"))
            .unwrap_or_else(|| panic!("interface {name} in index.d.ts"));
        let body = &dts[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
        fields(body)
    }

    /// `key?: type` lines (or `; `-separated members) outside doc comments.
    fn fields(body: &str) -> BTreeMap<String, String> {
        body.split(['\n', ';'])
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with("/*"))
            .filter_map(|l| l.split_once("?:"))
            .map(|(k, t)| (k.trim().to_string(), t.trim().to_string()))
            .collect()
    }

    fn expected(specs: &[Spec], without: &[&str]) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, kind) in specs.iter().rev().flat_map(|s| s.iter()) {
            if !without.contains(name) {
                out.insert(name.to_string(), kind.ts_type().to_string());
            }
        }
        out
    }

    #[test]
    fn typings_list_exactly_what_the_readers_accept() {
        let dts = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/index.d.ts"))
            .expect("index.d.ts");
        assert_eq!(
            interface(&dts, "SequenceOptions"),
            expected(&[SEQUENCE], &[])
        );
        assert_eq!(
            interface(&dts, "InsertOptions"),
            expected(&[INSERT, SEQUENCE], &[INSERT_REFUSED])
        );
        assert_eq!(interface(&dts, "ConnectOptions"), expected(&[CONNECT], &[]));
        assert_eq!(
            interface(&dts, "WriteConcernOptions"),
            expected(&[WRITE_CONCERN], &[])
        );
        let init = dts
            .split('\n')
            .find(|l| l.trim_start().starts_with("init(options?: {"))
            .expect("Sequence.init in index.d.ts");
        let members = &init[init.find('{').unwrap() + 1..init.rfind('}').unwrap()];
        assert_eq!(fields(members), expected(&[INIT], &[]));
    }

    #[test]
    fn unknown_keys_are_refused_with_a_short_quote() {
        let keys = vec!["upsert".to_string(), "x".repeat(10_000)];
        let e = check_keys("option", &keys, &[SEQUENCE]).unwrap_err();
        assert!(e.message.len() < 400, "{}", e.message);
        assert!(check_keys("option", &keys[..1], &[SEQUENCE]).is_ok());
        assert_eq!(kind_of("gapless", &[SEQUENCE, INSERT]), Some(Kind::Flag));
        assert_eq!(kind_of("gapless", &[SEQUENCE]), None);
    }
}
