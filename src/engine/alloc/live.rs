//! Counts of live per-counter objects (a counter's state, its call queue, its block
//! caches), process-wide and per group (one group per client), so that tests and
//! diagnostics can see that idle counters are released.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Live per-counter objects in this process.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many per-counter objects (states, their call queues and block caches) are alive
/// in this process.
pub fn live_counter_objects() -> usize {
    LIVE.load(Ordering::SeqCst)
}

/// A group of live objects (those of one client), counted together.
#[derive(Clone, Default)]
pub struct LiveGroup(Arc<AtomicUsize>);

impl LiveGroup {
    /// A token that counts one live object of this group until it is dropped.
    pub fn token(&self) -> LiveToken {
        self.0.fetch_add(1, Ordering::SeqCst);
        LIVE.fetch_add(1, Ordering::SeqCst);
        LiveToken(self.0.clone())
    }

    /// How many objects of this group are alive.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Counts one live object (in its group and in the process) while it exists.
pub struct LiveToken(Arc<AtomicUsize>);

impl Default for LiveToken {
    /// A token of a group of its own.
    fn default() -> Self {
        LiveGroup::default().token()
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_count_while_they_live() {
        let group = LiveGroup::default();
        let a = group.token();
        let b = group.token();
        assert_eq!(group.count(), 2);
        assert!(live_counter_objects() >= 2);
        drop(a);
        assert_eq!(group.count(), 1);
        drop(b);
        assert_eq!(group.count(), 0);
        let own = LiveToken::default();
        assert_eq!(own.0.load(Ordering::SeqCst), 1);
    }
}
