//! Options of a sequence call, with the documented helper's defaults.

use crate::engine::alloc::allocate::CreatePolicy;
use crate::engine::client::write_concern::WriteConcernSpec;
use crate::engine::counter::counter_name::CounterName;
use crate::engine::counter::locator::Locator;
use crate::engine::error::SeqResult;
use crate::engine::store::counter_store::CounterRef;
use crate::engine::text::format::Pattern;
use crate::engine::text::validate::{check_collection, check_field};
use std::borrow::Cow;

/// Default collection of counter documents.
pub const DEFAULT_COLLECTION: &str = "counters";
/// Default counter field.
pub const DEFAULT_FIELD: &str = "sequence_value";

/// The options every sequence call takes (all optional from JavaScript).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOptions {
    /// Collection of counter documents.
    pub collection: Cow<'static, str>,
    /// Field holding the value.
    pub field: Cow<'static, str>,
    /// Create the counter on first use.
    pub upsert: bool,
    /// First value of a counter created by a call.
    pub start: i64,
    /// Return BigInt instead of number.
    pub bigint: bool,
    /// Connection string to use instead of deriving one from a Node driver client.
    pub uri: Option<String>,
    /// Merge concurrent calls for the same counter into one round trip.
    pub coalesce: bool,
    /// Serve calls from blocks of this many values reserved per process.
    pub cache: Option<i64>,
    /// Write concern of the counter writes (`None`: the connection's default).
    pub write_concern: Option<WriteConcernSpec>,
    /// Return business numbers formatted with this pattern instead of numbers.
    pub format: Option<Pattern>,
    /// How the counter document is found (by `_id` unless a locator is given).
    pub locator: Locator,
    /// Distance between the values of a plain counter.
    pub step: i64,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            collection: Cow::Borrowed(DEFAULT_COLLECTION),
            field: Cow::Borrowed(DEFAULT_FIELD),
            upsert: false,
            start: 1,
            bigint: false,
            uri: None,
            coalesce: true,
            cache: None,
            write_concern: None,
            format: None,
            locator: Locator::ById,
            step: 1,
        }
    }
}

impl CallOptions {
    /// The counter `name` names under these options, validated.
    pub fn counter(&self, name: &CounterName) -> SeqResult<CounterRef> {
        check_collection(&self.collection)?;
        check_field(&self.field)?;
        if self.step == 0 {
            return Err(crate::engine::error::SeqError::invalid_argument(
                "step must not be 0",
            ));
        }
        Ok(CounterRef::new(&self.collection, &self.field, name.clone())
            .located(self.locator.clone(), self.step))
    }

    /// What to do when the counter is missing.
    pub fn policy(&self) -> CreatePolicy {
        CreatePolicy {
            upsert: self.upsert,
            start: self.start,
        }
    }

    /// Whether calls return the values as JavaScript numbers (neither `bigint` nor
    /// `format`): values past 2^53 - 1 must then fail the call before it counts or
    /// commits anything.
    pub fn returns_numbers(&self) -> bool {
        !self.bigint && self.format.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::counter::locator::FieldsLocator;
    use crate::engine::error::ErrorCode;
    use mongodb::bson::doc;
    use proptest::prelude::*;

    #[test]
    fn defaults_are_the_documented_helper() {
        let o = CallOptions::default();
        let c = o.counter(&CounterName::text("productId").unwrap()).unwrap();
        assert_eq!(
            (c.collection.as_str(), c.field.as_str()),
            ("counters", "sequence_value")
        );
        assert_eq!(o.policy(), CreatePolicy::default());
    }

    #[test]
    fn invalid_parts_are_refused() {
        let o = CallOptions {
            field: "$bad".into(),
            ..Default::default()
        };
        assert!(o.counter(&CounterName::text("x").unwrap()).is_err());
        for collection in ["", "system.x", "a$b"] {
            let o = CallOptions {
                collection: collection.into(),
                ..Default::default()
            };
            let e = o.counter(&CounterName::text("x").unwrap()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{collection}");
        }
        assert!(CounterName::text("").is_err());
    }

    #[test]
    fn the_counter_and_the_policy_carry_the_options() {
        let located = Locator::ByFields(FieldsLocator::new(doc! { "id": "x" }, "n").unwrap());
        let o = CallOptions {
            collection: "seqs".into(),
            field: "n".into(),
            upsert: true,
            start: -5,
            locator: located.clone(),
            step: -3,
            ..Default::default()
        };
        let name = CounterName::text("a").unwrap();
        let c = o.counter(&name).unwrap();
        assert_eq!(
            (c.collection.as_str(), c.field.as_str(), c.step),
            ("seqs", "n", -3)
        );
        assert_eq!((c.name, c.locator), (name, located));
        assert_eq!(
            o.policy(),
            CreatePolicy {
                upsert: true,
                start: -5
            }
        );
    }

    proptest! {
        /// A plain model: the counter takes the step unless it is 0 (refused), and the
        /// policy is exactly `upsert` and `start`.
        #[test]
        fn step_and_policy_follow_the_model(
            step in prop_oneof![Just(0i64), -3i64..4, any::<i64>()],
            upsert in any::<bool>(),
            start in any::<i64>(),
        ) {
            let o = CallOptions { step, upsert, start, ..Default::default() };
            match o.counter(&CounterName::text("x").unwrap()) {
                Ok(c) => prop_assert!(step != 0 && c.step == step),
                Err(e) => {
                    prop_assert_eq!(step, 0);
                    prop_assert_eq!(e.code, ErrorCode::InvalidArgument);
                }
            }
            prop_assert_eq!(o.policy(), CreatePolicy { upsert, start });
        }
    }
}
