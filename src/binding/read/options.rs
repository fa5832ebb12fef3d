//! Every option set, each written once as a table: its typings (the interfaces of
//! `index.d.ts`), the names and kinds its reader accepts, and its conversion into the
//! engine's options. Defaults and rules across options are the engine's
//! (`engine::call_options`, `engine::option_rules`).

use std::time::Duration;

use crate::binding::read::table::option_table;
use crate::engine::call_options::CallOptions as EngineOptions;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::write_concern::WriteConcernSpec;
use crate::engine::option_rules::{
    millis_up_to, wtimeout_millis, InitOptions as EngineInitOptions,
    InsertOptions as EngineInsertOptions, MAX_CLOSE_TIMEOUT_MS, MAX_TIMEOUT_MS,
};
use crate::engine::text::format::Pattern;
use crate::engine::text::validate::check_cache_size;

option_table! {
    #[doc = " Options of every sequence call (third argument; camelCase like the Node driver)."]
    SequenceOptions => SequenceTable for EngineOptions;
    keys "option" via [] only [];
    #[doc = " Collection holding the counter documents. Default `'counters'`."]
    collection "collection": Text => |o, v| o.collection = v.into();
    #[doc = " Field holding the counter value. Default `'sequence_value'` (others in use:"]
    #[doc = " `'seq_value'`, `'seq'`)."]
    field "field": Text => |o, v| o.field = v.into();
    #[doc = " Create the counter on first use instead of rejecting with `SEQUENCE_NOT_FOUND`."]
    #[doc = " Default `false`."]
    upsert "upsert": Flag => |o, v| o.upsert = v;
    #[doc = " First value handed out by a counter that a call creates (with `upsert`). Default `1`."]
    start "start": Integer => |o, v| o.start = v;
    #[doc = " Resolve with BigInt values instead of numbers (needed past 2^53 - 1)."]
    #[doc = " Default `false`."]
    bigint "bigint": Flag => |o, v| o.bigint = v;
    #[doc = " Connection string to use for a Node driver `Db` whose connection cannot be derived"]
    #[doc = " from its client (one refused with `UNSUPPORTED_CLIENT`, for example a client with a"]
    #[doc = " proxy or an in-memory CA; see docs/clients.md)."]
    uri "uri": Text => |o, v| o.uri = Some(v);
    #[doc = " Merge concurrent calls for the same counter into one `$inc: <sum>` round trip, each"]
    #[doc = " caller getting its own contiguous slice in call order (no gap, no duplicate)."]
    #[doc = " Default `true`; `false` makes one round trip per call."]
    coalesce "coalesce": Flag => |o, v| o.coalesce = v;
    #[doc = " Reserve blocks of this many values per process and serve calls from them, fetching"]
    #[doc = " the next block before the current one runs out (like PostgreSQL's `CACHE n`)."]
    #[doc = " Values stay unique across processes; within one they follow the counter's"]
    #[doc = " direction (ascending, descending for a negative step), but not across processes."]
    #[doc = " The unused tail of the cached blocks is given back by `release()` or a graceful"]
    #[doc = " close when the counter was not moved since this process's last fetch (never for a"]
    #[doc = " cycling counter); otherwise, and when the process exits without a close, those"]
    #[doc = " values are lost (gaps). Batch calls larger than a block bypass the cache. From 1"]
    #[doc = " to 1,000,000. See docs/caching-and-gaps.md."]
    cache "cache": Number => |o, v| o.cache = Some(check_cache_size(v)?);
    #[doc = " Write concern of the counter writes, e.g. `{ w: 'majority', journal: true }`."]
    #[doc = " Default: the connection string's, else the server's (`w: 'majority'` on replica sets"]
    #[doc = " since MongoDB 5.0, `w: 1` on a standalone). `w` must acknowledge (at least 1)."]
    write_concern "writeConcern": WriteConcern => |o, v| o.write_concern = Some(v);
    #[doc = " Resolve with business numbers formatted by this pattern instead of numbers, e.g."]
    #[doc = " `'ORD{YYYY}{seq:6}'` → `'ORD2025000123'` (see `formatSequence`). Not for ranges."]
    format "format": Text => |o, v| o.format = Some(Pattern::parse(&v)?);
}

option_table! {
    #[doc = " The `writeConcern` option."]
    WriteConcernOptions => WriteConcernTable for WriteConcernSpec;
    keys "writeConcern option" via [] only [];
    #[doc = " Members that must acknowledge: a number from 1, `'majority'`, or a tag set name."]
    w "w": Ack => |o, v| o.w = Some(v);
    #[doc = " Wait for the on-disk journal."]
    journal "journal": Flag => |o, v| o.journal = Some(v);
    #[doc = " Give up waiting for acknowledgement after this many milliseconds (the write may"]
    #[doc = " still have been applied: reported as `SERVER`)."]
    wtimeout_ms "wtimeoutMS": Number => |o, v| o.wtimeout_ms = Some(wtimeout_millis(v)?);
}

option_table! {
    #[doc = " Options of `counterAt`: those of `sequence()`, and `step`."]
    LocatedOptions => LocatedTable for EngineOptions;
    keys "option" via [SequenceTable] only [];
    #[doc = " As for `sequence()`: collection holding the counter documents. Default `'counters'`."]
    collection "collection": Text;
    #[doc = " As for `sequence()`: field holding the counter value. Default `'sequence_value'`."]
    field "field": Text;
    #[doc = " As for `sequence()`: create the counter on first use. Default `false`."]
    upsert "upsert": Flag;
    #[doc = " As for `sequence()`: first value of a counter a call creates. Default `1`."]
    start "start": Integer;
    #[doc = " As for `sequence()`: resolve with BigInt values. Default `false`."]
    bigint "bigint": Flag;
    #[doc = " As for `sequence()`."]
    uri "uri": Text;
    #[doc = " As for `sequence()`. Default `true`."]
    coalesce "coalesce": Flag;
    #[doc = " As for `sequence()`."]
    cache "cache": Number;
    #[doc = " As for `sequence()`."]
    write_concern "writeConcern": WriteConcern;
    #[doc = " As for `sequence()`."]
    format "format": Text;
    #[doc = " The distance between the values of a plain counter (its `$inc` per value, not"]
    #[doc = " stored with the counter; not 0). Default `1`."]
    step "step": Integer => |o, v| o.step = v;
}

option_table! {
    #[doc = " Options of `insertOne` / `insertMany`."]
    InsertOptions => InsertTable for EngineInsertOptions;
    keys "option" via [LocatedTable . common] only [];
    #[doc = " Document field that receives the number. Default `'_id'`."]
    field "field": Text => |o, v| o.field = Some(v);
    #[doc = " Sequence name (string or scope object), as the `name` argument of the other calls."]
    #[doc = " Default: the collection name."]
    name "name": Name => |o, v| o.name = Some(v);
    #[doc = " Older name of `name` (both given: they must be equal)."]
    sequence "sequence": Name => |o, v| o.sequence = Some(v);
    #[doc = " Collection of counter documents, as the `collection` option of the other calls."]
    #[doc = " Default `'counters'`."]
    counter_collection "counterCollection": Text => |o, v| o.counter_collection = Some(v);
    #[doc = " Older name of `counterCollection` (both given: they must be equal)."]
    counters "counters": Text => |o, v| o.counters = Some(v);
    #[doc = " Field of the counter document, as the `field` option of the other calls. Default"]
    #[doc = " `'sequence_value'`."]
    counter_field "counterField": Text => |o, v| o.common.field = v.into();
    #[doc = " Create the counter on first use. Default `true` here."]
    upsert "upsert": Flag;
    #[doc = " First value of a counter created by the call. Default `1`."]
    start "start": Integer;
    #[doc = " Store BigInt values (needed past 2^53 - 1)."]
    bigint "bigint": Flag;
    #[doc = " Store business numbers formatted by this pattern (see `formatSequence`)."]
    format "format": Text;
    #[doc = " Write concern of the counter write (the insert uses the driver's own settings)."]
    write_concern "writeConcern": WriteConcern;
    #[doc = " As for the sequence functions."]
    uri "uri": Text;
    #[doc = " As for the sequence functions."]
    coalesce "coalesce": Flag;
    #[doc = " As for the sequence functions."]
    cache "cache": Number;
    #[doc = " Increment the counter and insert the documents in one transaction, so a failed"]
    #[doc = " insert gives its numbers back (no gap). Serialises the writers of the counter and"]
    #[doc = " needs a replica set or sharded cluster (`TRANSACTIONS_UNSUPPORTED` otherwise). The"]
    #[doc = " package then inserts the documents itself (with the client of `db`); the driver's"]
    #[doc = " `_id` is not written back to them. Default `false`."]
    gapless "gapless": Flag => |o, v| o.gapless = v;
    #[doc = " Find the counter by these fields instead of by its name (as `counterAt`), e.g."]
    #[doc = " mongoose-sequence's `{ id, reference_value }`; `name` then only names it in"]
    #[doc = " messages."]
    counter_locator "counterLocator": Fields => |o, v| o.locator = Some(v);
    #[doc = " Distance between the values of a plain counter (as `counterAt`). Default `1`."]
    step "step": Integer;
}

option_table! {
    #[doc = " The options `listSequences` uses."]
    ListOptions => ListTable for EngineOptions;
    keys "option" via [SequenceTable] only ["listSequences"];
    #[doc = " Collection holding the counter documents. Default `'counters'`."]
    collection "collection": Text;
    #[doc = " Field holding the counter value. Default `'sequence_value'`."]
    field "field": Text;
    #[doc = " Resolve with BigInt values. Default `false`."]
    bigint "bigint": Flag;
    #[doc = " As for `sequence()`."]
    uri "uri": Text;
}

option_table! {
    #[doc = " The options `syncToMax` uses."]
    SyncOptions => SyncTable for EngineOptions;
    keys "option" via [SequenceTable] only ["syncToMax"];
    #[doc = " Collection holding the counter documents. Default `'counters'`."]
    collection "collection": Text;
    #[doc = " Field holding the counter value. Default `'sequence_value'`."]
    field "field": Text;
    #[doc = " Resolve with a BigInt value. Default `false`."]
    bigint "bigint": Flag;
    #[doc = " As for `sequence()`."]
    uri "uri": Text;
    #[doc = " Write concern of the counter write."]
    write_concern "writeConcern": WriteConcern;
}

option_table! {
    #[doc = " The options `setCountersWhere` uses."]
    SetCountersOptions => SetCountersTable for EngineOptions;
    keys "option" via [SequenceTable] only ["setCountersWhere"];
    #[doc = " Collection holding the counter documents. Default `'counters'`."]
    collection "collection": Text;
    #[doc = " Field holding the counter value. Default `'sequence_value'`."]
    field "field": Text;
    #[doc = " As for `sequence()`."]
    uri "uri": Text;
    #[doc = " Write concern of the counter writes."]
    write_concern "writeConcern": WriteConcern;
}

option_table! {
    #[doc = " Options of `Sequence.init`."]
    InitOptions => InitTable for EngineInitOptions;
    keys "init option" via [] only [];
    #[doc = " The first value. Default: the handle's `start` for a plain counter, the lower"]
    #[doc = " limit (ascending) or upper limit (descending) for a configured one."]
    start "start": Integer => |o, v| o.start = Some(v);
    #[doc = " Distance between values (negative: descending; not 0). Default `1`."]
    step "step": Integer => |o, v| o.step = Some(v);
    #[doc = " Smallest value handed out."]
    min_value "minValue": Integer => |o, v| o.min = Some(v);
    #[doc = " Largest value handed out."]
    max_value "maxValue": Integer => |o, v| o.max = Some(v);
    #[doc = " Restart at the other end instead of failing with `SEQUENCE_EXHAUSTED`."]
    cycle "cycle": Flag => |o, v| o.cycle = Some(v);
}

option_table! {
    #[doc = " Options of `connect`."]
    ConnectOptions => ConnectTable for ConnectionTarget;
    keys "connect option" via [] only [];
    #[doc = " How long to wait for a suitable server before failing with `CONNECTION`"]
    #[doc = " (overrides the connection string; the driver's default is 30000)."]
    server_selection_timeout_ms "serverSelectionTimeoutMS": Number => |o, v|
        o.server_selection_timeout_ms =
            Some(millis_up_to("serverSelectionTimeoutMS", v, MAX_TIMEOUT_MS)?);
    #[doc = " How long to wait for a TCP connection (overrides the connection string)."]
    connect_timeout_ms "connectTimeoutMS": Number => |o, v|
        o.connect_timeout_ms = Some(millis_up_to("connectTimeoutMS", v, MAX_TIMEOUT_MS)?);
}

option_table! {
    #[doc = " Options of `closeSharedClients` and `SequenceClient.close`."]
    CloseOptions => CloseTable for Duration;
    keys "close option" via [] only [];
    #[doc = " Longest wait for the driver to shut down, in milliseconds (default 5000). Pending"]
    #[doc = " calls reject with `CLIENT_CLOSED` at once either way."]
    timeout_ms "timeoutMS": Number => |o, v|
        *o = Duration::from_millis(millis_up_to("timeoutMS", v, MAX_CLOSE_TIMEOUT_MS)?);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binding::read::kinds::{check_keys, kind_of, Kind, OptionValue, Spec};
    use crate::binding::read::table::OptionTable;
    use crate::engine::client::handle::DEFAULT_CLOSE_TIMEOUT;
    use crate::engine::client::write_concern::WriteAck;
    use crate::engine::counter::counter_name::CounterName;
    use mongodb::bson::doc;
    use std::collections::BTreeMap;
    use std::fmt::Debug;

    /// The fields of `export interface <name> { ... }` in `index.d.ts`, with their types.
    fn interface(dts: &str, name: &str) -> BTreeMap<String, String> {
        let start = dts
            .find(&format!("export interface {name} {{"))
            .unwrap_or_else(|| panic!("interface {name} in index.d.ts"));
        let body = &dts[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
        body.split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('*') && !l.starts_with("/*"))
            .filter_map(|l| l.split_once("?:"))
            .map(|(k, t)| (k.trim().to_string(), t.trim().to_string()))
            .collect()
    }

    fn expected(spec: Spec) -> BTreeMap<String, String> {
        spec.iter()
            .map(|(name, kind)| (name.to_string(), kind.ts_type().to_string()))
            .collect()
    }

    /// Each table beside the name of the interface generated from it.
    fn tables() -> Vec<(&'static str, Spec)> {
        vec![
            ("SequenceOptions", SequenceTable::SPEC),
            ("WriteConcernOptions", WriteConcernTable::SPEC),
            ("LocatedOptions", LocatedTable::SPEC),
            ("InsertOptions", InsertTable::SPEC),
            ("ListOptions", ListTable::SPEC),
            ("SyncOptions", SyncTable::SPEC),
            ("SetCountersOptions", SetCountersTable::SPEC),
            ("InitOptions", InitTable::SPEC),
            ("ConnectOptions", ConnectTable::SPEC),
            ("CloseOptions", CloseTable::SPEC),
        ]
    }

    #[test]
    fn typings_list_exactly_what_the_readers_accept() {
        let dts = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/index.d.ts"))
            .expect("index.d.ts");
        for (name, spec) in tables() {
            assert_eq!(interface(&dts, name), expected(spec), "{name}");
        }
        // No option set is typed by hand any more.
        let header = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/dts-header.d.ts"
        ))
        .expect("dts header");
        for (name, _) in tables() {
            assert!(
                !header.contains(&format!(" {name} ")),
                "{name} in the header"
            );
        }
    }

    /// Two different values of `kind`.
    fn samples(kind: Kind) -> [OptionValue; 2] {
        let name = |s: &str| OptionValue::Name(CounterName::text(s).unwrap());
        let concern = |w| {
            OptionValue::WriteConcern(WriteConcernSpec {
                w: Some(w),
                ..Default::default()
            })
        };
        match kind {
            Kind::Text => [
                OptionValue::Text("a{seq}".into()),
                OptionValue::Text("b{seq}".into()),
            ],
            Kind::Flag => [OptionValue::Flag(true), OptionValue::Flag(false)],
            Kind::Integer => [OptionValue::Integer(7), OptionValue::Integer(9)],
            Kind::Number => [OptionValue::Number(7.0), OptionValue::Number(9.0)],
            Kind::Name => [name("a"), name("b")],
            Kind::WriteConcern => [concern(WriteAck::Nodes(1)), concern(WriteAck::Majority)],
            Kind::Ack => [
                OptionValue::Ack(WriteAck::Nodes(1)),
                OptionValue::Ack(WriteAck::Majority),
            ],
            Kind::Fields => [
                OptionValue::Fields(doc! { "id": "a" }),
                OptionValue::Fields(doc! { "id": "b" }),
            ],
        }
    }

    /// Every option of `T` converts, and into something that depends on its value.
    fn every_option_converts<T: OptionTable>(fresh: impl Fn() -> T::Target)
    where
        T::Target: PartialEq + Debug,
    {
        for (key, kind) in T::SPEC {
            let [a, b] = samples(*kind);
            let (mut first, mut second) = (fresh(), fresh());
            assert!(T::set(&mut first, key, a).unwrap(), "{key}");
            assert!(T::set(&mut second, key, b).unwrap(), "{key}");
            assert_ne!(first, second, "{key} ignores its value");
        }
        assert!(!T::set(&mut fresh(), "notAnOption", OptionValue::Flag(true)).unwrap());
    }

    #[test]
    fn every_option_of_every_table_converts() {
        every_option_converts::<SequenceTable>(EngineOptions::default);
        every_option_converts::<WriteConcernTable>(WriteConcernSpec::default);
        every_option_converts::<LocatedTable>(EngineOptions::default);
        every_option_converts::<InsertTable>(EngineInsertOptions::default);
        every_option_converts::<ListTable>(EngineOptions::default);
        every_option_converts::<SyncTable>(EngineOptions::default);
        every_option_converts::<SetCountersTable>(EngineOptions::default);
        every_option_converts::<InitTable>(EngineInitOptions::default);
        let target = || ConnectionTarget::from_uri("mongodb://localhost").unwrap();
        every_option_converts::<ConnectTable>(target);
        every_option_converts::<CloseTable>(|| DEFAULT_CLOSE_TIMEOUT);
    }

    #[test]
    fn a_value_of_another_kind_is_an_internal_error() {
        let mut options = EngineOptions::default();
        let e = SequenceTable::set(&mut options, "upsert", OptionValue::Integer(1)).unwrap_err();
        assert_eq!(e.code, crate::engine::error::ErrorCode::Internal);
        let e = ListTable::set(&mut options, "uri", OptionValue::Flag(true)).unwrap_err();
        assert_eq!(e.code, crate::engine::error::ErrorCode::Internal);
    }

    #[test]
    fn a_key_in_several_tables_has_one_kind() {
        let all = tables();
        for (name, spec) in &all {
            for (key, kind) in spec.iter() {
                for (other, other_spec) in &all {
                    if let Some(k) = kind_of(key, &[other_spec]) {
                        assert_eq!(k, *kind, "{key} in {name} and {other}");
                    }
                }
            }
        }
    }

    #[test]
    fn unknown_keys_are_refused_with_a_short_quote() {
        let keys = vec!["upsert".to_string(), "x".repeat(10_000)];
        let e = check_keys("option", &keys, &[SequenceTable::SPEC]).unwrap_err();
        assert!(e.message.len() < 400, "{}", e.message);
        assert!(check_keys("option", &keys[..1], &[SequenceTable::SPEC]).is_ok());
        assert_eq!(kind_of("gapless", &[InsertTable::SPEC]), Some(Kind::Flag));
        assert_eq!(kind_of("gapless", &[SequenceTable::SPEC]), None);
    }
}
