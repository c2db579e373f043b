//! The NEON implementation of [`Simd`] (every aarch64 CPU has it; it includes FMA).

use std::arch::aarch64::*;

use super::{Level, Simd};

/// Token for NEON: 4 lanes of `f32`.
#[derive(Debug, Clone, Copy)]
pub struct Neon(());

impl Neon {
    /// The token, if this CPU has NEON.
    pub fn new() -> Option<Self> {
        std::arch::is_aarch64_feature_detected!("neon").then_some(Neon(()))
    }

    /// The token without checking.
    ///
    /// # Safety
    ///
    /// The CPU must support NEON.
    #[inline(always)]
    pub unsafe fn new_unchecked() -> Self {
        Neon(())
    }
}

// SAFETY (for every `unsafe` block in this impl): a `Neon` token exists only on a CPU with NEON, so the intrinsics'
// feature requirements hold; loads and stores go through slices indexed to at least 4 elements first.
#[allow(clippy::undocumented_unsafe_blocks)] // one SAFETY comment above covers the impl
impl Simd for Neon {
    const LANES: usize = 4;
    const LEVEL: Level = Level::Neon;
    type V = float32x4_t;
    type M = uint32x4_t;

    #[inline(always)]
    fn splat(self, x: f32) -> float32x4_t {
        unsafe { vdupq_n_f32(x) }
    }
    #[inline(always)]
    fn load(self, s: &[f32]) -> float32x4_t {
        let s = &s[..4];
        unsafe { vld1q_f32(s.as_ptr()) }
    }
    #[inline(always)]
    fn store(self, s: &mut [f32], v: float32x4_t) {
        let s = &mut s[..4];
        unsafe { vst1q_f32(s.as_mut_ptr(), v) }
    }
    #[inline(always)]
    fn store_truncated(self, s: &mut [u32], v: float32x4_t) {
        let s = &mut s[..4];
        unsafe { vst1q_u32(s.as_mut_ptr(), vcvtq_u32_f32(v)) }
    }
    #[inline(always)]
    fn add(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        unsafe { vaddq_f32(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        unsafe { vsubq_f32(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        unsafe { vmulq_f32(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
        unsafe { vfmaq_f32(c, a, b) }
    }
    #[inline(always)]
    fn max(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        unsafe { vmaxnmq_f32(a, b) }
    }
    #[inline(always)]
    fn min(self, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        unsafe { vminnmq_f32(a, b) }
    }
    #[inline(always)]
    fn round(self, a: float32x4_t) -> float32x4_t {
        unsafe { vrndnq_f32(a) }
    }
    #[inline(always)]
    fn exp2_int(self, n: float32x4_t) -> float32x4_t {
        unsafe {
            let biased = vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127));
            vreinterpretq_f32_s32(vshlq_n_s32::<23>(biased))
        }
    }
    #[inline(always)]
    fn reduce_add(self, a: float32x4_t) -> f32 {
        unsafe { vaddvq_f32(a) }
    }
    #[inline(always)]
    fn reduce_max(self, a: float32x4_t) -> f32 {
        unsafe { vmaxnmvq_f32(a) }
    }
    #[inline(always)]
    fn lt(self, a: float32x4_t, b: float32x4_t) -> uint32x4_t {
        unsafe { vcltq_f32(a, b) }
    }
    #[inline(always)]
    fn is_nan(self, a: float32x4_t) -> uint32x4_t {
        unsafe { vmvnq_u32(vceqq_f32(a, a)) }
    }
    #[inline(always)]
    fn and(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        unsafe { vandq_u32(a, b) }
    }
    #[inline(always)]
    fn or(self, a: uint32x4_t, b: uint32x4_t) -> uint32x4_t {
        unsafe { vorrq_u32(a, b) }
    }
    #[inline(always)]
    fn any(self, m: uint32x4_t) -> bool {
        unsafe { vmaxvq_u32(m) != 0 }
    }
    #[inline(always)]
    fn all(self, m: uint32x4_t) -> bool {
        unsafe { vminvq_u32(m) != 0 }
    }
    #[inline(always)]
    fn select(self, m: uint32x4_t, a: float32x4_t, b: float32x4_t) -> float32x4_t {
        unsafe { vbslq_f32(m, a, b) }
    }
}
