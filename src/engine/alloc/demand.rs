//! What each call asks of one round trip, and how the calls merged into it are served
//! from a configured counter exactly as if they had run one after another, in order.
//!
//! A call keeps its own semantics whatever it was merged with: a single value takes the
//! next value (or the first of a new cycle); a batch takes `count` values in one piece
//! (restarting whole on a cycling counter); a cache fill takes what is left before the
//! limit. A call that cannot be served (exhausted, or larger than a cycle) fails alone.

use crate::engine::counter::id_range::IdRange;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};

/// What one caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demand {
    /// Exactly this many values, in one contiguous piece (a call).
    Exact(i64),
    /// As many as fit before the counter's limit, at most this many (a cache fill).
    UpTo(i64),
}

impl Demand {
    /// The most values it takes.
    pub fn count(&self) -> i64 {
        match self {
            Demand::Exact(n) | Demand::UpTo(n) => *n,
        }
    }
}

/// The sum of the counts of `demands`.
pub fn total(demands: &[Demand]) -> i64 {
    demands.iter().map(Demand::count).sum()
}

/// Splits one block reserved for all `demands` into their slices, in order.
pub fn split(range: IdRange, demands: &[Demand]) -> Vec<SeqResult<IdRange>> {
    let mut offset = 0;
    demands
        .iter()
        .map(|d| {
            let slice = range.slice(offset, d.count());
            offset += d.count();
            Ok(slice)
        })
        .collect()
}

/// How the stored value must change to carry out a [`Plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Every demand was served in full, in one piece: an `$inc` of `count` steps guarded
    /// on room for them (the value it started from need not be exact).
    Increment(i64),
    /// Set the value from exactly what was read to this one (a restart, a short fill, or a
    /// failed demand make the outcome depend on the exact value).
    CompareAndSet(i64),
    /// The first demand started a new cycle: the plan is the same from every stored value
    /// that leaves no room for `needs` more values, so set the value to `last` guarded on
    /// exactly that, not on the value read. A racing restart by another caller then
    /// leaves room, and this caller goes on in the new cycle instead of losing again.
    Restart {
        /// Values the first demand needed room for.
        needs: i64,
        /// The value after the plan.
        last: i64,
    },
    /// Nothing to write: no demand was served.
    Nothing,
}

/// The outcome of serving `demands` in order from a configured counter holding `current`.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// One result per demand.
    pub grants: Vec<SeqResult<IdRange>>,
    /// The write that makes it so.
    pub write: Write,
}

fn range(first: i128, count: i128, step: i128) -> IdRange {
    let to_i64 = |v: i128| i64::try_from(v).expect("within the configured limits");
    IdRange {
        first: to_i64(first),
        last: to_i64(first + (count - 1) * step),
        step: to_i64(step),
    }
}

fn exhausted(label: &str, config: &SequenceConfig, count: i64, after: i128) -> SeqError {
    let (which, limit) = if config.step > 0 {
        ("maxValue", config.max)
    } else {
        ("minValue", config.min)
    };
    SeqError::new(
        ErrorCode::SequenceExhausted,
        format!(
            "Sequence '{label}' is exhausted: {count} more value(s) after {after} would pass \
             its {which} {limit}"
        ),
    )
}

/// Serves `demands` in order from a configured counter holding `current`, in 128-bit
/// arithmetic (no intermediate can overflow). `INVALID_COUNTER` when `current` lies
/// outside what the configuration can continue from (written by someone else).
pub fn plan_configured(
    label: &str,
    field: &str,
    config: &SequenceConfig,
    current: i64,
    demands: &[Demand],
) -> SeqResult<Plan> {
    if !config.holds(current) {
        return Err(SeqError::invalid_counter(
            label,
            field,
            &format!(
                "{current}, outside its limits {} .. {} for step {}",
                config.min, config.max, config.step
            ),
        ));
    }
    let (step, min, max) = (
        i128::from(config.step),
        i128::from(config.min),
        i128::from(config.max),
    );
    let within = |v: i128| v >= min && v <= max;
    let limit = if step > 0 { max } else { min };
    let restart = i128::from(config.default_start());
    let cycle = config.cycle_size();
    let mut value = i128::from(current);
    let mut whole = true;
    let mut restarted_first = None;
    let mut grants = Vec::with_capacity(demands.len());
    for (index, demand) in demands.iter().enumerate() {
        let n = i128::from(demand.count());
        let room = (limit - value) / step;
        let grant = match demand {
            Demand::Exact(_) if within(value + step * n) => {
                let first = value + step;
                value += step * n;
                Ok(range(first, n, step))
            }
            Demand::UpTo(_) if room >= 1 => {
                let k = n.min(room);
                whole &= k == n;
                let first = value + step;
                value += step * k;
                Ok(range(first, k, step))
            }
            _ if !config.cycle => {
                whole = false;
                Err(exhausted(label, config, demand.count(), value))
            }
            Demand::Exact(_) if n > cycle => {
                whole = false;
                Err(SeqError::invalid_argument(format!(
                    "Sequence '{label}' cycles within {cycle} values; {n} cannot be reserved \
                     at once"
                )))
            }
            _ => {
                let k = n.min(cycle);
                whole = false;
                if index == 0 {
                    // No room for an exact demand's n values, or a fill's first one.
                    restarted_first = Some(match demand {
                        Demand::Exact(n) => *n,
                        Demand::UpTo(_) => 1,
                    });
                }
                value = restart + step * (k - 1);
                Ok(range(restart, k, step))
            }
        };
        grants.push(grant);
    }
    let last = i64::try_from(value).expect("within the configured limits");
    let write = if grants.iter().all(Result::is_err) {
        Write::Nothing
    } else if let Some(needs) = restarted_first {
        Write::Restart { needs, last }
    } else if whole && config.span(total(demands)).is_some() {
        // The store can only `$inc` by a 64-bit operand: a whole plan whose span does
        // not fit (huge steps) is written as the exact value instead, never retried.
        Write::Increment(total(demands))
    } else {
        Write::CompareAndSet(last)
    };
    Ok(Plan { grants, write })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(plan: &Plan) -> Vec<Result<Vec<i64>, ErrorCode>> {
        plan.grants
            .iter()
            .map(|g| g.as_ref().map(|r| r.values().collect()).map_err(|e| e.code))
            .collect()
    }

    fn config(step: i64, min: i64, max: i64, cycle: bool) -> SequenceConfig {
        SequenceConfig::new(step, Some(min), Some(max), cycle).unwrap()
    }

    #[test]
    fn singles_take_up_to_the_limit_then_fail_alone() {
        let c = config(1, 1, 3, false);
        let p = plan_configured("L", "f", &c, 0, &[Demand::Exact(1); 5]).unwrap();
        use ErrorCode::SequenceExhausted as X;
        assert_eq!(
            values(&p),
            vec![Ok(vec![1]), Ok(vec![2]), Ok(vec![3]), Err(X), Err(X)]
        );
        assert_eq!(p.write, Write::CompareAndSet(3));
    }

    #[test]
    fn singles_cycle_one_by_one() {
        let c = config(1, 1, 3, true);
        let p = plan_configured("C", "f", &c, 0, &[Demand::Exact(1); 5]).unwrap();
        let got: Vec<i64> = p.grants.iter().map(|g| g.as_ref().unwrap().first).collect();
        assert_eq!(got, vec![1, 2, 3, 1, 2]);
        assert_eq!(p.write, Write::CompareAndSet(2));
    }

    #[test]
    fn a_batch_restarts_whole_and_a_too_large_one_fails_alone() {
        let c = config(1, 1, 5, true);
        let p = plan_configured(
            "C",
            "f",
            &c,
            3,
            &[Demand::Exact(3), Demand::Exact(6), Demand::Exact(1)],
        )
        .unwrap();
        assert_eq!(
            values(&p),
            vec![
                Ok(vec![1, 2, 3]),
                Err(ErrorCode::InvalidArgument),
                Ok(vec![4])
            ]
        );
        assert_eq!(p.write, Write::Restart { needs: 3, last: 4 });
    }

    #[test]
    fn a_plan_that_restarts_first_is_the_same_from_every_value_without_room() {
        // Every small cycling configuration, every first demand that restarts, every
        // stored value the restart guard accepts: one plan, whatever the value read.
        for step in [-3i64, -2, -1, 1, 2, 3] {
            for (min, max) in [(-16, 21), (1, 5), (-4, -1), (0, 9)] {
                let c = config(step, min, max, true);
                let held: Vec<i64> = (min - 3 * step.abs()..=max + 3 * step.abs())
                    .filter(|v| c.holds(*v))
                    .collect();
                for first in [Demand::Exact(1), Demand::Exact(3), Demand::UpTo(4)] {
                    let demands = [first, Demand::Exact(2), Demand::UpTo(3)];
                    let mut seen: Option<Plan> = None;
                    for &current in &held {
                        let plan = plan_configured("R", "f", &c, current, &demands).unwrap();
                        let Write::Restart { needs, .. } = plan.write else {
                            continue;
                        };
                        // The guard the store applies: no room for `needs` values.
                        let guarded = c.restart_bounds(needs);
                        let no_room = guarded.is_some_and(|(l, h)| (l..=h).contains(&current));
                        assert!(no_room, "{c:?} {current} {first:?}");
                        match &seen {
                            None => seen = Some(plan),
                            Some(earlier) => assert_eq!(&plan, earlier, "{c:?} {current}"),
                        }
                    }
                    // And the guard accepts no value whose plan is not that restart.
                    if let Some(Plan {
                        write: Write::Restart { needs, .. },
                        ..
                    }) = &seen
                    {
                        for &current in &held {
                            let plan = plan_configured("R", "f", &c, current, &demands).unwrap();
                            let guarded = c.restart_bounds(*needs);
                            let no_room = guarded.is_some_and(|(l, h)| (l..=h).contains(&current));
                            if no_room {
                                assert_eq!(Some(&plan), seen.as_ref(), "{c:?} {current}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fills_take_what_is_left_then_restart() {
        let c = config(2, 1, 9, true);
        let p = plan_configured("F", "f", &c, 5, &[Demand::UpTo(10), Demand::UpTo(10)]).unwrap();
        assert_eq!(values(&p), vec![Ok(vec![7, 9]), Ok(vec![1, 3, 5, 7, 9])]);
        let bounded = config(1, 1, 1000, false);
        let p = plan_configured("F", "f", &bounded, 900, &[Demand::UpTo(300)]).unwrap();
        assert_eq!(p.grants[0].as_ref().unwrap().count(), 100);
    }

    #[test]
    fn whole_increments_need_no_exact_value() {
        let c = config(-1, -10, -1, false);
        let p = plan_configured("D", "f", &c, 0, &[Demand::Exact(2), Demand::UpTo(3)]).unwrap();
        assert_eq!(values(&p), vec![Ok(vec![-1, -2]), Ok(vec![-3, -4, -5])]);
        assert_eq!(p.write, Write::Increment(5));
    }

    #[test]
    fn huge_steps_never_overflow() {
        let c = SequenceConfig::new(1 << 40, Some(-1000), None, false).unwrap();
        let p = plan_configured("H", "f", &c, -1000, &[Demand::Exact(1 << 24)]).unwrap();
        assert_eq!(values(&p), vec![Err(ErrorCode::SequenceExhausted)]);
        assert_eq!(p.write, Write::Nothing);
        assert!(c.room_bounds(1 << 24).is_none());
    }

    #[test]
    fn a_whole_plan_beyond_one_increment_is_written_exactly() {
        // Two values of 2^62 move the counter by 2^63: no `$inc` operand holds that.
        let step = 1i64 << 62;
        let c = config(step, -step, step, false);
        let before = c.value_before(-step).unwrap();
        let p = plan_configured("H", "f", &c, before, &[Demand::Exact(2)]).unwrap();
        assert_eq!(values(&p), vec![Ok(vec![-step, 0])]);
        assert_eq!(p.write, Write::CompareAndSet(0));
        let p = plan_configured("H", "f", &c, before, &[Demand::Exact(1); 3]).unwrap();
        assert_eq!(
            values(&p),
            vec![Ok(vec![-step]), Ok(vec![0]), Ok(vec![step])]
        );
        assert_eq!(p.write, Write::CompareAndSet(step));
        let p = plan_configured("H", "f", &c, before, &[Demand::Exact(1)]).unwrap();
        assert_eq!(p.write, Write::Increment(1));
    }

    #[test]
    fn values_outside_the_limits_are_refused() {
        let c = config(1, 100, 200, false);
        let e = plan_configured("B", "f", &c, 0, &[Demand::Exact(1)]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidCounter);
        assert!(plan_configured("B", "f", &c, 99, &[Demand::Exact(1)]).is_ok());
    }
}
