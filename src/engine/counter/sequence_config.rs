//! A counter's own configuration — step, limits, cycling — stored in its document by
//! `init`, so that every call obeys the same rules (calls cannot disagree about them).
//!
//! Defaults follow PostgreSQL: an ascending sequence runs from 1 to 2^63 - 1, a descending
//! one from -1 down to -2^63; a cycling sequence restarts at its minimum (ascending) or
//! maximum (descending) once the other limit is passed.

use mongodb::bson::{doc, Bson, Document};

use crate::engine::counter::counter_value::compact_integer;
use crate::engine::error::{SeqError, SeqResult};

/// Step, limits and cycling of a configured counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SequenceConfig {
    /// Distance between values (negative: descending). Never 0.
    pub step: i64,
    /// Smallest value handed out.
    pub min: i64,
    /// Largest value handed out.
    pub max: i64,
    /// Restart at the other end instead of failing with `SEQUENCE_EXHAUSTED`.
    pub cycle: bool,
}

/// The document fields holding a configuration, named after the counter field.
pub struct ConfigFields {
    /// `<field>_start`: the start given to `init`, for `reset`.
    pub start: String,
    /// `<field>_step`: its presence marks a configured counter.
    pub step: String,
    /// `<field>_min`.
    pub min: String,
    /// `<field>_max`.
    pub max: String,
    /// `<field>_cycle`.
    pub cycle: String,
}

impl ConfigFields {
    /// The names for counter field `field`.
    pub fn of(field: &str) -> ConfigFields {
        ConfigFields {
            start: format!("{field}_start"),
            step: format!("{field}_step"),
            min: format!("{field}_min"),
            max: format!("{field}_max"),
            cycle: format!("{field}_cycle"),
        }
    }
}

impl SequenceConfig {
    /// A checked configuration from optional parts, with PostgreSQL's defaults.
    pub fn new(step: i64, min: Option<i64>, max: Option<i64>, cycle: bool) -> SeqResult<Self> {
        if step == 0 {
            return Err(SeqError::invalid_argument("step must not be 0"));
        }
        let (min, max) = if step > 0 {
            (min.unwrap_or(1), max.unwrap_or(i64::MAX))
        } else {
            (min.unwrap_or(i64::MIN), max.unwrap_or(-1))
        };
        if min >= max {
            return Err(SeqError::invalid_argument(format!(
                "minValue ({min}) must be below maxValue ({max})"
            )));
        }
        Ok(SequenceConfig {
            step,
            min,
            max,
            cycle,
        })
    }

    /// The first value when none is given: the minimum (ascending) or maximum (descending).
    pub fn default_start(&self) -> i64 {
        if self.step > 0 {
            self.min
        } else {
            self.max
        }
    }

    /// Refuses a start outside the limits.
    pub fn check_start(&self, start: i64) -> SeqResult<()> {
        if start < self.min || start > self.max {
            return Err(SeqError::invalid_argument(format!(
                "start {start} is outside minValue {} .. maxValue {}",
                self.min, self.max
            )));
        }
        Ok(())
    }

    /// The stored value that makes `start` the next value (`start - step`, which may lie
    /// just outside the limits).
    pub fn value_before(&self, start: i64) -> SeqResult<i64> {
        start
            .checked_sub(self.step)
            .ok_or_else(|| SeqError::overflow("the value before start is outside 64 bits"))
    }

    /// The fields to store for this configuration.
    pub fn to_fields(self, field: &str) -> Document {
        let names = ConfigFields::of(field);
        doc! {
            names.step: compact_integer(self.step),
            names.min: compact_integer(self.min),
            names.max: compact_integer(self.max),
            names.cycle: self.cycle,
        }
    }

    /// The configuration stored in `doc` for counter field `field`; `None` for a plain
    /// counter; `Err` (naming what is wrong) for a damaged one.
    pub fn from_doc(doc: &Document, field: &str) -> Result<Option<SequenceConfig>, String> {
        let names = ConfigFields::of(field);
        let Some(step) = doc.get(&names.step) else {
            return Ok(None);
        };
        // `init` stores all four: one missing or of another type was changed by other
        // code (or is another counter's field, named like one), and the counter's writes,
        // guarded on all four as read, would never match it.
        let missing = |name: &str| format!("a configuration without its field '{name}'");
        let int = |v: Option<&Bson>, name: &str| match v {
            Some(Bson::Int32(i)) => Ok(i64::from(*i)),
            Some(Bson::Int64(i)) => Ok(*i),
            None => Err(missing(name)),
            Some(_) => Err(format!(
                "a configuration field '{name}' that is not an integer"
            )),
        };
        let step = int(Some(step), &names.step)?;
        let min = int(doc.get(&names.min), &names.min)?;
        let max = int(doc.get(&names.max), &names.max)?;
        let cycle = match doc.get(&names.cycle) {
            Some(Bson::Boolean(cycle)) => *cycle,
            None => return Err(missing(&names.cycle)),
            Some(_) => {
                return Err(format!(
                    "a configuration field '{}' that is not a boolean",
                    names.cycle
                ))
            }
        };
        SequenceConfig::new(step, Some(min), Some(max), cycle)
            .map(Some)
            .map_err(|e| format!("a damaged configuration ({})", e.message))
    }

    /// Values in one full cycle (`minValue` to `maxValue` in steps).
    pub fn cycle_size(&self) -> i128 {
        (i128::from(self.max) - i128::from(self.min)) / i128::from(self.step).abs() + 1
    }

    /// The stored values from which `count` more values fit within the limits: the first
    /// (`value + step`) and the last (`value + step * count`) both inside `min ..= max`.
    /// `None` when no stored value allows it. The same bounds guard the server-side
    /// increment (`filters`) and the in-memory test store, so the two cannot drift.
    pub fn room_bounds(&self, count: i64) -> Option<(i64, i64)> {
        let (step, min, max) = (
            i128::from(self.step),
            i128::from(self.min),
            i128::from(self.max),
        );
        let span = step * i128::from(count);
        let (low, high) = if step > 0 {
            (min - step, max - span)
        } else {
            (min - span, max - step)
        };
        let low = low.max(i128::from(i64::MIN));
        let high = high.min(i128::from(i64::MAX));
        if low > high {
            return None;
        }
        Some((i64::try_from(low).ok()?, i64::try_from(high).ok()?))
    }

    /// The stored values a cycle restarts from for a demand of `count`: those this
    /// configuration holds ([`SequenceConfig::holds`]) that leave no room for `count` more
    /// values ([`SequenceConfig::room_bounds`]), as an inclusive range; `None` when there
    /// are none. One rule for the server-side guard (`filters`) and the in-memory store.
    pub fn restart_bounds(&self, count: i64) -> Option<(i64, i64)> {
        let (step, min, max) = (
            i128::from(self.step),
            i128::from(self.min),
            i128::from(self.max),
        );
        let (held_low, held_high) = if step > 0 {
            (min - step, max)
        } else {
            (min, max - step)
        };
        let (low, high) = match self.room_bounds(count) {
            Some((_, room_high)) if step > 0 => (i128::from(room_high) + 1, held_high),
            Some((room_low, _)) => (held_low, i128::from(room_low) - 1),
            None => (held_low, held_high),
        };
        let low = low.max(i128::from(i64::MIN));
        let high = high.min(i128::from(i64::MAX));
        if low > high {
            return None;
        }
        Some((i64::try_from(low).ok()?, i64::try_from(high).ok()?))
    }

    /// Whether a stored value is one this configuration can continue from: between the
    /// value before the first one (`min - step` ascending, `max - step` descending) and
    /// the last limit.
    pub fn holds(&self, value: i64) -> bool {
        let (v, step) = (i128::from(value), i128::from(self.step));
        if step > 0 {
            v >= i128::from(self.min) - step && v <= i128::from(self.max)
        } else {
            v <= i128::from(self.max) - step && v >= i128::from(self.min)
        }
    }

    /// The `$inc` operand for `count` values, when it fits in 64 bits.
    pub fn span(&self, count: i64) -> Option<i64> {
        self.step.checked_mul(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_postgresql() {
        let up = SequenceConfig::new(1, None, None, false).unwrap();
        assert_eq!((up.min, up.max, up.default_start()), (1, i64::MAX, 1));
        let down = SequenceConfig::new(-2, None, None, false).unwrap();
        assert_eq!(
            (down.min, down.max, down.default_start()),
            (i64::MIN, -1, -1)
        );
        assert!(SequenceConfig::new(0, None, None, false).is_err());
        assert!(SequenceConfig::new(1, Some(5), Some(5), false).is_err());
    }

    #[test]
    fn limits_and_restarts() {
        let c = SequenceConfig::new(2, Some(1), Some(9), true).unwrap();
        // From 1, four more values (3, 5, 7, 9) fit; five do not.
        assert_eq!(c.room_bounds(4), Some((-1, 1)));
        assert_eq!(c.room_bounds(5), Some((-1, -1)));
        // A restart holds at most one cycle: 1, 3, 5, 7, 9.
        assert_eq!(c.cycle_size(), 5);
        assert_eq!(c.value_before(1).unwrap(), -1);
        assert!(c.check_start(10).is_err());
        let down = SequenceConfig::new(-1, Some(-3), Some(3), false).unwrap();
        // From 3, six more values (2 .. -3) fit; seven do not.
        assert_eq!(down.room_bounds(6), Some((3, 4)));
        assert_eq!(down.room_bounds(7), Some((4, 4)));
    }

    #[test]
    fn stored_and_read_back() {
        let c = SequenceConfig::new(-5, Some(-100), Some(0), true).unwrap();
        let mut d = c.to_fields("seq");
        d.insert("seq", 0);
        assert_eq!(SequenceConfig::from_doc(&d, "seq"), Ok(Some(c)));
        assert_eq!(
            SequenceConfig::from_doc(&doc! { "seq": 1 }, "seq"),
            Ok(None)
        );
        assert!(SequenceConfig::from_doc(&doc! { "seq_step": "x" }, "seq").is_err());
        assert!(SequenceConfig::from_doc(&doc! { "seq_step": 0 }, "seq").is_err());
    }

    /// `init` stores the step, both limits and the cycle flag: a configuration missing
    /// one, or holding one of another type, is damaged, named, never read as defaults
    /// (the writes, guarded on what was read, would never match it).
    #[test]
    fn a_configuration_missing_a_field_or_of_another_type_is_damaged() {
        let whole = SequenceConfig::new(2, Some(1), Some(1000), false)
            .unwrap()
            .to_fields("seq");
        for (name, changed) in [
            ("seq_min", None),
            ("seq_max", None),
            ("seq_cycle", None),
            ("seq_cycle", Some(Bson::Int32(1))),
            ("seq_cycle", Some(Bson::String("true".into()))),
            ("seq_max", Some(Bson::Double(1000.0))),
        ] {
            let mut d = whole.clone();
            match &changed {
                Some(value) => d.insert(name, value.clone()),
                None => d.remove(name),
            };
            let e = SequenceConfig::from_doc(&d, "seq").unwrap_err();
            assert!(e.contains(&format!("'{name}'")), "{name} {changed:?}: {e}");
        }
        // A neighbour named like a configuration field makes one too.
        let e = SequenceConfig::from_doc(&doc! { "seq": 2, "seq_step": 3 }, "seq").unwrap_err();
        assert!(e.contains("'seq_min'"), "{e}");
    }
}
