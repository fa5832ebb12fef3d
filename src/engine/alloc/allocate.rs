//! Reserving values from a counter: the one-round-trip fast path, creation on first use,
//! and the slow paths for unusual stored types, all bounded.

use mongodb::bson::Bson;

use crate::engine::alloc::demand::{plan_configured, split, total, Demand, Write};
use crate::engine::counter::counter_value::{
    classify, fraction_counting_down, integer_after_increment, whole_past, StoredCounter,
    DOUBLE_EXACT_LIMIT,
};
use crate::engine::counter::locator::Locator;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{ErrorCode, SeqError, SeqResult};
use crate::engine::store::counter_store::{
    CounterDoc, CounterRef, CounterStore, FieldGuard, NewCounter,
};

/// How many times a reservation starts over after losing a race (another caller created
/// the counter, or changed it between a read and a guarded write).
pub const MAX_ATTEMPTS: u32 = 16;

/// MongoDB's TypeMismatch error code.
const TYPE_MISMATCH: i32 = 14;
/// MongoDB's BadValue error code: an `$inc` past the 64-bit range.
const BAD_VALUE: i32 = 2;

/// How to behave when the counter does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreatePolicy {
    /// Create the counter on first use instead of failing with `SEQUENCE_NOT_FOUND`.
    pub upsert: bool,
    /// The first value handed out by a counter this call creates.
    pub start: i64,
}

impl Default for CreatePolicy {
    fn default() -> Self {
        CreatePolicy {
            upsert: false,
            start: 1,
        }
    }
}

pub use crate::engine::counter::id_range::IdRange;

/// What one round trip served: one result per demand, and the configuration the counter
/// turned out to have (a hint for the next call).
#[derive(Debug)]
pub struct Allocation {
    /// One result per demand, in order.
    pub grants: Vec<SeqResult<IdRange>>,
    /// The counter's step and limits, when it is configured.
    pub config: Option<SequenceConfig>,
    /// Attempts started over after losing a race (for statistics).
    pub retries: u32,
}

impl Allocation {
    /// The same allocation, after `attempts` more attempts started over.
    fn after_retries(mut self, attempts: u32) -> Allocation {
        self.retries += attempts;
        self
    }
}

/// Reserves `count` contiguous values (count ≥ 1) from `counter` in as few round trips as
/// the stored state allows: one for an existing integer counter.
pub async fn allocate<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    policy: CreatePolicy,
    count: i64,
) -> SeqResult<IdRange> {
    let turn = tokio::sync::Mutex::new(());
    let demands = [Demand::Exact(count)];
    let mut served = allocate_demands(store, counter, policy, &demands, None, &turn).await?;
    served.grants.remove(0)
}

/// Serves `demands` (calls merged into one round trip, in call order) from `counter`,
/// each as if it had run alone after the ones before it. The outer error fails every
/// demand (the round trip failed); the inner ones fail one demand (exhausted, or larger
/// than a cycle). `hint` is the configuration seen by an earlier call, tried first in one
/// round trip. `turn` serialises, per counter and process, the read-then-write path of
/// configured counters, so this process's own calls never make each other retry.
pub async fn allocate_demands<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    policy: CreatePolicy,
    demands: &[Demand],
    hint: Option<SequenceConfig>,
    turn: &tokio::sync::Mutex<()>,
) -> SeqResult<Allocation> {
    let total = total(demands);
    if let Some(config) = hint {
        if let Some(after) = store.advance_configured(counter, &config, total).await? {
            return served_by_increment(counter, &config, after, demands);
        }
    }
    // A span beyond 64 bits cannot be one `$inc`: such calls are served exactly below.
    let span = plain_span(counter, total);
    // A counter found by other fields whose first value is its step is created by the
    // increment itself (one round trip from the first use on), once its unique index is
    // known to exist; a racing creation loses on that index and takes the next attempt.
    let mut upsert = policy.upsert
        && policy.start == counter.step
        && matches!(counter.locator, Locator::ByFields(_));
    if upsert {
        store.prepare_upsert(counter).await?;
    }
    for attempt in 0..MAX_ATTEMPTS {
        back_off(attempt).await;
        let fast_path = match &span {
            Ok(span) => store.increment_integer(counter, *span, upsert).await,
            Err(overflow) => Err(overflow.clone()),
        };
        upsert = false;
        match fast_path {
            Ok(Some(after)) => {
                let range = block_from(counter, Some(&after), total)?;
                return Ok(Allocation {
                    grants: split(range, demands),
                    config: None,
                    retries: attempt,
                });
            }
            Ok(None) => {}
            // `$type` also matches an array holding an integer, which `$inc` then refuses
            // without writing: read the counter to report what it holds.
            Err(e) if e.server_code == Some(TYPE_MISMATCH) => {}
            // The `$inc` of all demands would pass the 64-bit range: serve each as it
            // would be alone (a fill takes what is left, a call that does not fit
            // fails alone), exactly, like a configured counter at its limit.
            Err(e) if e.server_code == Some(BAD_VALUE) || e.code == ErrorCode::SequenceOverflow => {
                match serve_plain_exactly(store, counter, demands).await {
                    Ok(Some(served)) => return Ok(served.after_retries(attempt)),
                    Ok(None) => {}
                    // Inside a transaction the failed `$inc` aborted it, so the read
                    // cannot run: report the overflow itself.
                    Err(_) => return Err(increment_error(counter, e)),
                }
            }
            Err(e) => return Err(increment_error(counter, e)),
        }
        let outcome = match store.read(counter).await? {
            None if !policy.upsert => return Err(SeqError::not_found(&counter.label)),
            None => create_counter(store, counter, policy, total).await?,
            Some(CounterDoc {
                config: Err(damage),
                ..
            }) => {
                return Err(SeqError::invalid_counter(
                    &counter.label,
                    &counter.field,
                    &damage,
                ))
            }
            Some(CounterDoc {
                config: Ok(Some(_)),
                ..
            }) => {
                let _my_turn = turn.lock().await;
                return serve_configured(store, counter, demands)
                    .await
                    .map(|served| served.after_retries(attempt));
            }
            Some(CounterDoc { value, .. }) => {
                match advance_unusual(store, counter, value.as_ref(), demands).await? {
                    Some(served) => return Ok(served.after_retries(attempt)),
                    None => None,
                }
            }
        };
        if let Some(range) = outcome {
            return Ok(Allocation {
                grants: split(range, demands),
                config: None,
                retries: attempt,
            });
        }
    }
    Err(contention(counter))
}

/// Serves `demands` from a plain counter holding an integer, planned in order as if each
/// ran alone ([`plan_configured`] over the whole 64-bit range, in the counter's step),
/// written as the exact last value, guarded on the value read. `None` when the counter
/// is not a plain integer one or changed meanwhile (the caller goes on as usual).
async fn serve_plain_exactly<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    demands: &[Demand],
) -> SeqResult<Option<Allocation>> {
    let Some(CounterDoc {
        value,
        config: Ok(None),
        ..
    }) = store.read(counter).await?
    else {
        return Ok(None);
    };
    let StoredCounter::Integer(current) = classify(value.as_ref()) else {
        return Ok(None);
    };
    let (grants, last) = plan_within(counter, i64::MIN..=i64::MAX, current, demands, |demand| {
        SeqError::overflow(format!(
            "Sequence '{}' cannot hand out {} more value(s) after {current}: beyond the 64-bit \
             integer range",
            counter.label,
            demand.count()
        ))
    })?;
    if let Some(last) = last {
        if !store
            .compare_and_set(counter, None, Some(current), last)
            .await?
        {
            return Ok(None);
        }
    }
    Ok(Some(Allocation {
        grants,
        config: None,
        retries: 0,
    }))
}

/// Serves `demands` in order from a plain counter holding `current`, as if each ran alone,
/// within `range` (no cycle): one result per demand, a demand that does not fit failing
/// alone with `overflow(demand)`; and the value after the last one served, if any.
fn plan_within(
    counter: &CounterRef,
    range: std::ops::RangeInclusive<i64>,
    current: i64,
    demands: &[Demand],
    overflow: impl Fn(&Demand) -> SeqError,
) -> SeqResult<(Vec<SeqResult<IdRange>>, Option<i64>)> {
    let config = SequenceConfig {
        step: counter.step,
        min: *range.start(),
        max: *range.end(),
        cycle: false,
    };
    let plan = plan_configured(&counter.label, &counter.field, &config, current, demands)?;
    let grants: Vec<SeqResult<IdRange>> = plan
        .grants
        .into_iter()
        .zip(demands)
        .map(|(grant, demand)| grant.map_err(|_| overflow(demand)))
        .collect();
    // Without a cycle the values only move one way: the last served ends the plan.
    let last = grants
        .iter()
        .rev()
        .find_map(|g| g.as_ref().ok().map(|r| r.last));
    Ok((grants, last))
}

/// `CONTENTION`: the counter kept changing during [`MAX_ATTEMPTS`] attempts.
pub fn contention(counter: &CounterRef) -> SeqError {
    SeqError::new(
        ErrorCode::Contention,
        format!(
            "Sequence '{}' kept changing during {MAX_ATTEMPTS} attempts; try again",
            counter.label
        ),
    )
}

/// Waits a little, with jitter, before attempt `attempt` (none before the first two):
/// other processes are changing the counter.
async fn back_off(attempt: u32) {
    if attempt < 2 {
        return;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let micros = u64::from(attempt.min(10)) * 500 + u64::from(nanos % 1000);
    tokio::time::sleep(std::time::Duration::from_micros(micros)).await;
}

/// The demands served by an `$inc` of all of them that left the counter at `after`.
fn served_by_increment(
    counter: &CounterRef,
    config: &SequenceConfig,
    after: Bson,
    demands: &[Demand],
) -> SeqResult<Allocation> {
    let last = integer_after_increment(Some(&after))
        .map_err(|found| SeqError::invalid_counter(&counter.label, &counter.field, &found))?;
    let range = IdRange::stepped_ending_at(last, total(demands), config.step)?;
    Ok(Allocation {
        grants: split(range, demands),
        config: Some(*config),
        retries: 0,
    })
}

/// Serves `demands` from a configured counter: reads it, plans every demand in order
/// ([`plan_configured`]) and writes the outcome, guarded on what was read; starts over
/// (bounded) when the counter changed meanwhile.
async fn serve_configured<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    demands: &[Demand],
) -> SeqResult<Allocation> {
    for attempt in 0..MAX_ATTEMPTS {
        back_off(attempt).await;
        let Some(doc) = store.read(counter).await? else {
            return Err(SeqError::not_found(&counter.label));
        };
        let Some(config) = doc.configuration(counter)? else {
            return Err(changed_kind(counter));
        };
        let current = match classify(doc.value.as_ref()) {
            StoredCounter::Integer(v) => v,
            // Configured counters are this package's own: only an integer is theirs.
            _ => {
                let found = match integer_after_increment(doc.value.as_ref()) {
                    Err(found) => found,
                    Ok(_) => "a double".to_string(),
                };
                return Err(SeqError::invalid_counter(
                    &counter.label,
                    &counter.field,
                    &found,
                ));
            }
        };
        let plan = plan_configured(&counter.label, &counter.field, &config, current, demands)?;
        let written = match plan.write {
            Write::Nothing => true,
            Write::Increment(count) => {
                if let Some(after) = store.advance_configured(counter, &config, count).await? {
                    return served_by_increment(counter, &config, after, demands)
                        .map(|served| served.after_retries(attempt));
                }
                false
            }
            Write::CompareAndSet(last) => {
                store
                    .compare_and_set(counter, Some(&config), Some(current), last)
                    .await?
            }
            Write::Restart { needs, last } => {
                store.restart_cycle(counter, &config, needs, last).await?
            }
        };
        if written {
            return Ok(Allocation {
                grants: plan.grants,
                config: Some(config),
                retries: attempt,
            });
        }
    }
    Err(contention(counter))
}

fn changed_kind(counter: &CounterRef) -> SeqError {
    SeqError::new(
        ErrorCode::Contention,
        format!(
            "Sequence '{}' was replaced by an unconfigured counter during the call; try again",
            counter.label
        ),
    )
}

/// Creates the counter so that this call gets `start..start+count-1`. `None` when another
/// caller created it first (the caller then starts over).
async fn create_counter<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    policy: CreatePolicy,
    count: i64,
) -> SeqResult<Option<IdRange>> {
    let last = plain_span(counter, count - 1)
        .ok()
        .and_then(|span| policy.start.checked_add(span))
        .ok_or_else(|| {
            SeqError::overflow(format!(
                "Sequence '{}' cannot start at {} with {count} values: beyond the 64-bit range",
                counter.label, policy.start
            ))
        })?;
    if store.create(counter, NewCounter::plain(last)).await? {
        Ok(Some(IdRange::stepped_ending_at(last, count, counter.step)?))
    } else {
        Ok(None)
    }
}

/// The largest magnitude a counter stored as a double may reach: doubles count exactly up
/// to 2^53, and the increment past it would no longer move the stored value.
const DOUBLE_LAST: i64 = DOUBLE_EXACT_LIMIT as i64 - 1;

/// Serves `demands` from a counter whose field is absent or a double, guarded on what was
/// read, or refuses one that cannot count. A double near 2^53 serves each demand as it
/// would be alone (a cache fill takes what is left, a call that no longer fits fails
/// alone), as an integer counter does at the end of the 64-bit range. `None` when the
/// counter changed meanwhile.
async fn advance_unusual<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    field: Option<&Bson>,
    demands: &[Demand],
) -> SeqResult<Option<Allocation>> {
    let count = total(demands);
    let guard = match classify(field) {
        // Became an integer since the first attempt: start over on the fast path.
        StoredCounter::Integer(_) => return Ok(None),
        StoredCounter::Missing => FieldGuard::Absent,
        StoredCounter::IntegralDouble(d) => {
            return advance_double(store, counter, d, demands).await;
        }
        StoredCounter::FractionalDouble(d) => {
            let Some(whole) = whole_past(d, counter.step) else {
                return Err(SeqError::invalid_counter(
                    &counter.label,
                    &counter.field,
                    &fraction_counting_down(d),
                ));
            };
            take_over_fraction(store, counter, d, whole).await?;
            return Ok(None);
        }
        StoredCounter::Unusable(found) => {
            return Err(SeqError::invalid_counter(
                &counter.label,
                &counter.field,
                &found,
            ))
        }
    };
    match store
        .increment_guarded(counter, guard, plain_span(counter, count)?)
        .await
        .map_err(|e| increment_error(counter, e))?
    {
        Some(after) => Ok(Some(Allocation {
            grants: split(block_from(counter, Some(&after), count)?, demands),
            config: None,
            retries: 0,
        })),
        None => Ok(None),
    }
}

/// Takes over an ascending counter another plugin left holding the fraction `d`: it
/// becomes `whole`, the whole number `d` stands for ([`whole_past`]), guarded on `d`, and
/// the call starts over on it. Every value it hands out from there lies above `d`.
async fn take_over_fraction<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    d: f64,
    whole: i64,
) -> SeqResult<()> {
    store
        .set_guarded(counter, FieldGuard::EqualsDouble(d), whole)
        .await?;
    Ok(())
}

/// [`advance_unusual`] for a counter stored as the whole double `d`: the demands planned
/// in order within -(2^53 - 1) ..= 2^53 - 1, the values taken added to the double (it
/// stays a double) guarded on `d`.
async fn advance_double<S: CounterStore>(
    store: &S,
    counter: &CounterRef,
    d: f64,
    demands: &[Demand],
) -> SeqResult<Option<Allocation>> {
    let current = d as i64;
    let (grants, last) = plan_within(
        counter,
        -DOUBLE_LAST..=DOUBLE_LAST,
        current,
        demands,
        |_| double_overflow(counter, d),
    )?;
    let Some(last) = last else {
        // Nothing fits: the counter is left as it is.
        return Ok(Some(Allocation {
            grants,
            config: None,
            retries: 0,
        }));
    };
    let written = store
        .increment_guarded(counter, FieldGuard::EqualsDouble(d), last - current)
        .await
        .map_err(|e| increment_error(counter, e))?;
    Ok(written.map(|_| Allocation {
        grants,
        config: None,
        retries: 0,
    }))
}

fn double_overflow(counter: &CounterRef, d: f64) -> SeqError {
    SeqError::overflow(format!(
        "Sequence '{}' is stored as a double ({d}) and would pass 2^53, where doubles stop \
         counting exactly; store it as a long to go further",
        counter.label
    ))
}

fn block_from(counter: &CounterRef, after: Option<&Bson>, count: i64) -> SeqResult<IdRange> {
    let last = integer_after_increment(after)
        .map_err(|found| SeqError::invalid_counter(&counter.label, &counter.field, &found))?;
    IdRange::stepped_ending_at(last, count, counter.step)
}

/// How far `count` values move a plain counter: `count` steps.
fn plain_span(counter: &CounterRef, count: i64) -> SeqResult<i64> {
    count.checked_mul(counter.step).ok_or_else(|| {
        SeqError::overflow(format!(
            "Sequence '{}' cannot advance by {count} values of {}: beyond the 64-bit range",
            counter.label, counter.step
        ))
    })
}

/// `$inc` past the Int64 range fails on the server with BadValue (2): report it as overflow.
fn increment_error(counter: &CounterRef, error: SeqError) -> SeqError {
    if error.code == ErrorCode::Server && error.server_code == Some(BAD_VALUE) {
        SeqError {
            code: ErrorCode::SequenceOverflow,
            message: format!(
                "Sequence '{}' cannot advance: the counter would pass the 64-bit integer range",
                counter.label
            ),
            ..error
        }
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::engine::store::memory_store::MemoryStore;

    fn counter(name: &str) -> CounterRef {
        let name = crate::engine::counter::counter_name::CounterName::text(name).unwrap();
        CounterRef::new("counters", "sequence_value", name)
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    const UPSERT: CreatePolicy = CreatePolicy {
        upsert: true,
        start: 1,
    };

    fn located(id: &str, step: i64) -> CounterRef {
        use crate::engine::counter::locator::FieldsLocator;
        use mongodb::bson::doc;
        let fields = doc! { "id": id, "reference_value": Bson::Null };
        let name = crate::engine::counter::counter_name::CounterName::text(id).unwrap();
        CounterRef::new("counters", "seq", name).located(
            Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap()),
            step,
        )
    }

    #[test]
    fn retries_add_up_across_nested_attempts_and_a_lost_creation_race_counts_one() {
        let served = Allocation {
            grants: Vec::new(),
            config: None,
            retries: 1,
        };
        assert_eq!(served.after_retries(2).retries, 3);
        let store = MemoryStore::default();
        let c = counter("raced-creation");
        *store.race_create_with.lock().unwrap() = Some(10);
        let turn = tokio::sync::Mutex::new(());
        let served = run(allocate_demands(
            &store,
            &c,
            UPSERT,
            &[Demand::Exact(1)],
            None,
            &turn,
        ))
        .unwrap();
        assert_eq!(served.grants[0].as_ref().unwrap().first, 11);
        assert_eq!(served.retries, 1, "the lost creation started over once");
    }

    #[test]
    fn steps_space_values_from_creation_on() {
        let store = MemoryStore::default();
        let c = located("stepped", 5);
        let policy = CreatePolicy {
            upsert: true,
            start: 10,
        };
        let first = run(allocate(&store, &c, policy, 1)).unwrap();
        let block = run(allocate(&store, &c, policy, 3)).unwrap();
        assert_eq!((first.first, first.last), (10, 10));
        assert_eq!(block.values().collect::<Vec<_>>(), vec![15, 20, 25]);
        assert_eq!(store.get(&c), Some(Some(Bson::Int32(25))));
        // mongoose-sequence's reset: the stored value start - 1 makes the next start - 1 + step.
        store.put(&c, Some(Bson::Int32(9)));
        assert_eq!(run(allocate(&store, &c, policy, 1)).unwrap().first, 14);
    }

    #[test]
    fn located_counters_whose_start_is_their_step_are_created_by_the_increment() {
        let store = MemoryStore::default();
        let c = located("one_trip", 1);
        let a = run(allocate(&store, &c, UPSERT, 2)).unwrap();
        assert_eq!((a.first, a.last), (1, 2));
        assert_eq!(
            store.round_trips.load(Ordering::SeqCst),
            1,
            "one round trip"
        );
        // By `_id` the helper's counters keep their creation path (no upsert on `$inc`).
        let by_id = counter("helper");
        run(allocate(&store, &by_id, UPSERT, 1)).unwrap();
        assert_eq!(store.round_trips.load(Ordering::SeqCst), 4);
        // The same name found by other fields is another counter.
        assert_ne!(store.get(&c), store.get(&by_id));
    }

    #[test]
    fn a_step_that_overflows_is_refused_before_writing() {
        let store = MemoryStore::default();
        let c = located("huge", i64::MAX / 2);
        let e = run(allocate(&store, &c, UPSERT, 4)).unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceOverflow);
        assert_eq!(store.get(&c), None);
        // Three values of that step from 1 still fit (the last is 2^63 - 1).
        let r = run(allocate(&store, &c, UPSERT, 3)).unwrap();
        assert_eq!(r.last, i64::MAX);
        let e = run(allocate(&store, &c, UPSERT, 1)).unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceOverflow);
        assert_eq!(store.get(&c), Some(Some(Bson::Int64(i64::MAX))));
    }

    #[test]
    fn missing_counter_is_not_found_without_upsert() {
        let store = MemoryStore::default();
        let err = run(allocate(
            &store,
            &counter("productId"),
            CreatePolicy::default(),
            1,
        ))
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::SequenceNotFound);
        assert_eq!(
            store.get(&counter("productId")),
            None,
            "nothing was written"
        );
    }

    #[test]
    fn existing_integer_counter_takes_one_round_trip() {
        let store = MemoryStore::default();
        let c = counter("productId");
        store.put(&c, Some(Bson::Int32(0)));
        let a = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        let b = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!((a.first, a.last, b.first, b.last), (1, 1, 2, 2));
        assert_eq!(store.round_trips.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn batch_reserves_a_contiguous_block() {
        let store = MemoryStore::default();
        let c = counter("ticket_id");
        store.put(&c, Some(Bson::Int32(0)));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 100)).unwrap();
        assert_eq!((r.first, r.last, r.count()), (1, 100, 100));
        assert_eq!(store.get(&c), Some(Some(Bson::Int32(100))));
    }

    #[test]
    fn upsert_creates_at_start() {
        let store = MemoryStore::default();
        let c = counter("posts");
        let policy = CreatePolicy {
            upsert: true,
            start: 1000,
        };
        let r = run(allocate(&store, &c, policy, 5)).unwrap();
        assert_eq!((r.first, r.last), (1000, 1004));
        let r = run(allocate(&store, &c, policy, 1)).unwrap();
        assert_eq!((r.first, r.last), (1005, 1005));
        assert_eq!(store.get(&c), Some(Some(Bson::Int32(1005))));
    }

    #[test]
    fn losing_the_creation_race_continues_from_the_winner() {
        let store = MemoryStore::default();
        let c = counter("posts");
        *store.race_create_with.lock().unwrap() = Some(7);
        let r = run(allocate(&store, &c, UPSERT, 1)).unwrap();
        assert_eq!((r.first, r.last), (8, 8));
    }

    #[test]
    fn int32_promotes_to_int64() {
        let store = MemoryStore::default();
        let c = counter("big");
        store.put(&c, Some(Bson::Int32(i32::MAX)));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(r.first, i32::MAX as i64 + 1);
        assert_eq!(store.get(&c), Some(Some(Bson::Int64(i32::MAX as i64 + 1))));
    }

    #[test]
    fn int64_overflow_is_reported_as_overflow_without_write() {
        let store = MemoryStore::default();
        let c = counter("max");
        store.put(&c, Some(Bson::Int64(i64::MAX)));
        let err = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap_err();
        assert_eq!(err.code, ErrorCode::SequenceOverflow);
        assert!(err.message.contains("64-bit"), "{}", err.message);
        assert_eq!(store.get(&c), Some(Some(Bson::Int64(i64::MAX))));
    }

    #[test]
    fn an_overflow_whose_counter_cannot_be_read_is_reported_as_overflow() {
        // In a transaction the failed `$inc` aborts it: the re-plan's read fails.
        let store = MemoryStore::default();
        let c = counter("aborted");
        store.put(&c, Some(Bson::Int64(i64::MAX - 1)));
        store.fail_reads.store(1, Ordering::SeqCst);
        let err = run(allocate(&store, &c, CreatePolicy::default(), 2)).unwrap_err();
        assert_eq!(err.code, ErrorCode::SequenceOverflow);
        assert_eq!(
            err.server_code,
            Some(2),
            "the overflow itself, not the read's error"
        );
        assert_eq!(store.get(&c), Some(Some(Bson::Int64(i64::MAX - 1))));
    }

    #[test]
    fn near_the_end_each_demand_is_served_as_if_alone() {
        let store = MemoryStore::default();
        let c = counter("end");
        store.put(&c, Some(Bson::Int64(i64::MAX - 11)));
        let turn = tokio::sync::Mutex::new(());
        // A call, a fill of 100 (a cache block), a call that no longer fits.
        let demands = [Demand::Exact(1), Demand::UpTo(100), Demand::Exact(1)];
        let served = run(allocate_demands(
            &store,
            &c,
            CreatePolicy::default(),
            &demands,
            None,
            &turn,
        ))
        .unwrap();
        let got: Vec<_> = served
            .grants
            .iter()
            .map(|g| g.as_ref().map(|r| (r.first, r.last)).map_err(|e| e.code))
            .collect();
        assert_eq!(
            got,
            vec![
                Ok((i64::MAX - 10, i64::MAX - 10)),
                Ok((i64::MAX - 9, i64::MAX)),
                Err(ErrorCode::SequenceOverflow)
            ]
        );
        assert_eq!(store.get(&c), Some(Some(Bson::Int64(i64::MAX))));
        // Descending steps meet the other end the same way.
        let down = located("down", -2);
        store.put(&down, Some(Bson::Int64(i64::MIN + 5)));
        let demands = [Demand::Exact(3), Demand::Exact(2), Demand::UpTo(10)];
        let served = run(allocate_demands(
            &store,
            &down,
            CreatePolicy::default(),
            &demands,
            None,
            &turn,
        ))
        .unwrap();
        let got: Vec<_> = served
            .grants
            .iter()
            .map(|g| {
                g.as_ref()
                    .map(|r| r.values().collect::<Vec<_>>())
                    .map_err(|e| e.code)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                Err(ErrorCode::SequenceOverflow),
                Ok(vec![i64::MIN + 3, i64::MIN + 1]),
                Err(ErrorCode::SequenceOverflow)
            ]
        );
        assert_eq!(store.get(&down), Some(Some(Bson::Int64(i64::MIN + 1))));
    }

    #[test]
    fn integral_double_counts_and_stays_double() {
        let store = MemoryStore::default();
        let c = counter("dbl");
        store.put(&c, Some(Bson::Double(3_000_000_000.0)));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 2)).unwrap();
        assert_eq!((r.first, r.last), (3_000_000_001, 3_000_000_002));
    }

    #[test]
    fn double_near_two_pow_53_is_refused_before_writing() {
        let store = MemoryStore::default();
        let c = counter("dbl");
        let near = DOUBLE_EXACT_LIMIT - 1.0;
        store.put(&c, Some(Bson::Double(near)));
        let err = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap_err();
        assert_eq!(err.code, ErrorCode::SequenceOverflow);
        assert_eq!(store.get(&c), Some(Some(Bson::Double(near))));
    }

    /// What `allocate_demands` served each of `demands` from `c`: its first and last
    /// values, or its error code.
    fn served(
        store: &MemoryStore,
        c: &CounterRef,
        demands: &[Demand],
    ) -> Vec<Result<(i64, i64), ErrorCode>> {
        let turn = tokio::sync::Mutex::new(());
        let policy = CreatePolicy::default();
        run(allocate_demands(store, c, policy, demands, None, &turn))
            .unwrap()
            .grants
            .iter()
            .map(|g| g.as_ref().map(|r| (r.first, r.last)).map_err(|e| e.code))
            .collect()
    }

    #[test]
    fn a_double_near_two_pow_53_serves_each_demand_as_if_alone() {
        let store = MemoryStore::default();
        let top = DOUBLE_EXACT_LIMIT as i64 - 1;
        // A call, a cache fill of 10 that takes the 3 values left, a call that no longer fits.
        let c = counter("dbl-up");
        store.put(&c, Some(Bson::Double((top - 4) as f64)));
        let demands = [Demand::Exact(1), Demand::UpTo(10), Demand::Exact(1)];
        assert_eq!(
            served(&store, &c, &demands),
            vec![
                Ok((top - 3, top - 3)),
                Ok((top - 2, top)),
                Err(ErrorCode::SequenceOverflow)
            ]
        );
        assert_eq!(store.get(&c), Some(Some(Bson::Double(top as f64))));
        // Descending towards -2^53 the same way, in steps of 2.
        let down = located("dbl-down", -2);
        store.put(&down, Some(Bson::Double((5 - top) as f64)));
        let demands = [Demand::Exact(3), Demand::Exact(1), Demand::UpTo(10)];
        assert_eq!(
            served(&store, &down, &demands),
            vec![
                Err(ErrorCode::SequenceOverflow),
                Ok((3 - top, 3 - top)),
                Ok((1 - top, 1 - top))
            ]
        );
        assert_eq!(store.get(&down), Some(Some(Bson::Double((1 - top) as f64))));
        // At the last value nothing is written.
        assert_eq!(
            served(&store, &c, &[Demand::UpTo(5)]),
            vec![Err(ErrorCode::SequenceOverflow)]
        );
        assert_eq!(store.get(&c), Some(Some(Bson::Double(top as f64))));
    }

    #[test]
    fn missing_field_counts_from_zero_like_the_helper() {
        let store = MemoryStore::default();
        let c = counter("nofield");
        store.put(&c, None);
        let r = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!((r.first, r.last), (1, 1));
    }

    #[test]
    fn unusable_counters_are_refused_unchanged() {
        for value in [
            Bson::String("5".into()),
            Bson::Double(f64::INFINITY),
            Bson::Double(-DOUBLE_EXACT_LIMIT),
            Bson::Null,
            Bson::Document(mongodb::bson::doc! { "n": 1 }),
            Bson::Array(vec![Bson::Int32(1)]),
        ] {
            let store = MemoryStore::default();
            let c = counter("bad");
            store.put(&c, Some(value.clone()));
            let err = run(allocate(&store, &c, UPSERT, 1)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidCounter, "{value:?}");
            assert!(err.message.contains("'bad'"), "{}", err.message);
            assert_eq!(store.get(&c), Some(Some(value)));
        }
    }

    /// mongoose-auto-increment and mongoose-plugin-autoinc move their counter to a
    /// fractional number a document was saved with, and go on counting from it.
    #[test]
    fn a_fraction_another_plugin_left_is_taken_over_going_up_and_refused_going_down() {
        for (step, stored, first) in [(1, 3.5, 5), (2, 3.5, 6), (1, -0.5, 1), (3, -2.25, 1)] {
            let store = MemoryStore::default();
            let c = located("peer", step);
            store.put(&c, Some(Bson::Double(stored)));
            let r = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
            assert_eq!(
                (r.first, r.last),
                (i64::from(first), i64::from(first)),
                "{stored} by {step}"
            );
            assert!(
                r.first as f64 > stored,
                "above the fraction: no number given before"
            );
            assert_eq!(store.get(&c), Some(Some(Bson::Int32(first))));
        }
        // The peers move a descending counter up to a number given on save, behind values
        // it handed out: counting down from there could give them again.
        for stored in [3.5, -2.25] {
            let store = MemoryStore::default();
            let c = located("down", -1);
            store.put(&c, Some(Bson::Double(stored)));
            let err = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidCounter);
            assert!(err.message.contains("descending"), "{}", err.message);
            assert_eq!(store.get(&c), Some(Some(Bson::Double(stored))), "unchanged");
        }
        // A block of several values, through the text name of the helper's counters.
        let store = MemoryStore::default();
        let c = counter("helper");
        store.put(&c, Some(Bson::Double(41.75)));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 3)).unwrap();
        assert_eq!((r.first, r.last), (43, 45));
    }

    #[test]
    fn a_fraction_changed_by_another_process_during_the_takeover_is_read_again() {
        // The guarded set finds the counter moved on (another process's `$inc` kept the
        // fraction): nothing is written over it, and the next attempt takes that over.
        let store = MemoryStore::default();
        let c = counter("moving");
        store.put(&c, Some(Bson::Double(4.5)));
        let lost = run(store.set_guarded(&c, FieldGuard::EqualsDouble(3.5), 4)).unwrap();
        assert!(!lost);
        assert_eq!(store.get(&c), Some(Some(Bson::Double(4.5))));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(r.first, 6);
    }

    #[test]
    fn an_increment_past_the_64_bit_range_is_named_an_overflow_of_the_counter() {
        let c = counter("full");
        let bad_value = SeqError::server(BAD_VALUE, Some("BadValue".into()), "overflow");
        let err = increment_error(&c, bad_value);
        assert_eq!(err.code, ErrorCode::SequenceOverflow);
        assert!(
            err.message.contains("Sequence 'full' cannot advance"),
            "{}",
            err.message
        );
        assert_eq!(
            err.server_code,
            Some(BAD_VALUE),
            "the server's code is kept"
        );
        // Another server error is left as it is.
        let other = SeqError::server(91, Some("ShutdownInProgress".into()), "bye");
        assert_eq!(increment_error(&c, other.clone()).message, other.message);
    }

    #[test]
    fn server_errors_surface_and_later_calls_work() {
        let store = MemoryStore::default();
        let c = counter("flaky");
        store.put(&c, Some(Bson::Int32(0)));
        store.fail_next.store(1, Ordering::SeqCst);
        let err = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap_err();
        assert_eq!((err.code, err.server_code), (ErrorCode::Server, Some(91)));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(r.first, 1, "the failed call consumed nothing");
    }

    #[test]
    fn start_near_the_top_overflows_cleanly() {
        let store = MemoryStore::default();
        let policy = CreatePolicy {
            upsert: true,
            start: i64::MAX,
        };
        let err = run(allocate(&store, &counter("top"), policy, 2)).unwrap_err();
        assert_eq!(err.code, ErrorCode::SequenceOverflow);
    }

    fn configured(step: i64, min: Option<i64>, max: Option<i64>, cycle: bool) -> SequenceConfig {
        SequenceConfig::new(step, min, max, cycle).unwrap()
    }

    #[test]
    fn configured_counters_step_and_never_take_the_plain_path() {
        let store = MemoryStore::default();
        let c = counter("by5");
        store.put_configured(&c, 95, configured(5, None, None, false));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 3)).unwrap();
        assert_eq!(r.values().collect::<Vec<_>>(), vec![100, 105, 110]);
        let r = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(r.first, 115);
    }

    #[test]
    fn descending_counters_count_down() {
        let store = MemoryStore::default();
        let c = counter("down");
        store.put_configured(&c, 0, configured(-1, Some(-5), Some(-1), false));
        let r = run(allocate(&store, &c, CreatePolicy::default(), 2)).unwrap();
        assert_eq!(r.values().collect::<Vec<_>>(), vec![-1, -2]);
    }

    #[test]
    fn limits_exhaust_without_writing() {
        let store = MemoryStore::default();
        let c = counter("small");
        store.put_configured(&c, 8, configured(1, Some(1), Some(10), false));
        assert_eq!(
            run(allocate(&store, &c, CreatePolicy::default(), 2))
                .unwrap()
                .last,
            10
        );
        let e = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap_err();
        assert_eq!(e.code, ErrorCode::SequenceExhausted);
        assert_eq!(store.get(&c), Some(Some(Bson::Int64(10))), "unchanged");
    }

    #[test]
    fn cycling_counters_restart_at_the_other_end() {
        let store = MemoryStore::default();
        let c = counter("cyc");
        store.put_configured(&c, 9, configured(1, Some(1), Some(10), true));
        let got: Vec<i64> = (0..4)
            .map(|_| {
                run(allocate(&store, &c, CreatePolicy::default(), 1))
                    .unwrap()
                    .first
            })
            .collect();
        assert_eq!(got, vec![10, 1, 2, 3]);
        let e = run(allocate(&store, &c, CreatePolicy::default(), 11)).unwrap_err();
        assert_eq!(
            e.code,
            ErrorCode::InvalidArgument,
            "more than one cycle at once"
        );
    }

    #[test]
    fn a_restart_is_written_only_where_no_room_is_left_within_the_limits() {
        let store = MemoryStore::default();
        let c = counter("restart");
        let config = configured(1, Some(1), Some(5), true);
        let at = |value: i64| {
            store.put_configured(&c, value, config);
            run(store.restart_cycle(&c, &config, 3, 3)).unwrap()
        };
        // Room for 3 from 0 (fresh), 1 and 2; none from 3, 4 and 5.
        assert_eq!(
            (0..=5).map(at).collect::<Vec<_>>(),
            [false, false, false, true, true, true]
        );
        // Past what the configuration holds: a damaged counter, never overwritten.
        assert!(!at(7));
        assert!(!at(-3));
        let other = configured(1, Some(1), Some(6), true);
        store.put_configured(&c, 5, other);
        assert!(
            !run(store.restart_cycle(&c, &config, 3, 3)).unwrap(),
            "another configuration"
        );
        // A caller that lost the restart to another goes on in the new cycle.
        store.put_configured(&c, 5, config);
        let first = run(allocate(&store, &c, CreatePolicy::default(), 3)).unwrap();
        assert_eq!((first.first, first.last), (1, 3));
        let second = run(allocate(&store, &c, CreatePolicy::default(), 3)).unwrap();
        assert_eq!(
            (second.first, second.last),
            (1, 3),
            "4..6 does not fit: a new cycle"
        );
    }
}
