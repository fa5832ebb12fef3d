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
/// without answering (a bug, or the runtime shutting down). Dropped before it resolves
/// (its caller's deadline passed, its client closed), it counts values that reached it
/// meanwhile as unclaimed: a reply can land after the caller last looked and before it
/// gave up, and the sender then cannot tell that nobody will read it.
pub async fn receive(answer: oneshot::Receiver<SeqResult<IdRange>>) -> SeqResult<IdRange> {
    let mut unread = Unread(Some(answer));
    let outcome = match unread.0.as_mut() {
        Some(answer) => answer.await,
        None => unreachable!("set just above"),
    };
    unread.0 = None;
    outcome.unwrap_or_else(|_| Err(SeqError::internal("round trip ended without an answer")))
}

/// A receiver not read to the end.
struct Unread(Option<oneshot::Receiver<SeqResult<IdRange>>>);

impl Drop for Unread {
    fn drop(&mut self) {
        if let Some(mut answer) = self.0.take() {
            // Closed first, so a reply sent from now on fails and is counted by its sender.
            answer.close();
            if let Ok(Ok(range)) = answer.try_recv() {
                crate::engine::stats::discarded_unclaimed(range.count());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn unclaimed() -> u64 {
        crate::engine::stats::PROCESS.snapshot().discarded_unclaimed
    }

    /// Large enough that no other test's values can make up for a missed count.
    const VALUES: i64 = 987_654_321;

    #[test]
    fn a_reply_that_lands_after_the_last_look_is_counted_when_the_caller_gives_up() {
        let before = unclaimed();
        let (waiter, answer) = Waiter::new(VALUES);
        {
            let mut receiving = pin!(receive(answer));
            let mut context = Context::from_waker(Waker::noop());
            assert!(receiving.as_mut().poll(&mut context).is_pending());
            waiter.answer(Ok(IdRange::contiguous(1, VALUES)));
            // The caller gives up here, without polling again.
        }
        assert!(unclaimed() - before >= VALUES as u64);
    }

    #[test]
    fn a_reply_sent_after_the_caller_gave_up_is_counted_by_its_sender() {
        let before = unclaimed();
        let (waiter, answer) = Waiter::new(VALUES);
        drop(receive(answer));
        waiter.answer(Ok(IdRange::contiguous(1, VALUES)));
        assert!(unclaimed() - before >= VALUES as u64);
    }

    #[test]
    fn values_read_are_not_counted() {
        let (waiter, answer) = Waiter::new(3);
        waiter.answer(Ok(IdRange::contiguous(1, 3)));
        let mut receiving = pin!(receive(answer));
        let mut context = Context::from_waker(Waker::noop());
        match receiving.as_mut().poll(&mut context) {
            Poll::Ready(Ok(range)) => assert_eq!(range, IdRange::contiguous(1, 3)),
            other => panic!("{other:?}"),
        }
    }
}
