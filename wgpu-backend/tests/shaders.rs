//! Every shader parses and validates with naga, and defines the entry points the backend expects: no adapter needed,
//! so a WGSL error is caught on any machine.

use gpuworthy_wgpu::SHADERS;

#[test]
fn every_shader_parses_validates_and_defines_its_entry_points() {
    for shader in SHADERS {
        let module = naga::front::wgsl::parse_str(shader.source)
            .unwrap_or_else(|e| panic!("{} does not parse:\n{}", shader.file, e.emit_to_string(shader.source)));
        // Subgroup operations are a capability the backend asks the adapter for; the others need none.
        let capabilities = naga::valid::Capabilities::default() | naga::valid::Capabilities::SUBGROUP;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{} does not validate:\n{}", shader.file, e.emit_to_string(shader.source)));
        for entry in shader.entry_points {
            let found = module.entry_points.iter().any(|e| e.name == *entry && e.stage == naga::ShaderStage::Compute);
            assert!(found, "{} has no compute entry point `{entry}`", shader.file);
        }
        println!("{}: valid, entry points {}", shader.file, shader.entry_points.join(", "));
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
    for shader in SHADERS {
        let workload = shader.file.trim_end_matches(".wgsl").split('_').next().unwrap();
        for entry in shader.entry_points {
            assert!(
                entry.starts_with(&format!("{workload}_")),
                "{entry} in {} is not <workload>_<variant>",
                shader.file
            );
        }
    }
}
