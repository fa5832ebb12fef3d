//! Model-based tests: random histories of calls (next, batch, range) and management
//! writes (set, reset, init, drop) on counters of random configuration (plain, step ±,
//! limits, cycle), served in every mode (direct, coalesced, cached), against a plain
//! sequential reference model written independently of the engine.
//!
//! Exact modes (direct and coalesced) must give exactly the model's values and errors, in
//! call order, and leave the stored value where the model's is. Cached mode must give
//! values within the limits, never one twice within a pass, ascending within the process,
//! exhaustion only when the stored counter has no room, and after any management write
//! exactly the value the model predicts.

use std::collections::HashSet;
use std::sync::Arc;

use mongodb::bson::Bson;
use proptest::prelude::*;

use crate::engine::admin;
use crate::engine::allocate::{CreatePolicy, IdRange};
use crate::engine::counter_name::CounterName;
use crate::engine::counter_state::{CounterState, Lane, Mode};
use crate::engine::error::{ErrorCode, SeqResult};
use crate::engine::memory_store::MemoryStore;
use crate::engine::sequence_config::SequenceConfig;
use crate::engine::store::CounterRef;

/// A counter configuration the model knows: `None` is a plain counter.
#[derive(Debug, Clone, Copy)]
struct Config {
    step: i64,
    min: i64,
    max: i64,
    cycle: bool,
}

impl Config {
    fn engine(&self) -> SequenceConfig {
        SequenceConfig::new(self.step, Some(self.min), Some(self.max), self.cycle).unwrap()
    }
    fn restart(&self) -> i64 {
        if self.step > 0 {
            self.min
        } else {
            self.max
        }
    }
    fn cycle_size(&self) -> i64 {
        (self.max - self.min) / self.step.abs() + 1
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Calls submitted together (concurrently), each for this many values.
    Calls(Vec<i64>),
    Set(i64),
    Reset,
    Init(Option<Config>, Option<i64>),
    Drop,
}

/// The reference: one counter, changed one call at a time.
#[derive(Debug, Clone, Default)]
struct Model {
    exists: bool,
    value: i64,
    config: Option<Config>,
    start: Option<i64>,
}

type Answer = Result<Vec<i64>, ErrorCode>;

impl Model {
    fn take(&mut self, n: i64, policy: CreatePolicy) -> Answer {
        if !self.exists {
            if !policy.upsert {
                return Err(ErrorCode::SequenceNotFound);
            }
            *self = Model {
                exists: true,
                value: policy.start + n - 1,
                config: None,
                start: None,
            };
            return Ok((policy.start..policy.start + n).collect());
        }
        let Some(c) = self.config else {
            let values: Vec<i64> = (1..=n).map(|i| self.value + i).collect();
            self.value += n;
            return Ok(values);
        };
        let values: Vec<i64> = (1..=n).map(|i| self.value + c.step * i).collect();
        if values.iter().all(|v| (c.min..=c.max).contains(v)) {
            self.value = *values.last().unwrap();
            return Ok(values);
        }
        if !c.cycle {
            return Err(ErrorCode::SequenceExhausted);
        }
        if n > c.cycle_size() {
            return Err(ErrorCode::InvalidArgument);
        }
        let values: Vec<i64> = (0..n).map(|i| c.restart() + c.step * i).collect();
        self.value = *values.last().unwrap();
        Ok(values)
    }

    fn set(&mut self, v: i64, upsert: bool) -> Result<(), ErrorCode> {
        if !self.exists {
            if !upsert {
                return Err(ErrorCode::SequenceNotFound);
            }
            *self = Model {
                exists: true,
                value: v,
                ..Model::default()
            };
            return Ok(());
        }
        if let Some(c) = self.config {
            if v < c.min || v > c.max {
                return Err(ErrorCode::InvalidArgument);
            }
        }
        self.value = v;
        Ok(())
    }

    fn reset(&mut self, default_start: i64) -> Result<i64, ErrorCode> {
        if !self.exists {
            return Err(ErrorCode::SequenceNotFound);
        }
        let start = self
            .start
            .or(self.config.map(|c| c.restart()))
            .unwrap_or(default_start);
        self.value = start - self.config.map_or(1, |c| c.step);
        Ok(start)
    }

    fn init(&mut self, config: Option<Config>, start: Option<i64>) -> Result<bool, ErrorCode> {
        // Arguments are checked before anything is read.
        let start = start.unwrap_or(config.map_or(1, |c| c.restart()));
        if let Some(c) = config {
            if start < c.min || start > c.max {
                return Err(ErrorCode::InvalidArgument);
            }
        }
        if self.exists {
            return Ok(false);
        }
        *self = Model {
            exists: true,
            value: start - config.map_or(1, |c| c.step),
            config,
            start: Some(start),
        };
        Ok(true)
    }
}

fn config_strategy() -> impl Strategy<Value = Option<Config>> {
    let configured = (
        prop_oneof![Just(1i64), Just(2), Just(3), Just(-1), Just(-2)],
        -20i64..20,
        1i64..30,
        any::<bool>(),
    )
        .prop_map(|(step, min, width, cycle)| Config {
            step,
            min,
            max: min + width,
            cycle,
        });
    prop_oneof![1 => Just(None), 3 => configured.prop_map(Some)]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let count = prop_oneof![4 => Just(1i64), 2 => 2i64..6, 1 => 6i64..40];
    prop_oneof![
        8 => proptest::collection::vec(count, 1..12).prop_map(Op::Calls),
        1 => (-30i64..60).prop_map(Op::Set),
        1 => Just(Op::Reset),
        1 => (config_strategy(), proptest::option::of(-20i64..40))
            .prop_map(|(c, s)| Op::Init(c, s)),
        1 => Just(Op::Drop),
    ]
}

fn mode_strategy() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Direct),
        Just(Mode::Coalesce),
        (1i64..12).prop_map(Mode::Cached)
    ]
}

struct Engine {
    store: Arc<MemoryStore>,
    state: Arc<CounterState>,
    counter: CounterRef,
    lane: Lane,
    mode: Mode,
}

impl Engine {
    fn new(mode: Mode, policy: CreatePolicy) -> Self {
        let name = CounterName::text("model").unwrap();
        Engine {
            store: Arc::new(MemoryStore::default()),
            state: Arc::new(CounterState::default()),
            counter: CounterRef::new("counters", "seq", name),
            lane: Lane {
                policy,
                write_concern: None,
            },
            mode,
        }
    }

    /// Submits every call at once, in order, then awaits them all (direct calls one by
    /// one, since nothing orders concurrent direct round trips).
    async fn calls(&self, counts: &[i64]) -> Vec<SeqResult<IdRange>> {
        if self.mode == Mode::Direct {
            let mut out = Vec::new();
            for &n in counts {
                out.push(self.submit_and_wait(n).await);
            }
            return out;
        }
        let submitted: Vec<_> = counts
            .iter()
            .map(|&n| {
                self.state
                    .submit(&self.store, &self.counter, &self.lane, self.mode, None, n)
            })
            .collect();
        let mut out = Vec::new();
        for call in submitted {
            out.push(call.finish().await);
        }
        out
    }

    async fn submit_and_wait(&self, n: i64) -> SeqResult<IdRange> {
        self.state
            .submit(&self.store, &self.counter, &self.lane, self.mode, None, n)
            .finish()
            .await
    }

    /// Waits until no background fetch is left running.
    async fn settle(&self) {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    fn stored(&self) -> Option<i64> {
        match self.store.get(&self.counter)? {
            Some(Bson::Int32(v)) => Some(i64::from(v)),
            Some(Bson::Int64(v)) => Some(v),
            other => panic!("stored {other:?}"),
        }
    }
}

fn answer(result: &SeqResult<IdRange>) -> Answer {
    result
        .as_ref()
        .map(|r| r.values().collect())
        .map_err(|e| e.code)
}

/// Runs `ops` through the engine and the model; panics (failing the case) on any
/// difference the mode does not allow.
fn check_history(mode: Mode, policy: CreatePolicy, initial: Option<Config>, ops: &[Op]) {
    let engine = Engine::new(mode, policy);
    let mut model = Model::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let c = &engine.counter;
        let created = engine
            .state
            .managed(admin::init(
                &*engine.store,
                c,
                None,
                initial.map(|c| c.engine()),
            ))
            .await
            .map_err(|e| e.code);
        assert_eq!(created, model.init(initial, None));
        // Cached mode: values seen since the last management write, for uniqueness; the
        // exact value the next call must give after a management write.
        let mut seen: HashSet<i64> = HashSet::new();
        let mut last_seen: Option<i64> = None;
        let mut predicted: Option<Model> = None;
        for op in ops {
            match op {
                Op::Calls(counts) => {
                    let results = engine.calls(counts).await;
                    engine.settle().await;
                    if !matches!(mode, Mode::Cached(_)) {
                        for (n, result) in counts.iter().zip(&results) {
                            assert_eq!(answer(result), model.take(*n, policy), "call of {n}");
                        }
                        assert_eq!(engine.stored(), model.exists.then_some(model.value));
                        continue;
                    }
                    let Mode::Cached(size) = mode else {
                        unreachable!()
                    };
                    for (i, (n, result)) in counts.iter().zip(&results).enumerate() {
                        if i == 0 {
                            if let Some(mut snapshot) = predicted.take() {
                                if *n <= size {
                                    let expected = snapshot.take(*n, policy);
                                    assert_eq!(answer(result), expected, "first after a write");
                                }
                            }
                        }
                        let ordered = *n <= size;
                        check_cached(
                            &model,
                            *n,
                            result,
                            &mut seen,
                            (ordered, &mut last_seen),
                            &engine,
                        );
                    }
                    // The store is the truth from here on (fills took more than calls).
                    if let Some(v) = engine.stored() {
                        model.value = v;
                    }
                    model.exists = engine.stored().is_some();
                    if !model.exists {
                        model = Model::default();
                    }
                }
                Op::Set(v) => {
                    let got = engine
                        .state
                        .managed(admin::set(&*engine.store, c, *v, policy.upsert))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.set(*v, policy.upsert), "set {v}");
                    (seen, last_seen) = (HashSet::new(), None);
                    predicted = Some(model.clone());
                }
                Op::Reset => {
                    let got = engine
                        .state
                        .managed(admin::reset(&*engine.store, c, policy.start))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.reset(policy.start), "reset");
                    (seen, last_seen) = (HashSet::new(), None);
                    predicted = Some(model.clone());
                }
                Op::Init(config, start) => {
                    let got = engine
                        .state
                        .managed(admin::init(
                            &*engine.store,
                            c,
                            *start,
                            config.map(|c| c.engine()),
                        ))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.init(*config, *start), "init");
                    (seen, last_seen) = (HashSet::new(), None);
                    predicted = Some(model.clone());
                }
                Op::Drop => {
                    let got = engine
                        .state
                        .managed(admin::drop_counter(&*engine.store, c))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, Ok(model.exists), "drop");
                    model = Model::default();
                    (seen, last_seen) = (HashSet::new(), None);
                    predicted = Some(model.clone());
                }
            }
        }
    });
}

/// The invariants of one cached call.
fn check_cached(
    model: &Model,
    n: i64,
    result: &SeqResult<IdRange>,
    seen: &mut HashSet<i64>,
    (ordered, last_seen): (bool, &mut Option<i64>),
    engine: &Engine,
) {
    let Ok(range) = result else {
        let code = result.as_ref().unwrap_err().code;
        match (code, model.config) {
            (ErrorCode::SequenceExhausted, Some(c)) => {
                // Only when the stored counter has no room for the call.
                let stored = engine.stored().expect("exists");
                let room = c.engine().room_bounds(n);
                assert!(
                    room.is_none_or(|(lo, hi)| stored < lo || stored > hi),
                    "exhausted with room: stored {stored}, {n} values, {c:?}"
                );
            }
            (ErrorCode::InvalidArgument, Some(c)) => assert!(c.cycle && n > c.cycle_size()),
            (ErrorCode::SequenceNotFound, _) => assert!(!model.exists || engine.stored().is_none()),
            other => panic!("unexpected {other:?}"),
        }
        return;
    };
    assert_eq!(range.count(), n);
    let values: Vec<i64> = range.values().collect();
    if let Some(c) = model.config {
        assert_eq!(range.step, c.step);
        assert!(
            values.iter().all(|v| (c.min..=c.max).contains(v)),
            "{values:?} outside {c:?}"
        );
        if c.cycle {
            return;
        }
    }
    let ascending = model.config.is_none_or(|c| c.step > 0);
    for v in values {
        assert!(seen.insert(v), "{v} handed out twice");
        if !ordered {
            // A batch larger than a block bypasses the cache: it is not ordered with it.
            continue;
        }
        if let Some(last) = *last_seen {
            assert!(
                if ascending { v > last } else { v < last },
                "{v} after {last}: not in order within the process"
            );
        }
        *last_seen = Some(v);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000),
        max_shrink_iters: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_mode_matches_the_sequential_model(
        mode in mode_strategy(),
        upsert in any::<bool>(),
        start in -5i64..5,
        initial in config_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..25),
    ) {
        check_history(mode, CreatePolicy { upsert, start }, initial, &ops);
    }
}

#[test]
fn regression_coalesced_singles_on_a_bounded_counter() {
    let config = Config {
        step: 1,
        min: 1,
        max: 3,
        cycle: false,
    };
    let policy = CreatePolicy::default();
    check_history(
        Mode::Coalesce,
        policy,
        Some(config),
        &[Op::Calls(vec![1; 5]), Op::Calls(vec![1])],
    );
    let cycle = Config {
        cycle: true,
        ..config
    };
    check_history(
        Mode::Coalesce,
        policy,
        Some(cycle),
        &[Op::Calls(vec![1; 5]), Op::Calls(vec![1, 1, 1])],
    );
}

#[test]
fn regression_cache_on_short_cycles_and_bounded_counters() {
    let policy = CreatePolicy::default();
    let short = Config {
        step: 1,
        min: 1,
        max: 50,
        cycle: true,
    };
    check_history(
        Mode::Cached(100),
        policy,
        Some(short),
        &[Op::Calls(vec![1; 120])],
    );
    let bounded = Config {
        step: 1,
        min: 1,
        max: 1000,
        cycle: false,
    };
    // Every value up to maxValue is handed out before exhaustion.
    let engine = Engine::new(Mode::Cached(300), policy);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        admin::init(
            &*engine.store,
            &engine.counter,
            None,
            Some(bounded.engine()),
        )
        .await
        .unwrap();
        let mut values = Vec::new();
        loop {
            match engine.submit_and_wait(1).await {
                Ok(r) => values.push(r.first),
                Err(e) => {
                    assert_eq!(e.code, ErrorCode::SequenceExhausted);
                    break;
                }
            }
        }
        assert_eq!(values, (1..=1000).collect::<Vec<_>>());
    });
}

#[test]
fn regression_set_after_a_cached_call_and_drop() {
    let policy = CreatePolicy {
        upsert: true,
        start: 1,
    };
    check_history(
        Mode::Cached(100),
        policy,
        None,
        &[
            Op::Calls(vec![1]),
            Op::Set(5000),
            Op::Calls(vec![1]),
            Op::Drop,
            Op::Calls(vec![1]),
        ],
    );
}

/// What happens to a counter found by other fields (mongoose-sequence's documents).
#[derive(Debug, Clone)]
enum LocatedOp {
    /// Calls submitted together, each for this many values.
    Calls(Vec<i64>),
    /// Another writer stores this value (`counterReset`, another process's save).
    Store(i64),
    /// The counter document is deleted.
    Delete,
}

fn located_op_strategy() -> impl Strategy<Value = LocatedOp> {
    prop_oneof![
        4 => proptest::collection::vec(1i64..4, 1..6).prop_map(LocatedOp::Calls),
        1 => (-20i64..20).prop_map(LocatedOp::Store),
        1 => Just(LocatedOp::Delete),
    ]
}

/// The reference for a plain counter handing out values `stride` apart: `None` when the
/// document is missing, else the last value handed out.
fn located_model(stored: &mut Option<i64>, n: i64, policy: CreatePolicy, stride: i64) -> Answer {
    let first = match *stored {
        Some(v) => v + stride,
        None if policy.upsert => policy.start,
        None => return Err(ErrorCode::SequenceNotFound),
    };
    let values: Vec<i64> = (0..n).map(|i| first + i * stride).collect();
    *stored = values.last().copied();
    Ok(values)
}

fn check_located_history(mode: Mode, policy: CreatePolicy, stride: i64, ops: &[LocatedOp]) {
    use crate::engine::locator::{FieldsLocator, Locator};
    use crate::engine::store::CounterStore;
    use mongodb::bson::doc;
    let mut engine = Engine::new(mode, policy);
    let fields = doc! { "id": "model", "reference_value": { "shop": 1 } };
    engine.counter = engine.counter.clone().located(
        Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap()),
        stride,
    );
    let mut stored: Option<i64> = None;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for op in ops {
            match op {
                LocatedOp::Calls(counts) => {
                    let results = engine.calls(counts).await;
                    engine.settle().await;
                    for (n, result) in counts.iter().zip(&results) {
                        let expected = located_model(&mut stored, *n, policy, stride);
                        assert_eq!(answer(result), expected, "call of {n}");
                    }
                }
                LocatedOp::Store(v) => {
                    engine.store.put(&engine.counter, Some(Bson::Int64(*v)));
                    stored = Some(*v);
                }
                LocatedOp::Delete => {
                    engine.store.delete(&engine.counter).await.unwrap();
                    stored = None;
                }
            }
            assert_eq!(engine.stored(), stored);
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000) / 2,
        max_shrink_iters: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn located_counters_with_a_stride_match_the_model(
        coalesce in any::<bool>(),
        upsert in any::<bool>(),
        start in -6i64..6,
        stride in prop_oneof![-3i64..0, 1i64..4],
        ops in proptest::collection::vec(located_op_strategy(), 1..25),
    ) {
        let mode = if coalesce { Mode::Coalesce } else { Mode::Direct };
        check_located_history(mode, CreatePolicy { upsert, start }, stride, &ops);
    }
}
