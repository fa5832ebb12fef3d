//! Reading an options argument through its table ([`OptionTable`]): every key checked
//! (unknown ones refused, naming the known ones), each value read by its [`Kind`] (a
//! nested `writeConcern` through its own table) and converted by the table.

use std::time::Duration;

use napi::bindgen_prelude::{Object, Unknown};

use crate::binding::js::{
    describe, for_each_property, is_nullish, number, object, property, string,
};
use crate::binding::read::kinds::{
    check_keys, flag, read_fields, read_integer, text, whole, wrong_type, Kind, OptionValue,
};
use crate::binding::read::name::read_counter_name;
use crate::binding::read::options::{
    CloseTable, ConnectTable, InitTable, InsertTable, LocatedTable, SequenceTable,
    WriteConcernTable,
};
use crate::binding::read::table::OptionTable;
use crate::engine::call_options::CallOptions as EngineOptions;
use crate::engine::client::connection::ConnectionTarget;
use crate::engine::client::handle::DEFAULT_CLOSE_TIMEOUT;
use crate::engine::client::write_concern::{WriteAck, WriteConcernSpec};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::option_rules::{
    InitOptions as EngineInitOptions, InitSpec, InsertOptions as EngineInsertOptions,
};
use crate::engine::text::quote::quoted;

/// Reads the options argument of a sequence call (`undefined`/`null` gives the
/// defaults). Unknown keys and wrong types are refused, so a typo never silently falls
/// back to a default.
pub fn read_options(value: Option<&Unknown>) -> SeqResult<EngineOptions> {
    let mut options = EngineOptions::default();
    if let Some(object) = options_object(value, "options")? {
        read_each::<SequenceTable>(&object, &mut options, &[])?;
    }
    Ok(options)
}

/// Reads the options of `counterAt`.
pub fn read_located_options(value: Option<&Unknown>) -> SeqResult<EngineOptions> {
    let mut options = EngineOptions::default();
    if let Some(object) = options_object(value, "options")? {
        read_each::<LocatedTable>(&object, &mut options, &[])?;
    }
    Ok(options)
}

/// Reads the options of `insertOne`/`insertMany` (which refuse `collection`, pointing to
/// `counterCollection`).
pub fn read_insert_options(value: Option<&Unknown>) -> SeqResult<EngineInsertOptions> {
    let mut options = EngineInsertOptions::default();
    if let Some(object) = options_object(value, "options")? {
        let refused = [(
            "collection",
            "insertOne/insertMany take 'counterCollection' (or 'counters') for the counters \
             collection, not 'collection'",
        )];
        read_each::<InsertTable>(&object, &mut options, &refused)?;
    }
    Ok(options)
}

/// Reads the options of a call that takes only some of the common options (`T` is
/// [`ListTable`](crate::binding::read::options::ListTable),
/// [`SyncTable`](crate::binding::read::options::SyncTable) or
/// [`SetCountersTable`](crate::binding::read::options::SetCountersTable)): the others are refused naming
/// the call, rather than accepted and ignored.
pub fn read_used_options<T: OptionTable<Target = EngineOptions>>(
    value: Option<&Unknown>,
) -> SeqResult<EngineOptions> {
    let mut options = EngineOptions::default();
    if let Some(object) = options_object(value, "options")? {
        read_keys_first::<T>(&object, &mut options, "")?;
    }
    Ok(options)
}

/// Reads `{ w, journal, wtimeoutMS }`.
pub fn read_write_concern(value: &Unknown) -> SeqResult<WriteConcernSpec> {
    let obj = object(value).ok_or_else(|| wrong_type("writeConcern", Kind::WriteConcern, value))?;
    let mut spec = WriteConcernSpec::default();
    read_keys_first::<WriteConcernTable>(&obj, &mut spec, "writeConcern.")?;
    Ok(spec)
}

/// Reads the options of `init` for a handle whose `start` option is `default_start`.
pub fn read_init(value: Option<&Unknown>, default_start: i64) -> SeqResult<InitSpec> {
    let mut options = EngineInitOptions::default();
    if let Some(object) = options_object(value, "init options")? {
        read_keys_first::<InitTable>(&object, &mut options, "")?;
    }
    options.apply_rules(default_start)
}

/// Reads the options of `connect` into `target`.
pub fn read_connect_options(
    value: Option<&Unknown>,
    mut target: ConnectionTarget,
) -> SeqResult<ConnectionTarget> {
    if let Some(object) = options_object(value, "options")? {
        read_keys_first::<ConnectTable>(&object, &mut target, "")?;
    }
    Ok(target)
}

/// Reads `{ timeoutMS }` of a close: a whole number of milliseconds from 0 to a day.
pub fn read_close_options(value: Option<&Unknown>) -> SeqResult<Duration> {
    let mut timeout = DEFAULT_CLOSE_TIMEOUT;
    if let Some(object) = options_object(value, "options")? {
        read_keys_first::<CloseTable>(&object, &mut timeout, "")?;
    }
    Ok(timeout)
}

/// Reads every present key of `object` into `target`, in the order the object lists them,
/// refusing each unknown key as it comes (the hot path of every call: the keys are read
/// once, into a stack buffer). `refused` names keys refused with their own message when
/// not nullish.
pub fn read_each<T: OptionTable>(
    object: &Object,
    target: &mut T::Target,
    refused: &[(&str, &str)],
) -> SeqResult<()> {
    for_each_property(object, "the options", |key, value| {
        let given = !is_nullish(&value);
        match known::<T>(key, refused, given)? {
            Some(kind) if given => T::set(target, key, read_value(key, kind, &value)?).map(|_| ()),
            _ => Ok(()),
        }
    })
}

/// Reads the keys of `object` into `target` after refusing any unknown one, in the
/// table's order; `prefix` (e.g. `"writeConcern."`) names nested options in messages.
pub fn read_keys_first<T: OptionTable>(
    object: &Object,
    target: &mut T::Target,
    prefix: &str,
) -> SeqResult<()> {
    let keys = Object::keys(object)
        .map_err(|e| SeqError::invalid_argument(format!("cannot read the options: {e}")))?;
    for key in &keys {
        known::<T>(key, &[], true)?;
    }
    for (key, kind) in T::SPEC {
        let value = property(object, key)?;
        if is_nullish(&value) {
            continue;
        }
        let label = format!("{prefix}{key}");
        T::set(target, key, read_value(&label, *kind, &value)?)?;
    }
    Ok(())
}

/// The options argument as an object: `None` for `undefined`/`null` (all defaults).
pub fn options_object<'a>(
    value: Option<&Unknown<'a>>,
    what: &str,
) -> SeqResult<Option<Object<'a>>> {
    let Some(value) = value.filter(|v| !is_nullish(v)) else {
        return Ok(None);
    };
    object(value).map(Some).ok_or_else(|| {
        SeqError::invalid_argument(format!("{what} must be an object; got {}", describe(value)))
    })
}

/// The kind `T` gives `key`.
fn kind_in<T: OptionTable>(key: &str) -> Option<Kind> {
    T::SPEC
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, kind)| *kind)
}

/// The kind `T` gives `key`; refuses `key` when `T` does not list it (or, when `given`,
/// lists it in `refused`); `None` for a refused key not given.
fn known<T: OptionTable>(
    key: &str,
    refused: &[(&str, &str)],
    given: bool,
) -> SeqResult<Option<Kind>> {
    if let Some((_, message)) = refused.iter().find(|(k, _)| *k == key) {
        return if given {
            Err(SeqError::invalid_argument(*message))
        } else {
            Ok(None)
        };
    }
    if let Some(kind) = kind_in::<T>(key) {
        return Ok(Some(kind));
    }
    if let Some(call) = T::ONLY_BY {
        if kind_in::<SequenceTable>(key).is_some() {
            let taken: Vec<&str> = T::SPEC.iter().map(|(k, _)| *k).collect();
            return Err(SeqError::invalid_argument(format!(
                "option {} is not used by {call}; it takes {}",
                quoted(key),
                taken.join(", ")
            )));
        }
    }
    check_keys(T::WHAT, &[key.to_string()], &[T::SPEC]).map(|()| None)
}

/// Reads `value`, given for the option `label` (`key`, or `writeConcern.key` for a
/// nested one), as `kind`.
pub fn read_value(label: &str, kind: Kind, value: &Unknown) -> SeqResult<OptionValue> {
    Ok(match kind {
        Kind::Text => OptionValue::Text(text(label, value)?),
        Kind::Flag => OptionValue::Flag(flag(label, value)?),
        Kind::Integer => OptionValue::Integer(read_integer(label, value)?),
        Kind::Number => OptionValue::Number(whole(label, value)?),
        Kind::Name => OptionValue::Name(read_counter_name(value)?),
        Kind::WriteConcern => OptionValue::WriteConcern(read_write_concern(value)?),
        Kind::Ack => OptionValue::Ack(if let Some(n) = number(value) {
            WriteAck::from_number(n)?
        } else if let Some(text) = string(value) {
            WriteAck::from_text(&text)?
        } else {
            return Err(wrong_type(label, kind, value));
        }),
        Kind::Fields => OptionValue::Fields(read_fields(&format!("option '{label}'"), value)?),
    })
}
