//! AVX2 + FMA and AVX-512 implementations of [`Simd`].
//!
//! Every method is `#[inline(always)]` so that it compiles inside the `#[target_feature]` entry point that
//! the `simd_kernel!` macro generates. Called from elsewhere (tests do), the intrinsics stay out-of-line
//! calls: slower, still correct, because a token exists only where the CPU has the features.

use std::arch::x86_64::*;

use super::{Level, Simd};

/// Token for AVX2 with FMA: 8 lanes of `f32`.
#[derive(Debug, Clone, Copy)]
pub struct Avx2Fma(());

impl Avx2Fma {
    /// The token, if this CPU has AVX2 and FMA.
    pub fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Avx2Fma(()))
    }

    /// The token without checking.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and FMA.
    #[inline(always)]
    pub unsafe fn new_unchecked() -> Self {
        Avx2Fma(())
    }
}

// SAFETY (for every `unsafe` block in this impl): an `Avx2Fma` token exists only on a CPU with AVX2 and FMA (see
// `new` and `new_unchecked`), so the intrinsics' feature requirements hold; loads and stores go through slices
// indexed to at least 8 elements first, so they stay in bounds; streaming stores also assert their alignment.
#[allow(clippy::undocumented_unsafe_blocks)] // one SAFETY comment above covers the impl
impl Simd for Avx2Fma {
    const LANES: usize = 8;
    const LEVEL: Level = Level::Avx2Fma;
    type V = __m256;
    type M = __m256;

    #[inline(always)]
    fn splat(self, x: f32) -> __m256 {
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    fn load(self, s: &[f32]) -> __m256 {
        let s = &s[..8];
        unsafe { _mm256_loadu_ps(s.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, s: &mut [f32], v: __m256) {
        let s = &mut s[..8];
        unsafe { _mm256_storeu_ps(s.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn store_stream(self, s: &mut [f32], v: __m256) {
        let s = &mut s[..8];
        assert!((s.as_ptr() as usize).is_multiple_of(32), "streaming stores need 32-byte alignment");
        unsafe { _mm256_stream_ps(s.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn fence(self) {
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    fn store_truncated(self, s: &mut [u32], v: __m256) {
        let s = &mut s[..8];
        unsafe { _mm256_storeu_si256(s.as_mut_ptr().cast(), _mm256_cvttps_epi32(v)) }
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn max(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    fn min(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_min_ps(a, b) }
    }
    #[inline(always)]
    fn round(self, a: __m256) -> __m256 {
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn exp2_int(self, n: __m256) -> __m256 {
        unsafe {
            let biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
            _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased))
        }
    }
    #[inline(always)]
    fn reduce_add(self, a: __m256) -> f32 {
        unsafe {
            let quad = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
            _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps::<1>(pair, pair)))
        }
    }
    #[inline(always)]
    fn reduce_max(self, a: __m256) -> f32 {
        unsafe {
            let quad = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let pair = _mm_max_ps(quad, _mm_movehl_ps(quad, quad));
            _mm_cvtss_f32(_mm_max_ss(pair, _mm_shuffle_ps::<1>(pair, pair)))
        }
    }
    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn is_nan(self, a: __m256) -> __m256 {
        unsafe { _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a) }
    }
    #[inline(always)]
    fn and(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_and_ps(a, b) }
    }
    #[inline(always)]
    fn or(self, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_or_ps(a, b) }
    }
    #[inline(always)]
    fn any(self, m: __m256) -> bool {
        unsafe { _mm256_movemask_ps(m) != 0 }
    }
    #[inline(always)]
    fn all(self, m: __m256) -> bool {
        unsafe { _mm256_movemask_ps(m) == 0xFF }
    }
    #[inline(always)]
    fn select(self, m: __m256, a: __m256, b: __m256) -> __m256 {
        unsafe { _mm256_blendv_ps(b, a, m) }
    }
}

/// Token for AVX-512F with FMA: 16 lanes of `f32`.
#[derive(Debug, Clone, Copy)]
pub struct Avx512(());

impl Avx512 {
    /// The token, if this CPU has AVX-512F and FMA.
    pub fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma")).then_some(Avx512(()))
    }

    /// The token without checking.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F and FMA.
    #[inline(always)]
    pub unsafe fn new_unchecked() -> Self {
        Avx512(())
    }
}

// SAFETY (for every `unsafe` block in this impl): an `Avx512` token exists only on a CPU with AVX-512F and FMA (see
// `new` and `new_unchecked`), so the intrinsics' feature requirements hold; loads and stores go through slices
// indexed to at least 16 elements first, so they stay in bounds; streaming stores also assert their alignment.
#[allow(clippy::undocumented_unsafe_blocks)] // one SAFETY comment above covers the impl
impl Simd for Avx512 {
    const LANES: usize = 16;
    const LEVEL: Level = Level::Avx512;
    type V = __m512;
    type M = __mmask16;

    #[inline(always)]
    fn splat(self, x: f32) -> __m512 {
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    fn load(self, s: &[f32]) -> __m512 {
        let s = &s[..16];
        unsafe { _mm512_loadu_ps(s.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, s: &mut [f32], v: __m512) {
        let s = &mut s[..16];
        unsafe { _mm512_storeu_ps(s.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn store_stream(self, s: &mut [f32], v: __m512) {
        let s = &mut s[..16];
        assert!((s.as_ptr() as usize).is_multiple_of(64), "streaming stores need 64-byte alignment");
        unsafe { _mm512_stream_ps(s.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn fence(self) {
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    fn store_truncated(self, s: &mut [u32], v: __m512) {
        let s = &mut s[..16];
        unsafe { _mm512_storeu_si512(s.as_mut_ptr().cast(), _mm512_cvttps_epi32(v)) }
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn max(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    fn min(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_min_ps(a, b) }
    }
    #[inline(always)]
    fn round(self, a: __m512) -> __m512 {
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn exp2_int(self, n: __m512) -> __m512 {
        unsafe {
            let biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
            _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased))
        }
    }
    #[inline(always)]
    fn reduce_add(self, a: __m512) -> f32 {
        unsafe { _mm512_reduce_add_ps(a) }
    }
    #[inline(always)]
    fn reduce_max(self, a: __m512) -> f32 {
        unsafe { _mm512_reduce_max_ps(a) }
    }
    #[inline(always)]
    fn lt(self, a: __m512, b: __m512) -> __mmask16 {
        unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn is_nan(self, a: __m512) -> __mmask16 {
        unsafe { _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a) }
    }
    #[inline(always)]
    fn and(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a & b
    }
    #[inline(always)]
    fn or(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a | b
    }
    #[inline(always)]
    fn any(self, m: __mmask16) -> bool {
        m != 0
    }
    #[inline(always)]
    fn all(self, m: __mmask16) -> bool {
        m == 0xFFFF
    }
    #[inline(always)]
    fn select(self, m: __mmask16, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_mask_blend_ps(m, b, a) }
    }
}
