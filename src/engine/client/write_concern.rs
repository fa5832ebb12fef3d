//! The `writeConcern` option: how durable a counter write must be before it is
//! acknowledged. Without it, the connection string's or the server's default applies.

use std::time::Duration;

use mongodb::options::{Acknowledgment, WriteConcern};

use crate::engine::error::{SeqError, SeqResult};

/// Who must acknowledge a write (`w`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WriteAck {
    /// This many members (`w: 1`, `w: 2`…).
    Nodes(u32),
    /// A majority of voting members (`w: 'majority'`).
    Majority,
    /// A custom write concern defined by replica set tags.
    Tag(String),
}

/// A write concern as given in the options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WriteConcernSpec {
    /// `w`.
    pub w: Option<WriteAck>,
    /// `journal`: wait for the on-disk journal.
    pub journal: Option<bool>,
    /// `wtimeoutMS`: give up waiting for acknowledgement after this long.
    pub wtimeout_ms: Option<u64>,
}

impl WriteAck {
    /// `w` from a number (a whole number of members, at least 1: unacknowledged writes
    /// cannot return the counter) or a string (`'majority'` or a tag set name).
    pub fn from_number(n: f64) -> SeqResult<WriteAck> {
        if !n.is_finite() || n.fract() != 0.0 || !(1.0..=50.0).contains(&n) {
            return Err(SeqError::invalid_argument(format!(
                "writeConcern.w must be a whole number from 1 to 50, 'majority' or a tag name; got {n}"
            )));
        }
        Ok(WriteAck::Nodes(n as u32))
    }

    /// `w` from a string.
    pub fn from_text(text: &str) -> SeqResult<WriteAck> {
        match text {
            "" => Err(SeqError::invalid_argument(
                "writeConcern.w must not be empty",
            )),
            "majority" => Ok(WriteAck::Majority),
            tag => Ok(WriteAck::Tag(tag.to_string())),
        }
    }
}

impl WriteConcernSpec {
    /// The driver's write concern.
    pub fn to_driver(&self) -> WriteConcern {
        let mut concern = WriteConcern::default();
        concern.w = self.w.as_ref().map(|w| match w {
            WriteAck::Nodes(n) => Acknowledgment::Nodes(*n),
            WriteAck::Majority => Acknowledgment::Majority,
            WriteAck::Tag(tag) => Acknowledgment::Custom(tag.clone()),
        });
        concern.journal = self.journal;
        concern.w_timeout = self.wtimeout_ms.map(Duration::from_millis);
        concern
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_the_driver_type() {
        let spec = WriteConcernSpec {
            w: Some(WriteAck::Majority),
            journal: Some(true),
            wtimeout_ms: Some(500),
        };
        let wc = spec.to_driver();
        assert_eq!(wc.w, Some(Acknowledgment::Majority));
        assert_eq!(wc.journal, Some(true));
        assert_eq!(wc.w_timeout, Some(Duration::from_millis(500)));
        assert_eq!(
            WriteConcernSpec::default().to_driver(),
            WriteConcern::default()
        );
    }

    #[test]
    fn w_values() {
        assert_eq!(WriteAck::from_number(2.0).unwrap(), WriteAck::Nodes(2));
        for bad in [0.0, -1.0, 1.5, f64::NAN, 51.0] {
            assert!(WriteAck::from_number(bad).is_err(), "{bad}");
        }
        assert_eq!(WriteAck::from_text("majority").unwrap(), WriteAck::Majority);
        assert_eq!(
            WriteAck::from_text("dc2").unwrap(),
            WriteAck::Tag("dc2".into())
        );
        assert!(WriteAck::from_text("").is_err());
    }
}
