//! What the package's own JavaScript (the mongoose plugin, the command line) takes from
//! the engine, so that it defines nothing twice: the table of error codes, and the
//! database a connection string names.

#![allow(non_upper_case_globals)]

use std::ptr;

use napi::bindgen_prelude::{Env, JsObjectValue, Object, ToNapiValue, Unknown};
use napi::{check_status, sys, JsValue};

use crate::binding::error::OrThrow;
use crate::binding::guard::sync_call;
use crate::binding::read::js::required_string;
use crate::engine::client::connection;
use crate::engine::error::ErrorCode as Code;

/// The value of the `ErrorCode` export: a frozen object with one property per code of
/// the engine's table, each holding its own name (`ErrorCode.SEQUENCE_NOT_FOUND ===
/// 'SEQUENCE_NOT_FOUND'`).
pub struct ErrorCodeTable;

impl ToNapiValue for ErrorCodeTable {
    unsafe fn to_napi_value(raw_env: sys::napi_env, _table: Self) -> napi::Result<sys::napi_value> {
        let env = Env::from(raw_env);
        let mut table = Object::new(&env)?;
        for code in Code::ALL {
            table.set_named_property(code.as_str(), code.as_str())?;
        }
        let object: Unknown = env.get_global()?.get_named_property("Object")?;
        let mut freeze = ptr::null_mut();
        let mut frozen = ptr::null_mut();
        // SAFETY: N-API calls on live values of this env, on the JavaScript thread:
        // `Object.freeze(table)`.
        unsafe {
            check_status!(sys::napi_get_named_property(
                raw_env,
                object.raw(),
                c"freeze".as_ptr(),
                &mut freeze
            ))?;
            check_status!(sys::napi_call_function(
                raw_env,
                object.raw(),
                freeze,
                1,
                [table.raw()].as_ptr(),
                &mut frozen
            ))?;
        }
        Ok(table.raw())
    }
}

/// Every error code this package gives the `code` of its errors, as a frozen object
/// mapping each code to itself: compare `error.code === ErrorCode.SEQUENCE_NOT_FOUND`.
/// The mongoose plugin's errors use the same codes.
#[napi]
pub const ErrorCode: ErrorCodeTable = ErrorCodeTable;

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
