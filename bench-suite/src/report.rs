//! Plain-text tables of measurements, formatted for a terminal: one variant's phases (`gpuworthy run`) and a sweep's
//! per-size comparison of backends (`gpuworthy sweep`).

use std::fmt::Write;
use std::time::Duration;

use gpuworthy::core::Precision;
use gpuworthy::measure::{Measurement, Stats};

pub use gpuworthy::measure::duration;
use gpuworthy::model::rows::{Row, best, cpu_label, labels, sizes};
use gpuworthy::model::sweep::{HostWinner, OverCpu, Winner, WorkloadSweep};

/// A median with its interquartile spread: `4.21 µs ±3%`.
pub fn stats(s: &Stats) -> String {
    format!("{} ±{:.0}%", duration(s.median), 100.0 * s.relative_spread() / 2.0)
}

/// One table of measurements of one workload and size on one backend.
pub fn phase_table(title: &str, rows: &[Measurement]) -> String {
    let labels: Vec<String> = rows
        .iter()
        .map(|m| match m.precision {
            Precision::Fp32 => m.variant.to_string(),
            reduced => format!("{} ({reduced})", m.variant),
        })
        .collect();
    // As wide as the longest label (`cublas-bf16 (bf16)`), at least 10.
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).max(10);
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "  {:<width$} {:>10} {:>10} {:>14} {:>14} {:>14} {:>14} {:>10} {:>10}  check",
        "variant", "compile", "first", "upload", "kernel", "download", "end-to-end", "GB/s", "GFLOP/s"
    );
    for (m, label) in rows.iter().zip(&labels) {
        let check = match &m.check {
            None => "not checked".to_owned(),
            Some(Ok(())) => "ok".to_owned(),
            Some(Err(mismatch)) => format!("FAILED: {mismatch}"),
        };
        let _ = writeln!(
            out,
            "  {:<width$} {:>10} {:>10} {:>14} {:>14} {:>14} {:>14} {:>10.1} {:>10.1}  {check}",
            label,
            duration(m.compile),
            duration(m.first_call),
            stats(&m.upload),
            stats(&m.kernel),
            stats(&m.download),
            stats(&m.end_to_end),
            m.gb_per_s(m.kernel.median),
            m.gflop_per_s(m.kernel.median),
        );
    }
    out
}

/// A speed-up as the tables print it: one decimal from 1x, two significant digits below (`0.098x`), so that a GPU
/// ten times slower than the CPU does not read `0.1x` beside one five times slower.
fn times(speedup: f64) -> String {
    if speedup >= 1.0 || !speedup.is_normal() {
        return format!("{speedup:.1}x");
    }
    let decimals = (1 - speedup.log10().floor() as i32).clamp(2, 6) as usize;
    format!("{speedup:.decimals$}x")
}

/// The per-size table of one workload: each backend's best kernel and end-to-end time (through its faster transfer
/// mode, `p` marking the pipelined path), the winner and speed-up with data resident and with data on the host.
pub fn table(sweep: &WorkloadSweep) -> String {
    let rows = &sweep.rows;
    let backends = labels(rows, |_| true);
    let mut out = String::new();
    let _ = write!(out, "{:<16}", "size");
    for b in &backends {
        let _ = write!(out, " {:>22}", format!("{b} kernel"));
        if *b != cpu_label() {
            let _ = write!(out, " {:>12}", format!("{b} e2e"));
        }
    }
    let _ = writeln!(
        out,
        "  {:<24} {:<24} {:<20} {:<20}",
        "resident: winner", "host: winner", "resident: gpu/cpu", "host: gpu/cpu"
    );
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    for size in sizes(rows) {
        let _ = write!(out, "{size:<16}");
        for b in &backends {
            match best(rows, &size, b, |r| r.kernel_s) {
                Some(r) => {
                    let _ = write!(out, " {:>22}", format!("{} ({})", t(r.kernel_s), r.variant));
                }
                None => {
                    let failed = rows.iter().any(|r| r.size == size && r.label == *b && r.check.is_failed());
                    let _ = write!(out, " {:>22}", if failed { "FAILED" } else { "-" });
                }
            }
            if *b != cpu_label() {
                // The faster transfer mode; a `p` marks the pipelined path.
                let e2e = best(rows, &size, b, Row::host_time).map_or("-".into(), |r| {
                    let mark = if r.host_transfer() == "pipelined" { " p" } else { "" };
                    format!("{}{mark}", t(r.host_time()))
                });
                let _ = write!(out, " {e2e:>12}");
            }
        }
        let show = |w: Option<Winner>| match w {
            Some(Winner { row, over_runner_up: Some(x) }) => format!("{} {x:.1}x", row.label),
            Some(Winner { row, over_runner_up: None }) => row.label.to_string(),
            None => "-".into(),
        };
        let host_winner = match sweep.host_winner(&size) {
            HostWinner::Winner(w) => show(Some(w)),
            HostWinner::CpuNotMeasured => "cpu not measured".to_owned(),
            HostWinner::NoneMeasured => show(None),
        };
        let over_cpu =
            |o: Option<OverCpu>| o.map_or("-".to_owned(), |o| format!("{} {}", o.gpu.label, times(o.speedup)));
        let _ = writeln!(
            out,
            "  {:<24} {:<24} {:<20} {:<20}",
            show(sweep.resident_winner(&size)),
            host_winner,
            over_cpu(sweep.gpu_over_cpu_resident(&size)),
            over_cpu(sweep.gpu_over_cpu_from_host(&size)),
        );
    }
    let _ = writeln!(
        out,
        "  winner: the fastest and its lead over the next backend; gpu/cpu: the fastest GPU's speed-up over the CPU \
         (below 1x the CPU is faster)"
    );
    if rows.iter().any(|r| r.host_transfer() == "pipelined") {
        let _ = writeln!(out, "  p: end-to-end through the pipelined path (chunks overlapped on several streams)");
    }
    for r in sweep.failed_checks() {
        let _ = writeln!(out, "  {}/{} at {}: {}", r.label, r.variant, r.size, r.check);
    }
    for n in &sweep.notes {
        let _ = writeln!(out, "  note: {}/{}: {}", n.backend, n.variant, n.message);
    }
    if let Some(c) = &sweep.crossover {
        let show = gpuworthy::model::crossover::describe;
        let _ = writeln!(out, "  crossover, data resident on the GPU: {}", show(&c.resident));
        let _ = writeln!(out, "  crossover, data on the host:         {}", show(&c.host));
        for p in &c.by_precision {
            let _ = writeln!(
                out,
                "  {:<36} resident {}, host {}",
                format!("with {} kernels allowed:", p.precision),
                show(&p.resident),
                show(&p.host)
            );
        }
        let _ = writeln!(out, "  {}", c.verdict);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy::core::BackendKind;

    fn row(size: &str, backend: BackendKind, kernel: f64, e2e: f64) -> Row {
        Row::with_times("square", size, backend, kernel, e2e)
    }

    #[test]
    fn a_failed_check_is_shown_as_failed_and_never_wins() {
        let mut failed = row("10", BackendKind::Cuda, 0.5, 0.5);
        failed.check = gpuworthy::model::rows::Check::Failed("element 3: expected 1, got 2".into());
        let sweep = WorkloadSweep {
            workload: "square".into(),
            rows: vec![row("10", BackendKind::Cpu, 1.0, 1.0), failed],
            ..WorkloadSweep::default()
        };
        assert_eq!(sweep.failed_checks().count(), 1);
        let text = table(&sweep);
        assert!(text.contains("FAILED") && text.contains("cuda/v at 10: FAILED: element 3"), "{text}");
        let line = text.lines().find(|l| l.starts_with("10")).unwrap();
        assert!(!line.contains("cuda 2.0x"), "a failed variant won: {line}");
    }

    #[test]
    fn speed_ups_below_one_keep_two_significant_digits() {
        let shown: Vec<String> = [11.6, 1.0, 0.5, 0.098, 0.0123].into_iter().map(times).collect();
        assert_eq!(shown, ["11.6x", "1.0x", "0.50x", "0.098x", "0.012x"]);
    }

    #[test]
    fn the_table_sets_the_fastest_gpu_against_the_cpu() {
        let rows = vec![
            row("16777216", BackendKind::Cpu, 418e-6, 418e-6),
            row("16777216", BackendKind::Cuda, 35.9e-6, 4.28e-3),
            row("16777216", BackendKind::Wgpu, 36.3e-6, 15.0e-3),
        ];
        let text = table(&WorkloadSweep { workload: "square".into(), rows, ..WorkloadSweep::default() });
        let line = text.lines().find(|l| l.starts_with("16777216")).unwrap();
        // The winner leads the runner-up by 1.0x; the CPU is 11.6 times slower resident, 10 times faster from the host.
        assert!(line.contains("cuda 1.0x") && line.contains("cuda 11.6x") && line.contains("cuda 0.098x"), "{line}");
        assert!(text.contains("gpu/cpu: the fastest GPU's speed-up over the CPU"), "{text}");
    }

    #[test]
    fn the_host_winner_needs_the_cpu_at_that_size() {
        let rows = vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            row("10", BackendKind::Cuda, 2.0, 3.0),
            row("100", BackendKind::Cuda, 5.0, 90.0),
            row("100", BackendKind::Wgpu, 6.0, 80.0),
        ];
        let text = table(&WorkloadSweep { workload: "square".into(), rows, ..WorkloadSweep::default() });
        let line = text.lines().find(|l| l.starts_with("100")).unwrap();
        assert!(line.contains("cpu not measured") && !line.contains("wgpu 1.1x"), "{line}");
    }
}
