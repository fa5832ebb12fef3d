//! A call waiting for a round trip made on its behalf (by the coalescer or the block
//! cache), and how it receives its values.

use tokio::sync::oneshot;

use crate::engine::counter::id_range::IdRange;
use crate::engine::error::{SeqError, SeqResult};

/// A waiting call: how many values it wants and where to send them.
pub struct Waiter {
    /// Values wanted.
    pub count: i64,
    /// Where the values (or the error) go.
    pub reply: oneshot::Sender<SeqResult<IdRange>>,
}

impl Waiter {
    /// A waiter for `count` values, and the receiving end for its caller.
    pub fn new(count: i64) -> (Waiter, oneshot::Receiver<SeqResult<IdRange>>) {
        let (reply, answer) = oneshot::channel();
        (Waiter { count, reply }, answer)
    }

    /// Sends the outcome; a caller that went away drops its values (a gap, never a
    /// duplicate), counted as unclaimed.
    pub fn answer(self, outcome: SeqResult<IdRange>) {
        if let Err(Ok(range)) = self.reply.send(outcome) {
            crate::engine::stats::discarded_unclaimed(range.count());
        }
    }
}

/// The values sent to a waiter, or `INTERNAL` when the round trip serving it ended
/// without answering (a bug, or the runtime shutting down).
pub async fn receive(answer: oneshot::Receiver<SeqResult<IdRange>>) -> SeqResult<IdRange> {
    answer
        .await
        .unwrap_or_else(|_| Err(SeqError::internal("round trip ended without an answer")))
}
