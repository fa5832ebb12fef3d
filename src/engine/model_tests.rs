//! Model-based tests: random histories of calls (next, batch, range) and management
//! writes (set, reset, init, drop, raiseTo, syncToMax) on counters of every shape —
//! plain, configured (step ±, limits, cycle, huge steps), found by `_id` or by other
//! fields with a step (±), near either end of the 64-bit range — served in every mode
//! (direct, coalesced, cached), against a plain sequential reference model written
//! independently of the engine (in 128-bit arithmetic).
//!
//! Exact modes (direct and coalesced) must give exactly the model's values and errors, in
//! call order, and leave the stored value where the model's is. Cached mode must give
//! values within the limits, never one twice within a pass, in order within the process,
//! exhaustion only when the stored counter has no room, and after any management write
//! exactly the value the model predicts. In every mode, between two writes that may move
//! a counter back (set, reset, init, drop), no value is handed out twice: `raiseTo` and
//! `syncToMax` only ever move a counter on in its direction. A give-back, also one
//! computed earlier and delivered after any of these, never puts a counter back under a
//! value handed out.

use std::collections::HashSet;
use std::sync::Arc;

use mongodb::bson::{doc, Bson, Document};
use proptest::prelude::*;

use crate::engine::alloc::allocate::{CreatePolicy, IdRange};
use crate::engine::alloc::counter_state::{CounterState, GivenBack, Lane, Mode};
use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{ErrorCode, SeqResult};
use crate::engine::management;
use crate::engine::store::counter_store::{CounterRef, Direction};
use crate::engine::store::memory_store::MemoryStore;
use crate::engine::test_support::route;

/// 2^62: a step for which two values already move a counter by 2^63.
const HUGE: i64 = 1 << 62;

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
    fn cycle_size(&self) -> i128 {
        (i128::from(self.max) - i128::from(self.min)) / i128::from(self.step).abs() + 1
    }
}

/// A value in a `syncToMax` source document.
#[derive(Debug, Clone, PartialEq)]
enum SourceValue {
    Int(i64),
    Double(f64),
    Text,
}

impl SourceValue {
    fn bson(&self) -> Bson {
        match self {
            SourceValue::Int(v) => Bson::Int64(*v),
            SourceValue::Double(d) => Bson::Double(*d),
            SourceValue::Text => Bson::String("n/a".into()),
        }
    }
}

/// A source document: its values at `a.b`, either directly (`{ a: { b: v } }`, one
/// value) or through an array (`{ a: [{ b: v1 }, { b: [v2, v3] }] }`).
#[derive(Debug, Clone)]
struct SourceDoc {
    values: Vec<SourceValue>,
    through_array: bool,
}

impl SourceDoc {
    fn document(&self) -> Document {
        if !self.through_array {
            let value = self.values.first().map_or(Bson::Null, SourceValue::bson);
            return doc! { "a": { "b": value } };
        }
        let (head, tail) = self
            .values
            .split_first()
            .map_or((None, &[][..]), |(h, t)| (Some(h), t));
        let mut items = Vec::new();
        if let Some(head) = head {
            items.push(Bson::Document(doc! { "b": head.bson() }));
        }
        let rest: Vec<Bson> = tail.iter().map(SourceValue::bson).collect();
        items.push(Bson::Document(doc! { "b": rest }));
        doc! { "a": items }
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
    RaiseTo(i64),
    SyncToMax(Vec<SourceDoc>),
    /// The process gives back its cached tails (a graceful close, or `release()`).
    GiveBack,
    /// The process takes its cached tails out for a give-back whose update is held on
    /// its way (a close that timed out): it reaches the server at the next
    /// [`Op::DeliverGiveBack`], after whatever comes between.
    HoldGiveBack,
    /// The held give-back's update reaches the server.
    DeliverGiveBack,
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

/// `v` when it is a 64-bit value.
fn fits(v: i128) -> Option<i64> {
    i64::try_from(v).ok()
}

impl Model {
    fn take(&mut self, n: i64, policy: CreatePolicy, step: i64) -> Answer {
        let progression = |from: i128, step: i64| -> Option<Vec<i64>> {
            (0..n)
                .map(|i| fits(from + i128::from(i) * i128::from(step)))
                .collect()
        };
        if !self.exists {
            if !policy.upsert {
                return Err(ErrorCode::SequenceNotFound);
            }
            let values =
                progression(i128::from(policy.start), step).ok_or(ErrorCode::SequenceOverflow)?;
            *self = Model {
                exists: true,
                value: *values.last().unwrap(),
                config: None,
                start: None,
            };
            return Ok(values);
        }
        let Some(c) = self.config else {
            let values = progression(i128::from(self.value) + i128::from(step), step)
                .ok_or(ErrorCode::SequenceOverflow)?;
            self.value = *values.last().unwrap();
            return Ok(values);
        };
        let within = |vs: &Option<Vec<i64>>| {
            vs.as_ref()
                .is_some_and(|vs| vs.iter().all(|v| (c.min..=c.max).contains(v)))
        };
        let values = progression(i128::from(self.value) + i128::from(c.step), c.step);
        if within(&values) {
            let values = values.unwrap();
            self.value = *values.last().unwrap();
            return Ok(values);
        }
        if !c.cycle {
            return Err(ErrorCode::SequenceExhausted);
        }
        if i128::from(n) > c.cycle_size() {
            return Err(ErrorCode::InvalidArgument);
        }
        let values = progression(i128::from(c.restart()), c.step).unwrap();
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

    fn step(&self, step: i64) -> i64 {
        self.config.map_or(step, |c| c.step)
    }

    fn reset(&mut self, default_start: i64, step: i64) -> Result<i64, ErrorCode> {
        if !self.exists {
            return Err(ErrorCode::SequenceNotFound);
        }
        let start = self
            .start
            .or(self.config.map(|c| c.restart()))
            .unwrap_or(default_start);
        self.value = fits(i128::from(start) - i128::from(self.step(step)))
            .ok_or(ErrorCode::SequenceOverflow)?;
        Ok(start)
    }

    fn init(
        &mut self,
        config: Option<Config>,
        start: Option<i64>,
        step: i64,
    ) -> Result<bool, ErrorCode> {
        // Arguments are checked before anything is read.
        let start = start.unwrap_or(config.map_or(1, |c| c.restart()));
        if let Some(c) = config {
            if start < c.min || start > c.max {
                return Err(ErrorCode::InvalidArgument);
            }
        }
        let step = config.map_or(step, |c| c.step);
        let before =
            fits(i128::from(start) - i128::from(step)).ok_or(ErrorCode::SequenceOverflow)?;
        if self.exists {
            return Ok(false);
        }
        *self = Model {
            exists: true,
            value: before,
            config,
            start: Some(start),
        };
        Ok(true)
    }

    /// Whether the counter counts down (its step, else the handle's step).
    fn descending(&self, step: i64) -> bool {
        let step = if self.exists { self.step(step) } else { step };
        step < 0
    }

    /// `raiseTo`: on in the counter's direction only, never back.
    fn raise(&mut self, v: i64, step: i64) -> Result<i64, ErrorCode> {
        if !self.exists {
            *self = Model {
                exists: true,
                value: v,
                ..Model::default()
            };
            return Ok(v);
        }
        let down = self.descending(step);
        if let Some(c) = self.config {
            if (!down && v > c.max) || (down && v < c.min) {
                return Err(ErrorCode::InvalidArgument);
            }
        }
        self.value = if down {
            self.value.min(v)
        } else {
            self.value.max(v)
        };
        Ok(self.value)
    }

    /// `syncToMax`: past the used extreme of the source (its largest value for an
    /// ascending counter, smallest for a descending one, doubles rounded past).
    fn sync(&mut self, docs: &[SourceDoc], step: i64) -> Result<i64, ErrorCode> {
        let down = self.descending(step);
        let usable = docs
            .iter()
            .flat_map(|d| d.values.iter())
            .filter_map(|v| match v {
                SourceValue::Int(i) => Some(*i),
                SourceValue::Double(d) if d.is_finite() => {
                    let r = if down { d.floor() } else { d.ceil() };
                    let limit = 2f64.powi(63);
                    (r >= -limit && r < limit).then_some(r as i64)
                }
                _ => None,
            });
        let extreme = if down { usable.min() } else { usable.max() };
        match extreme {
            Some(v) => self.raise(v, step),
            None if self.exists => Ok(self.value),
            None => self.raise(0, step),
        }
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
    // Steps so large that two values span 2^63, with limits at ±2^62 or the defaults.
    let huge = (
        prop_oneof![
            Just(HUGE),
            Just(-HUGE),
            Just(HUGE / 2 + 3),
            Just(-(HUGE / 2) - 3)
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(step, wide, cycle)| {
            let (min, max) = match (wide, step > 0) {
                (false, _) => (-HUGE, HUGE),
                (true, true) => (1, i64::MAX),
                (true, false) => (i64::MIN, -1),
            };
            Config {
                step,
                min,
                max,
                cycle,
            }
        });
    prop_oneof![2 => Just(None), 5 => configured.prop_map(Some), 1 => huge.prop_map(Some)]
}

/// Values to set or raise to: small ones, and ones near either end of the 64-bit range.
fn value_strategy() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -30i64..60,
        1 => (0i64..40).prop_map(|k| i64::MAX - k),
        1 => (0i64..40).prop_map(|k| i64::MIN + k),
        1 => prop_oneof![Just(-HUGE), Just(0), Just(HUGE), Just(HUGE - 1)],
    ]
}

fn source_value_strategy() -> impl Strategy<Value = SourceValue> {
    prop_oneof![
        6 => value_strategy().prop_map(SourceValue::Int),
        2 => (-400i64..400).prop_map(|t| SourceValue::Double(t as f64 / 4.0)),
        1 => prop_oneof![
            Just(SourceValue::Double(1e300)),
            Just(SourceValue::Double(-1e300)),
            Just(SourceValue::Double(f64::NAN)),
            Just(SourceValue::Double(f64::INFINITY)),
            Just(SourceValue::Double(9_223_372_036_854_775_808.0)),
            Just(SourceValue::Text),
        ],
    ]
}

fn source_strategy() -> impl Strategy<Value = Vec<SourceDoc>> {
    let doc = (
        proptest::collection::vec(source_value_strategy(), 0..4),
        any::<bool>(),
    )
        .prop_map(|(values, through_array)| {
            let values = if through_array {
                values
            } else {
                values.into_iter().take(1).collect()
            };
            SourceDoc {
                values,
                through_array,
            }
        });
    proptest::collection::vec(doc, 0..5)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let count = prop_oneof![4 => Just(1i64), 2 => 2i64..6, 1 => 6i64..40];
    prop_oneof![
        8 => proptest::collection::vec(count, 1..12).prop_map(Op::Calls),
        1 => value_strategy().prop_map(Op::Set),
        1 => Just(Op::Reset),
        1 => (config_strategy(), proptest::option::of(-20i64..40))
            .prop_map(|(c, s)| Op::Init(c, s)),
        1 => Just(Op::Drop),
        1 => value_strategy().prop_map(Op::RaiseTo),
        1 => source_strategy().prop_map(Op::SyncToMax),
        2 => Just(Op::GiveBack),
        1 => Just(Op::HoldGiveBack),
        1 => Just(Op::DeliverGiveBack),
    ]
}

fn mode_strategy() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Direct),
        Just(Mode::Coalesce),
        (1i64..12).prop_map(Mode::Cached)
    ]
}

/// How the counter is found, and the step of its plain values.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shape {
    located: bool,
    step: i64,
}

const PLAIN: Shape = Shape {
    located: false,
    step: 1,
};

fn shape_strategy() -> impl Strategy<Value = Shape> {
    prop_oneof![
        2 => Just(PLAIN),
        1 => (-3i64..=3)
            .prop_filter("a step is never 0", |s| *s != 0)
            .prop_map(|step| Shape { located: true, step }),
    ]
}

/// `syncToMax` over documents in memory, read through the engine's own path walk.
struct Source(Vec<Document>);

impl management::SourceValues for Source {
    async fn extreme(&self, direction: Direction) -> SeqResult<Option<i64>> {
        Ok(management::extreme_of(&self.0, "a.b", direction))
    }
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

    /// An engine on a counter of `shape`: found by `_id`, or by fields with its step.
    fn shaped(mode: Mode, policy: CreatePolicy, shape: Shape) -> Self {
        use crate::engine::counter::locator::{FieldsLocator, Locator};
        let mut engine = Engine::new(mode, policy);
        if shape.located {
            let fields = doc! { "id": "model", "reference_value": { "shop": 1 } };
            engine.counter = engine.counter.clone().located(
                Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap()),
                shape.step,
            );
        }
        engine
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
                    .submit(&route(&self.store, &self.counter, &self.lane, self.mode), n)
            })
            .collect();
        let mut out = Vec::new();
        for call in submitted {
            out.push(call.finish().await);
        }
        out
    }

    /// Each call awaited before the next is made (`for (;;) await s.next()`).
    async fn calls_one_by_one(&self, counts: &[i64]) -> Vec<SeqResult<IdRange>> {
        let mut out = Vec::new();
        for &n in counts {
            out.push(self.submit_and_wait(n).await);
        }
        out
    }

    async fn submit_and_wait(&self, n: i64) -> SeqResult<IdRange> {
        self.state
            .submit(&route(&self.store, &self.counter, &self.lane, self.mode), n)
            .finish()
            .await
    }

    /// Waits until no background fetch is left running.
    async fn drain(&self) {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        // With worker threads, a fetch (or a coalesced round trip that has answered
        // its calls) may still be running: wait for it, as the single-threaded runs do.
        let waited = self.state.until_nothing_in_flight();
        tokio::time::timeout(std::time::Duration::from_secs(10), waited)
            .await
            .expect("the round trips and fetches in flight end");
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

/// Runs `ops` through the engine and the model on a counter found by `_id`, step 1.
fn check_history(mode: Mode, policy: CreatePolicy, initial: Option<Config>, ops: &[Op]) {
    check_shaped_history(mode, policy, PLAIN, initial, ops)
}

/// Runs `ops` through the engine and the model on a counter of `shape`; panics (failing
/// the case) on any difference the mode does not allow.
fn check_shaped_history(
    mode: Mode,
    policy: CreatePolicy,
    shape: Shape,
    initial: Option<Config>,
    ops: &[Op],
) {
    check_racy_history(mode, policy, shape, initial, ops, 0)
}

/// [`check_shaped_history`], with every store operation taking a random time below
/// `spin_us` microseconds (0: none) on a runtime with worker threads, so that fills and
/// round trips land at any point of the calls and management writes around them. With
/// an odd `spin_us`, the calls of each step are made one after another, each awaited
/// (a sequential caller), instead of all at once.
fn check_racy_history(
    mode: Mode,
    policy: CreatePolicy,
    shape: Shape,
    initial: Option<Config>,
    ops: &[Op],
    spin_us: u64,
) {
    let sequential = spin_us % 2 == 1;
    let engine = Engine::shaped(mode, policy, shape);
    engine
        .store
        .max_spin_us
        .store(spin_us, std::sync::atomic::Ordering::SeqCst);
    let step = shape.step;
    let mut model = Model::default();
    let runtime = match spin_us {
        0 => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(2);
            builder
        }
    }
    .enable_all()
    .build()
    .unwrap();
    runtime.block_on(async {
        let c = &engine.counter;
        let created = engine
            .state
            .fenced(management::init(
                &*engine.store,
                c,
                None,
                initial.map(|c| c.engine()),
            ))
            .await
            .map_err(|e| e.code);
        assert_eq!(created, model.init(initial, None, step));
        // Cached mode: values seen since the last management write, for order; the
        // exact value the next call must give after a management write.
        let mut seen: HashSet<i64> = HashSet::new();
        let mut last_seen: Option<i64> = None;
        let mut predicted: Option<Model> = None;
        // Every mode: values handed out since the last write that may move the counter
        // back (raiseTo and syncToMax never do), for uniqueness.
        let mut handed: HashSet<i64> = HashSet::new();
        // Cached mode: since the last management write, every call took one value from
        // the cache (a batch goes round it when larger than a block, and drops a block
        // too short for it: a gap).
        let mut cache_only = true;
        // A give-back computed and not delivered yet, and every value handed out since it
        // was computed, whatever moved the counter meanwhile.
        let mut held: Option<std::pin::Pin<Box<dyn std::future::Future<Output = GivenBack>>>> =
            None;
        let mut since_held: HashSet<i64> = HashSet::new();
        for op in ops {
            if !matches!(
                op,
                Op::Calls(_) | Op::GiveBack | Op::HoldGiveBack | Op::DeliverGiveBack
            ) {
                cache_only = true;
            }
            match op {
                Op::Calls(counts) => {
                    if let Mode::Cached(size) = mode {
                        cache_only &= counts.iter().all(|n| *n == 1 && *n <= size);
                    }
                    let results = match sequential {
                        true => engine.calls_one_by_one(counts).await,
                        false => engine.calls(counts).await,
                    };
                    engine.drain().await;
                    if !model.config.is_some_and(|c| c.cycle) {
                        for v in results.iter().flatten().flat_map(|r| r.values()) {
                            assert!(handed.insert(v), "{v} handed out twice");
                        }
                    }
                    if held.is_some() {
                        since_held.extend(results.iter().flatten().flat_map(|r| r.values()));
                    }
                    if !matches!(mode, Mode::Cached(_)) {
                        for (n, result) in counts.iter().zip(&results) {
                            let expected = model.take(*n, policy, step);
                            assert_eq!(answer(result), expected, "call of {n}");
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
                                    let expected = snapshot.take(*n, policy, step);
                                    assert_eq!(answer(result), expected, "first after a write");
                                }
                            }
                        }
                        let ordered = *n <= size;
                        check_cached(
                            &model,
                            (*n, step),
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
                        .fenced(management::set(&*engine.store, c, *v, policy.upsert))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.set(*v, policy.upsert), "set {v}");
                    (seen, last_seen, handed) = (HashSet::new(), None, HashSet::new());
                    predicted = Some(model.clone());
                }
                Op::Reset => {
                    let got = engine
                        .state
                        .fenced(management::reset(&*engine.store, c, policy.start))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.reset(policy.start, step), "reset");
                    (seen, last_seen, handed) = (HashSet::new(), None, HashSet::new());
                    predicted = Some(model.clone());
                }
                Op::Init(config, start) => {
                    let got = engine
                        .state
                        .fenced(management::init(
                            &*engine.store,
                            c,
                            *start,
                            config.map(|c| c.engine()),
                        ))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.init(*config, *start, step), "init");
                    (seen, last_seen, handed) = (HashSet::new(), None, HashSet::new());
                    predicted = Some(model.clone());
                }
                Op::Drop => {
                    let got = engine
                        .state
                        .fenced(management::drop_counter(&*engine.store, c))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, Ok(model.exists), "drop");
                    model = Model::default();
                    (seen, last_seen, handed) = (HashSet::new(), None, HashSet::new());
                    predicted = Some(model.clone());
                }
                Op::RaiseTo(v) => {
                    let got = engine
                        .state
                        .fenced(management::raise_to(&*engine.store, c, *v))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.raise(*v, step), "raiseTo {v}");
                    assert_eq!(engine.stored(), model.exists.then_some(model.value));
                    predicted = Some(model.clone());
                }
                Op::GiveBack => {
                    let before = engine.stored();
                    let store = engine.store.clone();
                    let outcome = engine.state.give_back(|_| store.clone()).await;
                    let after = engine.stored();
                    let cycles = model.config.is_some_and(|c| c.cycle);
                    if !matches!(mode, Mode::Cached(_)) || cycles {
                        assert_eq!(outcome.returned, 0, "nothing cached to give back");
                        assert_eq!(after, before);
                    }
                    if outcome.returned == 0 {
                        assert_eq!(after, before, "no write without a give-back");
                    } else {
                        let (before, after) = (before.unwrap(), after.unwrap());
                        let step = model.config.map_or(step, |c| c.step);
                        assert_eq!(
                            i128::from(before) - i128::from(after),
                            i128::from(outcome.returned) * i128::from(step),
                            "moved back by exactly the values returned"
                        );
                        // Never behind a value handed out since the last write that
                        // may move the counter back: the next value is a new one.
                        for v in &handed {
                            assert!(
                                if step > 0 { *v <= after } else { *v >= after },
                                "{v} handed out, and the counter given back to {after}"
                            );
                        }
                        // Calls served only from the cache: it continues exactly after
                        // the last value handed out.
                        if cache_only {
                            if let Some(last) = last_seen {
                                assert_eq!(after, last, "continues after the last value");
                            }
                        }
                    }
                    if let Some(v) = after {
                        model.value = v;
                    }
                    // The next call takes exactly the model's next value (a restarted
                    // process continues where this one stopped).
                    if outcome.returned > 0 {
                        predicted = Some(model.clone());
                    }
                }
                Op::HoldGiveBack => {
                    if held.is_none() {
                        let store = engine.store.clone();
                        held = Some(Box::pin(
                            engine.state.give_back_later(move |_| store.clone()),
                        ));
                        since_held.clear();
                    }
                }
                Op::DeliverGiveBack => {
                    let Some(late) = held.take() else {
                        continue;
                    };
                    let before = engine.stored();
                    let outcome = late.await;
                    let after = engine.stored();
                    if outcome.returned == 0 {
                        assert_eq!(after, before, "no write without a give-back");
                        continue;
                    }
                    let (before, after) = (before.unwrap(), after.unwrap());
                    let step = model.config.map_or(step, |c| c.step);
                    assert_eq!(
                        i128::from(before) - i128::from(after),
                        i128::from(outcome.returned) * i128::from(step),
                        "moved back by exactly the values returned"
                    );
                    // Whatever happened since the give-back was computed (a reset, and
                    // numbering back to the value it expects), it never puts the counter
                    // back under a value handed out meanwhile.
                    if !model.config.is_some_and(|c| c.cycle) {
                        for v in since_held.iter().chain(&handed) {
                            assert!(
                                if step > 0 { *v <= after } else { *v >= after },
                                "{v} handed out, and a late give-back put the counter at {after}"
                            );
                        }
                    }
                    model.value = after;
                    predicted = Some(model.clone());
                }
                Op::SyncToMax(docs) => {
                    let source = Source(docs.iter().map(SourceDoc::document).collect());
                    let got = engine
                        .state
                        .fenced(management::sync_to_source(&*engine.store, c, &source))
                        .await
                        .map_err(|e| e.code);
                    assert_eq!(got, model.sync(docs, step), "syncToMax {docs:?}");
                    assert_eq!(engine.stored(), model.exists.then_some(model.value));
                    predicted = Some(model.clone());
                }
            }
        }
    });
}

/// The invariants of one cached call of `n` values.
fn check_cached(
    model: &Model,
    (n, step): (i64, i64),
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
            (ErrorCode::SequenceOverflow, None) => {
                // Only when the stored counter has no room for the call in 64 bits.
                let stored = engine.stored().expect("exists");
                let last = i128::from(stored) + i128::from(n) * i128::from(step);
                assert!(
                    fits(last).is_none(),
                    "overflow with room: stored {stored}, {n}"
                );
            }
            (ErrorCode::InvalidArgument, Some(c)) => {
                assert!(c.cycle && i128::from(n) > c.cycle_size())
            }
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
    } else {
        assert_eq!(range.step, step);
    }
    let ascending = model.config.map_or(step, |c| c.step) > 0;
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

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000) / 2,
        max_shrink_iters: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_admin_operation_on_every_shape_matches_the_model(
        mode in mode_strategy(),
        upsert in any::<bool>(),
        start in -5i64..5,
        shape in shape_strategy(),
        initial in config_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..25),
    ) {
        check_shaped_history(mode, CreatePolicy { upsert, start }, shape, initial, &ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000) / 20,
        max_shrink_iters: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The same histories with round trips of random latency on worker threads: fills,
    /// prefetches and round trips land between the steps of calls, give-backs and
    /// management writes.
    #[test]
    fn every_mode_matches_the_model_whenever_round_trips_land(
        mode in mode_strategy(),
        upsert in any::<bool>(),
        start in -5i64..5,
        shape in shape_strategy(),
        initial in config_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..25),
        spin_us in 1u64..60,
    ) {
        check_racy_history(mode, CreatePolicy { upsert, start }, shape, initial, &ops, spin_us);
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
        management::init(
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

/// A give-back computed before a `reset` and delivered after numbering brought the
/// counter back to the value it expects: without a cache (a batch larger than the
/// blocks goes round it), or through the process's own cache fetching again.
#[test]
fn regression_a_give_back_held_past_a_reset() {
    let policy = CreatePolicy {
        upsert: true,
        start: 1,
    };
    for numbering in [vec![4], vec![1]] {
        check_history(
            Mode::Cached(3),
            policy,
            None,
            &[
                Op::Calls(vec![1]),
                Op::HoldGiveBack,
                Op::Reset,
                Op::Calls(numbering),
                Op::DeliverGiveBack,
                Op::Calls(vec![1, 4]),
            ],
        );
    }
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

/// The reference for a plain counter handing out values `step` apart: `None` when the
/// document is missing, else the last value handed out.
fn located_model(stored: &mut Option<i64>, n: i64, policy: CreatePolicy, step: i64) -> Answer {
    let first = match *stored {
        Some(v) => v + step,
        None if policy.upsert => policy.start,
        None => return Err(ErrorCode::SequenceNotFound),
    };
    let values: Vec<i64> = (0..n).map(|i| first + i * step).collect();
    *stored = values.last().copied();
    Ok(values)
}

fn check_located_history(mode: Mode, policy: CreatePolicy, step: i64, ops: &[LocatedOp]) {
    use crate::engine::counter::locator::{FieldsLocator, Locator};
    use crate::engine::store::counter_store::CounterStore;
    use mongodb::bson::doc;
    let mut engine = Engine::new(mode, policy);
    let fields = doc! { "id": "model", "reference_value": { "shop": 1 } };
    engine.counter = engine.counter.clone().located(
        Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap()),
        step,
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
                    engine.drain().await;
                    for (n, result) in counts.iter().zip(&results) {
                        let expected = located_model(&mut stored, *n, policy, step);
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
    fn located_counters_with_a_step_match_the_model(
        coalesce in any::<bool>(),
        upsert in any::<bool>(),
        start in -6i64..6,
        step in prop_oneof![-3i64..0, 1i64..4],
        ops in proptest::collection::vec(located_op_strategy(), 1..25),
    ) {
        let mode = if coalesce { Mode::Coalesce } else { Mode::Direct };
        check_located_history(mode, CreatePolicy { upsert, start }, step, &ops);
    }
}

#[test]
fn regression_a_cache_near_the_int64_end_takes_a_shorter_block() {
    for mode in [Mode::Cached(100), Mode::Cached(7), Mode::Coalesce] {
        check_history(
            mode,
            CreatePolicy::default(),
            None,
            &[
                Op::Set(i64::MAX - 11),
                Op::Calls(vec![1]),
                Op::Calls(vec![1, 1, 3]),
                Op::Calls(vec![5, 1, 1, 1, 1, 1, 1, 1]),
                Op::Calls(vec![1]),
            ],
        );
        // Every value up to 2^63 - 1 is handed out, then SEQUENCE_OVERFLOW.
        let engine = Engine::new(mode, CreatePolicy::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            engine
                .store
                .put(&engine.counter, Some(Bson::Int64(i64::MAX - 11)));
            let mut values = Vec::new();
            loop {
                match engine.submit_and_wait(1).await {
                    Ok(r) => values.push(r.first),
                    Err(e) => {
                        assert_eq!(e.code, ErrorCode::SequenceOverflow);
                        break;
                    }
                }
            }
            assert_eq!(values, ((i64::MAX - 10)..=i64::MAX).collect::<Vec<_>>());
        });
    }
}

#[test]
fn regression_huge_steps_serve_batches_and_concurrent_calls() {
    let huge = Config {
        step: HUGE,
        min: -HUGE,
        max: HUGE,
        cycle: false,
    };
    for mode in [
        Mode::Direct,
        Mode::Coalesce,
        Mode::Cached(2),
        Mode::Cached(10),
    ] {
        check_history(
            mode,
            CreatePolicy::default(),
            Some(huge),
            &[Op::Calls(vec![2]), Op::Reset, Op::Calls(vec![1, 1, 1, 1])],
        );
    }
}

#[test]
fn regression_descending_counters_are_never_moved_back() {
    // mongoose-sequence { start_seq: 100, inc_amount: -1 }: 100, 99, 98 handed out.
    let shape = Shape {
        located: true,
        step: -1,
    };
    let policy = CreatePolicy {
        upsert: true,
        start: 100,
    };
    let source = vec![SourceDoc {
        values: vec![
            SourceValue::Int(100),
            SourceValue::Int(99),
            SourceValue::Int(98),
        ],
        through_array: true,
    }];
    for mode in [Mode::Direct, Mode::Coalesce, Mode::Cached(5)] {
        check_shaped_history(
            mode,
            policy,
            shape,
            None,
            &[
                Op::Drop,
                Op::Calls(vec![1, 1, 1]),
                Op::SyncToMax(source.clone()),
                Op::RaiseTo(100),
                Op::Calls(vec![1]),
            ],
        );
    }
    let down = Config {
        step: -1,
        min: -100,
        max: -1,
        cycle: false,
    };
    check_history(
        Mode::Direct,
        policy,
        Some(down),
        &[
            Op::Calls(vec![3]),
            Op::RaiseTo(-1),
            Op::RaiseTo(-101),
            Op::Calls(vec![1]),
        ],
    );
}

#[test]
fn regression_init_and_reset_of_a_stepped_counter_start_at_start() {
    for step in [5, -5, 2] {
        let shape = Shape {
            located: true,
            step,
        };
        check_shaped_history(
            Mode::Direct,
            CreatePolicy::default(),
            shape,
            None,
            &[
                Op::Drop,
                Op::Init(None, Some(10)),
                Op::Calls(vec![1, 2]),
                Op::Reset,
                Op::Calls(vec![1]),
            ],
        );
    }
}
