//! Keeping the order in which JavaScript made its calls when some must wait for their
//! client to open: those take a ticket on the JavaScript thread and submit in ticket
//! order once their client is ready, and while any ticket of a line is out, later calls
//! of that line take one too instead of jumping it. A line is one client's (one
//! connection's): calls through other clients never wait behind a client that opens
//! slowly (one replacing a client that retires waits for that one's pending calls).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use tokio::sync::Notify;

/// Which line a call stands in: calls of one client share one.
pub type LineKey = u64;

#[derive(Default)]
struct Line {
    /// The next ticket to hand out.
    next: u64,
    /// Every ticket below this one has submitted (or given up).
    served: u64,
    /// Tickets done out of order, waiting for the ones before them.
    done: BTreeSet<u64>,
}

impl Line {
    fn is_empty(&self) -> bool {
        self.served == self.next
    }
}

static LINES: LazyLock<Mutex<HashMap<LineKey, Line>>> = LazyLock::new(Default::default);
/// Tickets handed out and not yet done, in every line: read without a lock on every call.
static OUT: AtomicU64 = AtomicU64::new(0);
/// Woken whenever a line moves on.
static LINE_MOVED: Notify = Notify::const_new();

fn lines() -> std::sync::MutexGuard<'static, HashMap<LineKey, Line>> {
    LINES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a call of line `key` may submit at once: no earlier call of its line is still
/// waiting to submit. `key` is only computed when some line has a ticket out.
pub fn nobody_waiting(key: impl FnOnce() -> LineKey) -> bool {
    OUT.load(Ordering::SeqCst) == 0 || !lines().contains_key(&key())
}

/// A place in a line, taken on the JavaScript thread. Dropping it (after submitting, or
/// after failing before that) lets the next ticket of the line go.
pub struct Ticket {
    line: LineKey,
    number: u64,
}

impl Ticket {
    /// The next place in line `line`.
    pub fn take(line: LineKey) -> Ticket {
        let mut lines = lines();
        OUT.fetch_add(1, Ordering::SeqCst);
        let entry = lines.entry(line).or_default();
        entry.next += 1;
        Ticket {
            line,
            number: entry.next - 1,
        }
    }

    /// Waits until every earlier ticket of the line is done.
    pub async fn front_of_line(&self) {
        loop {
            let notified = LINE_MOVED.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if lines()
                .get(&self.line)
                .is_none_or(|line| line.served == self.number)
            {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut lines = lines();
        if let Some(line) = lines.get_mut(&self.line) {
            line.done.insert(self.number);
            while line.done.remove(&line.served) {
                line.served += 1;
            }
            if line.is_empty() {
                lines.remove(&self.line);
            }
        }
        drop(lines);
        OUT.fetch_sub(1, Ordering::SeqCst);
        LINE_MOVED.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    // Keys far from any other test's, since the lines are process-wide.
    const SLOW: LineKey = u64::MAX - 1;
    const OTHER: LineKey = u64::MAX - 2;

    #[test]
    fn a_ticket_of_another_line_goes_at_once_and_its_own_line_waits() {
        run(async {
            let first = Ticket::take(SLOW);
            assert!(!nobody_waiting(|| SLOW));
            assert!(nobody_waiting(|| OTHER));
            let behind = Ticket::take(SLOW);
            let other = Ticket::take(OTHER);
            // The other line's only ticket is at the front of its line while the slow line's first
            // is out.
            tokio::time::timeout(std::time::Duration::from_secs(1), other.front_of_line())
                .await
                .expect("another line's ticket waited for a line it is not in");
            assert!(
                tokio::time::timeout(std::time::Duration::from_millis(50), behind.front_of_line())
                    .await
                    .is_err(),
                "a ticket went before an earlier one of its own line"
            );
            drop(first);
            tokio::time::timeout(std::time::Duration::from_secs(1), behind.front_of_line())
                .await
                .expect("the next ticket of the line never reached the front");
            drop((behind, other));
            assert!(nobody_waiting(|| SLOW) && nobody_waiting(|| OTHER));
        });
    }
}
