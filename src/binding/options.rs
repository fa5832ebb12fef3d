//! The options argument: its TypeScript shape and its conversion to engine options.

use crate::binding::option_specs::{
    self, check_keys, flag, kind_of, text, whole, wrong_type, Kind, Spec,
};
use napi::bindgen_prelude::Unknown;

use crate::binding::js_read::{
    bigint_i64, describe, for_each_property, is_nullish, number, object, property, string,
};
use crate::engine::call_options::CallOptions as EngineOptions;
use crate::engine::client::write_concern::{WriteAck, WriteConcernSpec};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::format::Pattern;
use crate::engine::text::quote::quoted;
use crate::engine::text::validate::{check_cache_size, check_safe_integer};

/// Options of every sequence call (third argument; camelCase like the Node driver).
#[napi(object)]
pub struct SequenceOptions {
    /// Collection holding the counter documents. Default `'counters'`.
    pub collection: Option<String>,
    /// Field holding the counter value. Default `'sequence_value'` (others in use:
    /// `'seq_value'`, `'seq'`).
    pub field: Option<String>,
    /// Create the counter on first use instead of rejecting with `SEQUENCE_NOT_FOUND`.
    /// Default `false`.
    pub upsert: Option<bool>,
    /// First value handed out by a counter that a call creates (with `upsert`). Default `1`.
    #[napi(ts_type = "number | bigint")]
    pub start: Option<f64>,
    /// Resolve with BigInt values instead of numbers (needed past 2^53 - 1).
    /// Default `false`.
    pub bigint: Option<bool>,
    /// Connection string to use for a Node driver `Db` whose connection cannot be derived
    /// from its client (one refused with `UNSUPPORTED_CLIENT`, for example a client with a
    /// proxy or an in-memory CA; see the README's Clients section).
    pub uri: Option<String>,
    /// Merge concurrent calls for the same counter into one `$inc: <sum>` round trip, each
    /// caller getting its own contiguous slice in call order (no gap, no duplicate).
    /// Default `true`; `false` makes one round trip per call.
    pub coalesce: Option<bool>,
    /// Reserve blocks of this many values per process and serve calls from them, fetching
    /// the next block before the current one runs out (like PostgreSQL's `CACHE n`).
    /// Values stay unique across processes and ascend within one, but not across
    /// processes; values left unused when the process exits are lost (gaps).
    /// Batch calls larger than a block bypass the cache. From 1 to 1,000,000.
    pub cache: Option<u32>,
    /// Write concern of the counter writes, e.g. `{ w: 'majority', journal: true }`.
    /// Default: the connection string's, else the server's (`w: 'majority'` on replica sets
    /// since MongoDB 5.0, `w: 1` on a standalone). `w` must acknowledge (at least 1).
    pub write_concern: Option<WriteConcernOptions>,
    /// Resolve with business numbers formatted by this pattern instead of numbers, e.g.
    /// `'ORD{YYYY}{seq:6}'` → `'ORD2025000123'` (see `formatSequence`). Not for ranges.
    pub format: Option<String>,
}

/// The `writeConcern` option.
#[napi(object)]
pub struct WriteConcernOptions {
    /// Members that must acknowledge: a number from 1, `'majority'`, or a tag set name.
    #[napi(ts_type = "number | 'majority' | string")]
    pub w: Option<String>,
    /// Wait for the on-disk journal.
    pub journal: Option<bool>,
    /// Give up waiting for acknowledgement after this many milliseconds (the write may
    /// still have been applied: reported as `SERVER`).
    #[napi(js_name = "wtimeoutMS")]
    pub wtimeout_ms: Option<f64>,
}

/// Reads the options argument (`undefined`/`null` gives the defaults). Unknown keys and
/// wrong types are refused, so a typo never silently falls back to a default.
pub fn read_options(value: Option<&Unknown>) -> SeqResult<EngineOptions> {
    read_options_from(value, &[], &[]).map(|(options, _)| options)
}

/// Like [`read_options`], for a call that uses only the common options named in `used`
/// (`listSequences`, `syncToMax`): any other key is refused, naming the call, rather
/// than accepted and ignored.
pub fn read_used_options(
    value: Option<&Unknown>,
    call: &str,
    used: &[&str],
) -> SeqResult<EngineOptions> {
    if let Some(obj) = value.filter(|v| !is_nullish(v)).and_then(object) {
        for_each_property(&obj, "the options", |key, _| {
            if used.contains(&key) || kind_of(key, &[option_specs::SEQUENCE]).is_none() {
                return Ok(());
            }
            Err(SeqError::invalid_argument(format!(
                "option {} is not used by {call}; it takes {}",
                quoted(key),
                used.join(", ")
            )))
        })?;
    }
    read_options(value)
}

/// Like [`read_options`], for a call that also takes the options of `extra` (which win
/// over the common ones of the same name): the keys in `set_aside` are returned with
/// their values, when not nullish, for the caller to read.
pub fn read_options_from<'a>(
    value: Option<&Unknown<'a>>,
    extra: &[Spec],
    set_aside: &[&str],
) -> SeqResult<(EngineOptions, Vec<(String, Unknown<'a>)>)> {
    let mut options = EngineOptions::default();
    let mut aside = Vec::new();
    let Some(value) = value.filter(|v| !is_nullish(v)) else {
        return Ok((options, aside));
    };
    let Some(obj) = object(value) else {
        return Err(SeqError::invalid_argument(format!(
            "options must be an object; got {}",
            describe(value)
        )));
    };
    let mut specs = extra.to_vec();
    specs.push(option_specs::SEQUENCE);
    // Only the keys present are read: absent options keep their defaults.
    for_each_property(&obj, "the options", |key, v| {
        if kind_of(key, &specs).is_none() {
            return check_keys("option", &[key.to_string()], &specs);
        }
        if is_nullish(&v) {
            return Ok(());
        }
        if set_aside.contains(&key) {
            aside.push((key.to_string(), v));
            return Ok(());
        }
        match key {
            "collection" => options.collection = text(key, &v)?.into(),
            "field" => options.field = text(key, &v)?.into(),
            "uri" => options.uri = Some(text(key, &v)?),
            "upsert" => options.upsert = flag(key, &v)?,
            "bigint" => options.bigint = flag(key, &v)?,
            "coalesce" => options.coalesce = flag(key, &v)?,
            "cache" => options.cache = Some(check_cache_size(whole(key, &v)?)?),
            "writeConcern" => options.write_concern = Some(read_write_concern(&v)?),
            "format" => options.format = Some(Pattern::parse(&text(key, &v)?)?),
            _ => options.start = read_integer(key, &v)?,
        }
        Ok(())
    })?;
    Ok((options, aside))
}

/// A safe-integer number or a 64-bit BigInt.
pub fn read_integer(key: &str, value: &Unknown) -> SeqResult<i64> {
    if let Some(n) = number(value) {
        return check_safe_integer(key, n);
    }
    bigint_i64(value).ok_or_else(|| wrong_type(key, Kind::Integer, value))
}

/// Reads `{ w, journal, wtimeoutMS }`.
fn read_write_concern(value: &Unknown) -> SeqResult<WriteConcernSpec> {
    let obj = object(value).ok_or_else(|| wrong_type("writeConcern", Kind::WriteConcern, value))?;
    let keys = napi::bindgen_prelude::Object::keys(&obj)
        .map_err(|e| SeqError::invalid_argument(format!("cannot read writeConcern: {e}")))?;
    check_keys("writeConcern option", &keys, &[option_specs::WRITE_CONCERN])?;
    let mut spec = WriteConcernSpec::default();
    let w = property(&obj, "w")?;
    if !is_nullish(&w) {
        spec.w = Some(if let Some(n) = number(&w) {
            WriteAck::from_number(n)?
        } else if let Some(text) = string(&w) {
            WriteAck::from_text(&text)?
        } else {
            return Err(wrong_type("writeConcern.w", Kind::Ack, &w));
        });
    }
    let journal = property(&obj, "journal")?;
    if !is_nullish(&journal) {
        spec.journal = Some(flag("writeConcern.journal", &journal)?);
    }
    let timeout = property(&obj, "wtimeoutMS")?;
    if !is_nullish(&timeout) {
        let ms = whole("writeConcern.wtimeoutMS", &timeout)?;
        if !(ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0) {
            return Err(SeqError::invalid_argument(
                "option 'writeConcern.wtimeoutMS' must be a whole number of milliseconds",
            ));
        }
        spec.wtimeout_ms = Some(ms as u64);
    }
    Ok(spec)
}
