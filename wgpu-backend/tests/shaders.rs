//! Every shader parses and validates with naga, and defines the entry points the backend expects: no adapter needed,
//! so a WGSL error is caught on any machine.

use gpuworthy_core::KernelSource;
use gpuworthy_wgpu::{SHADERS, variant_kernels};

#[test]
fn every_shader_parses_validates_and_defines_its_entry_points() {
    for shader in SHADERS.iter() {
        let module = naga::front::wgsl::parse_str(shader.source)
            .unwrap_or_else(|e| panic!("{} does not parse:\n{}", shader.file, e.emit_to_string(shader.source)));
        // Subgroup operations are a capability the backend asks the adapter for; the others need none.
        let capabilities = naga::valid::Capabilities::default() | naga::valid::Capabilities::SUBGROUP;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{} does not validate:\n{}", shader.file, e.emit_to_string(shader.source)));
        for entry in shader.kernels {
            let found = module.entry_points.iter().any(|e| e.name == *entry && e.stage == naga::ShaderStage::Compute);
            assert!(found, "{} has no compute entry point `{entry}`", shader.file);
        }
        println!("{}: valid, entry points {}", shader.file, shader.kernels.join(", "));
    }
}

#[test]
fn only_the_subgroup_shader_needs_subgroups() {
    for shader in SHADERS.iter().filter(|s| s.file != "sum_subgroup.wgsl") {
        let module = naga::front::wgsl::parse_str(shader.source).expect("parses");
        let without_subgroups = naga::valid::Capabilities::default();
        let valid =
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), without_subgroups).validate(&module);
        assert!(valid.is_ok(), "{} needs a capability beyond the defaults", shader.file);
    }
}

#[test]
fn entry_points_follow_the_naming_rule() {
    for shader in SHADERS.iter() {
        let workload = shader.file.trim_end_matches(".wgsl").split('_').next().unwrap();
        for entry in shader.kernels {
            assert!(
                entry.starts_with(&format!("{workload}_")),
                "{entry} in {} is not <workload>_<variant>",
                shader.file
            );
        }
    }
}

/// The entry point the backend runs outside any workload: the copy behind the measured bandwidth peak.
const BACKEND_ENTRY_POINTS: [&str; 1] = ["copy_vec4"];

#[test]
fn every_entry_point_a_variant_table_names_is_defined_by_a_shader() {
    for (workload, kernels) in variant_kernels() {
        for (variant, entry) in kernels {
            assert!(
                KernelSource::defining(&SHADERS, entry).is_some(),
                "{workload} {variant}: no shader lists the entry point `{entry}`"
            );
        }
    }
}

#[test]
fn every_listed_entry_point_is_run_by_a_variant() {
    let used: Vec<&str> = variant_kernels().into_iter().flat_map(|(_, k)| k).map(|(_, entry)| entry).collect();
    for shader in SHADERS.iter() {
        for entry in shader.kernels {
            assert!(
                used.contains(entry) || BACKEND_ENTRY_POINTS.contains(entry),
                "no variant runs `{entry}` of {}",
                shader.file
            );
        }
    }
}

#[test]
fn every_workload_has_a_variant_table() {
    let tables: Vec<&str> = variant_kernels().into_iter().map(|(workload, _)| workload).collect();
    assert_eq!(tables, gpuworthy_core::WORKLOAD_NAMES);
}
