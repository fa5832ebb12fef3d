//! Keeping a panic contained: a round trip that panics fails exactly the calls it
//! carried (with `INTERNAL`), and locks a panic left poisoned stay usable, so later
//! calls on the same counter proceed.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Mutex, MutexGuard};

use futures_util::FutureExt;

use crate::engine::error::{SeqError, SeqResult};

/// Runs `work`, turning a panic while polling it into `INTERNAL` (naming `place`, never
/// the panic's message, which could hold user data).
pub async fn caught<T>(place: &str, work: impl Future<Output = SeqResult<T>>) -> SeqResult<T> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err(SeqError::internal(place)))
}

/// Locks `mutex`, taking it over when a panic elsewhere poisoned it: the data it guards
/// is only ever changed in steps that leave it consistent.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs its clean-up when dropped, unless disarmed: for a task that may stop before its
/// end (a panic outside [`caught`], or a runtime shutting down drops spawned tasks
/// unpolled), so that what it holds is handed back and its waiting calls fail with
/// `INTERNAL` instead of waiting forever. Armed before the task is first polled.
pub struct OnEarlyStop<F: FnOnce()> {
    cleanup: Option<F>,
}

impl<F: FnOnce()> OnEarlyStop<F> {
    pub fn new(cleanup: F) -> Self {
        Self {
            cleanup: Some(cleanup),
        }
    }

    /// Drops it without cleaning up (the task ended itself), and with it what the
    /// clean-up held.
    pub fn disarm(mut self) {
        self.cleanup = None;
    }
}

impl<F: FnOnce()> Drop for OnEarlyStop<F> {
    fn drop(&mut self) {
        if let Some(cleanup) = self.cleanup.take() {
            cleanup();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::ErrorCode;

    #[tokio::test]
    async fn a_panic_becomes_internal_without_its_message() {
        let out: SeqResult<i32> = caught("test", async {
            if std::hint::black_box(true) {
                panic!("secret-password");
            }
            Ok(1)
        })
        .await;
        let e = out.unwrap_err();
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(!e.message.contains("secret"), "{}", e.message);
        assert_eq!(caught("test", async { Ok(2) }).await, Ok(2));
    }

    #[test]
    fn a_poisoned_lock_stays_usable() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison");
        })
        .join();
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }

    #[test]
    fn an_early_stop_cleans_up_once_and_a_disarmed_one_never() {
        let runs = std::cell::Cell::new(0);
        drop(OnEarlyStop::new(|| runs.set(runs.get() + 1)));
        assert_eq!(runs.get(), 1);
        OnEarlyStop::new(|| runs.set(runs.get() + 1)).disarm();
        assert_eq!(runs.get(), 1);
    }
}
