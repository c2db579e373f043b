//! The elementwise shaders' workgroup size is a pipeline-overridable constant: every size the block-size lesson sweeps
//! gives the reference's answer, at a length that is not a multiple of any, and a size the adapter cannot run is
//! refused before a launch, naming its limit.

use gpuworthy_core::workloads::{Len, Saxpy, SaxpyParams, Square};
use gpuworthy_core::{Implements, Workload};
use gpuworthy_wgpu::DEFAULT_ELEMENTWISE_WORKGROUP;

mod common;
use common::backend;

#[test]
fn elementwise_shaders_are_right_at_every_workgroup_size() {
    let Some(mut wgpu) = backend() else { return };
    assert_eq!(wgpu.elementwise_workgroup_size(), DEFAULT_ELEMENTWISE_WORKGROUP);
    let len = (1 << 18) + 7;
    let square = Square::generate(&Len(len), 3).unwrap();
    let square_expected = Square::reference(&square).unwrap();
    let saxpy = Saxpy::generate(&SaxpyParams { n: len, a: 2.5 }, 3).unwrap();
    let saxpy_expected = Saxpy::reference(&saxpy).unwrap();
    let most = wgpu.device_limit_for_workgroup_size();
    for threads in [32, 64, 96, 128, 256, 512, 1024].into_iter().filter(|t| *t <= most) {
        wgpu = wgpu.with_elementwise_workgroup_size(threads).unwrap();
        assert_eq!(wgpu.elementwise_workgroup_size(), threads);
        for variant in ["naive", "vec4"] {
            let out = Implements::<Square>::run(&wgpu, variant, &square).unwrap();
            assert_eq!(out, square_expected, "square {variant} at {threads} invocations per workgroup");
            let out = Implements::<Saxpy>::run(&wgpu, variant, &saxpy).unwrap();
            let precision = Implements::<Saxpy>::precision(&wgpu, variant);
            Saxpy::check(&saxpy, &saxpy_expected, &out, precision)
                .unwrap_or_else(|m| panic!("saxpy {variant} at {threads} invocations per workgroup: {m}"));
        }
    }
    for bad in [0, 31, 48, most + 32] {
        let err = backend().unwrap().with_elementwise_workgroup_size(bad).unwrap_err().to_string();
        assert!(err.contains("workgroup size") && err.contains(&most.to_string()), "{bad}: {err}");
    }
}
