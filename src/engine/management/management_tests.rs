use super::source::{usable_value, I64_RANGE_END};
use super::*;
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::ErrorCode;
use crate::engine::store::counter_store::Direction;
use crate::engine::store::memory_store::MemoryStore;
use crate::engine::test_support::run;

fn counter(name: &str) -> CounterRef {
    let name = crate::engine::counter::counter_name::CounterName::text(name).unwrap();
    CounterRef::new("counters", "seq", name)
}

#[test]
fn set_outside_the_limits_is_refused_and_writes_nothing() {
    let store = MemoryStore::default();
    let c = counter("b");
    let config = SequenceConfig::new(1, Some(100), Some(200), false).unwrap();
    assert!(run(init(&store, &c, None, Some(config))).unwrap());
    let e = run(set(&store, &c, 0, false)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(run(current(&store, &c)).unwrap(), 99);
    run(set(&store, &c, 150, false)).unwrap();
    assert_eq!(run(current(&store, &c)).unwrap(), 150);
}

#[test]
fn set_outside_the_limits_names_both_limits_in_one_phrase() {
    let store = MemoryStore::default();
    let c = counter("m");
    let config = SequenceConfig::new(1, Some(100), Some(200), false).unwrap();
    assert!(run(init(&store, &c, None, Some(config))).unwrap());
    for value in [99, 201] {
        let e = run(set(&store, &c, value, false)).unwrap_err();
        assert_eq!(
            e.message,
            format!(
                "Sequence 'm' cannot be set to {value}: outside its minValue 100 .. maxValue 200"
            )
        );
    }
}

#[test]
fn reset_uses_the_stored_start() {
    let store = MemoryStore::default();
    let c = counter("r");
    assert!(run(init(&store, &c, Some(1000), None)).unwrap());
    run(set(&store, &c, 5000, false)).unwrap();
    assert_eq!(run(reset(&store, &c, 1)).unwrap(), 1000);
    assert_eq!(run(current(&store, &c)).unwrap(), 999);
    assert!(run(drop_counter(&store, &c)).unwrap());
    assert_eq!(
        run(current(&store, &c)).unwrap_err().code,
        ErrorCode::SequenceNotFound
    );
}

#[test]
fn raising_respects_limits_and_never_lowers() {
    let store = MemoryStore::default();
    let c = counter("s");
    assert_eq!(run(raise_to(&store, &c, 40)).unwrap(), 40);
    assert_eq!(run(raise_to(&store, &c, 7)).unwrap(), 40);
    let bounded = counter("bounded");
    let config = SequenceConfig::new(1, Some(1), Some(50), false).unwrap();
    run(init(&store, &bounded, None, Some(config))).unwrap();
    let e = run(raise_to(&store, &bounded, 51)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(run(current(&store, &bounded)).unwrap(), 0);
}

#[test]
fn source_values_out_of_range_are_ignored() {
    use Direction::{Down, Up};
    for d in [Up, Down] {
        assert_eq!(usable_value(&Bson::Double(f64::INFINITY), d), None);
        assert_eq!(usable_value(&Bson::Double(1e300), d), None);
        assert_eq!(usable_value(&Bson::Double(-1e300), d), None);
        assert_eq!(usable_value(&Bson::Double(f64::NAN), d), None);
        assert_eq!(usable_value(&Bson::Int64(7), d), Some(7));
        assert_eq!(usable_value(&Bson::String("9".into()), d), None);
        assert_eq!(
            usable_value(&Bson::Double(-I64_RANGE_END), d),
            Some(i64::MIN)
        );
    }
    assert_eq!(usable_value(&Bson::Double(41.2), Up), Some(42));
    assert_eq!(usable_value(&Bson::Double(41.2), Down), Some(41));
    assert_eq!(usable_value(&Bson::Double(-0.5), Down), Some(-1));
}

/// Decimals (an import's `Decimal128` ids) count exactly, rounded so the counter passes
/// them; NaN, infinities and values outside the 64-bit range do not.
#[test]
fn decimal_source_values_count_exactly() {
    use mongodb::bson::Decimal128;
    use Direction::{Down, Up};
    let dec = |text: &str| Bson::Decimal128(text.parse::<Decimal128>().unwrap());
    for (text, up, down) in [
        ("100", Some(100), Some(100)),
        ("100.00", Some(100), Some(100)),
        ("1.5E+3", Some(1500), Some(1500)),
        ("1E+2", Some(100), Some(100)),
        ("41.2", Some(42), Some(41)),
        ("-0.5", Some(0), Some(-1)),
        ("-41.2", Some(-41), Some(-42)),
        ("0.000001", Some(1), Some(0)),
        ("-0", Some(0), Some(0)),
        (
            "9007199254740993",
            Some(9_007_199_254_740_993),
            Some(9_007_199_254_740_993),
        ),
        ("9223372036854775807", Some(i64::MAX), Some(i64::MAX)),
        ("9223372036854775807.5", None, Some(i64::MAX)),
        ("9223372036854775808", None, None),
        ("-9223372036854775808", Some(i64::MIN), Some(i64::MIN)),
        ("1E+6144", None, None),
        ("1E-6176", Some(1), Some(0)),
        ("NaN", None, None),
        ("Infinity", None, None),
        ("-Infinity", None, None),
    ] {
        assert_eq!(usable_value(&dec(text), Up), up, "{text} up");
        assert_eq!(usable_value(&dec(text), Down), down, "{text} down");
    }
}

#[test]
fn paths_reach_nested_fields_and_array_elements() {
    use mongodb::bson::doc;
    use Direction::{Down, Up};
    let docs = [
        doc! { "meta": { "no": 41 } },
        doc! { "meta": [{ "no": 7 }, { "no": [90, "x", [500]] }, 3] },
        doc! { "meta": { "no": "not a number" } },
        doc! { "meta": [[{ "no": 1000 }]] },
        doc! { "other": 5 },
        doc! { "meta": { "no": -2.5 } },
    ];
    assert_eq!(extreme_of(&docs, "meta.no", Up), Some(90));
    assert_eq!(extreme_of(&docs, "meta.no", Down), Some(-3));
    assert_eq!(extreme_of(&docs[..1], "meta.no", Up), Some(41));
    assert_eq!(extreme_of(&docs[4..5], "meta.no", Up), None);
    let positional = [doc! { "a": [{ "b": 4 }, { "b": 8 }], "c": [[1, 2], 3] }];
    assert_eq!(extreme_of(&positional, "a.1.b", Up), Some(8));
    assert_eq!(extreme_of(&positional, "a.0.b", Up), Some(4));
    assert_eq!(extreme_of(&positional, "c.0", Up), Some(2));
    assert_eq!(extreme_of(&positional, "c", Up), Some(3));
    assert_eq!(extreme_of(&positional, "c.0.x", Up), None);
    // A position names an element, looked into as any value (arrays included); a
    // field step does not look into an array inside an array.
    let nested = [doc! { "c": [[{ "x": 5 }], { "x": 1 }] }];
    assert_eq!(extreme_of(&nested, "c.0.x", Up), Some(5));
    assert_eq!(extreme_of(&nested, "c.x", Up), Some(1));
}

fn located(step: i64) -> CounterRef {
    use crate::engine::counter::locator::{FieldsLocator, Locator};
    use mongodb::bson::doc;
    let fields = doc! { "id": "loc", "reference_value": Bson::Null };
    counter("loc").located(
        Locator::ByFields(FieldsLocator::new(fields, "seq").unwrap()),
        step,
    )
}

#[test]
fn init_and_reset_of_a_stepped_counter_make_start_the_next_value() {
    use crate::engine::alloc::allocate::{allocate, CreatePolicy};
    for step in [5, -5] {
        let store = MemoryStore::default();
        let c = located(step);
        assert!(run(init(&store, &c, Some(10), None)).unwrap());
        assert_eq!(run(current(&store, &c)).unwrap(), 10 - step);
        let next = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(next.first, 10, "step {step}");
        run(allocate(&store, &c, CreatePolicy::default(), 2)).unwrap();
        assert_eq!(run(reset(&store, &c, 1)).unwrap(), 10);
        let next = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(next.first, 10, "after reset, step {step}");
    }
    let e = run(init(
        &MemoryStore::default(),
        &located(-5),
        Some(i64::MAX),
        None,
    ))
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::SequenceOverflow);
}

#[test]
fn descending_counters_are_moved_down_never_back() {
    let store = MemoryStore::default();
    let down = located(-1);
    run(init(&store, &down, Some(100), None)).unwrap();
    run(set(&store, &down, 98, false)).unwrap();
    // 100, 99, 98 handed out: 100 is behind it, not ahead.
    assert_eq!(run(raise_to(&store, &down, 100)).unwrap(), 98);
    assert_eq!(run(raise_to(&store, &down, 90)).unwrap(), 90);
    let configured = counter("down");
    let config = SequenceConfig::new(-1, Some(-50), Some(-1), false).unwrap();
    run(init(&store, &configured, None, Some(config))).unwrap();
    assert_eq!(run(raise_to(&store, &configured, -10)).unwrap(), -10);
    assert_eq!(run(raise_to(&store, &configured, -5)).unwrap(), -10);
    let e = run(raise_to(&store, &configured, -51)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("minValue -50"), "{}", e.message);
    assert_eq!(run(current(&store, &configured)).unwrap(), -10);
}

#[test]
fn a_configured_counter_moves_right_up_to_its_limit() {
    let store = MemoryStore::default();
    let up = counter("up_to_max");
    let config = SequenceConfig::new(1, Some(1), Some(50), false).unwrap();
    run(init(&store, &up, None, Some(config))).unwrap();
    assert_eq!(
        run(raise_to(&store, &up, 50)).unwrap(),
        50,
        "maxValue itself"
    );
    let down = counter("down_to_min");
    let config = SequenceConfig::new(-1, Some(-50), Some(-1), false).unwrap();
    run(init(&store, &down, None, Some(config))).unwrap();
    assert_eq!(
        run(raise_to(&store, &down, -50)).unwrap(),
        -50,
        "minValue itself"
    );
}

/// Source values in memory, for `sync_to_source`.
struct Values(Vec<mongodb::bson::Document>);

impl SourceValues for Values {
    async fn extreme(&self, direction: Direction) -> SeqResult<Option<i64>> {
        Ok(extreme_of(&self.0, "n", direction))
    }
}

#[test]
fn sync_moves_each_way_to_the_used_extreme() {
    use mongodb::bson::doc;
    let store = MemoryStore::default();
    let source = Values(vec![
        doc! { "n": 120 },
        doc! { "n": 95.5 },
        doc! { "n": "x" },
    ]);
    let up = counter("up");
    assert_eq!(run(sync_to_source(&store, &up, &source)).unwrap(), 120);
    let down = located(-1);
    run(init(&store, &down, Some(100), None)).unwrap();
    assert_eq!(run(sync_to_source(&store, &down, &source)).unwrap(), 95);
    assert_eq!(run(set(&store, &down, 10, false)).map(|_| ()), Ok(()));
    assert_eq!(
        run(sync_to_source(&store, &down, &source)).unwrap(),
        10,
        "never back"
    );
    let empty = Values(vec![]);
    assert_eq!(run(sync_to_source(&store, &down, &empty)).unwrap(), 10);
    assert_eq!(
        run(sync_to_source(&store, &counter("new"), &empty)).unwrap(),
        0
    );
}

#[test]
fn a_fraction_another_plugin_left_reads_as_the_whole_number_the_next_call_counts_from() {
    use crate::engine::alloc::allocate::{allocate, CreatePolicy};
    for (step, stored, read) in [(1, 3.5, 4), (4, -3.5, -3)] {
        let store = MemoryStore::default();
        let c = located(step);
        store.put(&c, Some(Bson::Double(stored)));
        assert_eq!(run(current(&store, &c)).unwrap(), read, "step {step}");
        // A raise that does not pass it leaves the fraction, read the same way.
        assert_eq!(run(raise_to(&store, &c, read - 2 * step)).unwrap(), read);
        let next = run(allocate(&store, &c, CreatePolicy::default(), 1)).unwrap();
        assert_eq!(next.first, read + step, "step {step}");
    }
    // Descending: refused, as a value-taking call refuses it.
    let store = MemoryStore::default();
    let c = located(-1);
    store.put(&c, Some(Bson::Double(3.5)));
    assert_eq!(
        run(current(&store, &c)).unwrap_err().code,
        ErrorCode::InvalidCounter
    );
    // A configured counter is this package's own: a fraction there stays refused.
    let store = MemoryStore::default();
    let c = counter("configured");
    let config = SequenceConfig::new(1, Some(1), Some(100), false).unwrap();
    run(init(&store, &c, None, Some(config))).unwrap();
    store.put_value(&c, Some(Bson::Double(3.5)));
    let e = run(current(&store, &c)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidCounter);
    assert!(e.message.contains("fractional"), "{}", e.message);
}
