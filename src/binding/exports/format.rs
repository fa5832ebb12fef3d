//! `formatSequence(value, pattern, date?)`: business numbers from values.

use crate::binding::boundary::sync_call;
use napi::bindgen_prelude::{Env, Unknown};
use napi::{sys, JsValue};

use crate::binding::error::OrThrow;
use crate::binding::js::{describe, is_nullish, number, required_string};
use crate::binding::read::kinds::read_integer;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::format::{now_millis, Pattern};

/// Formats a sequence value as a business number. Tokens: `{seq}` the value, `{seq:N}`
/// zero-padded to at least N digits (never truncated), `{YYYY}`, `{YY}`, `{MM}`, `{DD}`
/// the date in UTC (of `date`, default now), `{{` and `}}` literal braces.
/// `formatSequence(123, 'ORD{YYYY}{seq:6}')` → `'ORD2025000123'` in 2025.
/// Throws `INVALID_ARGUMENT` for a bad value, pattern or date.
#[napi(ts_args_type = "value: number | bigint, pattern: string, date?: Date | number")]
pub fn format_sequence(
    env: &Env,
    value: Unknown,
    pattern: Unknown,
    date: Option<Unknown>,
) -> napi::Result<String> {
    sync_call(env, "formatSequence", || {
        read_and_format(env, &value, &pattern, date.as_ref()).or_throw(env)
    })
}

fn read_and_format(
    env: &Env,
    value: &Unknown,
    pattern: &Unknown,
    date: Option<&Unknown>,
) -> SeqResult<String> {
    let value = read_integer("value", value)?;
    let text = required_string("pattern", pattern)?;
    let pattern = Pattern::parse(&text)?;
    let millis = match date.filter(|d| !is_nullish(d)) {
        None => now_millis(),
        Some(d) => read_date(env, d)?,
    };
    Ok(pattern.format(value, millis))
}

/// Milliseconds since the epoch of a `Date` or a number.
fn read_date(env: &Env, value: &Unknown) -> SeqResult<i64> {
    let invalid = || {
        SeqError::invalid_argument(format!(
            "date must be a valid Date or a number of milliseconds; got {}",
            describe(value)
        ))
    };
    if let Some(ms) = number(value) {
        return ms.is_finite().then_some(ms as i64).ok_or_else(invalid);
    }
    let mut is_date = false;
    let mut ms = f64::NAN;
    // SAFETY: N-API queries on a live value of this env.
    unsafe {
        if sys::napi_is_date(env.raw(), value.raw(), &mut is_date) != sys::Status::napi_ok
            || !is_date
            || sys::napi_get_date_value(env.raw(), value.raw(), &mut ms) != sys::Status::napi_ok
        {
            return Err(invalid());
        }
    }
    ms.is_finite().then_some(ms as i64).ok_or_else(invalid)
}
