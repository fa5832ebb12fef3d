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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(CounterName::text("").is_err());
    }
}
