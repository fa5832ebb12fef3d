//! A block of reserved values: an arithmetic progression `first, first + step, …, last`.

use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::MAX_SAFE_INTEGER;

/// Reserved values `first, first + step, …, last` (step 1 for plain counters; negative
/// for descending sequences).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    /// First value of the block.
    pub first: i64,
    /// Last value of the block.
    pub last: i64,
    /// Distance between consecutive values (never 0).
    pub step: i64,
}

impl IdRange {
    /// `first..=last` with step 1.
    pub fn contiguous(first: i64, last: i64) -> IdRange {
        IdRange {
            first,
            last,
            step: 1,
        }
    }

    /// The block ending at `last` with `count` values, step 1.
    pub fn ending_at(last: i64, count: i64) -> SeqResult<IdRange> {
        IdRange::stepped_ending_at(last, count, 1)
    }

    /// The block ending at `last` with `count` values `step` apart.
    pub fn stepped_ending_at(last: i64, count: i64, step: i64) -> SeqResult<IdRange> {
        let first = i128::from(last) - i128::from(step) * i128::from(count - 1);
        let first = i64::try_from(first)
            .map_err(|_| SeqError::overflow("reserved block starts outside the 64-bit range"))?;
        Ok(IdRange { first, last, step })
    }

    /// Number of values in the block. In 128-bit arithmetic: with a huge step (2^62),
    /// `last - first` alone may lie outside 64 bits.
    pub fn count(&self) -> i64 {
        let span = i128::from(self.last) - i128::from(self.first);
        // Nearly every block steps by one: counted on every cached call, without a
        // 128-bit division for those.
        let steps = match self.step {
            1 => span,
            -1 => -span,
            step => span / i128::from(step),
        };
        saturated(steps + 1)
    }

    /// The value at position `index` (0-based) of this block (or just past it).
    fn at(&self, index: i64) -> i64 {
        saturated(i128::from(self.first) + i128::from(index) * i128::from(self.step))
    }

    /// The `count` values starting at position `offset` (0-based) of this block.
    pub fn slice(&self, offset: i64, count: i64) -> IdRange {
        IdRange {
            first: self.at(offset),
            last: self.at(offset + count - 1),
            step: self.step,
        }
    }

    /// The block without its first `count` values (`None` when nothing is left).
    pub fn after(&self, count: i64) -> Option<IdRange> {
        (count < self.count()).then(|| self.slice(count, self.count() - count))
    }

    /// Every value, in order.
    pub fn values(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.count()).map(move |i| self.at(i))
    }

    /// Refuses the block, of sequence `name`, when JavaScript cannot hold its values
    /// exactly as numbers (beyond ±(2^53 - 1)): `SEQUENCE_OVERFLOW`, telling how to
    /// receive them as BigInts.
    pub fn check_safe_for_numbers(&self, name: &str) -> SeqResult<()> {
        for v in [self.first, self.last] {
            if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&v) {
                return Err(SeqError::overflow(format!(
                    "Sequence '{name}' reached {v}, beyond Number.MAX_SAFE_INTEGER \
                     (2^53 - 1); pass {{ bigint: true }} to receive BigInt values"
                )));
            }
        }
        Ok(())
    }
}

/// `value` as 64 bits, the nearest end when outside (only ever for an empty slice at an
/// end of the range; never a panic on the caller's thread).
fn saturated(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;

    #[test]
    fn values_past_2_53_cannot_be_numbers() {
        let ok = IdRange::contiguous(MAX_SAFE_INTEGER - 1, MAX_SAFE_INTEGER);
        assert!(ok.check_safe_for_numbers("n").is_ok());
        let low = IdRange::contiguous(-MAX_SAFE_INTEGER, 0);
        assert!(low.check_safe_for_numbers("n").is_ok());
        let over = IdRange::contiguous(MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1);
        let e = over.check_safe_for_numbers("n").unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceOverflow);
        assert!(e.message.contains("'n'") && e.message.contains("bigint"));
        let under = IdRange::contiguous(-MAX_SAFE_INTEGER - 1, 0);
        assert!(under.check_safe_for_numbers("n").is_err());
    }

    #[test]
    fn contiguous_blocks() {
        let r = IdRange::ending_at(10, 3).unwrap();
        assert_eq!(r, IdRange::contiguous(8, 10));
        assert_eq!(r.count(), 3);
        assert_eq!(r.values().collect::<Vec<_>>(), vec![8, 9, 10]);
        assert_eq!(r.slice(1, 2), IdRange::contiguous(9, 10));
        assert_eq!(r.after(1), Some(IdRange::contiguous(9, 10)));
        assert_eq!(r.after(3), None);
    }

    #[test]
    fn stepped_blocks() {
        let up = IdRange::stepped_ending_at(25, 3, 5).unwrap();
        assert_eq!(up.values().collect::<Vec<_>>(), vec![15, 20, 25]);
        assert_eq!(up.slice(1, 2).values().collect::<Vec<_>>(), vec![20, 25]);
        let down = IdRange::stepped_ending_at(-3, 3, -1).unwrap();
        assert_eq!(down.values().collect::<Vec<_>>(), vec![-1, -2, -3]);
        assert_eq!(down.count(), 3);
        assert!(IdRange::stepped_ending_at(i64::MIN, 2, 1).is_err());
    }

    #[test]
    fn positions_outside_64_bits_saturate_instead_of_wrapping() {
        assert_eq!(saturated(i128::from(i64::MAX) + 1), i64::MAX);
        assert_eq!(saturated(i128::from(i64::MIN) - 1), i64::MIN);
        assert_eq!(saturated(-7), -7);
    }

    #[test]
    fn huge_steps_span_the_whole_range() {
        let step = 1 << 62;
        let r = IdRange::stepped_ending_at(step, 3, step).unwrap();
        assert_eq!(r.count(), 3);
        assert_eq!(r.values().collect::<Vec<_>>(), vec![-step, 0, step]);
        assert_eq!(r.slice(1, 2).values().collect::<Vec<_>>(), vec![0, step]);
        assert_eq!(
            r.after(2),
            Some(IdRange {
                first: step,
                last: step,
                step
            })
        );
        let down = IdRange::stepped_ending_at(i64::MIN, 2, i64::MIN / 2).unwrap();
        assert_eq!(
            down.values().collect::<Vec<_>>(),
            vec![i64::MIN / 2, i64::MIN]
        );
    }
}
