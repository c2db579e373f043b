//! The side-by-side table that ends `cargo bench -p bench-suite`: per workload and size, each backend's best time
//! and the winner, read from criterion's own estimates (`<criterion dir>/<group>/…/new/estimates.json`, beside
//! `benchmark.json`, which names the benchmark) rather than from a second measurement.
//!
//! The benchmark ids are `workload/backend/variant/phase/size` (criterion's group, function and value), so the
//! table can be rebuilt from any criterion directory, also one copied from another machine. Only estimates written
//! since `since` are read, so that a filtered run does not mix in figures of an earlier one.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use gpuworthy::core::BackendKind;
use serde::Deserialize;

/// One benchmark's median, as criterion estimated it.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The workload (criterion's group).
    pub workload: String,
    /// The backend's label.
    pub backend: String,
    /// The variant.
    pub variant: String,
    /// The phase: `kernel`, `upload`, `download`, `end_to_end`, `end_to_end_pipelined`, `first_call`.
    pub phase: String,
    /// The size.
    pub size: String,
    /// Criterion's median time of one iteration, seconds.
    pub median_s: f64,
}

#[derive(Deserialize)]
struct BenchmarkJson {
    group_id: String,
    function_id: Option<String>,
    value_str: Option<String>,
}

#[derive(Deserialize)]
struct PointEstimate {
    point_estimate: f64,
}

#[derive(Deserialize)]
struct EstimatesJson {
    median: PointEstimate,
}

/// Every estimate under `dir` written at or after `since`, for benchmarks whose function id is
/// `backend/variant/phase`; others (and unreadable files) are skipped.
pub fn read_estimates(dir: &Path, since: SystemTime) -> Vec<Estimate> {
    let mut found = Vec::new();
    visit(dir, since, &mut found);
    found.sort_by(|a: &Estimate, b| {
        (&a.workload, &a.size, &a.backend, &a.variant, &a.phase).cmp(&(
            &b.workload,
            &b.size,
            &b.backend,
            &b.variant,
            &b.phase,
        ))
    });
    found
}

fn visit(dir: &Path, since: SystemTime, found: &mut Vec<Estimate>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "new") {
                if let Some(e) = read_one(&path, since) {
                    found.push(e);
                }
            } else if path.file_name().is_none_or(|n| n != "base" && n != "report") {
                visit(&path, since, found);
            }
        }
    }
}

fn read_one(new: &Path, since: SystemTime) -> Option<Estimate> {
    let estimates = new.join("estimates.json");
    let modified = std::fs::metadata(&estimates).and_then(|m| m.modified()).ok()?;
    if modified < since {
        return None;
    }
    let benchmark: BenchmarkJson =
        serde_json::from_str(&std::fs::read_to_string(new.join("benchmark.json")).ok()?).ok()?;
    let estimates: EstimatesJson = serde_json::from_str(&std::fs::read_to_string(estimates).ok()?).ok()?;
    let function = benchmark.function_id?;
    let mut parts = function.splitn(3, '/');
    let (backend, variant, phase) = (parts.next()?, parts.next()?, parts.next()?);
    Some(Estimate {
        workload: benchmark.group_id,
        backend: backend.to_owned(),
        variant: variant.to_owned(),
        phase: phase.to_owned(),
        size: benchmark.value_str?,
        median_s: estimates.median.point_estimate * 1e-9,
    })
}

/// The best time and its variant of one backend at one size.
type Best = Option<(f64, String)>;

/// The phase of a whole run through a device's pipelined path (CUDA): data on the host, chunks overlapping on
/// several streams.
pub const PIPELINED_PHASE: &str = "end_to_end_pipelined";

/// The table: per workload and size (in the order first seen, which is ladder order within a workload), each
/// backend's fastest kernel (data resident) and fastest time with the data on the host (the kernel on the CPU,
/// which computes where the data is; on a GPU the faster of `end_to_end` and [`PIPELINED_PHASE`], the winner named
/// `(pipelined)` where that was faster), and the winner of each. `backends` orders the columns: each backend (its
/// name in the benchmark ids is [`BackendKind::name`]) and its label in reports (`wgpu(cpu)` for a CPU adapter).
pub fn table(estimates: &[Estimate], backends: &[(BackendKind, String)]) -> String {
    use std::fmt::Write;
    let mut sizes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in estimates {
        let list = sizes.entry(&e.workload).or_default();
        if !list.contains(&e.size.as_str()) {
            list.push(&e.size);
        }
    }
    let t = |s: f64| gpuworthy::measure::duration(std::time::Duration::from_secs_f64(s));
    let mut out = String::new();
    for (workload, sizes) in sizes {
        let _ = writeln!(
            out,
            "\n{workload}: criterion medians, best variant per backend (resident kernel | data on the host)"
        );
        let mut header = format!("  {:<14}", "size");
        for (_, label) in backends {
            let _ = write!(header, " {label:>25}");
        }
        let _ = writeln!(out, "{header}  {:<24} winner on the host", "winner resident");
        let mut sorted = sizes.clone();
        sorted.sort_by(|a, b| size_key(a).total_cmp(&size_key(b)));
        for size in sorted {
            let best = |backend: BackendKind, host: bool| -> Best {
                estimates
                    .iter()
                    .filter(|e| e.workload == workload && e.size == size && e.backend == backend.name())
                    .filter(|e| match (host, backend == BackendKind::Cpu) {
                        (false, _) | (true, true) => e.phase == "kernel",
                        (true, false) => e.phase == "end_to_end" || e.phase == PIPELINED_PHASE,
                    })
                    .map(|e| {
                        let pipelined = if e.phase == PIPELINED_PHASE { " (pipelined)" } else { "" };
                        (e.median_s, format!("{}{pipelined}", e.variant))
                    })
                    .min_by(|a, b| a.0.total_cmp(&b.0))
            };
            let mut line = format!("  {size:<14}");
            let mut winners: [Option<(f64, &str, String)>; 2] = [None, None];
            for (b, label) in backends {
                let resident = best(*b, false);
                let host = best(*b, true);
                let cell = match (&resident, &host) {
                    (None, None) => "-".to_owned(),
                    _ => format!(
                        "{} | {}",
                        resident.as_ref().map_or("-".into(), |r| t(r.0)),
                        host.as_ref().map_or("-".into(), |h| t(h.0))
                    ),
                };
                let _ = write!(line, " {cell:>25}");
                for (slot, value) in winners.iter_mut().zip([resident, host]) {
                    if let Some((time, variant)) = value
                        && slot.as_ref().is_none_or(|w| time < w.0)
                    {
                        *slot = Some((time, label.as_str(), variant));
                    }
                }
            }
            let name = |w: &Option<(f64, &str, String)>| w.as_ref().map_or("-".into(), |(_, b, v)| format!("{b} {v}"));
            let _ = writeln!(out, "{line}  {:<24} {}", name(&winners[0]), name(&winners[1]));
        }
    }
    out
}

/// A size's element count for ordering: the product of its `x`-separated parts, each a number or `2^k`.
fn size_key(size: &str) -> f64 {
    size.split('x')
        .map(|part| match part.split_once('^') {
            Some((base, exp)) => base.parse::<f64>().unwrap_or(0.0).powf(exp.parse().unwrap_or(0.0)),
            None => part.parse().unwrap_or(0.0),
        })
        .product()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_benchmark(root: &Path, workload: &str, function: &str, size: &str, median_ns: f64) {
        let dir = root.join(workload).join(function.replace('/', "_")).join(size.replace('^', "_")).join("new");
        std::fs::create_dir_all(&dir).unwrap();
        let benchmark = format!(
            r#"{{"group_id":"{workload}","function_id":"{function}","value_str":"{size}","throughput":null,"full_id":"x","directory_name":"x","title":"x"}}"#
        );
        std::fs::write(dir.join("benchmark.json"), benchmark).unwrap();
        let estimate = |v: f64| {
            format!(
                r#"{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":{v},"upper_bound":{v}}},"point_estimate":{v},"standard_error":0.0}}"#
            )
        };
        let estimates = format!(
            r#"{{"mean":{},"median":{},"median_abs_dev":{},"slope":null,"std_dev":{}}}"#,
            estimate(median_ns * 1.1),
            estimate(median_ns),
            estimate(1.0),
            estimate(1.0)
        );
        std::fs::write(dir.join("estimates.json"), estimates).unwrap();
    }

    #[test]
    fn the_table_takes_each_backends_best_variant_and_the_winner_per_placement() {
        let root = std::env::temp_dir().join(format!("gpuworthy-criterion-summary-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let since = SystemTime::now() - std::time::Duration::from_secs(1);
        write_benchmark(&root, "square", "cpu/scalar/kernel", "2^20", 900_000.0);
        write_benchmark(&root, "square", "cpu/simd/kernel", "2^20", 300_000.0);
        write_benchmark(&root, "square", "cuda/vec4/kernel", "2^20", 10_000.0);
        write_benchmark(&root, "square", "cuda/vec4/end_to_end", "2^20", 1_000_000.0);
        write_benchmark(&root, "square", "cuda/vec4/upload", "2^20", 400_000.0);
        let estimates = read_estimates(&root, since);
        assert_eq!(estimates.len(), 5, "{estimates:?}");
        let table = table(&estimates, &[(BackendKind::Cpu, "cpu".into()), (BackendKind::Cuda, "cuda".into())]);
        let row = table.lines().find(|l| l.trim_start().starts_with("2^20")).unwrap();
        assert!(row.contains("300 µs | 300 µs"), "{table}");
        assert!(row.contains("cuda vec4") && row.trim_end().ends_with("cpu simd"), "{table}");
        // Estimates older than the run are not read.
        assert!(read_estimates(&root, SystemTime::now() + std::time::Duration::from_secs(60)).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
