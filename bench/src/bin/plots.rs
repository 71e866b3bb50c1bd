//! `stowage-bench-plots SUITE.json [--out-dir DIR]`: the three plots of issue 10 as SVG,
//! from a suite's row summaries (medians over runs):
//!
//! - `latency-vs-history.svg`: phase A per-call latency (bucket medians, log scale)
//!   against the conversation's length when the call was made;
//! - `throughput-vs-concurrency.svg`: phase E messages/s against concurrent agents;
//! - `bytes-on-disk.svg`: phase D bytes after closing, per row;
//! - `first-append.svg`: the cold-start probes, time to the first append with the
//!   compiled cache warm and cold, per row (log scale).
//!
//! Only plotters' SVG backend is used: text is emitted as SVG `<text>`, no fonts needed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plotters::prelude::*;
use stowage_bench::report::{RowSummary, Suite, key};

type Failure = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    match run() {
        Ok(written) => {
            for path in written {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("stowage-bench-plots: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<Vec<PathBuf>, Failure> {
    let mut args = std::env::args().skip(1);
    let mut suite_path = None;
    let mut out_dir = PathBuf::from(".");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out-dir" => out_dir = args.next().ok_or("--out-dir needs a directory")?.into(),
            "-h" | "--help" => {
                println!("usage: stowage-bench-plots SUITE.json [--out-dir DIR]");
                return Ok(Vec::new());
            }
            _ => suite_path = Some(PathBuf::from(arg)),
        }
    }
    let suite_path = suite_path.ok_or("usage: stowage-bench-plots SUITE.json [--out-dir DIR]")?;
    let suite: Suite = serde_json::from_str(&std::fs::read_to_string(&suite_path)?)?;
    std::fs::create_dir_all(&out_dir)?;
    let written = vec![
        latency_vs_history(&suite.rows, &out_dir.join("latency-vs-history.svg"))?,
        throughput_vs_concurrency(&suite.rows, &out_dir.join("throughput-vs-concurrency.svg"))?,
        bytes_on_disk(&suite.rows, &out_dir.join("bytes-on-disk.svg"))?,
        first_append(&suite.rows, &out_dir.join("first-append.svg"))?,
    ];
    Ok(written)
}

const SIZE: (u32, u32) = (900, 560);

fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 12] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(0, 0, 0),
        RGBColor(255, 187, 120),
    ];
    COLORS[i % COLORS.len()]
}

fn name(row: &RowSummary) -> String {
    format!("{} ({})", row.description.label, row.description.sync)
}

/// A bar's label: the name without the words every bar shares, so neighbours do not overlap.
fn short(row: &RowSummary) -> String {
    let label = row.description.label.replace("Stowage ", "").replace("native rusqlite", "native");
    format!("{label} ({})", row.description.sync)
}

/// Rounds `hi` up and `lo` down to powers of ten, for log axes.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = 10f64.powf(lo.max(1e-3).log10().floor());
    let hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
    (lo, hi)
}

fn latency_vs_history(rows: &[RowSummary], path: &Path) -> Result<PathBuf, Failure> {
    let rows: Vec<&RowSummary> = rows.iter().filter(|r| !r.a_buckets.is_empty()).collect();
    let calls = rows.iter().flat_map(|r| r.a_buckets.iter().map(|b| b.to)).max().unwrap_or(1) as f64;
    let values = rows.iter().flat_map(|r| r.a_buckets.iter().map(|b| b.median_us));
    let (lo, hi) = decades(values.clone().fold(f64::INFINITY, f64::min), values.fold(0.0, f64::max));
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Phase A: append latency against history length", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..calls, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("messages already in the conversation")
        .y_desc("median µs per append (bucket of calls)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    for (i, row) in rows.iter().enumerate() {
        let points: Vec<(f64, f64)> =
            row.a_buckets.iter().map(|b| ((b.from + b.to) as f64 / 2.0, b.median_us.max(lo))).collect();
        let style = color(i);
        chart
            .draw_series(LineSeries::new(points.clone(), style.stroke_width(2)))?
            .label(name(row))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style.stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, style.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(path.to_path_buf())
}

fn throughput_vs_concurrency(rows: &[RowSummary], path: &Path) -> Result<PathBuf, Failure> {
    let rows: Vec<&RowSummary> = rows.iter().filter(|r| !r.e_curve.is_empty()).collect();
    let max_agents = rows.iter().flat_map(|r| r.e_curve.iter().map(|p| p.agents)).max().unwrap_or(1) as f64;
    let rates = rows.iter().flat_map(|r| r.e_curve.iter().map(|p| p.msgs_per_s));
    let (lo_rate, hi_rate) = decades(rates.clone().fold(f64::INFINITY, f64::min), rates.fold(1.0, f64::max));
    let (_, hi_agents) = decades(1.0, max_agents);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Phase E: throughput against concurrent agents", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d((1f64..hi_agents).log_scale(), (lo_rate..hi_rate).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("concurrent agents (conversations in flight)")
        .y_desc("messages/s (wall time)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    for (i, row) in rows.iter().enumerate() {
        let style = color(i);
        let points: Vec<(f64, f64)> = row.e_curve.iter().map(|p| (p.agents as f64, p.msgs_per_s)).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), style.stroke_width(2)))?
            .label(name(row))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style.stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, style.filled())))?;
        // Native's sequential B, the reference issue 10's targets are set against.
        if row.description.baseline
            && let Some(b) = row.metrics.get(key::B_RATE)
        {
            let line = vec![(1.0, b.median), (hi_agents, b.median)];
            chart
                .draw_series(LineSeries::new(line, style.stroke_width(1)))?
                .label(format!("{}: sequential B", name(row)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style.stroke_width(1)));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(path.to_path_buf())
}

fn bytes_on_disk(rows: &[RowSummary], path: &Path) -> Result<PathBuf, Failure> {
    let bars: Vec<(String, f64)> = rows
        .iter()
        .filter_map(|r| r.metrics.get(key::D_BYTES).map(|d| (short(r), d.median / (1024.0 * 1024.0))))
        .collect();
    let max = bars.iter().map(|(_, mib)| *mib).fold(1.0, f64::max);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let labels: Vec<String> = bars.iter().map(|(label, _)| label.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption("Phase D: bytes on disk after phase B (closed)", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..bars.len() as f64 - 0.5, 0f64..max * 1.15)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1))
        .x_label_style(("sans-serif", 10))
        .x_label_formatter(&|x| {
            let index = x.round();
            let near = (x - index).abs() < 0.01 && index >= 0.0;
            labels.get(index as usize).filter(|_| near).cloned().unwrap_or_default()
        })
        .y_desc("MiB")
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, mib))| {
        let x = i as f64;
        Rectangle::new([(x - 0.35, 0.0), (x + 0.35, *mib)], color(i).filled())
    }))?;
    chart.draw_series(
        bars.iter().enumerate().map(|(i, (_, mib))| {
            Text::new(format!("{mib:.1}"), (i as f64 - 0.1, mib + max * 0.02), ("sans-serif", 14))
        }),
    )?;
    root.present()?;
    Ok(path.to_path_buf())
}

fn first_append(rows: &[RowSummary], path: &Path) -> Result<PathBuf, Failure> {
    let ms = |row: &RowSummary, key: &str| row.metrics.get(key).map(|s| s.median / 1e3);
    let bars: Vec<(String, f64, f64)> =
        rows.iter().filter_map(|r| Some((short(r), ms(r, key::P_WARM)?, ms(r, key::P_COLD)?))).collect();
    let values = bars.iter().flat_map(|(_, warm, cold)| [*warm, *cold]);
    let (lo, hi) = decades(values.clone().fold(f64::INFINITY, f64::min), values.fold(0.0, f64::max));
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let labels: Vec<String> = bars.iter().map(|(label, _, _)| label.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption("Cold start: Runtime::new (native: Connection::open) to the first append", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..bars.len() as f64 - 0.5, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1))
        .x_label_style(("sans-serif", 10))
        .x_label_formatter(&|x| {
            let index = x.round();
            let near = (x - index).abs() < 0.01 && index >= 0.0;
            labels.get(index as usize).filter(|_| near).cloned().unwrap_or_default()
        })
        .y_desc("ms (median over runs)")
        .y_label_formatter(&|y| format!("{y}"))
        .draw()?;
    let series = [("compiled cache warm", 0usize, -0.36), ("compiled cache cold", 1, 0.0)];
    for (label, which, offset) in series {
        let style = color(which);
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, warm, cold))| {
                let value = if which == 0 { *warm } else { *cold };
                let x = i as f64 + offset;
                Rectangle::new([(x, lo), (x + 0.34, value.max(lo))], style.filled())
            }))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], style.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(path.to_path_buf())
}
