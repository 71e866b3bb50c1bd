//! CPU work on more than one core, for the records of one answer: checking a
//! long page of messages (a MAC and a JSON decode each) is the bulk of a load
//! after the adapter call, and each record is checked on its own.
//!
//! The work runs on a pool of its own, not rayon's global one, which wasmtime
//! fills with compilation jobs when an adapter is compiled: a load must not
//! queue behind those.

use std::sync::OnceLock;

/// Fewer items than this are mapped on the caller's thread alone. Waking a pool
/// thread costs ~10–20 µs, but now and then (on the bench machine, a virtual
/// one) the thread starts half a millisecond late, and the caller waits for its
/// share: with 32 items, a load of the newest 100 was 15% faster at the median
/// and its p99 went from ~430 to ~1,000 µs. A page this long takes milliseconds
/// to check, next to which a late start is noise.
pub const MIN_ITEMS: usize = 256;

/// The fewest items a share of the work gets.
const MIN_SHARE: usize = 128;

/// The pool, one thread per core; `None` when there is one core or the pool
/// could not be started (then everything runs on the caller's thread).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if cores < 2 {
            return None;
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("stowage-check-{i}"))
            .build()
            .inspect_err(
                |error| tracing::warn!(%error, "no thread pool for checking records; they are checked one by one"),
            )
            .ok()
    })
    .as_ref()
}

/// `items` mapped through `f`, in order; split across the cores when there are
/// at least [`MIN_ITEMS`] of them. The caller's thread maps the first share
/// itself (so a load wakes one pool thread per other core, and none waits idle
/// for the pool to start) and returns once every share is done.
pub fn map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let Some(pool) = pool().filter(|_| items.len() >= MIN_ITEMS) else {
        return items.into_iter().map(f).collect();
    };
    // At least MIN_SHARE items a share: on a host with many cores, tiny shares
    // would make the caller wait for many thread wake-ups.
    let shares = pool.current_num_threads().min(items.len() / MIN_SHARE).max(1);
    let share = items.len().div_ceil(shares);
    let mut shares: Vec<Vec<T>> = Vec::new();
    let mut rest = items;
    while rest.len() > share {
        let tail = rest.split_off(share);
        shares.push(std::mem::replace(&mut rest, tail));
    }
    shares.push(rest);
    let mut outs: Vec<Vec<R>> = shares.iter().map(|share| Vec::with_capacity(share.len())).collect();
    let f = &f;
    pool.in_place_scope(|scope| {
        let mut work = shares.into_iter().zip(outs.iter_mut());
        let first = work.next();
        for (share, out) in work {
            scope.spawn(move |_| out.extend(share.into_iter().map(f)));
        }
        if let Some((share, out)) = first {
            out.extend(share.into_iter().map(f));
        }
    });
    outs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items_on_and_off_the_pool() {
        for n in [0, 1, MIN_ITEMS - 1, MIN_ITEMS, 10_000] {
            let items: Vec<u64> = (0..n as u64).collect();
            let mapped = map(items, |i| i * 3);
            assert_eq!(mapped, (0..n as u64).map(|i| i * 3).collect::<Vec<_>>());
        }
    }
}
