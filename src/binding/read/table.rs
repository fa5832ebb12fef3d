//! One table per option set. [`option_table!`] turns a list of options — each with its
//! doc comment, JavaScript name, [`Kind`] and conversion into the engine's options — into
//! the three things that must agree: the `#[napi(object)]` struct the typings
//! (`index.d.ts`) are generated from, the names and kinds the readers accept
//! ([`OptionTable::SPEC`]), and the conversion ([`OptionTable::set`]). Reading an options
//! argument through a table is `read::option_reader`'s.
//!
//! [`Kind`]: crate::binding::read::kinds::Kind

use crate::binding::read::kinds::{OptionValue, Spec};
use crate::engine::error::{SeqError, SeqResult};

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
