//! The read concern and read preference of a Node driver `Db` (given to
//! `client.db(name, options)`, or its client's): carried to the reads that only report
//! (`listSequences`), as the Node driver's own reads on that `Db` carry them. The reads
//! that decide a counter write, and `current`, never follow them: they read the
//! primary's latest (`mongo_driver::on_primary`, `mongo_driver::latest`).

use mongodb::options::{ReadConcern, SelectionCriteria};

use crate::engine::client::node_options::{
    derive_read_concern, derive_read_preference, DerivedReadPreference, NodeValue,
};
use crate::engine::error::{ErrorCode, SeqError, SeqResult};

/// A `Db`'s read settings; `None` where it has none (the connection's default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DbReads {
    /// `readConcern.level`.
    pub read_concern: Option<String>,
    /// `readPreference`.
    pub read_preference: Option<DerivedReadPreference>,
}

impl DbReads {
    /// Reads a `Db`'s `readConcern` and `readPreference` as a client's are read (the
    /// same refusals: a hedged read preference, a malformed value).
    pub fn from_node(read_concern: &NodeValue, read_preference: &NodeValue) -> SeqResult<DbReads> {
        // The client's messages point at the connection string, which cannot change
        // what a `Db` was given: this one names the `Db`'s option.
        let refused = |option: &str| {
            SeqError::new(
                ErrorCode::UnsupportedClient,
                format!(
                    "the Db's {option} is not carried over to counter reads (a hedged read \
                     preference, or a value the Node driver does not make); create the Db \
                     without it"
                ),
            )
        };
        Ok(DbReads {
            read_concern: derive_read_concern(read_concern).map_err(|_| refused("readConcern"))?,
            read_preference: derive_read_preference(read_preference)
                .map_err(|_| refused("readPreference"))?,
        })
    }

    /// The read concern to send, if the `Db` has one.
    pub fn concern(&self) -> Option<ReadConcern> {
        self.read_concern
            .as_ref()
            .map(|level| ReadConcern::custom(level.clone()))
    }

    /// Where to read, if the `Db` says.
    pub fn criteria(&self) -> Option<SelectionCriteria> {
        self.read_preference
            .as_ref()
            .map(|p| SelectionCriteria::ReadPreference(p.to_driver()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn map(pairs: &[(&str, NodeValue)]) -> NodeValue {
        NodeValue::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    #[test]
    fn a_db_without_read_settings_sends_none() {
        let reads = DbReads::from_node(&NodeValue::Undefined, &NodeValue::Undefined).unwrap();
        assert_eq!(reads, DbReads::default());
        assert!(reads.concern().is_none() && reads.criteria().is_none());
    }

    #[test]
    fn a_db_level_and_mode_become_the_drivers() {
        let reads = DbReads::from_node(
            &map(&[("level", NodeValue::Text("majority".into()))]),
            &map(&[
                ("mode", NodeValue::Text("secondaryPreferred".into())),
                (
                    "tags",
                    NodeValue::List(vec![map(&[("dc", NodeValue::Text("east".into()))])]),
                ),
            ]),
        )
        .unwrap();
        assert_eq!(reads.concern(), Some(ReadConcern::majority()));
        match reads.criteria() {
            Some(SelectionCriteria::ReadPreference(
                mongodb::options::ReadPreference::SecondaryPreferred { options: Some(o) },
            )) => assert_eq!(
                o.tag_sets,
                Some(vec![[("dc".to_string(), "east".to_string())]
                    .into_iter()
                    .collect()])
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_a_client_cannot_carry_a_db_cannot_either() {
        let hedged = map(&[
            ("mode", NodeValue::Text("nearest".into())),
            ("hedge", map(&[("enabled", NodeValue::Bool(true))])),
        ]);
        let refused = DbReads::from_node(&NodeValue::Undefined, &hedged).unwrap_err();
        assert_eq!(refused.code, ErrorCode::UnsupportedClient);
        assert!(
            refused.message.contains("the Db's readPreference"),
            "{}",
            refused.message
        );
        assert!(
            DbReads::from_node(&NodeValue::Text("majority".into()), &NodeValue::Undefined).is_err()
        );
        let unknown_mode = map(&[("mode", NodeValue::Text("anywhere".into()))]);
        assert!(DbReads::from_node(&NodeValue::Undefined, &unknown_mode).is_err());
    }
}
