//! Where the flusher thread runs: never on the CPU of the caller spinning for
//! it. Two threads that spin on one CPU take turns only at the scheduler's
//! tick (~1 ms), and a woken thread often lands on its waker's CPU, so the
//! flusher moves itself off the caller's (`sched_setaffinity` on its own
//! thread: no privilege needed). Elsewhere than Linux nothing is known and
//! nothing moves.

/// The CPU this thread runs on now (`usize::MAX` where that cannot be asked).
pub(super) fn current() -> usize {
    #[cfg(target_os = "linux")]
    return rustix::thread::sched_getcpu();
    #[cfg(not(target_os = "linux"))]
    return usize::MAX;
}

/// The CPUs the flusher may run on (those the process was given).
pub(super) struct Placement {
    #[cfg(target_os = "linux")]
    allowed: Option<rustix::thread::CpuSet>,
}

impl Placement {
    /// The calling thread's CPUs.
    pub(super) fn of_this_thread() -> Self {
        #[cfg(target_os = "linux")]
        return Self { allowed: rustix::thread::sched_getaffinity(None).ok() };
        #[cfg(not(target_os = "linux"))]
        return Self {};
    }

    /// At least two CPUs to run on: on one, a thread spinning for another only
    /// keeps it from running.
    pub(super) fn spread(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.allowed.as_ref().is_none_or(|set| set.count() >= 2);
        #[cfg(not(target_os = "linux"))]
        return true;
    }

    /// Moves the calling thread to its CPUs other than `cpu`: whether it moved.
    pub(super) fn avoid(&self, cpu: usize) -> bool {
        #[cfg(target_os = "linux")]
        {
            let Some(mut set) = self.allowed else { return false };
            if cpu >= rustix::thread::CpuSet::MAX_CPU || !set.is_set(cpu) || set.count() < 2 {
                return false;
            }
            set.unset(cpu);
            rustix::thread::sched_setaffinity(None, &set).is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = cpu;
            false
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_moved_off_a_cpu_runs_elsewhere() {
        let placement = Placement::of_this_thread();
        if !placement.spread() {
            return; // one CPU: nowhere to move
        }
        let handle = std::thread::spawn(move || {
            let here = current();
            assert!(placement.avoid(here), "moved off CPU {here}");
            assert_ne!(current(), here, "runs elsewhere at once");
        });
        assert!(handle.join().is_ok());
    }
}
