//! Renders a suite as Markdown: the main table (one row per store × sync setting, each
//! figure with its ratio against native) and a second table of the supporting figures.

use std::fmt::Write;

use super::{RowSummary, Suite, key};

/// How to print one figure.
#[derive(Clone, Copy)]
enum Unit {
    Micros,
    Millis,
    Rate,
    MiB,
    KiB,
    Count,
}

struct Column {
    title: &'static str,
    key: &'static str,
    unit: Unit,
    /// The ratio key shown next to the value, if not the same key.
    ratio: Option<&'static str>,
}

const fn col(title: &'static str, key: &'static str, unit: Unit) -> Column {
    Column { title, key, unit, ratio: Some(key) }
}

const MAIN: [Column; 12] = [
    col("A median µs", key::A_MEDIAN, Unit::Micros),
    col("A p99 µs", key::A_P99, Unit::Micros),
    col("A appends/s", key::A_RATE, Unit::Rate),
    col("B msgs/s", key::B_RATE, Unit::Rate),
    col("B p99 µs", key::B_P99, Unit::Micros),
    col("C newest-100 median µs", key::C_NEWEST_MEDIAN, Unit::Micros),
    col("C newest-100 p99 µs", key::C_NEWEST_P99, Unit::Micros),
    col("C all median ms", key::C_ALL_MEDIAN, Unit::Millis),
    col("D MiB", key::D_BYTES, Unit::MiB),
    Column {
        title: "E all-B-convs msgs/s (× native B)",
        key: key::E_MAIN_RATE,
        unit: Unit::Rate,
        ratio: Some(key::E_MAIN_VS_NATIVE_B),
    },
    Column {
        title: "E large msgs/s (× native B)",
        key: key::E_LARGE_RATE,
        unit: Unit::Rate,
        ratio: Some(key::E_LARGE_VS_NATIVE_B),
    },
    Column { title: "runs", key: "", unit: Unit::Count, ratio: None },
];

const MORE: [Column; 13] = [
    col("A first-bucket median µs", key::A_FIRST_BUCKET_MEDIAN, Unit::Micros),
    col("A last-bucket median µs", key::A_LAST_BUCKET_MEDIAN, Unit::Micros),
    Column { title: "A checkpoints", key: key::A_CHECKPOINTS, unit: Unit::Count, ratio: None },
    col("B median µs", key::B_MEDIAN, Unit::Micros),
    Column { title: "B checkpoints", key: key::B_CHECKPOINTS, unit: Unit::Count, ratio: None },
    Column { title: "B calls > 5 ms", key: key::B_SLOW, unit: Unit::Count, ratio: None },
    Column { title: "… on a checkpoint", key: key::B_SLOW_ON_CHECKPOINT, unit: Unit::Count, ratio: None },
    col("D MiB before close", key::D_BYTES_OPEN, Unit::MiB),
    col("E all-B-convs p99 µs", key::E_MAIN_P99, Unit::Micros),
    col("E large median µs", key::E_LARGE_MEDIAN, Unit::Micros),
    col("E large p99 µs", key::E_LARGE_P99, Unit::Micros),
    Column { title: "fsync probe µs before", key: key::ENV_FSYNC_BEFORE, unit: Unit::Micros, ratio: None },
    Column { title: "fsync probe µs after", key: key::ENV_FSYNC_AFTER, unit: Unit::Micros, ratio: None },
];

const PROBES: [Column; 14] = [
    col("first append, warm cache ms", key::P_WARM, Unit::Millis),
    col("… Runtime::new ms", key::P_WARM_RUNTIME, Unit::Millis),
    col("… open ms", key::P_WARM_OPEN, Unit::Millis),
    col("… append ms", key::P_WARM_APPEND, Unit::Millis),
    col("first append, cold cache ms", key::P_COLD, Unit::Millis),
    col("… open ms (cold)", key::P_COLD_OPEN, Unit::Millis),
    col("peak RSS MiB (warm)", key::P_RSS_WARM, Unit::MiB),
    col("peak RSS MiB (cold)", key::P_RSS_COLD, Unit::MiB),
    Column { title: "RSS at start MiB", key: key::P_RSS_START, unit: Unit::MiB, ratio: None },
    col("tiny append median µs", key::P_TINY_MEDIAN, Unit::Micros),
    col("tiny append p99 µs", key::P_TINY_P99, Unit::Micros),
    col("info median µs", key::P_INFO_MEDIAN, Unit::Micros),
    Column { title: "adapter KiB", key: key::P_ADAPTER_BYTES, unit: Unit::KiB, ratio: None },
    Column { title: "compiled KiB", key: key::P_COMPILED_BYTES, unit: Unit::KiB, ratio: None },
];

/// The main table and the supporting figures, as Markdown; then, when the suite ran
/// them, the probes (each a fresh process), with ratios against the native row.
pub fn render_markdown(suite: &Suite) -> String {
    let mut out = String::new();
    table(&mut out, &suite.rows, &MAIN);
    out.push('\n');
    table(&mut out, &suite.rows, &MORE);
    let probed: Vec<RowSummary> =
        suite.rows.iter().filter(|r| PROBES.iter().any(|c| r.metrics.contains_key(c.key))).cloned().collect();
    if !probed.is_empty() {
        out.push_str(
            "\nProbes (each a fresh process; first append = `Runtime::new` or `Connection::open` to the first \
                      append's return):\n\n",
        );
        table(&mut out, &probed, &PROBES);
    }
    out
}

/// Machine, rows' inputs/outputs and notes, and phase E curves, as Markdown.
pub fn render_notes(suite: &Suite) -> String {
    let m = &suite.machine;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Machine: {} CPUs ({}), Linux {}, temp dir {} on {}, SQLite {} (bundled); perf instruction counts: {}.",
        m.cpus,
        m.cpu_model,
        m.kernel,
        m.temp_dir,
        m.temp_filesystem,
        m.sqlite,
        if m.perf_instructions { "available" } else { "not supported" }
    );
    let _ = writeln!(out, "Command: `{}`\n", suite.command);
    for row in &suite.rows {
        let d = &row.description;
        let _ = writeln!(out, "- **{} ({})**: input {}; output {}.", d.label, d.sync, d.input, d.output);
        for note in &d.notes {
            let _ = writeln!(out, "  - {note}");
        }
        if !row.e_curve.is_empty() {
            let points: Vec<String> = row
                .e_curve
                .iter()
                .map(|p| format!("{}×{} convs: {}", p.agents, p.conversations, format_value(p.msgs_per_s, Unit::Rate)))
                .collect();
            let _ = writeln!(out, "  - phase E msgs/s by concurrent agents: {}", points.join("; "));
        }
    }
    out
}

fn table(out: &mut String, rows: &[RowSummary], columns: &[Column]) {
    let shown: Vec<&Column> =
        columns.iter().filter(|c| c.key.is_empty() || rows.iter().any(|r| r.metrics.contains_key(c.key))).collect();
    let _ = write!(out, "| row | sync |");
    for column in &shown {
        let _ = write!(out, " {} |", column.title);
    }
    let _ = write!(out, "\n|---|---|");
    for _ in &shown {
        out.push_str("---:|");
    }
    out.push('\n');
    for row in rows {
        let _ = write!(out, "| {} | {} |", row.description.label, row.description.sync);
        for column in &shown {
            let _ = write!(out, " {} |", cell(row, column));
        }
        out.push('\n');
    }
}

fn cell(row: &RowSummary, column: &Column) -> String {
    if column.key.is_empty() {
        return row.runs.to_string();
    }
    let Some(spread) = row.metrics.get(column.key) else { return "–".into() };
    let value = format_value(spread.median, column.unit);
    // E is shown against native's sequential B on every row; the rest only on non-native rows.
    let is_e = column.key == key::E_MAIN_RATE || column.key == key::E_LARGE_RATE;
    let ratio = (is_e || !row.description.baseline).then(|| column.ratio.and_then(|k| row.ratios.get(k))).flatten();
    match ratio {
        Some(r) => format!("{value} ({r:.2}×)"),
        None => value,
    }
}

fn format_value(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Micros if value < 10.0 => format!("{value:.1}"),
        Unit::Micros | Unit::Rate | Unit::Count => thousands(value.round()),
        Unit::Millis => format!("{:.2}", value / 1e3),
        Unit::MiB => format!("{:.1}", value / (1024.0 * 1024.0)),
        Unit::KiB => thousands((value / 1024.0).round()),
    }
}

fn thousands(value: f64) -> String {
    let digits = format!("{}", value.abs() as u64);
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if value < 0.0 { format!("-{out}") } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::report::{RunResult, SCHEMA, merge};
    use crate::runner::RowDescription;
    use std::collections::BTreeMap;

    fn run(row: &str, baseline: bool, a: f64, b: f64, e: Option<f64>) -> RunResult {
        let mut metrics = BTreeMap::from([(key::A_MEDIAN.to_string(), a), (key::B_RATE.to_string(), b)]);
        if let Some(e) = e {
            metrics.insert(key::E_MAIN_RATE.to_string(), e);
        }
        RunResult {
            schema: SCHEMA,
            description: RowDescription {
                row: row.into(),
                label: row.into(),
                sync: "FULL".into(),
                baseline,
                input: "in".into(),
                output: "out".into(),
                notes: vec!["a note".into()],
            },
            run: 0,
            scale: "full".into(),
            metrics,
            a_buckets: Vec::new(),
            e_curve: Vec::new(),
            checks: Vec::new(),
        }
    }

    #[test]
    fn renders_values_ratios_and_only_present_columns() {
        let runs = vec![run("native", true, 150.0, 12_000.0, Some(11_000.0)), run("peer", false, 375.0, 6_000.0, None)];
        let suite =
            Suite { schema: SCHEMA, machine: Machine::default(), command: "x".into(), rows: merge(&runs), runs };
        let text = render_markdown(&suite);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("A median µs") && lines[0].contains("B msgs/s"));
        assert!(!lines[0].contains("A p99"), "columns without data are left out: {}", lines[0]);
        assert!(lines[2].starts_with("| native | FULL | 150 | 12,000 | 11,000 (0.92×) | 1 |"), "{}", lines[2]);
        assert!(lines[3].starts_with("| peer | FULL | 375 (2.50×) | 6,000 (0.50×) | – | 1 |"), "{}", lines[3]);
        assert!(render_notes(&suite).contains("a note"));
    }

    #[test]
    fn formats_units() {
        assert_eq!(format_value(3.25, Unit::Micros), "3.2");
        assert_eq!(format_value(1_234_567.0, Unit::Rate), "1,234,567");
        assert_eq!(format_value(3_600.0, Unit::Millis), "3.60");
        assert_eq!(format_value(13.3 * 1024.0 * 1024.0, Unit::MiB), "13.3");
    }
}
