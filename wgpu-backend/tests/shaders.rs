//! Every shader parses and validates with naga, defines the entry points the backend expects and translates to
//! SPIR-V: no adapter needed, so a WGSL error (or a shader naga's writer cannot translate) is caught on any machine,
//! the shaders of features this machine's adapter lacks included.

use gpuworthy_core::KernelSource;
use gpuworthy_wgpu::{SHADERS, variant_kernels};
use naga::valid::Capabilities;

/// The capabilities beyond the defaults a shader file needs, which the backend asks the adapter for: subgroup
/// operations for the subgroup sum; f16 for matmul's 16-bit rungs, and cooperative matrices and the subgroup index
/// for `coop-f16`.
fn capabilities_of(file: &str) -> Capabilities {
    match file {
        "sum_subgroup.wgsl" => Capabilities::SUBGROUP,
        "matmul_f16.wgsl" => Capabilities::SHADER_FLOAT16 | Capabilities::SHADER_FLOAT16_IN_FLOAT32,
        "matmul_coop.wgsl" => {
            Capabilities::SHADER_FLOAT16
                | Capabilities::SHADER_FLOAT16_IN_FLOAT32
                | Capabilities::COOPERATIVE_MATRIX
                | Capabilities::SUBGROUP
        }
        _ => Capabilities::empty(),
    }
}

fn validated(shader: &KernelSource) -> (naga::Module, naga::valid::ModuleInfo) {
    let module = naga::front::wgsl::parse_str(shader.source)
        .unwrap_or_else(|e| panic!("{} does not parse:\n{}", shader.file, e.emit_to_string(shader.source)));
    let capabilities = Capabilities::default() | capabilities_of(shader.file);
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{} does not validate:\n{}", shader.file, e.emit_to_string(shader.source)));
    (module, info)
}

#[test]
fn every_shader_parses_validates_and_defines_its_entry_points() {
    for shader in SHADERS.iter() {
        let (module, _) = validated(shader);
        for entry in shader.kernels {
            let found = module.entry_points.iter().any(|e| e.name == *entry && e.stage == naga::ShaderStage::Compute);
            assert!(found, "{} has no compute entry point `{entry}`", shader.file);
        }
        println!("{}: valid, entry points {}", shader.file, shader.kernels.join(", "));
    }
}

#[test]
fn only_the_shaders_listed_need_capabilities_beyond_the_defaults() {
    for shader in SHADERS.iter().filter(|s| capabilities_of(s.file).is_empty()) {
        let module = naga::front::wgsl::parse_str(shader.source).expect("parses");
        let valid =
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), Capabilities::default()).validate(&module);
        assert!(valid.is_ok(), "{} needs a capability beyond the defaults", shader.file);
    }
}

/// Vulkan runs SPIR-V that naga writes from the WGSL with the bounds checks wgpu's Vulkan backend asks for (index
/// clamps by default, none for trusted shaders): naga's writer must take every shader under both policies. (Its version 30
/// panicked on a cooperative store whose index was not bound to a `let` first.)
#[test]
fn every_shader_translates_to_spirv_under_the_bounds_checks_wgpu_asks_for() {
    use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
    for shader in SHADERS.iter() {
        let (module, info) = validated(shader);
        // The overridable constants at their defaults (the workgroup size of the elementwise shaders), as a
        // pipeline that sets none would have them.
        let (module, info) =
            naga::back::pipeline_constants::process_overrides(&module, &info, None, &Default::default())
                .unwrap_or_else(|e| panic!("{}: overrides: {e}", shader.file));
        for policy in [BoundsCheckPolicy::Unchecked, BoundsCheckPolicy::Restrict] {
            let bounds_check_policies =
                BoundsCheckPolicies { index: policy, buffer: policy, ..BoundsCheckPolicies::default() };
            let options =
                naga::back::spv::Options { lang_version: (1, 3), bounds_check_policies, ..Default::default() };
            let words = naga::back::spv::write_vec(&module, &info, &options, None)
                .unwrap_or_else(|e| panic!("{} does not translate to SPIR-V ({policy:?}): {e}", shader.file));
            assert!(words.len() > 5, "{}: an empty SPIR-V module", shader.file);
        }
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
