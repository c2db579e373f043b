//! Plain-text tables of measurements, formatted for a terminal: one variant's phases (`gpuworthy run`) and a sweep's
//! per-size comparison of backends (`gpuworthy sweep`).

use std::fmt::Write;
use std::time::Duration;

use gpuworthy::core::Precision;
use gpuworthy::measure::{Measurement, Stats};

use crate::sweep::{Row, WorkloadSweep, best, cpu_label, labels, sizes};

/// A duration with a unit that keeps three significant digits: `812 ns`, `4.21 µs`, `13.5 ms`, `2.04 s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    let (value, unit) = match s {
        s if s < 1e-6 => (s * 1e9, "ns"),
        s if s < 1e-3 => (s * 1e6, "µs"),
        s if s < 1.0 => (s * 1e3, "ms"),
        s => (s, "s"),
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}")
}

/// A median with its interquartile spread: `4.21 µs ±3%`.
pub fn stats(s: &Stats) -> String {
    format!("{} ±{:.0}%", duration(s.median), 100.0 * s.relative_spread() / 2.0)
}

/// One table of measurements of one workload and size on one backend.
pub fn phase_table(title: &str, rows: &[Measurement]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "  {:<10} {:>10} {:>10} {:>14} {:>14} {:>14} {:>14} {:>10} {:>10}  check",
        "variant", "compile", "first", "upload", "kernel", "download", "end-to-end", "GB/s", "GFLOP/s"
    );
    for m in rows {
        let label = match m.precision {
            Precision::Full => m.variant.clone(),
            Precision::Reduced => format!("{} (reduced precision)", m.variant),
        };
        let check = match &m.check {
            None => "not checked".to_owned(),
            Some(Ok(())) => "ok".to_owned(),
            Some(Err(mismatch)) => format!("FAILED: {mismatch}"),
        };
        let _ = writeln!(
            out,
            "  {:<10} {:>10} {:>10} {:>14} {:>14} {:>14} {:>14} {:>10.1} {:>10.1}  {check}",
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

/// The per-size table of one workload: each backend's best kernel and end-to-end time, the winner and speed-up with
/// data resident and with data on the host.
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
    let _ = writeln!(out, "  {:<24} {:<24}", "resident: winner", "host: winner");
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    for size in sizes(rows) {
        let _ = write!(out, "{size:<16}");
        for b in &backends {
            match best(rows, &size, b, |r| r.kernel_s) {
                Some(r) => {
                    let _ = write!(out, " {:>22}", format!("{} ({})", t(r.kernel_s), r.variant));
                }
                None => {
                    let failed = rows.iter().any(|r| r.size == size && r.label == *b && r.check.starts_with("FAILED"));
                    let _ = write!(out, " {:>22}", if failed { "FAILED" } else { "-" });
                }
            }
            if *b != cpu_label() {
                let e2e = best(rows, &size, b, |r| r.end_to_end_s).map_or("-".into(), |r| t(r.end_to_end_s));
                let _ = write!(out, " {e2e:>12}");
            }
        }
        let winner = |time: &dyn Fn(&Row) -> f64| {
            let mut ranked: Vec<&Row> = backends.iter().filter_map(|b| best(rows, &size, b, |r| time(r))).collect();
            ranked.sort_by(|a, b| time(a).total_cmp(&time(b)));
            match ranked.as_slice() {
                [first, second, ..] => format!("{} {:.1}x", first.label, time(second) / time(first)),
                [only] => only.label.clone(),
                [] => "-".into(),
            }
        };
        // With the data on the host the CPU computes where the data is: no winner without the CPU at this size.
        let host_winner = if best(rows, &size, &cpu_label(), Row::host_time).is_some() {
            winner(&Row::host_time)
        } else {
            "cpu not measured".to_owned()
        };
        let _ = writeln!(out, "  {:<24} {:<24}", winner(&|r: &Row| r.kernel_s), host_winner);
    }
    for r in sweep.failed_checks() {
        let _ = writeln!(out, "  {}/{} at {}: {}", r.label, r.variant, r.size, r.check);
    }
    for n in &sweep.notes {
        let _ = writeln!(out, "  note: {}/{}: {}", n.backend, n.variant, n.message);
    }
    if let Some(c) = &sweep.crossover {
        let show =
            |x: &Option<(String, String)>| x.as_ref().map_or("none in range".to_owned(), |(s, g)| format!("{s} ({g})"));
        let _ = writeln!(out, "  crossover, data resident on the GPU: {}", show(&c.resident));
        let _ = writeln!(out, "  crossover, data on the host:         {}", show(&c.host));
        if let Some((resident, host)) = &c.reduced_precision {
            let _ = writeln!(
                out,
                "  with reduced precision (tf32):       resident {}, host {}",
                show(resident),
                show(host)
            );
        }
        let _ = writeln!(out, "  {}", c.verdict);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_three_digits() {
        assert_eq!(duration(Duration::from_nanos(812)), "812 ns");
        assert_eq!(duration(Duration::from_nanos(4_213)), "4.21 µs");
        assert_eq!(duration(Duration::from_micros(13_540)), "13.5 ms");
        assert_eq!(duration(Duration::from_millis(2_040)), "2.04 s");
    }
}
