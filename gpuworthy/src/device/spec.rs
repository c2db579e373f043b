//! [`DeviceSpec`]: which device to open, as people write it on the command line and in `GPUWORTHY_BACKEND`.
//!
//! Parsing a device's name is apart from opening it ([`crate::Device::open`]), so that a bad name is refused before
//! any driver is loaded, and so that the spec can be tested on a machine with no GPU.

use std::fmt;
use std::str::FromStr;

use gpuworthy_core::{BackendKind, Error, Result, env};

/// Which device to open: a backend and, for a GPU backend, which of its devices.
///
/// Written as on the command line and in `GPUWORTHY_BACKEND`: `cpu`, `cuda` (device 0), `cuda:1`, `wgpu` (the
/// adapter `GPUWORTHY_WGPU_ADAPTER` names, else the best), `wgpu:<adapter>` (an index from `gpuworthy devices`,
/// `vulkan`, `metal`, `dx12`, or part of the adapter's name).
///
/// ```
/// use gpuworthy::DeviceSpec;
/// assert_eq!("cuda:1".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda { ordinal: 1 });
/// assert!("cuda:first".parse::<DeviceSpec>().is_err());
/// assert!("opencl".parse::<DeviceSpec>().unwrap_err().to_string().contains("cuda:<ordinal>"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    /// The host CPU.
    Cpu,
    /// The CUDA device of this ordinal (0 is the first).
    Cuda {
        /// The device's index, as `nvidia-smi` lists them.
        ordinal: usize,
    },
    /// A wgpu adapter.
    Wgpu {
        /// Which adapter; `None` for the one `GPUWORTHY_WGPU_ADAPTER` names, else the best.
        adapter: Option<String>,
    },
}

impl DeviceSpec {
    /// The forms a device can be written in, for error messages and help texts.
    pub const FORMS: &'static str = "cpu, cuda, cuda:<ordinal>, wgpu, wgpu:<adapter>";

    /// The backend this device belongs to.
    pub fn kind(&self) -> BackendKind {
        match self {
            DeviceSpec::Cpu => BackendKind::Cpu,
            DeviceSpec::Cuda { .. } => BackendKind::Cuda,
            DeviceSpec::Wgpu { .. } => BackendKind::Wgpu,
        }
    }

    /// The device `GPUWORTHY_BACKEND` names; `None` when it is unset or empty, or `auto` (the choice is then made
    /// per call: [`crate::choose::auto`]). A value that is none of [`DeviceSpec::FORMS`] or `auto` is an error naming the
    /// variable.
    pub fn from_env() -> Result<Option<DeviceSpec>> {
        match env::read(Self::ENV)? {
            Some(text) => Self::from_env_value(&text),
            None => Ok(None),
        }
    }

    /// The variable [`DeviceSpec::from_env`] reads.
    const ENV: &str = "GPUWORTHY_BACKEND";

    /// What a set, non-empty `GPUWORTHY_BACKEND` of `text` means.
    fn from_env_value(text: &str) -> Result<Option<DeviceSpec>> {
        if text.trim().eq_ignore_ascii_case("auto") {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|_| env::invalid_value(Self::ENV, text, &format!("auto, {}", DeviceSpec::FORMS)))
    }

    /// Parses a comma-separated list of devices (`cpu,cuda:1`); empty items are ignored.
    pub fn parse_list(list: &str) -> Result<Vec<DeviceSpec>> {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse).collect()
    }
}

impl From<BackendKind> for DeviceSpec {
    /// The backend's first device: `cuda:0`, or the wgpu adapter of `GPUWORTHY_WGPU_ADAPTER` (else the best).
    fn from(kind: BackendKind) -> Self {
        match kind {
            BackendKind::Cpu => DeviceSpec::Cpu,
            BackendKind::Cuda => DeviceSpec::Cuda { ordinal: 0 },
            BackendKind::Wgpu => DeviceSpec::Wgpu { adapter: None },
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::invalid(format!("unknown device `{s}`: {why}; expected one of {}", Self::FORMS));
        let (kind, detail) = match s.trim().split_once(':') {
            Some((kind, detail)) => (kind, Some(detail.trim())),
            None => (s.trim(), None),
        };
        let kind: BackendKind = kind
            .parse()
            .map_err(|_| Error::invalid(format!("unknown backend `{kind}`: expected one of {}", Self::FORMS)))?;
        match (kind, detail) {
            (BackendKind::Cpu, None) => Ok(DeviceSpec::Cpu),
            (BackendKind::Cpu, Some(_)) => Err(bad("the CPU has no device index")),
            (BackendKind::Cuda, None) => Ok(DeviceSpec::Cuda { ordinal: 0 }),
            (BackendKind::Cuda, Some(n)) => {
                n.parse().map(|ordinal| DeviceSpec::Cuda { ordinal }).map_err(|_| bad("a CUDA ordinal is a number"))
            }
            (BackendKind::Wgpu, None) => Ok(DeviceSpec::Wgpu { adapter: None }),
            (BackendKind::Wgpu, Some("")) => Err(bad("name the adapter after `wgpu:`")),
            (BackendKind::Wgpu, Some(adapter)) => Ok(DeviceSpec::Wgpu { adapter: Some(adapter.to_owned()) }),
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind();
        match self {
            DeviceSpec::Cpu | DeviceSpec::Wgpu { adapter: None } => write!(f, "{kind}"),
            DeviceSpec::Cuda { ordinal } => write!(f, "{kind}:{ordinal}"),
            DeviceSpec::Wgpu { adapter: Some(adapter) } => write!(f, "{kind}:{adapter}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_as_written() {
        for text in ["cpu", "cuda:0", "cuda:3", "wgpu", "wgpu:1", "wgpu:vulkan", "wgpu:llvmpipe"] {
            assert_eq!(text.parse::<DeviceSpec>().unwrap().to_string(), text);
        }
        assert_eq!(" CUDA ".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda { ordinal: 0 });
        for bad in ["", "gpu", "cpu:1", "cuda:", "cuda:-1", "cuda:x", "wgpu:", "metal"] {
            let err = bad.parse::<DeviceSpec>().unwrap_err().to_string();
            assert!(err.contains(DeviceSpec::FORMS), "`{bad}`: {err}");
        }
    }

    #[test]
    fn a_bad_backend_variable_is_an_error_naming_it_and_every_valid_value() {
        for bad in ["bogus", "gpu", "cuda:x"] {
            let err = DeviceSpec::from_env_value(bad).unwrap_err().to_string();
            assert!(err.contains("GPUWORTHY_BACKEND") && err.contains(bad), "`{bad}`: {err}");
            assert!(err.contains("auto") && err.contains(DeviceSpec::FORMS), "`{bad}`: {err}");
        }
        assert_eq!(DeviceSpec::from_env_value(" Auto ").unwrap(), None);
        assert_eq!(DeviceSpec::from_env_value("CUDA:1").unwrap(), Some(DeviceSpec::Cuda { ordinal: 1 }));
    }
}
