//! Running an operation on the caller's task that still finishes if the caller
//! stops waiting.
//!
//! `tokio::spawn` gives that guarantee too, but moves every call to another
//! thread and back: two thread wake-ups, which cost more than a small call
//! itself. [`run_to_completion`] polls the operation on the caller's own task;
//! only if the caller drops it half done (a timeout, a dropped request) does
//! the rest move to a task of its own and run to its end there. A panic in the
//! operation becomes an error, as a panicking spawned task's would.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// An operation that is finished on a spawned task if dropped before it ends.
struct Finishing<F: Future<Output = ()> + Send + 'static> {
    op: Option<Pin<Box<F>>>,
}

impl<F: Future<Output = ()> + Send + 'static> Drop for Finishing<F> {
    fn drop(&mut self) {
        if let Some(op) = self.op.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            // The box keeps the operation where it was pinned.
            runtime.spawn(op);
        }
    }
}

/// Runs `op` to its end: here while the caller waits, on a task of its own
/// from the moment the caller stops waiting. `Err(message)` if it panicked.
pub async fn run_to_completion<T, F>(op: F) -> Result<T, String>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (sender, mut receiver) = tokio::sync::oneshot::channel();
    let op = async move {
        // Nobody may be waiting any more: then the result is dropped.
        let _ = sender.send(op.await);
    };
    let mut finishing = Finishing { op: Some(Box::pin(op)) };
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        let Some(op) = finishing.op.as_mut() else {
            return Poll::Ready(Err("the operation was already finished".to_owned()));
        };
        match catch_unwind(AssertUnwindSafe(|| op.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(())) => {
                finishing.op = None;
                Poll::Ready(receiver.try_recv().map_err(|_| "the operation ended without a result".to_owned()))
            }
            Err(panic) => {
                finishing.op = None;
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                Poll::Ready(Err(format!("panicked: {message}")))
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn runs_on_the_callers_thread_and_returns_the_value() {
        let here = std::thread::current().id();
        let there = run_to_completion(async { std::thread::current().id() }).await;
        assert_eq!(there, Ok(here));
    }

    #[tokio::test]
    async fn an_operation_the_caller_gave_up_on_still_finishes() {
        let finished = Arc::new(AtomicBool::new(false));
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        let flag = Arc::clone(&finished);
        let op = run_to_completion(async move {
            let _ = wait.await;
            flag.store(true, Ordering::SeqCst);
        });
        // The caller stops waiting while the operation is half done.
        assert!(tokio::time::timeout(Duration::from_millis(10), op).await.is_err());
        assert!(!finished.load(Ordering::SeqCst));
        release.send(()).ok();
        for _ in 0..100 {
            if finished.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the abandoned operation never finished");
    }

    #[tokio::test]
    async fn a_panic_is_an_error_not_a_crash() {
        let result = run_to_completion(async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
        })
        .await;
        assert_eq!(result, Err("panicked: boom".to_owned()));
    }
}
