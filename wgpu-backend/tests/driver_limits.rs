//! A backend knows its driver's limits and stays correct at them: on Mesa's llvmpipe (lavapipe), whose shader loops
//! stop after 65535 trips per invocation, work past the limit is refused with the limit named, and work just inside
//! it gives the right answer. On other drivers every case must simply be right.

use gpuworthy_core::workloads::{Mandelbrot, MandelbrotParams, Matmul, MatmulParams, Region, Shape2, Softmax};
use gpuworthy_core::{Error, Implements, Precision, Workload};
use gpuworthy_wgpu::WgpuBackend;

mod common;
use common::backend;

fn is_llvmpipe(b: &WgpuBackend) -> bool {
    b.adapter_info().name.to_ascii_lowercase().contains("llvmpipe")
}

/// Runs `variant` on `input`: past the limit on llvmpipe it must be refused naming the limit; otherwise it must
/// match the reference.
fn correct_or_refused<W: Workload>(b: &WgpuBackend, variant: &str, input: &W::Input, past_the_limit: bool)
where
    WgpuBackend: Implements<W>,
{
    let what = format!("{} {variant} {}", W::NAME, W::params(input));
    match b.run(variant, input) {
        Ok(output) => {
            assert!(!(past_the_limit && is_llvmpipe(b)), "{what}: ran past llvmpipe's loop limit instead of refusing");
            let expected = W::reference(input).unwrap();
            W::check(input, &expected, &output, Precision::Fp32).unwrap_or_else(|m| panic!("{what}: {m}"));
        }
        Err(Error::TooLarge { what: refused, limit }) => {
            assert!(past_the_limit && is_llvmpipe(b), "{what} was refused: {refused}: {limit}");
            assert!(limit.contains("65535 loop trips"), "{what}: the limit is not named: {limit}");
        }
        Err(e) => panic!("{what}: {e}"),
    }
}

#[test]
fn matmul_with_a_long_inner_dimension() {
    let Some(b) = backend() else { return };
    for (k, past) in [(60_000, false), (65_536, true)] {
        let input = Matmul::generate(&MatmulParams::new(1, k, 2), 3).unwrap();
        correct_or_refused::<Matmul>(&b, "naive", &input, past);
    }
    let input = Matmul::generate(&MatmulParams::new(2, 65_536, 3), 3).unwrap();
    for variant in ["tiled", "register", "wide"] {
        correct_or_refused::<Matmul>(&b, variant, &input, true);
    }
}

#[test]
fn softmax_with_rows_of_2_to_the_24() {
    let Some(b) = backend() else { return };
    let input = Softmax::generate(&Shape2::new(1, 1 << 24), 3).unwrap();
    correct_or_refused::<Softmax>(&b, "unfused", &input, true);
    let input = Softmax::generate(&Shape2::new(1, 1 << 23), 3).unwrap();
    correct_or_refused::<Softmax>(&b, "unfused", &input, false);
}

#[test]
fn mandelbrot_beyond_65535_iterations() {
    let Some(b) = backend() else { return };
    // A region inside the set: every pixel runs all its iterations.
    let inside = Region { x_min: -0.1, x_max: 0.1, y_min: -0.1, y_max: 0.1 };
    for (max_iter, past) in [(60_000, false), (70_000, true)] {
        let params = MandelbrotParams { max_iter, region: inside, ..MandelbrotParams::new(4, 4) };
        correct_or_refused::<Mandelbrot>(&b, "naive", &params, past);
    }
}
