//! Plain-text tables of measurements, formatted for a terminal.

use std::fmt::Write;
use std::time::Duration;

use gpuworthy::core::Precision;
use gpuworthy::measure::{Measurement, Stats};

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
