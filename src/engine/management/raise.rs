//! Moving a counter on in its own direction, never back over values it handed out:
//! `raiseTo` to a given value, `syncToMax` past the values a source already uses.

use crate::engine::alloc::allocate::{contention, MAX_ATTEMPTS};
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::management::counter_value_of;
use crate::engine::store::counter_store::{CounterRef, CounterStore, Direction};

/// The direction a counter hands out values in: its configured step's, else (plain
/// counters, and missing ones, which a raise creates plain) the handle's step's.
pub fn direction_of(counter: &CounterRef, config: Option<&SequenceConfig>) -> Direction {
    Direction::of_step(config.map_or(counter.step, |c| c.step))
}

/// Moves the counter on to `value` along its direction (`$max` ascending, `$min`
/// descending: never back over values it handed out, and racing `next()` calls are not
/// lost), creating a plain counter at `value` when absent. A configured counter's limit
/// in its direction is checked first (`maxValue` ascending, `minValue` descending).
/// Returns the counter's value afterwards.
pub async fn raise_to<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    value: i64,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let config = match store.read(counter).await? {
            None => None,
            Some(found) => found.configuration(counter)?,
        };
        let direction = direction_of(counter, config.as_ref());
        if let Some(after) = move_on(store, counter, config.as_ref(), value, direction).await? {
            return Ok(after);
        }
    }
    Err(contention(counter))
}

/// One guarded `$max`/`$min` of the counter configured as `config`; `None` when the
/// counter was not configured so any more (the caller starts over).
async fn move_on<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    config: Option<&SequenceConfig>,
    value: i64,
    direction: Direction,
) -> SeqResult<Option<i64>> {
    if let Some(config) = config {
        let beyond = match direction {
            Direction::Up => (value > config.max).then_some(("raised", "maxValue", config.max)),
            Direction::Down => (value < config.min).then_some(("lowered", "minValue", config.min)),
        };
        if let Some((verb, which, limit)) = beyond {
            return Err(SeqError::invalid_argument(format!(
                "Sequence '{}' cannot be {verb} to {value}: beyond its {which} {limit}",
                counter.label
            )));
        }
    }
    match store.raise(counter, config, value, direction).await? {
        Some(after) => counter_value_of(counter, config, Some(&after)).map(Some),
        None => Ok(None),
    }
}

/// Where `syncToMax` finds the values already in use.
pub trait SourceValues: Send + Sync {
    /// The usable value ([`usable_value`]) furthest along `direction` (the largest for
    /// `Up`, the smallest for `Down`); `None` when there is none.
    fn extreme(
        &self,
        direction: Direction,
    ) -> impl std::future::Future<Output = SeqResult<Option<i64>>> + Send;
}

/// Moves the counter on past every value in `source` (`syncToMax`): an ascending counter
/// up to the largest value found, a descending one down to the smallest, as
/// [`raise_to`] does. With no usable value in `source` nothing is moved: an existing
/// counter resolves with its value unchanged, a missing one is created at 0. Returns the
/// counter's value afterwards.
pub async fn sync_to_source<S: CounterStore, V: SourceValues>(
    store: &S,
    counter: &CounterRef,
    source: &V,
) -> SeqResult<i64> {
    for _ in 0..MAX_ATTEMPTS {
        let found = store.read(counter).await?;
        let config = match &found {
            None => None,
            Some(found) => found.configuration(counter)?,
        };
        let direction = direction_of(counter, config.as_ref());
        let target = match (source.extreme(direction).await?, &found) {
            (Some(extreme), _) => extreme,
            (None, Some(found)) => {
                return counter_value_of(counter, config.as_ref(), found.value.as_ref())
            }
            (None, None) => 0,
        };
        // Guarded on the configuration read with the direction: a counter replaced
        // meanwhile (another direction) makes this start over.
        if let Some(after) = move_on(store, counter, config.as_ref(), target, direction).await? {
            return Ok(after);
        }
    }
    Err(contention(counter))
}
