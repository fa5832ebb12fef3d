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

/// An insert call's settled options.
#[derive(Debug, Clone)]
pub struct InsertSettings {
    /// The counter's options (collection, field and locator settled).
    pub options: CallOptions,
    /// The document field that receives the number.
    pub field: String,
    /// The sequence name.
    pub name: CounterName,
    /// Whether the insert is gapless.
    pub gapless: bool,
}

impl InsertOptions {
    /// The settled options for inserting into `collection`: the sequence is named after
    /// the collection unless named, the numbered field is `_id` unless given, and an
    /// option given under both its names must say the same thing under both.
    pub fn settle(self, collection: &str) -> SeqResult<InsertSettings> {
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
    pub fn settle(self, default_start: i64) -> SeqResult<InitSpec> {
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

/// A number as a message shows it (`NaN`, `Infinity` and fractions included).
fn shown_number(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i128)
    } else {
        format!("{n}")
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
    use mongodb::bson::doc;

    #[test]
    fn insert_defaults() {
        let settled = InsertOptions::default().settle("orders").unwrap();
        assert_eq!(settled.name, CounterName::text("orders").unwrap());
        assert_eq!(settled.field, "_id");
        assert!(settled.options.upsert);
        assert_eq!(settled.options.collection, "counters");
        assert!(!settled.gapless);
    }

    #[test]
    fn insert_names_and_their_older_names() {
        let name = |s: &str| Some(CounterName::text(s).unwrap());
        let old = InsertOptions {
            sequence: name("a"),
            counters: Some("c".into()),
            ..Default::default()
        }
        .settle("orders")
        .unwrap();
        let new = InsertOptions {
            name: name("a"),
            counter_collection: Some("c".into()),
            ..Default::default()
        }
        .settle("orders")
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
        assert!(both_equal.settle("orders").is_ok());
        let names_differ = InsertOptions {
            name: name("a"),
            sequence: name("b"),
            ..Default::default()
        };
        let e = names_differ.settle("orders").unwrap_err();
        assert_eq!(e.code, crate::engine::error::ErrorCode::InvalidArgument);
        let collections_differ = InsertOptions {
            counter_collection: Some("x".into()),
            counters: Some("y".into()),
            ..Default::default()
        };
        assert!(collections_differ.settle("orders").is_err());
    }

    #[test]
    fn insert_locator_uses_the_settled_counter_field() {
        let mut options = InsertOptions {
            locator: Some(doc! { "id": "x", "seq": 1 }),
            ..Default::default()
        };
        options.common.field = "seq".into();
        assert!(options.clone().settle("orders").is_err());
        options.common.field = "other".into();
        assert!(options.settle("orders").is_ok());
    }

    #[test]
    fn init_defaults() {
        let plain = InitOptions::default().settle(7).unwrap();
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
        .settle(7)
        .unwrap();
        assert_eq!(configured.start, None);
        assert_eq!(configured.config.unwrap().max, -1);
        assert!(InitOptions {
            step: Some(0),
            ..Default::default()
        }
        .settle(1)
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
}
