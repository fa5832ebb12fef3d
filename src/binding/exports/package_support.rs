//! What the package's own JavaScript (the mongoose plugin, the command line) takes from
//! the engine, so that it defines nothing twice: the table of error codes, the database
//! a connection string names, and the masking of connection strings in messages.

use std::ptr;

use napi::bindgen_prelude::{Env, JsObjectValue, Object, Unknown};
use napi::{check_status, sys, JsValue};

use crate::binding::boundary::sync_call;
use crate::binding::error::OrThrow;
use crate::binding::js::required_string;
use crate::engine::client::connection;
use crate::engine::error::{with_error_codes, ErrorCode as Code};
use crate::engine::text::redact::redact_connection_strings as redact;

/// Expands the engine's list of codes ([`with_error_codes!`]) into the `ErrorCode` export
/// and its typings: a `#[napi(string_enum)]` whose variants are the codes' JavaScript
/// strings. napi registers it as the object `{ SEQUENCE_NOT_FOUND: 'SEQUENCE_NOT_FOUND', … }`
/// (frozen by [`freeze_exports`]) and writes it into `index.d.ts` as the `ErrorCode` string
/// union (the package's napi configuration sets `constEnum: false`, which makes a string
/// enum a union type). [`ErrorCode::from`] matches every engine code, so a code the
/// typings lacked would not compile.
macro_rules! define_error_code_export {
    ($( $(#[doc = $doc:tt])* $variant:ident => $js:ident, )*) => {
        /// The `code` of every `Error` this package raises (the mongoose plugin's included).
        /// The `ErrorCode` export holds each of them under its own name.
        #[napi(string_enum)]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $js, )*
        }

        impl From<Code> for ErrorCode {
            /// The export's code for an engine code.
            fn from(code: Code) -> Self {
                match code {
                    $(Code::$variant => ErrorCode::$js,)*
                }
            }
        }

        impl ErrorCode {
            /// Every code of the export, in the order of the engine's list.
            pub const ALL: [ErrorCode; [$(stringify!($js)),*].len()] = [$(ErrorCode::$js),*];

            /// The string JavaScript sees (the variant's own name).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$js => stringify!($js),)*
                }
            }
        }
    };
}
with_error_codes!(define_error_code_export);

/// Runs once every export is registered: freezes the `ErrorCode` export (napi makes a
/// string enum's object with writable properties), so that no code can be changed, added
/// or removed at run time: `error.code === ErrorCode.SEQUENCE_NOT_FOUND` stays true.
/// napi runs it for every environment that loads the addon (worker threads too). An addon
/// has one such function (napi keeps the last one registered): other work at load time
/// belongs here.
#[napi(module_exports)]
pub fn freeze_exports(exports: Object, env: Env) -> napi::Result<()> {
    let table: Unknown = exports.get_named_property("ErrorCode")?;
    let object: Unknown = env.get_global()?.get_named_property("Object")?;
    let mut freeze = ptr::null_mut();
    let mut frozen = ptr::null_mut();
    // SAFETY: N-API calls on live values of this env, on the JavaScript thread:
    // `Object.freeze(exports.ErrorCode)`.
    unsafe {
        check_status!(sys::napi_get_named_property(
            env.raw(),
            object.raw(),
            c"freeze".as_ptr(),
            &mut freeze
        ))?;
        check_status!(sys::napi_call_function(
            env.raw(),
            object.raw(),
            freeze,
            1,
            [table.raw()].as_ptr(),
            &mut frozen
        ))?;
    }
    Ok(())
}

/// The database a MongoDB connection string names in its path (`mongodb://host/shop` →
/// `'shop'`), or `null` when it names none. The string is read exactly as `connect(uri)`
/// and the `uri` option read it. Throws `INVALID_ARGUMENT` for an invalid connection
/// string (the message never holds its password).
#[napi(ts_args_type = "uri: string")]
pub fn default_database(env: &Env, uri: Unknown) -> napi::Result<Option<String>> {
    sync_call(env, "defaultDatabase", || {
        let read = required_string("uri", &uri)
            .and_then(|uri| connection::parse(&uri))
            .or_throw(env)?;
        Ok(read.default_database)
    })
}

/// `text` with the credentials of every MongoDB connection string in it masked
/// (`mongodb://app:pw@host/db` → `mongodb://****@host/db`, password options of a query
/// too), as this package's error messages show them: everything from the scheme to the
/// last `@` after it goes, since where a password ends cannot be told. For messages and
/// logs that may hold user input.
#[napi(ts_args_type = "text: string")]
pub fn redact_connection_strings(env: &Env, text: Unknown) -> napi::Result<String> {
    sync_call(env, "redactConnectionStrings", || {
        let text = required_string("text", &text).or_throw(env)?;
        Ok(redact(&text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The string literals of `export type ErrorCode = …` in `typings`, in order.
    fn union_literals(typings: &str) -> Vec<String> {
        let start = typings
            .find("export type ErrorCode =")
            .expect("index.d.ts declares the ErrorCode union");
        let rest = &typings[start + "export type ErrorCode =".len()..];
        let end = rest.find("\n\n").unwrap_or(rest.len());
        rest[..end]
            .split('|')
            .map(|part| part.trim().trim_matches('\'').to_owned())
            .filter(|part| !part.is_empty())
            .collect()
    }

    #[test]
    fn the_export_has_exactly_the_engine_codes() {
        assert_eq!(ErrorCode::ALL.len(), Code::ALL.len());
        for (export, code) in ErrorCode::ALL.into_iter().zip(Code::ALL) {
            assert_eq!(ErrorCode::from(code), export);
            assert_eq!(export.as_str(), code.as_str());
        }
    }

    /// Fails when a code is added to the engine's list but the committed typings were not
    /// regenerated (`napi build` writes the union; nothing is edited by hand).
    #[test]
    fn the_typings_union_is_the_engine_list_and_not_written_by_hand() {
        let root = env!("CARGO_MANIFEST_DIR");
        let typings = std::fs::read_to_string(format!("{root}/index.d.ts")).expect("index.d.ts");
        let expected: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(union_literals(&typings), expected);
        assert_eq!(typings.matches("export type ErrorCode =").count(), 1);
        let header =
            std::fs::read_to_string(format!("{root}/scripts/dts-header.d.ts")).expect("dts header");
        assert!(
            !header.contains("export type ErrorCode ="),
            "ErrorCode in the header"
        );
        for code in expected {
            assert!(
                !header.contains(&format!("'{code}'")),
                "{code} in the header"
            );
        }
    }
}
