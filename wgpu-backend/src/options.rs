//! Which adapter the backend opens and how it builds shaders: [`WgpuOptions`], with the one place that reads the
//! backend's environment variables ([`WgpuOptions::from_env`]), so that code and tests can open a backend with options
//! of their own whatever the environment holds.

use std::fmt;
use std::str::FromStr;

use gpuworthy_core::{Result, env};

use crate::ShaderChecks;

/// Which adapter to use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AdapterChoice {
    /// The best adapter: discrete GPU, then integrated, virtual, CPU.
    #[default]
    Auto,
    /// The adapter at this index in [`crate::WgpuBackend::adapters`]' list.
    Index(usize),
    /// The best adapter of this wgpu backend (`vulkan`, `metal`, `dx12`).
    Api(wgpu::Backend),
    /// The best adapter whose name contains this text (case-insensitive).
    Name(String),
}

impl AdapterChoice {
    /// The choice named by the environment variable `GPUWORTHY_WGPU_ADAPTER`, or [`AdapterChoice::Auto`] when it is
    /// unset or empty. Any text is a valid choice; one that matches no adapter makes the backend unavailable, with
    /// the adapters found named.
    pub fn from_env() -> Result<Self> {
        Ok(env::read(ADAPTER)?
            .map_or(Self::Auto, |s| s.parse().unwrap_or_else(|never: std::convert::Infallible| match never {})))
    }
}

impl FromStr for AdapterChoice {
    type Err = std::convert::Infallible;

    /// A number is an index, a wgpu backend name is an API, anything else part of a name.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let s = s.trim();
        if let Ok(index) = s.parse() {
            return Ok(AdapterChoice::Index(index));
        }
        let api = match s.to_ascii_lowercase().as_str() {
            "vulkan" | "vk" => Some(wgpu::Backend::Vulkan),
            "metal" => Some(wgpu::Backend::Metal),
            "dx12" | "d3d12" => Some(wgpu::Backend::Dx12),
            "gl" | "gles" => Some(wgpu::Backend::Gl),
            _ => None,
        };
        Ok(api.map_or_else(|| AdapterChoice::Name(s.to_owned()), AdapterChoice::Api))
    }
}

impl fmt::Display for AdapterChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterChoice::Auto => f.write_str("the best adapter"),
            AdapterChoice::Index(i) => write!(f, "adapter {i}"),
            AdapterChoice::Api(api) => write!(f, "a {api} adapter"),
            AdapterChoice::Name(name) => write!(f, "an adapter named like `{name}`"),
        }
    }
}

/// Preference order of device types: lower is better.
pub(crate) fn device_rank(kind: wgpu::DeviceType) -> u8 {
    match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

/// The variable naming the adapter.
const ADAPTER: &str = "GPUWORTHY_WGPU_ADAPTER";

/// The order in which an expression's `sum` adds its workgroups' totals ([`WgpuOptions::sum_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SumOrder {
    /// Always the same order: the same inputs give the same bits on every run. The last workgroup to finish adds
    /// the others' totals (Vulkan), or a second dispatch does.
    #[default]
    Fixed,
    /// The order the workgroups finish in: each adds its total to the result with a floating-point atomic, where
    /// the adapter has them (`SHADER_FLOAT32_ATOMIC`), and none waits for the others. The result may differ in its
    /// last bits from run to run, as a sum by `atomicAdd` in CUDA does; it is checked against the reference like any
    /// other. Only a plain `sum` (no function applied to it after) is added so; other reductions keep the fixed
    /// order.
    Any,
}

impl SumOrder {
    /// The order named by `GPUWORTHY_WGPU_SUM_ORDER` (`fixed` or `any`), [`SumOrder::Fixed`] when it is unset.
    pub fn from_env() -> Result<Self> {
        const NAME: &str = "GPUWORTHY_WGPU_SUM_ORDER";
        let Some(text) = env::read(NAME)? else { return Ok(SumOrder::Fixed) };
        match text.trim().to_ascii_lowercase().as_str() {
            "fixed" => Ok(SumOrder::Fixed),
            "any" => Ok(SumOrder::Any),
            _ => Err(env::invalid_value(NAME, &text, "fixed or any")),
        }
    }
}

impl fmt::Display for SumOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SumOrder::Fixed => "fixed",
            SumOrder::Any => "any",
        })
    }
}

/// How to open the wgpu backend: which adapter, which of wgpu's run-time shader checks, the largest chunk a kernel
/// binds, and the order of a sum's additions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WgpuOptions {
    /// The adapter.
    pub adapter: AdapterChoice,
    /// wgpu's run-time checks compiled into the shaders.
    pub shader_checks: ShaderChecks,
    /// A chunk size below the adapter's binding limit, in bytes (a multiple of 16, at least 1 MiB); `None` for the
    /// adapter's limit.
    pub binding_cap: Option<u64>,
    /// The order of an expression's `sum`: fixed (the default), or any, for floating-point atomics.
    pub sum_order: SumOrder,
}

impl WgpuOptions {
    /// The options the environment asks for: `GPUWORTHY_WGPU_ADAPTER`, `GPUWORTHY_WGPU_CHECKS` (or
    /// `GPUWORTHY_WGPU_UNCHECKED`), `GPUWORTHY_WGPU_MAX_BINDING` and `GPUWORTHY_WGPU_SUM_ORDER`; the defaults where
    /// they are unset. A bad value is an error naming the variable and its valid values.
    pub fn from_env() -> Result<Self> {
        Ok(WgpuOptions {
            adapter: AdapterChoice::from_env()?,
            shader_checks: ShaderChecks::from_env()?,
            binding_cap: binding_cap_from_env()?,
            sum_order: SumOrder::from_env()?,
        })
    }

    /// The same options on another adapter.
    pub fn with_adapter(self, adapter: AdapterChoice) -> Self {
        WgpuOptions { adapter, ..self }
    }
}

/// Parses every environment variable this backend reads (`GPUWORTHY_WGPU_ADAPTER`, `GPUWORTHY_WGPU_CHECKS`,
/// `GPUWORTHY_WGPU_UNCHECKED`, `GPUWORTHY_WGPU_MAX_BINDING`, `GPUWORTHY_WGPU_SUM_ORDER`) without opening an adapter: an error names the first bad
/// one and its valid values. [`crate::WgpuBackend::new`] refuses the same values.
pub fn check_environment() -> Result<()> {
    WgpuOptions::from_env().map(drop)
}

/// The chunk size asked for by `GPUWORTHY_WGPU_MAX_BINDING` (`64M`, `2^26`, `1000000`), at least 1 MiB.
fn binding_cap_from_env() -> Result<Option<u64>> {
    const NAME: &str = "GPUWORTHY_WGPU_MAX_BINDING";
    let Some(text) = env::read(NAME)? else { return Ok(None) };
    let text = text.as_str();
    let (digits, scale) = match text.chars().last() {
        Some('k' | 'K') => (&text[..text.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&text[..text.len() - 1], 1 << 20),
        Some('g' | 'G') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    let value = match digits.split_once('^') {
        Some((base, exp)) => base.parse::<u64>().ok().zip(exp.parse::<u32>().ok()).and_then(|(b, e)| b.checked_pow(e)),
        None => digits.parse::<u64>().ok(),
    }
    .and_then(|v| v.checked_mul(scale))
    .filter(|&v| v >= 1 << 20)
    .ok_or_else(|| env::invalid_value(NAME, text, "a size of at least 1M, such as 64M"))?;
    Ok(Some(value / 16 * 16))
}
