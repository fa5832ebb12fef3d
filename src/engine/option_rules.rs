//! The options of the calls besides a counter's own ones, as the engine takes them, with
//! their defaults and the rules across options: `insertOne`/`insertMany` (counter created
//! on first use, named after the collection by default, old option names as aliases),
//! `init` (a start, and a configuration when step, limits or cycle are given), the
//! millisecond options, and the rules of the common options that depend on the call
//! (no `format` for ranges; the name of a counter found by fields). The binding reads the
//! JavaScript values into these types; nothing here knows JavaScript.

use std::borrow::Cow;

use mongodb::bson::Document;

use crate::engine::call_options::CallOptions;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::locator::{FieldsLocator, Locator};
use crate::engine::counter::sequence_config::SequenceConfig;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::{check_field_name, FieldUse};

/// The options of `insertOne` / `insertMany`, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertOptions {
    /// The options shared with every sequence call (`upsert` defaults to `true` here).
    pub common: CallOptions,
    /// The document field that receives the number (`None`: `_id`).
    pub field: Option<String>,
    /// The sequence name given as `name`.
    pub name: Option<CounterName>,
    /// The sequence name given as `sequence` (the older name of `name`).
    pub sequence: Option<CounterName>,
    /// The collection of counter documents given as `counterCollection`.
    pub counter_collection: Option<String>,
    /// The collection of counter documents given as `counters` (the older name of
    /// `counterCollection`).
    pub counters: Option<String>,
    /// Increment the counter and insert the documents in one transaction.
    pub gapless: bool,
    /// Fields locating the counter document instead of its name (`counterLocator`).
    pub locator: Option<Document>,
}

impl Default for InsertOptions {
    fn default() -> Self {
        InsertOptions {
            common: CallOptions {
                upsert: true,
                ..CallOptions::default()
            },
            field: None,
            name: None,
            sequence: None,
            counter_collection: None,
            counters: None,
            gapless: false,
            locator: None,
        }
    }
}

/// An insert call's options with the rules across them applied.
#[derive(Debug, Clone)]
pub struct InsertSettings {
    /// The counter's options (collection, field and locator decided).
    pub options: CallOptions,
    /// The document field that receives the number.
    pub field: String,
    /// The sequence name.
    pub name: CounterName,
    /// Whether the insert is gapless.
    pub gapless: bool,
}

impl InsertOptions {
    /// The options, rules applied, for inserting into `collection`: the sequence is named after
    /// the collection unless named, the numbered field is `_id` unless given, and an
    /// option given under both its names must say the same thing under both.
    pub fn apply_rules(self, collection: &str) -> SeqResult<InsertSettings> {
        let mut options = self.common;
        let name = match one_of("name", self.name, "sequence", self.sequence)? {
            Some(name) => name,
            None => CounterName::text(collection)?,
        };
        if let Some(counters) = one_of(
            "counterCollection",
            self.counter_collection,
            "counters",
            self.counters,
        )? {
            options.collection = Cow::Owned(counters);
        }
        if let Some(fields) = self.locator {
            options.locator = Locator::ByFields(FieldsLocator::new(fields, &options.field)?);
        }
        let field = self.field.unwrap_or_else(|| "_id".to_string());
        check_field_name("option 'field'", &field, FieldUse::NumberedDocument)?;
        Ok(InsertSettings {
            options,
            field,
            name,
            gapless: self.gapless,
        })
    }
}

/// The value of an option given under its name `name` or its older name `alias`: both
/// may be given when they are equal.
pub fn one_of<T: PartialEq>(
    name: &str,
    value: Option<T>,
    alias: &str,
    alias_value: Option<T>,
) -> SeqResult<Option<T>> {
    match (value, alias_value) {
        (Some(a), Some(b)) if a != b => Err(SeqError::invalid_argument(format!(
            "options '{name}' and '{alias}' (its older name) differ; give one of them"
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

/// The options of `Sequence.init`, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitOptions {
    /// The first value.
    pub start: Option<i64>,
    /// Distance between values (negative: descending).
    pub step: Option<i64>,
    /// Smallest value handed out.
    pub min: Option<i64>,
    /// Largest value handed out.
    pub max: Option<i64>,
    /// Restart at the other end once a limit is passed.
    pub cycle: Option<bool>,
}

/// What `init` creates: a start, and a configuration when any of step, limits or cycle
/// was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitSpec {
    /// The first value (`None`: the configuration's default start).
    pub start: Option<i64>,
    /// Step and limits to store.
    pub config: Option<SequenceConfig>,
}

impl InitOptions {
    /// What to create for a handle whose `start` option is `default_start`: without step,
    /// limits or cycle, a plain counter at `start` (else `default_start`); with any of
    /// them, a configured counter (step 1 and PostgreSQL's limits unless given) at
    /// `start`, else at its configuration's default start.
    pub fn apply_rules(self, default_start: i64) -> SeqResult<InitSpec> {
        let configured =
            self.step.is_some() || self.min.is_some() || self.max.is_some() || self.cycle.is_some();
        if !configured {
            return Ok(InitSpec {
                start: Some(self.start.unwrap_or(default_start)),
                config: None,
            });
        }
        Ok(InitSpec {
            start: self.start,
            config: Some(SequenceConfig::new(
                self.step.unwrap_or(1),
                self.min,
                self.max,
                self.cycle.unwrap_or(false),
            )?),
        })
    }
}

/// Longest timeout of a connection option, in milliseconds (as for Node's timers:
/// about 24.8 days).
pub const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// Longest close timeout accepted: a day.
pub const MAX_CLOSE_TIMEOUT_MS: f64 = 86_400_000.0;

/// A whole number of milliseconds from 0 to `max` given for option `key`.
pub fn millis_up_to(key: &str, ms: f64, max: f64) -> SeqResult<u64> {
    if (0.0..=max).contains(&ms) && ms.fract() == 0.0 {
        return Ok(ms as u64);
    }
    Err(SeqError::invalid_argument(format!(
        "option '{key}' must be a whole number of milliseconds from 0 to {max}; got {}",
        shown_number(ms)
    )))
}

/// `writeConcern.wtimeoutMS`: a whole number of milliseconds, at least 0.
pub fn wtimeout_millis(ms: f64) -> SeqResult<u64> {
    if ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0 {
        return Ok(ms as u64);
    }
    Err(SeqError::invalid_argument(
        "option 'writeConcern.wtimeoutMS' must be a whole number of milliseconds",
    ))
}

/// A number as a message shows it: as JavaScript's `String(n)` does, since the caller
/// wrote it in JavaScript (`NaN`, `Infinity`, `-0` as `0`, and exponent notation below
/// 1e-6 and from 1e21 on, like `1e+21`).
fn shown_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_string()
    } else if n == f64::INFINITY {
        "Infinity".to_string()
    } else if n == f64::NEG_INFINITY {
        "-Infinity".to_string()
    } else if n == 0.0 {
        "0".to_string()
    } else if (1e-6..1e21).contains(&n.abs()) {
        // Shortest digits that read back as `n`, without an exponent: as JavaScript.
        format!("{n}")
    } else {
        let shown = format!("{n:e}");
        if shown.contains("e-") {
            shown
        } else {
            shown.replacen('e', "e+", 1)
        }
    }
}

/// Refuses `format` for calls that return bounds (`getNextSequenceRange`, `nextRange`),
/// before any I/O.
pub fn refuse_format(options: &CallOptions) -> SeqResult<()> {
    if options.format.is_some() {
        return Err(SeqError::invalid_argument(
            "option 'format' does not apply to ranges; use getNextSequenceBatch or format the \
             bounds with formatSequence",
        ));
    }
    Ok(())
}

/// The name shown in messages for a counter found by `located`.
pub fn label_of(located: &FieldsLocator) -> SeqResult<CounterName> {
    CounterName::text(&located.label())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;
    use crate::engine::text::format::Pattern;
    use mongodb::bson::doc;
    use proptest::prelude::*;

    #[test]
    fn insert_defaults() {
        let applied = InsertOptions::default().apply_rules("orders").unwrap();
        assert_eq!(applied.name, CounterName::text("orders").unwrap());
        assert_eq!(applied.field, "_id");
        assert!(applied.options.upsert);
        assert_eq!(applied.options.collection, "counters");
        assert!(!applied.gapless);
    }

    #[test]
    fn insert_names_and_their_older_names() {
        let name = |s: &str| Some(CounterName::text(s).unwrap());
        let old = InsertOptions {
            sequence: name("a"),
            counters: Some("c".into()),
            ..Default::default()
        }
        .apply_rules("orders")
        .unwrap();
        let new = InsertOptions {
            name: name("a"),
            counter_collection: Some("c".into()),
            ..Default::default()
        }
        .apply_rules("orders")
        .unwrap();
        assert_eq!(
            (old.name, old.options.collection),
            (new.name, new.options.collection)
        );
        let both_equal = InsertOptions {
            name: name("a"),
            sequence: name("a"),
            ..Default::default()
        };
        assert!(both_equal.apply_rules("orders").is_ok());
        let names_differ = InsertOptions {
            name: name("a"),
            sequence: name("b"),
            ..Default::default()
        };
        let e = names_differ.apply_rules("orders").unwrap_err();
        assert_eq!(e.code, crate::engine::error::ErrorCode::InvalidArgument);
        let collections_differ = InsertOptions {
            counter_collection: Some("x".into()),
            counters: Some("y".into()),
            ..Default::default()
        };
        assert!(collections_differ.apply_rules("orders").is_err());
    }

    #[test]
    fn insert_locator_uses_the_decided_counter_field() {
        let mut options = InsertOptions {
            locator: Some(doc! { "id": "x", "seq": 1 }),
            ..Default::default()
        };
        options.common.field = "seq".into();
        assert!(options.clone().apply_rules("orders").is_err());
        options.common.field = "other".into();
        assert!(options.apply_rules("orders").is_ok());
    }

    #[test]
    fn init_defaults() {
        let plain = InitOptions::default().apply_rules(7).unwrap();
        assert_eq!(
            plain,
            InitSpec {
                start: Some(7),
                config: None
            }
        );
        let configured = InitOptions {
            step: Some(-1),
            ..Default::default()
        }
        .apply_rules(7)
        .unwrap();
        assert_eq!(configured.start, None);
        assert_eq!(configured.config.unwrap().max, -1);
        assert!(InitOptions {
            step: Some(0),
            ..Default::default()
        }
        .apply_rules(1)
        .is_err());
    }

    #[test]
    fn milliseconds() {
        assert_eq!(wtimeout_millis(5.0).unwrap(), 5);
        assert!(wtimeout_millis(-1.0).is_err());
        assert!(wtimeout_millis(0.5).is_err());
        assert!(wtimeout_millis(f64::INFINITY).is_err());
        assert_eq!(millis_up_to("t", 0.0, 10.0).unwrap(), 0);
        assert!(millis_up_to("t", 11.0, 10.0).is_err());
        assert!(millis_up_to("t", f64::NAN, 10.0).is_err());
    }

    #[test]
    fn init_is_configured_by_any_one_of_step_limits_cycle() {
        let config = |o: InitOptions| o.apply_rules(7).unwrap().config;
        let min_only = config(InitOptions {
            min: Some(5),
            ..Default::default()
        });
        assert_eq!(
            min_only,
            Some(SequenceConfig::new(1, Some(5), None, false).unwrap())
        );
        let max_only = config(InitOptions {
            max: Some(5),
            ..Default::default()
        });
        assert_eq!(max_only.map(|c| (c.min, c.max)), Some((1, 5)));
        let cycle_only = config(InitOptions {
            cycle: Some(false),
            ..Default::default()
        });
        assert_eq!(cycle_only.map(|c| (c.step, c.cycle)), Some((1, false)));
        let start_only = InitOptions {
            start: Some(3),
            ..Default::default()
        };
        assert_eq!(
            start_only.apply_rules(7).unwrap(),
            InitSpec {
                start: Some(3),
                config: None
            }
        );
    }

    /// `init`'s rule as a plain model: configured exactly when any of step, limits or
    /// cycle is given, with step 1 and PostgreSQL's limits by direction unless given.
    fn init_model(o: &InitOptions, default_start: i64) -> Option<InitSpec> {
        if o.step.is_none() && o.min.is_none() && o.max.is_none() && o.cycle.is_none() {
            return Some(InitSpec {
                start: Some(o.start.unwrap_or(default_start)),
                config: None,
            });
        }
        let step = o.step.unwrap_or(1);
        let (low, high) = if step > 0 {
            (1, i64::MAX)
        } else {
            (i64::MIN, -1)
        };
        let (min, max) = (o.min.unwrap_or(low), o.max.unwrap_or(high));
        (step != 0 && min < max).then_some(InitSpec {
            start: o.start,
            config: Some(SequenceConfig {
                step,
                min,
                max,
                cycle: o.cycle.unwrap_or(false),
            }),
        })
    }

    /// A JavaScript number as the binding may pass it: small whole numbers, fractions,
    /// `-0`, `NaN`, the infinities, and any `f64`.
    fn js_number() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-5i64..15).prop_map(|n| n as f64),
            (-50i64..150).prop_map(|n| n as f64 / 10.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(MAX_TIMEOUT_MS),
            Just(MAX_TIMEOUT_MS + 1.0),
            any::<f64>(),
        ]
    }

    proptest! {
        #[test]
        fn init_follows_the_model(
            start in proptest::option::of(-10i64..10),
            step in proptest::option::of(-3i64..4),
            min in proptest::option::of(-6i64..6),
            max in proptest::option::of(-6i64..6),
            cycle in proptest::option::of(any::<bool>()),
            default_start in -10i64..10,
        ) {
            let options = InitOptions { start, step, min, max, cycle };
            let expected = init_model(&options, default_start);
            match options.apply_rules(default_start) {
                Ok(spec) => prop_assert_eq!(Some(spec), expected),
                Err(e) => {
                    prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                    prop_assert_eq!(expected, None);
                }
            }
        }

        #[test]
        fn one_of_follows_the_model(
            a in proptest::option::of(0u8..3),
            b in proptest::option::of(0u8..3),
        ) {
            match one_of("name", a, "sequence", b) {
                Ok(v) => {
                    prop_assert!(a.is_none() || b.is_none() || a == b);
                    prop_assert_eq!(v, a.or(b));
                }
                Err(e) => {
                    prop_assert!(a.is_some() && b.is_some() && a != b);
                    prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                    prop_assert!(e.message.contains("'name' and 'sequence'"), "{}", e.message);
                }
            }
        }

        #[test]
        fn milliseconds_follow_the_model(
            ms in js_number(),
            max in prop_oneof![Just(0.0), Just(10.0), Just(MAX_TIMEOUT_MS), Just(MAX_CLOSE_TIMEOUT_MS)],
        ) {
            let whole = ms == ms.trunc();
            let expected = (whole && ms >= 0.0 && ms <= max).then_some(ms as u64);
            match millis_up_to("timeoutMS", ms, max) {
                Ok(v) => prop_assert_eq!(Some(v), expected),
                Err(e) => {
                    prop_assert_eq!(expected, None);
                    prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                    let tail = format!("from 0 to {max}; got {}", shown_number(ms));
                    prop_assert!(e.message.starts_with("option 'timeoutMS' "), "{}", e.message);
                    prop_assert!(e.message.ends_with(&tail), "{}", e.message);
                }
            }
            let expected = (whole && ms >= 0.0 && ms.is_finite()).then_some(ms as u64);
            match wtimeout_millis(ms) {
                Ok(v) => prop_assert_eq!(Some(v), expected),
                Err(e) => {
                    prop_assert_eq!(expected, None);
                    prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                }
            }
        }

        /// A shown number reads back as the same number (`-0` as `0`), and is in
        /// exponent notation exactly where JavaScript uses it.
        #[test]
        fn shown_numbers_read_back(n in js_number()) {
            let shown = shown_number(n);
            let back: f64 = shown.parse().unwrap();
            prop_assert!(back == n || (n.is_nan() && back.is_nan()), "{} {}", n, shown);
            prop_assert_ne!(shown.as_str(), "-0");
            let exponent = n.is_finite() && n != 0.0 && !(1e-6..1e21).contains(&n.abs());
            prop_assert_eq!(shown.contains('e'), exponent, "{}", shown);
        }
    }

    #[test]
    fn numbers_are_shown_as_javascript_shows_them() {
        // Each right-hand side is what Node's `String(n)` gives.
        for (n, js) in [
            (0.5, "0.5"),
            (-0.0, "0"),
            (-3.0, "-3"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (1e21, "1e+21"),
            (-1e21, "-1e+21"),
            (2f64.powi(70), "1.1805916207174113e+21"),
            (2f64.powi(60), "1152921504606847000"),
            (123456789012345680000.0, "123456789012345680000"),
            (2147483648.0, "2147483648"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "0.000001"),
            (-2.5e-8, "-2.5e-8"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(shown_number(n), js, "{n:?}");
        }
        let e = millis_up_to("connectTimeoutMS", f64::INFINITY, MAX_TIMEOUT_MS).unwrap_err();
        assert_eq!(
            e.message,
            "option 'connectTimeoutMS' must be a whole number of milliseconds from 0 to \
             2147483647; got Infinity"
        );
    }

    #[test]
    fn ranges_refuse_format_and_located_counters_are_labelled() {
        assert!(refuse_format(&CallOptions::default()).is_ok());
        let formatted = CallOptions {
            format: Some(Pattern::parse("INV-{seq}").unwrap()),
            ..Default::default()
        };
        let e = refuse_format(&formatted).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.contains("'format'"), "{}", e.message);
        let located = FieldsLocator::new(doc! { "id": "x", "reference_value": 2 }, "seq").unwrap();
        assert_eq!(
            label_of(&located).unwrap(),
            CounterName::text(r#"{"id":"x","reference_value":2}"#).unwrap()
        );
    }
}
