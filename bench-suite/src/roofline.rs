//! The roofline of a sweep: where each workload sits between what the memory can feed and what the arithmetic can do.
//!
//! A kernel that does `F` flops over `B` bytes has an arithmetic intensity of `F / B` flops per byte. A device whose
//! memory streams `M` bytes a second and whose arithmetic does `P` flops a second cannot run it faster than
//! `min(P, M x F / B)` flops a second: a slanted roof (memory) up to the ridge at `P / M`, then a flat one (compute).
//! Below the ridge a kernel is memory-bound, and making its arithmetic faster changes nothing; above it, it is
//! compute-bound.
//!
//! The roofs here are *measured*, not taken from a data sheet: each device's memory roof is the best GB/s and its
//! compute roof the best full-precision GFLOP/s that any workload reached at the largest size the sweep measured it
//! (past the caches where the sweep got there). So the chart says what this machine did, and a point on a roof is the
//! best this machine showed, not a proof that the hardware can do no more. The points are each (workload, device)'s
//! fastest full-precision variant at that largest size; a sweep of an expression (`gpuworthy sweep --expr ...
//! --json`) joins the chart like a built-in workload.
//!
//! It reads the JSON that `gpuworthy sweep --json` writes, not rows in memory, so that a chart can be drawn from any
//! committed run, on any machine, and several sweeps (the workloads, and an expression's) drawn on one chart.

use std::path::Path;

use anyhow::{Context, bail};
use gpuworthy::core::Precision;
use gpuworthy::model::rows::Check;
use plotters::prelude::*;
use serde::Deserialize;

/// One row of a sweep's JSON, as much of it as the roofline reads.
#[derive(Debug, Clone, Deserialize)]
struct SweepRow {
    size: String,
    elements: u64,
    label: String,
    on_gpu: bool,
    variant: String,
    #[serde(deserialize_with = "precision_from_label")]
    precision: Precision,
    kernel_s: f64,
    bytes: u64,
    flops: u64,
    check: Check,
}

/// Reads a row's precision as reports name it (`full`, `reduced (tf32)`).
fn precision_from_label<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Precision, D::Error> {
    let label = String::deserialize(deserializer)?;
    Precision::from_label(&label)
        .ok_or_else(|| serde::de::Error::custom(format!("`{label}` is not a precision (full or reduced (tf32))")))
}

#[derive(Debug, Deserialize)]
struct WorkloadSweep {
    workload: String,
    rows: Vec<SweepRow>,
}

/// The machine a sweep ran on, as far as telling two machines apart needs.
#[derive(Debug, Deserialize, PartialEq)]
struct Machine {
    cpu: String,
    #[serde(default)]
    gpus: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct SweepFile {
    fingerprint: Machine,
    workloads: Vec<WorkloadSweep>,
}

/// Where one workload ran on one device: its fastest full-precision variant at the largest size measured there.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The workload (or the expression's name in its sweep).
    pub workload: String,
    /// The device's label (`cpu`, `cuda`, `wgpu`, `wgpu(cpu)`).
    pub device: String,
    /// Whether the device is a GPU.
    pub on_gpu: bool,
    /// The variant.
    pub variant: String,
    /// The size.
    pub size: String,
    /// Flops per byte moved.
    pub intensity: f64,
    /// Flops per second reached, in GFLOP/s.
    pub gflop_per_s: f64,
    /// Bytes per second moved, in GB/s.
    pub gb_per_s: f64,
}

/// A device's measured roofs.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    /// The device's label.
    pub device: String,
    /// Whether the device is a GPU.
    pub on_gpu: bool,
    /// The best GB/s of its points.
    pub memory_gb_per_s: f64,
    /// The best GFLOP/s of its points.
    pub compute_gflop_per_s: f64,
    /// The point that set the memory roof: its workload and size.
    pub memory_from: String,
    /// The point that set the compute roof.
    pub compute_from: String,
}

impl Roof {
    /// The intensity (flops per byte) where the two roofs meet.
    pub fn ridge(&self) -> f64 {
        self.compute_gflop_per_s / self.memory_gb_per_s
    }

    /// The most GFLOP/s the roofs allow at `intensity`.
    pub fn bound(&self, intensity: f64) -> f64 {
        self.compute_gflop_per_s.min(self.memory_gb_per_s * intensity)
    }

    /// Whether one point set both roofs: its ridge is then its own intensity, and which side of a true ridge it is on
    /// is not known from these sweeps.
    pub fn set_by_one_point(&self) -> bool {
        self.memory_from == self.compute_from
    }
}

/// The points and roofs of the sweeps in `texts` (each the JSON of `gpuworthy sweep --json`, with the name it came
/// from for errors).
pub fn from_json(texts: &[(String, String)]) -> anyhow::Result<(Vec<Point>, Vec<Roof>)> {
    let mut points: Vec<Point> = Vec::new();
    let mut machine: Option<(String, Machine)> = None;
    for (name, text) in texts {
        let file: SweepFile = serde_json::from_str(text)
            .with_context(|| format!("{name} is not a sweep's JSON (`gpuworthy sweep --json FILE` writes one)"))?;
        // One chart, one machine: roofs measured on two machines would mix under one device label.
        match &machine {
            Some((first, seen)) if *seen != file.fingerprint => bail!(
                "{name} was measured on another machine than {first} ({} against {}): draw each machine's roofline \
                 on its own",
                file.fingerprint.gpus.first().unwrap_or(&file.fingerprint.cpu),
                seen.gpus.first().unwrap_or(&seen.cpu)
            ),
            Some(_) => {}
            None => machine = Some((name.clone(), file.fingerprint)),
        }
        for sweep in file.workloads {
            let usable: Vec<&SweepRow> = sweep
                .rows
                .iter()
                .filter(|r| r.precision == Precision::Fp32 && !r.check.is_failed())
                .filter(|r| r.kernel_s > 0.0 && r.bytes > 0 && r.flops > 0)
                .collect();
            let mut devices: Vec<&str> = usable.iter().map(|r| r.label.as_str()).collect();
            devices.sort_unstable();
            devices.dedup();
            for device in devices {
                let of_device = usable.iter().filter(|r| r.label == device);
                let Some(largest) = of_device.clone().map(|r| r.elements).max() else { continue };
                let fastest = of_device
                    .filter(|r| r.elements == largest)
                    .min_by(|a, b| a.kernel_s.total_cmp(&b.kernel_s))
                    .expect("the largest size has a row");
                points.push(Point {
                    workload: sweep.workload.clone(),
                    device: device.to_owned(),
                    on_gpu: fastest.on_gpu,
                    variant: fastest.variant.clone(),
                    size: fastest.size.clone(),
                    intensity: fastest.flops as f64 / fastest.bytes as f64,
                    gflop_per_s: fastest.flops as f64 / fastest.kernel_s / 1e9,
                    gb_per_s: fastest.bytes as f64 / fastest.kernel_s / 1e9,
                });
            }
        }
    }
    if points.is_empty() {
        bail!("no workload in these sweeps has a full-precision row that was checked and timed: nothing to place");
    }
    let mut roofs: Vec<Roof> = Vec::new();
    for point in &points {
        let from = format!("{} at {}", point.workload, point.size);
        match roofs.iter_mut().find(|r| r.device == point.device) {
            Some(roof) => {
                if point.gb_per_s > roof.memory_gb_per_s {
                    (roof.memory_gb_per_s, roof.memory_from) = (point.gb_per_s, from.clone());
                }
                if point.gflop_per_s > roof.compute_gflop_per_s {
                    (roof.compute_gflop_per_s, roof.compute_from) = (point.gflop_per_s, from);
                }
            }
            None => roofs.push(Roof {
                device: point.device.clone(),
                on_gpu: point.on_gpu,
                memory_gb_per_s: point.gb_per_s,
                compute_gflop_per_s: point.gflop_per_s,
                memory_from: from.clone(),
                compute_from: from,
            }),
        }
    }
    Ok((points, roofs))
}

/// The roofs and, per point, its intensity, rate, the side of the ridge it is on and its share of the roof there.
pub fn table(points: &[Point], roofs: &[Roof]) -> String {
    let mut out = String::new();
    for roof in roofs {
        out.push_str(&format!(
            "{}: memory roof {:.1} GB/s ({}), compute roof {:.1} GFLOP/s ({}), ridge at {:.2} flops per byte\n",
            roof.device,
            roof.memory_gb_per_s,
            roof.memory_from,
            roof.compute_gflop_per_s,
            roof.compute_from,
            roof.ridge()
        ));
        if roof.set_by_one_point() {
            out.push_str(&format!(
                "  {}: one point set both roofs, so the ridge is its own intensity and its side of the true ridge is \
                 unknown: sweep a memory-bound and a compute-bound workload together (square and matmul) to place it\n",
                roof.device
            ));
        }
    }
    out.push_str(&format!(
        "{:<12} {:<10} {:<10} {:>14} {:>12} {:>12} {:>11}  {:<7} {:>13}\n",
        "workload", "device", "variant", "size", "flops/byte", "GFLOP/s", "GB/s", "bound", "share of roof"
    ));
    for p in points {
        let Some(roof) = roofs.iter().find(|r| r.device == p.device) else { continue };
        let side = if roof.set_by_one_point() {
            "-"
        } else if p.intensity < roof.ridge() {
            "memory"
        } else {
            "compute"
        };
        out.push_str(&format!(
            "{:<12} {:<10} {:<10} {:>14} {:>12.3} {:>12.1} {:>11.1}  {:<7} {:>12.0}%\n",
            p.workload,
            p.device,
            p.variant,
            p.size,
            p.intensity,
            p.gflop_per_s,
            p.gb_per_s,
            side,
            100.0 * p.gflop_per_s / roof.bound(p.intensity)
        ));
    }
    out.push_str(
        "(roofs: the best GB/s and GFLOP/s any workload reached on the device at its largest size in these sweeps; a \
         size that fits a cache can set a memory roof above what the device's memory streams)\n",
    );
    out
}

/// Colours per device, GPUs first in the palette.
fn device_colour(index: usize) -> RGBColor {
    const PALETTE: [RGBColor; 5] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    PALETTE[index % PALETTE.len()]
}

/// Writes the roofline chart to `path` (SVG): log-log, flops per byte against GFLOP/s, each device's two roofs and
/// its points, each labelled with its workload.
pub fn write_svg(path: &Path, title: &str, points: &[Point], roofs: &[Roof]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let intensities = points.iter().map(|p| p.intensity);
    let x_min =
        intensities.clone().fold(f64::MAX, f64::min).min(roofs.iter().map(Roof::ridge).fold(f64::MAX, f64::min)) / 4.0;
    let x_max = intensities.fold(f64::MIN, f64::max).max(roofs.iter().map(Roof::ridge).fold(f64::MIN, f64::max)) * 4.0;
    let y_max = roofs.iter().map(|r| r.compute_gflop_per_s).fold(f64::MIN, f64::max) * 3.0;
    let y_min = points
        .iter()
        .map(|p| p.gflop_per_s)
        .fold(f64::MAX, f64::min)
        .min(roofs.iter().map(|r| r.bound(x_min)).fold(f64::MAX, f64::min))
        / 3.0;

    let root = SVGBackend::new(path, (1000, 680)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = crate::export::log_log_chart(
        &root,
        title,
        20,
        (x_min..x_max, "arithmetic intensity (flops per byte moved)"),
        (y_min..y_max, "GFLOP/s"),
    )?;
    for (index, roof) in roofs.iter().enumerate() {
        let colour = device_colour(index);
        let ridge = roof.ridge();
        let line =
            vec![(x_min, roof.bound(x_min)), (ridge, roof.compute_gflop_per_s), (x_max, roof.compute_gflop_per_s)];
        chart
            .draw_series(LineSeries::new(line, colour.stroke_width(2)))?
            .label(format!(
                "{}: {:.0} GB/s, {:.0} GFLOP/s (measured roofs)",
                roof.device, roof.memory_gb_per_s, roof.compute_gflop_per_s
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        for point in points.iter().filter(|p| p.device == roof.device) {
            let at = (point.intensity, point.gflop_per_s);
            chart.draw_series(std::iter::once(Circle::new(at, 5, colour.filled())))?;
            chart.draw_series(std::iter::once(Text::new(
                point.workload.clone(),
                at,
                ("sans-serif", 13).into_font().color(&colour),
            )))?;
        }
    }
    crate::export::legend_and_write(&mut chart, &root, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(size: &str, elements: u64, label: &str, variant: &str, kernel_s: f64, bytes: u64, flops: u64) -> String {
        format!(
            r#"{{"size":"{size}","elements":{elements},"label":"{label}","on_gpu":{},"variant":"{variant}",
                "precision":"full","kernel_s":{kernel_s},"bytes":{bytes},"flops":{flops},"check":"ok"}}"#,
            label != "cpu"
        )
    }

    fn sweep(workload: &str, rows: &[String]) -> String {
        on_machine("a GPU", workload, rows)
    }

    fn on_machine(gpu: &str, workload: &str, rows: &[String]) -> String {
        format!(
            r#"{{"fingerprint":{{"cpu":"a CPU","gpus":["{gpu}"]}},"workloads":[{{"workload":"{workload}","rows":[{}]}}]}}"#,
            rows.join(",")
        )
    }

    #[test]
    fn points_are_the_fastest_at_the_largest_size_and_roofs_the_best_of_them() {
        let square = sweep(
            "square",
            &[
                // The smaller size is faster per byte (a cache): it is not the point, and it sets no roof.
                row("1024", 1024, "cuda", "naive", 1e-9, 8192, 1024),
                row("2^26", 1 << 26, "cuda", "naive", 2e-4, 8 << 26, 1 << 26),
                row("2^26", 1 << 26, "cuda", "vec4", 1e-4, 8 << 26, 1 << 26),
            ],
        );
        let matmul = sweep("matmul", &[row("4096", 1 << 24, "cuda", "tiled", 1e-2, 3 << 26, 1 << 37)]);
        let (points, roofs) = from_json(&[("a".into(), square), ("b".into(), matmul)]).unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!((points[0].variant.as_str(), points[0].size.as_str()), ("vec4", "2^26"));
        assert!((points[0].intensity - 0.125).abs() < 1e-12);
        let roof = &roofs[0];
        assert!((roof.memory_gb_per_s - (8u64 << 26) as f64 / 1e-4 / 1e9).abs() < 1e-6);
        assert!((roof.compute_gflop_per_s - (1u64 << 37) as f64 / 1e-2 / 1e9).abs() < 1e-6);
        let text = table(&points, &roofs);
        assert!(text.contains("square") && text.contains("memory") && text.contains("compute"), "{text}");
        // On its own roof, a point is at 100% of it.
        assert!(text.lines().filter(|l| l.ends_with("100%")).count() == 2, "{text}");
    }

    /// One workload alone sets both roofs: the table does not call it compute-bound for sitting on its own ridge.
    #[test]
    fn a_roof_set_by_one_point_places_no_ridge() {
        let saxpy = sweep("saxpy", &[row("2^26", 1 << 26, "cpu", "simd", 1.16e-2, 12 << 26, 2 << 26)]);
        let (points, roofs) = from_json(&[("big.json".into(), saxpy)]).unwrap();
        assert!(roofs[0].set_by_one_point());
        let text = table(&points, &roofs);
        assert!(text.contains("one point set both roofs"), "{text}");
        let row = text.lines().find(|l| l.starts_with("saxpy")).unwrap();
        assert!(!row.contains("compute") && !row.contains("memory") && row.contains(" - "), "{row}");
    }

    #[test]
    fn a_file_that_is_not_a_sweep_and_a_sweep_with_nothing_to_place_are_refused() {
        let e = from_json(&[("notes.txt".into(), "hello".into())]).unwrap_err();
        assert!(format!("{e:#}").contains("notes.txt is not a sweep's JSON"), "{e:#}");
        let empty = sweep("square", &[]);
        let e = from_json(&[("empty.json".into(), empty)]).unwrap_err();
        assert!(e.to_string().contains("nothing to place"), "{e}");
        let here = sweep("square", &[row("2^20", 1 << 20, "cuda", "vec4", 1e-5, 8 << 20, 1 << 20)]);
        let there =
            on_machine("another GPU", "square", &[row("2^20", 1 << 20, "cuda", "vec4", 1e-5, 8 << 20, 1 << 20)]);
        let e = from_json(&[("here.json".into(), here), ("there.json".into(), there)]).unwrap_err();
        assert!(e.to_string().contains("there.json was measured on another machine than here.json"), "{e}");
    }

    #[test]
    fn the_chart_is_written() {
        let square = sweep("square", &[row("2^20", 1 << 20, "cpu", "simd", 1e-4, 8 << 20, 1 << 20)]);
        let (points, roofs) = from_json(&[("a".into(), square)]).unwrap();
        let path = std::env::temp_dir().join(format!("gpuworthy-roofline-{}.svg", std::process::id()));
        write_svg(&path, "test", &points, &roofs).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(svg.contains("<svg") && svg.contains("square"), "{}", &svg[..svg.len().min(200)]);
    }
}
