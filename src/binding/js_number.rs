//! Which values JavaScript can receive as a `number`.

use crate::engine::alloc::allocate::IdRange;
use crate::engine::error::SeqResult;
use crate::engine::text::validate::check_safe_values;
pub use crate::engine::text::validate::is_safe;

/// Refuses a block that cannot be returned as numbers, telling how to get it as BigInt.
pub fn check_safe_range(name: &str, range: &IdRange) -> SeqResult<()> {
    check_safe_values(name, range.first, range.last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;
    use crate::engine::text::validate::MAX_SAFE_INTEGER;

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
