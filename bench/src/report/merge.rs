//! Merges per-run results into row summaries: every reported figure is the median of the
//! per-run values (`WORKLOAD.md` §2), and every ratio the median of the per-run ratios
//! against the native row of the same round.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CurvePoint, RowSummary, RunResult, key};
use crate::runner::POSTGRES_SYNC;
use crate::stats::{Bucket, median};

/// Median and range of one figure over the runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Option<Self> {
        Some(Self {
            median: median(values)?,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// The ratio key of a phase E rate against the native row's sequential B rate.
pub fn vs_sequential_b(e_key: &'static str) -> &'static str {
    match e_key {
        key::E_MAIN_RATE => key::E_MAIN_VS_NATIVE_B,
        _ => key::E_LARGE_VS_NATIVE_B,
    }
}

/// Groups `runs` by row (in order of first appearance) and summarises each row.
pub fn merge(runs: &[RunResult]) -> Vec<RowSummary> {
    let mut order: Vec<&str> = Vec::new();
    for run in runs {
        if !order.contains(&run.description.row.as_str()) {
            order.push(&run.description.row);
        }
    }
    order
        .into_iter()
        .filter_map(|row| {
            let mine: Vec<&RunResult> = runs.iter().filter(|r| r.description.row == row).collect();
            summarise(&mine, runs)
        })
        .collect()
}

fn summarise(mine: &[&RunResult], all: &[RunResult]) -> Option<RowSummary> {
    let description = mine.first()?.description.clone();
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut ratios: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in mine {
        let native = baseline_for(run, all);
        for (key, &value) in &run.metrics {
            values.entry(key).or_default().push(value);
            if let Some(&reference) = native.and_then(|n| n.metrics.get(key))
                && reference != 0.0
            {
                ratios.entry(key).or_default().push(value / reference);
            }
        }
        // Phase E is compared with native's sequential B (issue 10's group-commit target).
        for key in [key::E_MAIN_RATE, key::E_LARGE_RATE] {
            if let (Some(&value), Some(&reference)) =
                (run.metrics.get(key), native.and_then(|n| n.metrics.get(key::B_RATE)))
                && reference != 0.0
            {
                ratios.entry(vs_sequential_b(key)).or_default().push(value / reference);
            }
        }
    }
    Some(RowSummary {
        description,
        runs: mine.len(),
        metrics: values.into_iter().filter_map(|(k, v)| Some((k.to_string(), Spread::of(&v)?))).collect(),
        ratios: ratios.into_iter().filter_map(|(k, v)| Some((k.to_string(), median(&v)?))).collect(),
        a_buckets: median_buckets(mine),
        e_curve: median_curve(mine),
    })
}

/// The native run of the same round and sync setting, else the FULL one of that round.
/// A PostgreSQL row (sync [`POSTGRES_SYNC`]) is only ever compared with `native-pg`, the
/// baseline of that sync: without it in the round, it gets no ratios.
fn baseline_for<'a>(run: &RunResult, all: &'a [RunResult]) -> Option<&'a RunResult> {
    let same_round = |r: &&RunResult| r.description.baseline && r.run == run.run;
    let sync = &run.description.sync;
    all.iter().filter(same_round).find(|r| r.description.sync.eq_ignore_ascii_case(sync)).or_else(|| {
        if sync.eq_ignore_ascii_case(POSTGRES_SYNC) {
            return None;
        }
        all.iter().filter(same_round).find(|r| r.description.sync.eq_ignore_ascii_case("FULL"))
    })
}

fn median_buckets(runs: &[&RunResult]) -> Vec<Bucket> {
    let count = runs.iter().map(|r| r.a_buckets.len()).min().unwrap_or(0);
    (0..count)
        .map(|i| {
            let pick = |f: fn(&Bucket) -> f64| median(&runs.iter().map(|r| f(&r.a_buckets[i])).collect::<Vec<_>>());
            let first = &runs[0].a_buckets[i];
            Bucket {
                from: first.from,
                to: first.to,
                median_us: pick(|b| b.median_us).unwrap_or(0.0),
                p99_us: pick(|b| b.p99_us).unwrap_or(0.0),
            }
        })
        .collect()
}

fn median_curve(runs: &[&RunResult]) -> Vec<CurvePoint> {
    let mut agents: Vec<(usize, usize)> =
        runs.iter().flat_map(|r| r.e_curve.iter().map(|p| (p.agents, p.conversations))).collect();
    agents.sort_unstable();
    agents.dedup();
    agents
        .into_iter()
        .map(|(agents, conversations)| {
            let points: Vec<&CurvePoint> = runs
                .iter()
                .filter_map(|r| r.e_curve.iter().find(|p| p.agents == agents && p.conversations == conversations))
                .collect();
            let pick =
                |f: fn(&CurvePoint) -> f64| median(&points.iter().map(|p| f(p)).collect::<Vec<_>>()).unwrap_or(0.0);
            CurvePoint {
                agents,
                conversations,
                msgs_per_s: pick(|p| p.msgs_per_s),
                median_us: pick(|p| p.median_us),
                p99_us: pick(|p| p.p99_us),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SCHEMA;
    use crate::runner::RowDescription;

    fn run(row: &str, sync: &str, baseline: bool, round: u32, a_median: f64) -> RunResult {
        RunResult {
            schema: SCHEMA,
            description: RowDescription {
                row: row.into(),
                label: row.into(),
                sync: sync.into(),
                baseline,
                input: String::new(),
                output: String::new(),
                notes: Vec::new(),
            },
            run: round,
            scale: "full".into(),
            metrics: BTreeMap::from([(key::A_MEDIAN.to_string(), a_median)]),
            a_buckets: vec![Bucket { from: 0, to: 100, median_us: a_median, p99_us: a_median * 2.0 }],
            e_curve: vec![CurvePoint {
                agents: 1,
                conversations: 100,
                msgs_per_s: a_median,
                median_us: 1.0,
                p99_us: 2.0,
            }],
            checks: Vec::new(),
        }
    }

    #[test]
    fn medians_and_same_round_ratios() {
        let runs = vec![
            run("native-full", "FULL", true, 0, 100.0),
            run("native-normal", "NORMAL", true, 0, 10.0),
            run("peer", "FULL", false, 0, 300.0),
            run("native-full", "FULL", true, 1, 200.0),
            run("native-normal", "NORMAL", true, 1, 20.0),
            run("peer", "FULL", false, 1, 200.0),
            run("store-normal", "NORMAL", false, 1, 40.0),
            run("native-full", "FULL", true, 2, 150.0),
            run("peer", "FULL", false, 2, 600.0),
        ];
        let rows = merge(&runs);
        let names: Vec<&str> = rows.iter().map(|r| r.description.row.as_str()).collect();
        assert_eq!(names, ["native-full", "native-normal", "peer", "store-normal"]);
        let peer = &rows[2];
        assert_eq!(peer.runs, 3);
        assert_eq!(peer.metrics[key::A_MEDIAN], Spread { median: 300.0, min: 200.0, max: 600.0 });
        // Per-round ratios 3.0, 1.0, 4.0 → median 3.0 (not 300 / 150).
        assert_eq!(peer.ratios[key::A_MEDIAN], 3.0);
        assert_eq!(rows[3].ratios[key::A_MEDIAN], 2.0);
        assert_eq!(rows[0].ratios[key::A_MEDIAN], 1.0);
        assert_eq!(peer.a_buckets[0].median_us, 300.0);
        assert_eq!(peer.e_curve[0].msgs_per_s, 300.0);
    }

    #[test]
    fn postgres_rows_are_compared_with_native_pg_only() {
        let runs = vec![
            run("native-full", "FULL", true, 0, 100.0),
            run("native-pg", "PG", true, 0, 400.0),
            run("stowage-sqlite-full", "FULL", false, 0, 300.0),
            run("stowage-sqlite-pg", "PG", false, 0, 1000.0),
            run("stowage-null", "none", false, 0, 50.0),
            // A round without native-pg: the PostgreSQL row gets no ratio, not native-full's.
            run("native-full", "FULL", true, 1, 100.0),
            run("stowage-sqlite-pg", "PG", false, 1, 1000.0),
        ];
        let rows = merge(&runs);
        let ratio = |row: &str| rows.iter().find(|r| r.description.row == row).unwrap().ratios[key::A_MEDIAN];
        assert_eq!(ratio("stowage-sqlite-pg"), 2.5);
        assert_eq!(ratio("native-pg"), 1.0);
        assert_eq!(ratio("stowage-sqlite-full"), 3.0);
        assert_eq!(ratio("stowage-null"), 0.5);
        let pg = rows.iter().find(|r| r.description.row == "stowage-sqlite-pg").unwrap();
        assert_eq!(pg.runs, 2);
    }
}
