//! The statistics of `WORKLOAD.md` §2, exactly: median = the middle value or the mean of
//! the two middle values; p99 = nearest rank, `sorted[ceil(0.99·n) − 1]` (index 1979 of
//! 2,000, 197 of 200); throughput = count / sum of call times. Latencies are recorded in
//! nanoseconds and reported in microseconds.

use serde::{Deserialize, Serialize};

/// Median of `values` (any order); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let sorted = sorted(values);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Index of the nearest-rank 99th percentile in a sorted list of `n` values: `ceil(0.99·n) − 1`,
/// computed in integers so that no rounding can move it.
pub fn p99_index(n: usize) -> Option<usize> {
    (n > 0).then(|| (99 * n).div_ceil(100) - 1)
}

/// Nearest-rank p99 of `values` (any order); `None` when empty.
pub fn p99(values: &[f64]) -> Option<f64> {
    let sorted = sorted(values);
    p99_index(sorted.len()).map(|index| sorted[index])
}

/// `count` per second of `total_ns` (a sum of call times or a wall time); `None` for zero time.
pub fn per_second(count: usize, total_ns: u64) -> Option<f64> {
    (total_ns > 0).then(|| count as f64 / (total_ns as f64 / 1e9))
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// Nanoseconds to microseconds.
pub fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Median and p99 of a list of call times, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub median_us: f64,
    pub p99_us: f64,
}

impl Latency {
    /// From call times in nanoseconds; zeros when empty.
    pub fn of_ns(calls_ns: &[u64]) -> Self {
        let us: Vec<f64> = calls_ns.iter().map(|&ns| ns_to_us(ns)).collect();
        Self { median_us: median(&us).unwrap_or(0.0), p99_us: p99(&us).unwrap_or(0.0) }
    }
}

/// Per-bucket latency of consecutive calls: how latency moves with history length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// First call index (0-based, inclusive).
    pub from: usize,
    /// Last call index (exclusive).
    pub to: usize,
    pub median_us: f64,
    pub p99_us: f64,
}

/// Splits call times into consecutive buckets of `size` calls (the last may be shorter).
pub fn buckets(calls_ns: &[u64], size: usize) -> Vec<Bucket> {
    let size = size.max(1);
    calls_ns
        .chunks(size)
        .enumerate()
        .map(|(i, chunk)| {
            let latency = Latency::of_ns(chunk);
            Bucket { from: i * size, to: i * size + chunk.len(), median_us: latency.median_us, p99_us: latency.p99_us }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn p99_is_nearest_rank() {
        assert_eq!(p99_index(2000), Some(1979));
        assert_eq!(p99_index(200), Some(197));
        assert_eq!(p99_index(2500), Some(2474));
        assert_eq!(p99_index(100), Some(98));
        assert_eq!(p99_index(1), Some(0));
        assert_eq!(p99_index(0), None);
        let values: Vec<f64> = (0..2000).rev().map(f64::from).collect();
        assert_eq!(p99(&values), Some(1979.0));
    }

    #[test]
    fn throughput_and_units() {
        assert_eq!(per_second(2000, 1_000_000_000), Some(2000.0));
        assert_eq!(per_second(10, 0), None);
        let latency = Latency::of_ns(&[1_000, 3_000, 2_000]);
        assert_eq!(latency, Latency { median_us: 2.0, p99_us: 3.0 });
    }

    #[test]
    fn buckets_cover_every_call() {
        let calls: Vec<u64> = (0..250).collect();
        let split = buckets(&calls, 100);
        assert_eq!(split.len(), 3);
        assert_eq!((split[2].from, split[2].to), (200, 250));
    }
}
