//! A native measurement of phase A and C of the benchmark workload (2,000
//! appends of ~1 KiB, one per call; load newest 100 and all). Prints figures,
//! asserts none (no timing assertions in tests); run with
//! `cargo test -p stowage-adapter-filesystem --release -- --ignored --nocapture speed`.

use std::time::Instant;

use super::*;

fn median(mut samples: Vec<u128>) -> u128 {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

#[test]
#[ignore = "prints timings; run by hand"]
fn speed_of_append_and_load_against_history_length() {
    let temp = Temp::new();
    let mut store = temp.store();
    let s = scope("t", "u");
    store.open(&s, "conv-0000", meta(1), 0).expect("open");
    let mut times = Vec::new();
    for seq in 1..=2000u64 {
        let mut m = msg(seq, &format!("{seq:032}"));
        m.message.content.resize(1100, b'x');
        let start = Instant::now();
        let outcome = store.append(&s, "conv-0000", vec![m], None, seq as i64);
        times.push(start.elapsed().as_micros());
        assert!(matches!(outcome, Ok(AppendOutcome::Stored(_))));
    }
    let first = median(times[..100].to_vec());
    let last = median(times[1900..].to_vec());
    println!("append median µs: first 100 {first}, last 100 {last} ({:.2}x)", last as f64 / first.max(1) as f64);
    let mut newest = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let page = store.load(&s, "conv-0000", MessageRange::Latest, 100).expect("load");
        newest.push(start.elapsed().as_micros());
        assert_eq!(page.len(), 100);
    }
    let mut all = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let page = store.load(&s, "conv-0000", MessageRange::After(0), 2000).expect("load");
        all.push(start.elapsed().as_micros());
        assert_eq!(page.len(), 2000);
    }
    println!("load median µs: newest 100 {}, all 2000 {}", median(newest), median(all));
    let mut cold = temp.store();
    let start = Instant::now();
    let page = cold.load(&s, "conv-0000", MessageRange::Latest, 100).expect("load");
    println!("cold load newest 100 (full replay of the index) µs: {}", start.elapsed().as_micros());
    assert_eq!(page.len(), 100);
}
