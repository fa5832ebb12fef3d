//! One table per option set. [`option_table!`] turns a list of options — each with its
//! doc comment, JavaScript name, [`Kind`] and conversion into the engine's options —
//! into the three things that must agree: the `#[napi(object)]` struct the typings
//! (`index.d.ts`) are generated from, the names and kinds the readers accept
//! ([`OptionTable::SPEC`]), and the conversion ([`OptionTable::set`]).

use napi::bindgen_prelude::{Object, Unknown};

use crate::binding::read::js::{describe, for_each_property, is_nullish, object, property};
use crate::binding::read::kinds::{check_keys, read_value, Kind, OptionValue, Spec};
use crate::binding::read::options::SequenceTable;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::quote::quoted;

/// An option set: its names and kinds, and how each value converts into the engine's
/// options.
pub trait OptionTable {
    /// The engine's options the values convert into.
    type Target;
    /// The options, with their kinds, in the order of the typings.
    const SPEC: Spec;
    /// What an unknown key is called in messages (`"option"`, `"init option"`…).
    const WHAT: &'static str;
    /// The call that takes only these of the common options (the others are refused
    /// naming it), if any.
    const ONLY_BY: Option<&'static str>;
    /// Sets option `key` of `target` from `value`; `Ok(false)` for a key not in the
    /// table. A value of another kind than the table's is an internal error.
    fn set(target: &mut Self::Target, key: &str, value: OptionValue) -> SeqResult<bool>;
}

/// The error for a value of a kind the table does not give `key`.
pub fn mismatch(key: &str, value: &OptionValue) -> SeqError {
    SeqError::internal(&format!(
        "option table: '{key}' given a {:?} value",
        value.kind()
    ))
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

/// Defines an option set: the typings struct `$typings` (with the options' doc comments,
/// becoming the interface of `index.d.ts`), and `$table`, an [`OptionTable`] converting
/// into `$target`. Each option is `rust_field "jsName": Kind => |target, value| conversion;`
/// where `value` is the value read by its kind; a row without a conversion is read by
/// the table named in `via`. Doc comments are written as `#[doc = "..."]`: napi reads
/// them from the string literal, which `///` comments passed through `macro_rules!` would
/// turn into a raw one (`r"..."`), shown as such in `index.d.ts`.
macro_rules! option_table {
    (
        $(#[$doc:meta])*
        $typings:ident => $table:ident for $target:ty;
        keys $what:tt via $via:tt only $only:tt;
        $(
            $(#[$fdoc:meta])*
            $field:ident $js:tt : $kind:ident $(=> |$t:ident, $v:ident| $apply:expr)?;
        )*
    ) => {
        $crate::binding::read::table::typings! {
            [$(#[$doc])*] $typings []
            $( [$(#[$fdoc])*] $field $js $kind )*
        }

        #[doc = concat!("Reads the options of [`", stringify!($typings), "`].")]
        pub struct $table;

        impl $crate::binding::read::table::OptionTable for $table {
            type Target = $target;
            const SPEC: $crate::binding::read::kinds::Spec =
                &[$(($js, $crate::binding::read::kinds::Kind::$kind)),*];
            const WHAT: &'static str = $what;
            const ONLY_BY: Option<&'static str> = $crate::binding::read::table::only!($only);

            fn set(
                target: &mut $target,
                key: &str,
                value: $crate::binding::read::kinds::OptionValue,
            ) -> $crate::engine::error::SeqResult<bool> {
                match key {
                    $($js => {
                        $crate::binding::read::table::convert!(
                            target, key, value, $kind, $via $(, |$t, $v| $apply)?
                        );
                    })*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

/// One row's conversion in [`option_table!`]: its own, or the one of the table it
/// reads its other options with (`via [Table . field]`).
macro_rules! convert {
    ($target:ident, $key:ident, $value:ident, $kind:ident, $via:tt, |$t:ident, $v:ident| $apply:expr) => {{
        let $crate::binding::read::kinds::OptionValue::$kind($v) = $value else {
            return Err($crate::binding::read::table::mismatch($key, &$value));
        };
        let $t = &mut *$target;
        $apply;
    }};
    ($target:ident, $key:ident, $value:ident, $kind:ident, [$base:ident $(. $proj:ident)?]) => {{
        let shown = $value.kind();
        if !<$base as $crate::binding::read::table::OptionTable>::set(
            &mut (*$target) $(.$proj)?, $key, $value,
        )? {
            return Err($crate::engine::error::SeqError::internal(&format!(
                "option table: '{}' ({:?}) missing from the table it reads with",
                $key, shown
            )));
        }
    }};
}

/// The `only` part of [`option_table!`]: `[]`, or `["call"]` for a call that takes only
/// some of the common options (the others are refused naming it).
macro_rules! only {
    ([]) => {
        None
    };
    ([$call:tt]) => {
        Some($call)
    };
}

/// The typings struct of [`option_table!`], one field at a time: each kind gives the
/// field its Rust type and, where napi cannot spell it, its TypeScript type.
macro_rules! typings {
    ([$($sdoc:tt)*] $name:ident [$($done:tt)*]) => {
        $($sdoc)*
        #[napi(object)]
        pub struct $name { $($done)* }
    };
    (@field $s:tt $n:ident [$($d:tt)*] [$($doc:tt)*] $f:ident $js:tt [$($ty:tt)*] [$($ts:tt)?]
        $($rest:tt)*) => {
        $crate::binding::read::table::typings!($s $n [$($d)* $($doc)*
            #[napi(js_name = $js $(, ts_type = $ts)?)] pub $f: Option<$($ty)*>,] $($rest)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Text $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js [String] [] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Flag $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js [bool] [] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Number $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js [f64] [] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Integer $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js
            [napi::Either<f64, napi::bindgen_prelude::BigInt>] ["number | bigint"] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Name $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js
            [napi::Either<String, std::collections::HashMap<String,
                napi::bindgen_prelude::Either4<String, f64, bool, napi::bindgen_prelude::BigInt>>>]
            ["string | Record<string, string | number | boolean | bigint>"] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt WriteConcern $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js
            [WriteConcernOptions] [] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Ack $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js
            [napi::Either<f64, String>] ["number | 'majority' | string"] $($r)*);
    };
    ($s:tt $n:ident $d:tt $doc:tt $f:ident $js:tt Fields $($r:tt)*) => {
        $crate::binding::read::table::typings!(@field $s $n $d $doc $f $js
            [std::collections::HashMap<String, napi::UnknownRef>]
            ["Record<string, unknown>"] $($r)*);
    };
}

pub(crate) use convert;
pub(crate) use only;
pub(crate) use option_table;
pub(crate) use typings;
