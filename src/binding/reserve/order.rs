//! Keeping the order in which JavaScript made its calls when some must wait for their
//! client to open: those take a ticket on the JavaScript thread and submit in ticket
//! order once their client is ready, and while any ticket is out, later calls take one
//! too instead of jumping the line.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use tokio::sync::Notify;

#[derive(Default)]
struct Line {
    /// The next ticket to hand out.
    next: u64,
    /// Every ticket below this one has submitted (or given up).
    served: u64,
    /// Tickets done out of turn, waiting for the ones before them.
    done: BTreeSet<u64>,
}

static LINE: LazyLock<Mutex<Line>> = LazyLock::new(Default::default);
/// Tickets handed out and not yet done: read without a lock on every call.
static OUT: AtomicU64 = AtomicU64::new(0);
static TURN: Notify = Notify::const_new();

fn line() -> std::sync::MutexGuard<'static, Line> {
    LINE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a call may submit at once: no earlier call is still waiting for its turn.
pub fn nobody_waiting() -> bool {
    OUT.load(Ordering::SeqCst) == 0
}

/// A place in line, taken on the JavaScript thread. Dropping it (after submitting, or
/// after failing before that) lets the next ticket go.
pub struct Ticket(u64);

impl Ticket {
    /// The next place in line.
    pub fn take() -> Ticket {
        let mut line = line();
        OUT.fetch_add(1, Ordering::SeqCst);
        line.next += 1;
        Ticket(line.next - 1)
    }

    /// Waits until every earlier ticket is done.
    pub async fn my_turn(&self) {
        loop {
            let notified = TURN.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if line().served == self.0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut line = line();
        line.done.insert(self.0);
        loop {
            let served = line.served;
            if !line.done.remove(&served) {
                break;
            }
            line.served += 1;
        }
        drop(line);
        OUT.fetch_sub(1, Ordering::SeqCst);
        TURN.notify_waiters();
    }
}
