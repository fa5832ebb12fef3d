//! Which values JavaScript can receive as a `number`.

use crate::engine::alloc::allocate::IdRange;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::MAX_SAFE_INTEGER;

/// True when `v` is exactly representable as a JavaScript number (|v| ≤ 2^53 - 1).
pub fn is_safe(v: i64) -> bool {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&v)
}

/// Refuses a block that cannot be returned as numbers, telling how to get it as BigInt.
pub fn check_safe_range(name: &str, range: &IdRange) -> SeqResult<()> {
    for v in [range.first, range.last] {
        if !is_safe(v) {
            return Err(SeqError::overflow(format!(
                "Sequence '{name}' reached {v}, beyond Number.MAX_SAFE_INTEGER \
                 (2^53 - 1); pass {{ bigint: true }} to receive BigInt values"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;

    #[test]
    fn boundary() {
        let ok = IdRange::contiguous(MAX_SAFE_INTEGER - 1, MAX_SAFE_INTEGER);
        assert!(check_safe_range("n", &ok).is_ok());
        let over = IdRange::contiguous(MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1);
        let e = check_safe_range("n", &over).unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceOverflow);
        assert!(e.message.contains("bigint"));
        assert!(!is_safe(-MAX_SAFE_INTEGER - 1));
    }
}
