//! Exports of a sweep: JSON and CSV with the machine's fingerprint, and SVG charts per workload (plotters).

use gpuworthy::measure::utc_now;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use gpuworthy::OpenedDevices;
use gpuworthy::core::{Backend, BackendKind};
use plotters::prelude::*;
use serde::Serialize;

use gpuworthy::DeviceLabel;
use gpuworthy::model::rows::{Row, labels, sizes};
use gpuworthy::model::sweep::WorkloadSweep;

/// What machine and software a sweep ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Fingerprint {
    /// The CPU's model name.
    pub cpu: String,
    /// Threads the CPU backend uses.
    pub cpu_threads: usize,
    /// The CPU backend's instruction set.
    pub cpu_simd: String,
    /// Each GPU backend's device and driver.
    pub gpus: Vec<String>,
    /// Backends asked for that could not run, with the reason.
    pub unavailable: Vec<String>,
    /// Operating system and architecture.
    pub os: String,
    /// gpuworthy's version.
    pub gpuworthy_version: &'static str,
    /// When the sweep ran (UTC).
    pub date_utc: String,
    /// The command line.
    pub command: String,
}

impl Fingerprint {
    /// The fingerprint of this machine with these devices; an error where the CPU backend cannot start (a bad
    /// `GPUWORTHY_CPU_SIMD`).
    pub fn of(opened: &OpenedDevices) -> gpuworthy::core::Result<Fingerprint> {
        let cpu = gpuworthy::cpu::CpuBackend::new()?;
        let gpus = opened.devices.iter().filter(|d| d.kind() != BackendKind::Cpu).map(ToString::to_string).collect();
        Ok(Fingerprint {
            cpu: cpu.device().name.clone(),
            cpu_threads: rayon_threads(&cpu),
            cpu_simd: cpu.device().driver.clone(),
            gpus,
            unavailable: opened.unavailable.iter().map(|(spec, why)| format!("{spec}: {why}")).collect(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            gpuworthy_version: env!("CARGO_PKG_VERSION"),
            date_utc: utc_now(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
        })
    }
}

fn rayon_threads(cpu: &gpuworthy::cpu::CpuBackend) -> usize {
    cpu.device().limits.iter().find(|(k, _)| k == "threads").and_then(|(_, v)| v.parse().ok()).unwrap_or(0)
}

/// A whole sweep, as exported to JSON.
#[derive(Debug, Serialize)]
pub struct SweepExport<'a> {
    /// The machine.
    pub fingerprint: &'a Fingerprint,
    /// Each workload's rows, notes and crossover.
    pub workloads: &'a [WorkloadSweep],
}

/// Writes the sweep as JSON.
pub fn write_json(path: &Path, fingerprint: &Fingerprint, workloads: &[WorkloadSweep]) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(&SweepExport { fingerprint, workloads })?;
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

/// Writes every row as CSV, with the fingerprint in leading `#` comment lines.
pub fn write_csv(path: &Path, fingerprint: &Fingerprint, workloads: &[WorkloadSweep]) -> anyhow::Result<()> {
    let mut out = String::new();
    let _ = writeln!(out, "# cpu: {} ({})", fingerprint.cpu, fingerprint.cpu_simd);
    for gpu in &fingerprint.gpus {
        let _ = writeln!(out, "# gpu: {gpu}");
    }
    let _ = writeln!(
        out,
        "# gpuworthy {} on {}, {} UTC",
        fingerprint.gpuworthy_version, fingerprint.os, fingerprint.date_utc
    );
    let _ = writeln!(
        out,
        "workload,size,elements,backend,variant,precision,kernel_clock,compile_s,first_call_s,upload_s,kernel_s,\
         kernel_p25_s,kernel_p75_s,download_s,end_to_end_s,bytes,flops,gb_per_s,gflop_per_s,check,label,pipelined_s"
    );
    for r in workloads.iter().flat_map(|w| &w.rows) {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{},{},{:.3},{:.3},{},{},{}",
            r.workload,
            csv_field(&r.size),
            r.elements,
            r.backend,
            r.variant,
            csv_field(r.precision.label()),
            csv_field(&r.kernel_clock.to_string()),
            r.compile_s,
            r.first_call_s,
            r.upload_s,
            r.kernel_s,
            r.kernel_p25_s,
            r.kernel_p75_s,
            r.download_s,
            r.end_to_end_s,
            r.bytes,
            r.flops,
            r.gb_per_s,
            r.gflop_per_s,
            csv_field(&r.check.to_string()),
            csv_field(r.label.as_str()),
            r.pipelined_s.map_or(String::new(), |p| format!("{p:e}"))
        );
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// Colours of the backends in charts; a wgpu adapter that runs on the CPU is drawn in a lighter shade.
fn colour(backend: BackendKind, label: &DeviceLabel) -> RGBColor {
    let base = match backend {
        BackendKind::Cpu => RGBColor(31, 119, 180),
        BackendKind::Cuda => RGBColor(44, 160, 44),
        BackendKind::Wgpu => RGBColor(214, 39, 40),
    };
    if *label == DeviceLabel::of(backend) {
        base
    } else {
        RGBColor(base.0 / 2 + 128, base.1 / 2 + 128, base.2 / 2 + 128)
    }
}

/// Writes `DIR/<workload>.svg`: time against size for each backend's best variant, kernel (solid) and, for GPUs,
/// end-to-end (thin), with the crossovers marked.
pub fn write_plot(dir: &Path, sweep: &WorkloadSweep) -> anyhow::Result<()> {
    if sweep.rows.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{}.svg", sweep.workload));
    let rows = &sweep.rows;
    let all_sizes = sizes(rows);
    let elements = |size: &str| rows.iter().find(|r| r.size == size).map_or(1, |r| r.elements.max(1)) as f64;
    let times: Vec<f64> = rows.iter().flat_map(|r| [r.kernel_s, r.end_to_end_s]).filter(|t| *t > 0.0).collect();
    let (t_min, t_max) = times.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let (x_min, x_max) = (elements(&all_sizes[0]) / 1.5, elements(all_sizes.last().expect("non-empty")) * 1.5);

    let root = SVGBackend::new(&path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!("{}: time per run (lower is better)", sweep.workload);
    let mut chart =
        log_log_chart(&root, &title, 22, (x_min..x_max, "elements"), (t_min / 1.5..t_max * 1.5, "seconds"))?;

    let kind_of = |label: &DeviceLabel| rows.iter().find(|r| r.label == *label).map_or(BackendKind::Cpu, |r| r.backend);
    for backend in labels(rows, |_| true) {
        let series = |time: fn(&Row) -> f64| -> Vec<(f64, f64)> {
            all_sizes
                .iter()
                .filter_map(|s| {
                    rows.iter()
                        .filter(|r| &r.size == s && r.label == backend)
                        .map(time)
                        .min_by(f64::total_cmp)
                        .map(|t| (elements(s), t))
                })
                .collect()
        };
        let kernel = series(|r| r.kernel_s);
        if kernel.is_empty() {
            continue;
        }
        let c = colour(kind_of(&backend), &backend);
        chart
            .draw_series(LineSeries::new(kernel.clone(), c.stroke_width(3)))?
            .label(format!("{backend} kernel"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart.draw_series(kernel.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
        if kind_of(&backend).is_gpu() {
            let e2e = series(|r| r.end_to_end_s);
            chart
                .draw_series(LineSeries::new(e2e, c.stroke_width(1)))?
                .label(format!("{backend} end-to-end (data on the host)"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1)));
        }
    }
    if let Some(c) = &sweep.crossover {
        for (label, crossing) in [("resident", &c.resident), ("host", &c.host)] {
            if let Some((size, gpu)) = crossing {
                let x = elements(size);
                // A crossing names its device, then the transfer mode where it is not the pageable one.
                let device = DeviceLabel::named(gpu.split(", ").next().unwrap_or(gpu));
                let style = colour(kind_of(&device), &device).mix(0.6).stroke_width(2);
                chart
                    .draw_series(LineSeries::new(vec![(x, t_min / 1.5), (x, t_max * 1.5)], style))?
                    .label(format!("crossover ({label}): {size}, {gpu}"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y - 6), (x, y + 6)], style));
            }
        }
    }
    legend_and_write(&mut chart, &root, &path)
}

/// A chart with both axes logarithmic, drawn to SVG.
pub(crate) type LogLogChart<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

/// The first step of every log-log chart here: a caption of `font` points, both axes logarithmic over their ranges,
/// labelled with their descriptions, ticks in scientific notation.
pub(crate) fn log_log_chart<'a>(
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    title: &str,
    font: u32,
    (x, x_desc): (std::ops::Range<f64>, &str),
    (y, y_desc): (std::ops::Range<f64>, &str),
) -> anyhow::Result<LogLogChart<'a>> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", font))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x.log_scale(), y.log_scale())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0e}"))
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .draw()?;
    Ok(chart)
}

/// The last step of every log-log chart here: the legend at the upper left, then the SVG written to `path`.
pub(crate) fn legend_and_write<'a>(
    chart: &mut LogLogChart<'a>,
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    path: &Path,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_are_civil() {
        let now = utc_now();
        assert_eq!(now.len(), 19, "{now}");
        assert!(now.starts_with("20"), "{now}");
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
