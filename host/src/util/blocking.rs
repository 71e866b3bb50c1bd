//! Blocking work run on the caller's own thread, from async code.

/// Runs `f` here. On a worker of a multi-threaded tokio runtime it goes through
/// `block_in_place`, so the worker's other tasks move on meanwhile; elsewhere
/// (a current-thread runtime, `block_on`, no runtime) it simply runs.
pub fn here<T>(f: impl FnOnce() -> T) -> T {
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|runtime| runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker { tokio::task::block_in_place(f) } else { f() }
}
