//! Do this CPU's bf16 instructions pay? Times, on one core, the peak of AVX512-BF16's `vdpbf16ps` (32 bf16
//! multiply-adds an instruction, into 16 `f32` sums) against the peak of AVX-512's `f32` FMA (16 multiply-adds an
//! instruction), each as 16 independent chains of accumulators, so that the instructions' throughput, not their
//! latency, sets the time.
//!
//! A CPU whose `vdpbf16ps` issues as often as its FMA computes a bf16 matmul twice as fast as an `f32` one; one that
//! issues it less often gains nothing from bf16 but half the bytes. `matmul`'s `avx512-bf16` rung is written in it;
//! compare its GFLOP/s with `blocked`'s in `gpuworthy run matmul --size 1024 --backend cpu`.
//!
//! ```text
//! cargo run --release -p gpuworthy-cpu --example bf16_peak
//! ```

#[cfg(target_arch = "x86_64")]
mod peak {
    use std::arch::x86_64::*;

    /// Independent accumulator chains: more than the instructions' latency in cycles, fewer than the 32 registers.
    const CHAINS: usize = 16;

    /// `iterations` rounds of one `vdpbf16ps` into each chain; their sum, so that nothing is left out.
    ///
    /// # Safety
    ///
    /// The CPU runs AVX-512F and AVX512-BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn bf16_dot_products(iterations: usize) -> f32 {
        // bf16 pairs of 1.0 and of 2^-7: each instruction adds 2 * 2^-7 to every lane.
        // SAFETY: 512 bits of bf16 pairs, reinterpreted as the bf16 vector type they are.
        let ones: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(0x3f80_3f80)) };
        // SAFETY: as above.
        let small: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(0x3c00_3c00)) };
        let mut sums = [_mm512_setzero_ps(); CHAINS];
        for _ in 0..iterations {
            for sum in &mut sums {
                *sum = _mm512_dpbf16_ps(*sum, ones, small);
            }
        }
        _mm512_reduce_add_ps(sums.into_iter().fold(_mm512_setzero_ps(), |a, b| _mm512_add_ps(a, b)))
    }

    /// `iterations` rounds of one `f32` FMA into each chain; their sum.
    ///
    /// # Safety
    ///
    /// The CPU runs AVX-512F and FMA.
    #[target_feature(enable = "avx512f,fma")]
    pub unsafe fn f32_fmas(iterations: usize) -> f32 {
        let (one, small) = (_mm512_set1_ps(1.0), _mm512_set1_ps(2f32.powi(-7)));
        let mut sums = [_mm512_setzero_ps(); CHAINS];
        for _ in 0..iterations {
            for sum in &mut sums {
                *sum = _mm512_fmadd_ps(one, small, *sum);
            }
        }
        _mm512_reduce_add_ps(sums.into_iter().fold(_mm512_setzero_ps(), |a, b| _mm512_add_ps(a, b)))
    }

    /// Multiply-adds per round: 16 chains of 16 lanes, two products a lane for bf16, one for `f32`.
    pub const BF16_MULTIPLY_ADDS: usize = CHAINS * 16 * 2;
    /// See [`BF16_MULTIPLY_ADDS`].
    pub const F32_MULTIPLY_ADDS: usize = CHAINS * 16;
}

#[cfg(target_arch = "x86_64")]
fn main() {
    use std::time::Instant;
    if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma")) {
        println!("this CPU has no AVX-512: neither peak can be timed here");
        return;
    }
    let rounds = 20_000_000;
    // The median of five timings of each, after one untimed run.
    let time = |f: &dyn Fn() -> f32| {
        let _ = f();
        let mut seconds: Vec<f64> = (0..5)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(f());
                start.elapsed().as_secs_f64()
            })
            .collect();
        seconds.sort_by(f64::total_cmp);
        seconds[2]
    };
    // SAFETY: AVX-512F and FMA were detected above.
    let f32_s = time(&|| unsafe { peak::f32_fmas(rounds) });
    let f32_rate = (rounds * peak::F32_MULTIPLY_ADDS * 2) as f64 / f32_s / 1e9;
    println!("f32 FMA (vfmadd231ps):    {f32_rate:8.1} GFLOP/s on one core");
    if !is_x86_feature_detected!("avx512bf16") {
        println!("this CPU has no AVX512-BF16: a bf16 matmul here runs in f32 arithmetic (matmul's `bf16` rung)");
        return;
    }
    // SAFETY: AVX-512F and AVX512-BF16 were detected above.
    let bf16_s = time(&|| unsafe { peak::bf16_dot_products(rounds) });
    let bf16_rate = (rounds * peak::BF16_MULTIPLY_ADDS * 2) as f64 / bf16_s / 1e9;
    println!("bf16 dot (vdpbf16ps):     {bf16_rate:8.1} GFLOP/s on one core");
    println!("bf16 against f32: {:.2}x", bf16_rate / f32_rate);
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("AVX512-BF16 is an x86-64 extension: nothing to time on this CPU");
}
