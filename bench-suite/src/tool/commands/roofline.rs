//! `gpuworthy roofline`: the sweeps written by `sweep --json` placed under their devices' measured roofs, as a table
//! and, with `--plot`, an SVG chart.
//!
//! The reading and the chart are the library's ([`crate::roofline`]); this module reads the files, turning an
//! unreadable or malformed one into a usage error that names it.

use std::path::{Path, PathBuf};

use crate::tool::exit::Exit;

/// `gpuworthy roofline`: the sweeps in `files` placed under their devices' measured roofs, as a table and, with
/// `plot`, a chart.
pub(crate) fn roofline(files: &[PathBuf], plot: Option<&Path>) -> anyhow::Result<()> {
    let mut texts = Vec::with_capacity(files.len());
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Exit::usage(format!("cannot read the sweep {}: {e}", file.display())))?;
        texts.push((file.display().to_string(), text));
    }
    let (points, roofs) = crate::roofline::from_json(&texts).map_err(|e| Exit::usage(format!("{e:#}")))?;
    print!("{}", crate::roofline::table(&points, &roofs));
    if let Some(path) = plot {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let title = format!("roofline of {}", names.join(", "));
        crate::roofline::write_svg(path, &title, &points, &roofs)?;
        println!("chart: {}", path.display());
    }
    Ok(())
}
