//! Explicit SIMD, chosen at run time from the CPU's features.
//!
//! Kernels are written once, generic over the [`Simd`] trait, and instantiated for each instruction set: AVX-512,
//! AVX2 + FMA and NEON where the CPU has them, and a portable fallback of eight-lane arrays otherwise. The
//! `simd_kernel!` macro (private to this crate) writes the per-instruction-set entry points: each is a
//! `#[target_feature]` function that inlines the generic kernel, so the intrinsics compile to the instruction set the
//! entry point enables, and a dispatcher calls the best one the CPU supports.
//!
//! Why this shape: the binary is built for generic x86-64 (it must run on any host, the GPU machine included), so
//! instruction sets beyond SSE2 can only be used behind run-time detection; and writing every kernel once per
//! instruction set by hand would multiply the code by four. Each backend carries its level ([`Supported`], the best
//! the CPU has unless `GPUWORTHY_CPU_SIMD` (`avx512`, `avx2`, `neon`, `portable`) or
//! [`crate::CpuOptions`] chooses another, to compare levels or to test the fallback), and passes it to every kernel.
//!
//! A value of type `S: Simd` is a *token*: it can only be obtained once the CPU is known to support `S`'s
//! instructions, which is what makes calling the intrinsics inside its methods sound.

/// An instruction set's vectors of `f32` and the operations the kernels need.
pub trait Simd: Copy + Send + Sync + 'static {
    /// Lanes per vector.
    const LANES: usize;
    /// The level this token belongs to.
    const LEVEL: Level;
    /// A vector of `LANES` `f32`.
    type V: Copy;
    /// A lane mask, the result of a comparison.
    type M: Copy;

    /// Every lane `x`.
    fn splat(self, x: f32) -> Self::V;
    /// The first `LANES` values of `s` (which must hold at least that many).
    fn load(self, s: &[f32]) -> Self::V;
    /// Stores into the first `LANES` values of `s` (which must hold at least that many).
    fn store(self, s: &mut [f32], v: Self::V);
    /// Stores into the first `LANES` values of `s` bypassing the caches where the instruction set can (a
    /// non-temporal store, which saves reading the line before writing it). `s` must be aligned to the vector's size
    /// (see [`Simd::aligned_prefix`]); call [`Simd::fence`] after the last one.
    fn store_stream(self, s: &mut [f32], v: Self::V) {
        self.store(s, v);
    }
    /// Orders earlier streaming stores before later stores (a no-op where stores do not stream).
    fn fence(self) {}
    /// How many leading elements of `s` to handle one by one so that the rest starts aligned for
    /// [`Simd::store_stream`].
    fn aligned_prefix(self, s: &[f32]) -> usize {
        let bytes = Self::LANES * size_of::<f32>();
        let misalignment = s.as_ptr() as usize % bytes;
        if misalignment == 0 { 0 } else { ((bytes - misalignment) / size_of::<f32>()).min(s.len()) }
    }
    /// Truncates each lane towards zero and stores it as an integer into the first `LANES` values of `s`. Lanes must
    /// hold values in `[0, 2^31)`.
    fn store_truncated(self, s: &mut [u32], v: Self::V);
    /// `a + b`.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a − b`.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a · b`.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a · b + c`, fused where the instruction set has FMA.
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// Lane-wise maximum (either operand where one is NaN: callers handle NaN themselves).
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// Lane-wise minimum (either operand where one is NaN).
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    /// Rounds each lane to the nearest integer (ties to even).
    fn round(self, a: Self::V) -> Self::V;
    /// `2^n` for lanes holding integers `n` in `[-126, 127]`.
    fn exp2_int(self, n: Self::V) -> Self::V;
    /// The sum of the lanes.
    fn reduce_add(self, a: Self::V) -> f32;
    /// The maximum of the lanes.
    fn reduce_max(self, a: Self::V) -> f32;
    /// Lanes where `a < b`.
    fn lt(self, a: Self::V, b: Self::V) -> Self::M;
    /// Lanes where `a` is NaN.
    fn is_nan(self, a: Self::V) -> Self::M;
    /// Lanes set in both masks.
    fn and(self, a: Self::M, b: Self::M) -> Self::M;
    /// Lanes set in either mask.
    fn or(self, a: Self::M, b: Self::M) -> Self::M;
    /// Whether any lane is set.
    fn any(self, m: Self::M) -> bool;
    /// Whether every lane is set.
    fn all(self, m: Self::M) -> bool;
    /// `a` where the mask is set, `b` elsewhere.
    fn select(self, m: Self::M, a: Self::V, b: Self::V) -> Self::V;

    /// `exp(x)` for each lane, within 2 ulp over the range where the result is a normal `f32`; lanes below −87.3
    /// give a value below 1e-37 (so exp(−inf) is not exactly 0), lanes above 88.7 are clamped there. Callers pass
    /// `x ≤ 0` (softmax subtracts the maximum), and never NaN.
    #[inline(always)]
    fn exp(self, x: Self::V) -> Self::V {
        // exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x − n·ln 2 split in two parts for accuracy (Cody–Waite),
        // and exp(r) on |r| ≤ ln(2)/2 by a degree-6 polynomial (Taylor coefficients, error below 2e-8 there).
        let x = self.min(self.max(x, self.splat(-87.3)), self.splat(88.7));
        let n = self.round(self.mul(x, self.splat(std::f32::consts::LOG2_E)));
        let r = self.mul_add(n, self.splat(-0.693_145_75), x);
        let r = self.mul_add(n, self.splat(-1.428_606_8e-6), r);
        let mut p = self.splat(1.0 / 720.0);
        for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = self.mul_add(p, r, self.splat(c));
        }
        // n ≥ -126 keeps 2^n normal; x ≥ -87.3 gives n ≥ -126.
        self.mul(p, self.exp2_int(n))
    }
}

/// Whether the CPU is Intel's (CPUID's vendor string `GenuineIntel`): kernels whose best shape differs between
/// Intel's and AMD's cores of the same instruction set ask it. Asked once per process (CPUID leaves a virtual machine
/// for its host).
#[cfg(target_arch = "x86_64")]
pub fn vendor_is_intel() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(|| {
        // Leaf 0 exists on every x86-64 CPU; newer compilers than the minimum supported one declare it safe.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID leaf 0 is defined on every x86-64 processor and only reads identification registers.
        let leaf = unsafe { std::arch::x86_64::__cpuid(0) };
        let vendor: Vec<u8> = [leaf.ebx, leaf.edx, leaf.ecx].iter().flat_map(|r| r.to_le_bytes()).collect();
        vendor == b"GenuineIntel"
    })
}

/// The instruction sets the CPU backend can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// AVX-512F (16 lanes), with FMA.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX2 with FMA (8 lanes).
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    /// NEON (4 lanes, with FMA).
    #[cfg(target_arch = "aarch64")]
    Neon,
    /// Arrays of eight `f32`, vectorised by the compiler for the baseline instruction set.
    Portable,
}

impl Level {
    /// The name used in reports and by `GPUWORTHY_CPU_SIMD`.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => "avx512",
            #[cfg(target_arch = "x86_64")]
            Level::Avx2Fma => "avx2",
            #[cfg(target_arch = "aarch64")]
            Level::Neon => "neon",
            Level::Portable => "portable",
        }
    }

    /// A description for reports, e.g. `AVX2+FMA (8 lanes)`.
    pub fn describe(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => "AVX-512 (16 lanes)",
            #[cfg(target_arch = "x86_64")]
            Level::Avx2Fma => "AVX2+FMA (8 lanes)",
            #[cfg(target_arch = "aarch64")]
            Level::Neon => "NEON (4 lanes)",
            Level::Portable => "portable (8-lane arrays)",
        }
    }

    /// Lanes per vector at this level.
    pub fn lanes(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => 16,
            #[cfg(target_arch = "x86_64")]
            Level::Avx2Fma => 8,
            #[cfg(target_arch = "aarch64")]
            Level::Neon => 4,
            Level::Portable => 8,
        }
    }

    /// The levels this CPU supports, best first (`Portable` always last).
    pub fn supported() -> Vec<Level> {
        let mut levels = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma") {
                levels.push(Level::Avx512);
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                levels.push(Level::Avx2Fma);
            }
        }
        #[cfg(target_arch = "aarch64")]
        if std::arch::is_aarch64_feature_detected!("neon") {
            levels.push(Level::Neon);
        }
        levels.push(Level::Portable);
        levels
    }
}

/// The level `GPUWORTHY_CPU_SIMD` asks for: `None` when it is unset or empty, an error naming the variable and the
/// levels this CPU supports when it names another (running a kernel with instructions the CPU lacks would be
/// undefined behaviour, and silently ignoring the request would measure the wrong thing).
pub fn requested_level() -> gpuworthy_core::Result<Option<Supported>> {
    const NAME: &str = "GPUWORTHY_CPU_SIMD";
    let Some(wanted) = gpuworthy_core::env::read(NAME)? else { return Ok(None) };
    let supported = Level::supported();
    match supported.iter().find(|l| l.name().eq_ignore_ascii_case(&wanted)) {
        Some(&level) => Ok(Some(Supported(level))),
        None => {
            let names: Vec<_> = supported.iter().map(|l| l.name()).collect();
            Err(gpuworthy_core::env::invalid_value(
                NAME,
                &wanted,
                &format!("a level this CPU supports: {}", names.join(", ")),
            ))
        }
    }
}

/// A level this CPU supports. Only [`Level::checked`] and [`Supported::best`] make one, both after detecting the
/// level's instructions, so a kernel dispatched on a `Supported` runs only instructions the CPU has: this is what the
/// `unsafe` entry points of `simd_kernel!` rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supported(Level);

impl Supported {
    /// The best level this CPU supports.
    pub fn best() -> Supported {
        Supported(Level::supported()[0])
    }

    /// The level.
    pub fn level(self) -> Level {
        self.0
    }
}

impl Level {
    /// This level, if the CPU supports it.
    pub fn checked(self) -> Option<Supported> {
        Level::supported().contains(&self).then_some(Supported(self))
    }
}

/// Defines a function whose body is generic over [`Simd`], compiled once per instruction set and dispatched on a
/// [`Supported`] level, which the generated function takes as its first argument (a backend's own level,
/// [`crate::CpuBackend::simd`]). It is how every SIMD kernel of this crate is written, and how a workload defined
/// outside it writes its own.
///
/// ```
/// use gpuworthy_cpu::CpuBackend;
/// use gpuworthy_cpu::simd::Simd;
/// use rayon::prelude::*;
///
/// gpuworthy_cpu::simd_kernel! {
///     /// Adds one to every element, a vector at a time.
///     fn add_one<S>(s, x: &mut [f32]) {
///         let mut chunks = x.chunks_exact_mut(S::LANES);
///         for v in &mut chunks {
///             let sum = s.add(s.load(v), s.splat(1.0));
///             s.store(v, sum);
///         }
///         for x in chunks.into_remainder() {
///             *x += 1.0;
///         }
///     }
/// }
///
/// let cpu = CpuBackend::new()?;
/// let mut x = vec![1.0f32; 10_000];
/// cpu.install(|| x.par_chunks_mut(4096).for_each(|block| add_one(cpu.simd(), block)));
/// assert!(x.iter().all(|&v| v == 2.0));
/// # Ok::<(), gpuworthy_core::Error>(())
/// ```
/// The body sees the token as `s` and its type as `S`. Keep rayon outside the body: code on other threads does not
/// inherit the entry point's target features.
#[macro_export]
macro_rules! simd_kernel {
    ($(#[$meta:meta])* $vis:vis fn $name:ident<$S:ident>($s:ident $(, $arg:ident : $ty:ty)* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)] // the argument list is the kernel's own
        $vis fn $name(level: $crate::simd::Supported, $($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn generic<$S: $crate::simd::Simd>($s: $S, $($arg: $ty),*) $(-> $ret)? $body

            match level.level() {
                #[cfg(target_arch = "x86_64")]
                $crate::simd::Level::Avx512 => {
                    #[target_feature(enable = "avx512f,avx2,fma")]
                    fn avx512($($arg: $ty),*) $(-> $ret)? {
                        // SAFETY: this entry point is only called on a `Supported` Avx512, made after detecting AVX-512F and FMA.
                        generic(unsafe { $crate::simd::x86::Avx512::new_unchecked() }, $($arg),*)
                    }
                    // SAFETY: `level` is a `Supported` Avx512: AVX-512F and FMA, which `avx512` enables, were detected.
                    unsafe { avx512($($arg),*) }
                }
                #[cfg(target_arch = "x86_64")]
                $crate::simd::Level::Avx2Fma => {
                    #[target_feature(enable = "avx2,fma")]
                    fn avx2($($arg: $ty),*) $(-> $ret)? {
                        // SAFETY: this entry point is only called on a `Supported` Avx2Fma, made after detecting AVX2 and FMA.
                        generic(unsafe { $crate::simd::x86::Avx2Fma::new_unchecked() }, $($arg),*)
                    }
                    // SAFETY: `level` is a `Supported` Avx2Fma: AVX2 and FMA, which `avx2` enables, were detected.
                    unsafe { avx2($($arg),*) }
                }
                #[cfg(target_arch = "aarch64")]
                $crate::simd::Level::Neon => {
                    #[target_feature(enable = "neon")]
                    fn neon($($arg: $ty),*) $(-> $ret)? {
                        // SAFETY: this entry point is only called on a `Supported` Neon, made after detecting NEON.
                        generic(unsafe { $crate::simd::arm::Neon::new_unchecked() }, $($arg),*)
                    }
                    // SAFETY: `level` is a `Supported` Neon: NEON was detected.
                    unsafe { neon($($arg),*) }
                }
                $crate::simd::Level::Portable => generic($crate::simd::Portable, $($arg),*),
            }
        }
    };
}
pub(crate) use crate::simd_kernel;

/// The portable fallback: eight-lane arrays the compiler vectorises for whatever baseline it targets.
#[derive(Debug, Clone, Copy)]
pub struct Portable;

type Lanes = [f32; 8];

#[inline(always)]
fn map2(a: Lanes, b: Lanes, f: impl Fn(f32, f32) -> f32) -> Lanes {
    std::array::from_fn(|i| f(a[i], b[i]))
}

impl Simd for Portable {
    const LANES: usize = 8;
    const LEVEL: Level = Level::Portable;
    type V = Lanes;
    type M = [bool; 8];

    #[inline(always)]
    fn splat(self, x: f32) -> Lanes {
        [x; 8]
    }
    #[inline(always)]
    fn load(self, s: &[f32]) -> Lanes {
        s[..8].try_into().expect("eight lanes")
    }
    #[inline(always)]
    fn store(self, s: &mut [f32], v: Lanes) {
        s[..8].copy_from_slice(&v);
    }
    #[inline(always)]
    fn store_truncated(self, s: &mut [u32], v: Lanes) {
        s[..8].copy_from_slice(&v.map(|x| x as u32));
    }
    #[inline(always)]
    fn add(self, a: Lanes, b: Lanes) -> Lanes {
        map2(a, b, |a, b| a + b)
    }
    #[inline(always)]
    fn sub(self, a: Lanes, b: Lanes) -> Lanes {
        map2(a, b, |a, b| a - b)
    }
    #[inline(always)]
    fn mul(self, a: Lanes, b: Lanes) -> Lanes {
        map2(a, b, |a, b| a * b)
    }
    #[inline(always)]
    fn mul_add(self, a: Lanes, b: Lanes, c: Lanes) -> Lanes {
        // Unfused: without an FMA instruction, `f32::mul_add` is a slow library call.
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    fn max(self, a: Lanes, b: Lanes) -> Lanes {
        map2(a, b, |a, b| if a > b { a } else { b })
    }
    #[inline(always)]
    fn min(self, a: Lanes, b: Lanes) -> Lanes {
        map2(a, b, |a, b| if a < b { a } else { b })
    }
    #[inline(always)]
    fn round(self, a: Lanes) -> Lanes {
        a.map(f32::round_ties_even)
    }
    #[inline(always)]
    fn exp2_int(self, n: Lanes) -> Lanes {
        n.map(|n| f32::from_bits((((n as i32) + 127) as u32) << 23))
    }
    #[inline(always)]
    fn reduce_add(self, a: Lanes) -> f32 {
        ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
    }
    #[inline(always)]
    fn reduce_max(self, a: Lanes) -> f32 {
        a.into_iter().fold(f32::NEG_INFINITY, |m, x| if x > m { x } else { m })
    }
    #[inline(always)]
    fn lt(self, a: Lanes, b: Lanes) -> [bool; 8] {
        std::array::from_fn(|i| a[i] < b[i])
    }
    #[inline(always)]
    fn is_nan(self, a: Lanes) -> [bool; 8] {
        a.map(f32::is_nan)
    }
    #[inline(always)]
    fn and(self, a: [bool; 8], b: [bool; 8]) -> [bool; 8] {
        std::array::from_fn(|i| a[i] & b[i])
    }
    #[inline(always)]
    fn or(self, a: [bool; 8], b: [bool; 8]) -> [bool; 8] {
        std::array::from_fn(|i| a[i] | b[i])
    }
    #[inline(always)]
    fn any(self, m: [bool; 8]) -> bool {
        m.into_iter().fold(false, |a, b| a | b)
    }
    #[inline(always)]
    fn all(self, m: [bool; 8]) -> bool {
        m.into_iter().fold(true, |a, b| a & b)
    }
    #[inline(always)]
    fn select(self, m: [bool; 8], a: Lanes, b: Lanes) -> Lanes {
        std::array::from_fn(|i| if m[i] { a[i] } else { b[i] })
    }
}

#[cfg(target_arch = "x86_64")]
pub mod x86;

#[cfg(target_arch = "aarch64")]
pub mod arm;

#[cfg(test)]
mod tests {
    //! Every level this CPU supports must agree with scalar arithmetic on every operation. Levels the CPU lacks
    //! cannot run here; the test prints which ones it covered.

    use super::*;

    /// Applies every operation lane-wise and returns the results one after another.
    fn all_ops<S: Simd>(s: S, a: &[f32], b: &[f32]) -> Vec<f32> {
        let (va, vb) = (s.load(a), s.load(b));
        let mut out = Vec::new();
        let mut lanes = vec![0.0; S::LANES];
        let results = [
            s.add(va, vb),
            s.sub(va, vb),
            s.mul(va, vb),
            s.mul_add(va, vb, va),
            s.max(va, vb),
            s.min(va, vb),
            s.round(va),
            s.exp(s.min(va, s.splat(0.0))),
            s.select(s.lt(va, vb), va, vb),
            s.select(s.is_nan(va), vb, va),
        ];
        for v in results {
            s.store(&mut lanes, v);
            out.extend_from_slice(&lanes);
        }
        assert_eq!(S::LANES, S::LEVEL.lanes());
        let mut ints = vec![0u32; S::LANES];
        s.store_truncated(&mut ints, s.max(s.mul(va, s.splat(1000.0)), s.splat(0.0)));
        out.extend(ints.iter().map(|&i| i as f32));
        out.push(s.reduce_add(va));
        out.push(s.reduce_max(va));
        out.push(s.any(s.lt(va, vb)) as u8 as f32);
        out.push(s.any(s.and(s.lt(va, vb), s.lt(vb, va))) as u8 as f32);
        out.push(s.any(s.or(s.is_nan(va), s.is_nan(vb))) as u8 as f32);
        out.push(s.all(s.lt(va, s.splat(1000.0))) as u8 as f32);
        out.push(s.all(s.lt(va, vb)) as u8 as f32);
        out
    }

    /// The same in scalar `f64`, with each result's tolerance.
    fn expected(a: &[f32], b: &[f32]) -> Vec<(f64, f64)> {
        let ulp = f32::EPSILON as f64;
        let mut out = Vec::new();
        for (&a, &b) in a.iter().zip(b) {
            out.push(((a as f64 + b as f64), ulp * (a + b).abs() as f64));
        }
        for (&a, &b) in a.iter().zip(b) {
            out.push(((a as f64 - b as f64), ulp * (a - b).abs() as f64));
        }
        for (&a, &b) in a.iter().zip(b) {
            out.push((a as f64 * b as f64, ulp * (a * b).abs() as f64));
        }
        for (&a, &b) in a.iter().zip(b) {
            out.push((a as f64 * b as f64 + a as f64, ulp * ((a * b).abs() + a.abs()) as f64));
        }
        out.extend(a.iter().zip(b).map(|(&a, &b)| (a.max(b) as f64, 0.0)));
        out.extend(a.iter().zip(b).map(|(&a, &b)| (a.min(b) as f64, 0.0)));
        out.extend(a.iter().map(|&a| (a.round_ties_even() as f64, 0.0)));
        out.extend(a.iter().map(|&a| {
            let e = (a.min(0.0) as f64).exp();
            (e, if e < 1e-37 { 1e-37 } else { 3.0 * ulp * e })
        }));
        out.extend(a.iter().zip(b).map(|(&a, &b)| ((if a < b { a } else { b }) as f64, 0.0)));
        out.extend(a.iter().zip(b).map(|(&a, &b)| ((if a.is_nan() { b } else { a }) as f64, 0.0)));
        out.extend(a.iter().map(|&a| ((a * 1000.0).max(0.0) as u32 as f64, 0.0)));
        out.push((a.iter().map(|&x| x as f64).sum(), 4.0 * ulp * a.iter().map(|x| x.abs() as f64).sum::<f64>()));
        out.push((a.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64, 0.0));
        out.push((a.iter().zip(b).any(|(a, b)| a < b) as u8 as f64, 0.0));
        out.push((0.0, 0.0));
        out.push((a.iter().chain(b).any(|x| x.is_nan()) as u8 as f64, 0.0));
        out.push((1.0, 0.0));
        out.push((a.iter().zip(b).all(|(a, b)| a < b) as u8 as f64, 0.0));
        out
    }

    fn agrees_with_scalar<S: Simd>(s: S, name: &str) {
        for seed in 0..200u64 {
            let a = gpuworthy_core::rng::uniform_f32(seed, 0, S::LANES, -100.0, 100.0);
            let b = gpuworthy_core::rng::uniform_f32(seed, 1, S::LANES, -100.0, 100.0);
            let got = all_ops(s, &a, &b);
            let want = expected(&a, &b);
            assert_eq!(got.len(), want.len());
            for (i, (&g, &(w, tolerance))) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g as f64 - w).abs() <= tolerance.max(f32::EPSILON as f64 * w.abs()),
                    "{name}, seed {seed}, result {i} (operation {}): got {g}, want {w}",
                    i / S::LANES
                );
            }
        }
        println!("SIMD level {name}: every operation agrees with scalar arithmetic");
    }

    #[test]
    fn every_supported_level_agrees_with_scalar_arithmetic() {
        agrees_with_scalar(Portable, "portable");
        #[cfg(target_arch = "x86_64")]
        {
            match x86::Avx2Fma::new() {
                Some(s) => agrees_with_scalar(s, "avx2"),
                None => println!("SIMD level avx2: not supported by this CPU, not tested"),
            }
            match x86::Avx512::new() {
                Some(s) => agrees_with_scalar(s, "avx512"),
                None => println!("SIMD level avx512: not supported by this CPU, not tested"),
            }
        }
        #[cfg(target_arch = "aarch64")]
        match arm::Neon::new() {
            Some(s) => agrees_with_scalar(s, "neon"),
            None => println!("SIMD level neon: not supported by this CPU, not tested"),
        }
    }

    #[test]
    fn only_a_level_the_cpu_supports_is_checked() {
        assert_eq!(Supported::best().level(), Level::supported()[0]);
        for level in Level::supported() {
            assert_eq!(level.checked().map(Supported::level), Some(level));
        }
        #[cfg(target_arch = "x86_64")]
        if !is_x86_feature_detected!("avx512f") {
            assert_eq!(Level::Avx512.checked(), None);
        }
    }
}
