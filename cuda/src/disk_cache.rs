//! Compiled kernels kept on disk between processes, so that a program's second run does not pay NVRTC again.
//!
//! Compiling a kernel costs tens to hundreds of milliseconds (an expression's first call, most of it); loading it from
//! a file costs about one. An entry holds the binary (CUBIN) NVRTC made for the device's own architecture, not PTX:
//! PTX is compiled again by the driver each time it is loaded, which its own cache under `~/.nv` hides only where that
//! cache survives (it does not in a fresh container, or with `CUDA_CACHE_DISABLE`); on an H100 with the driver's
//! cache off, loading an expression's PTX took far longer than its CUBIN (measured:
//! docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so).
//!
//! Entries are named by a SHA-256 of everything that decides the compiled code: the source, every compile option
//! (the architecture among them), and the driver's and NVRTC's versions, so a new toolkit or driver never loads an
//! old entry. Each entry carries a SHA-256 of its own contents: a file that was cut short, edited or overwritten does
//! not match and is compiled again and rewritten, never loaded. Writes go to a temporary file renamed into place, so
//! a reader never sees half an entry, and two processes that compile the same kernel at once both write a whole one.
//!
//! The cache is best effort: a directory that cannot be made or written leaves the backend compiling every time, as
//! with no cache. `GPUWORTHY_KERNEL_CACHE` names another directory, or `off`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use gpuworthy_core::{Result, env};
use sha2::{Digest, Sha256};

/// The first word of every entry, before the image's kind and the checksum of the rest.
const MAGIC: &str = "gpuworthy-module-2";

/// The code the driver loads: a binary for the device's own architecture, or PTX that the driver compiles on load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleImage {
    /// A CUBIN, which the driver loads as it is.
    Cubin(Vec<u8>),
    /// PTX text, which the driver compiles to the device's instructions when it loads it (an architecture newer than
    /// NVRTC knows).
    Ptx(String),
}

impl ModuleImage {
    fn kind(&self) -> &'static str {
        match self {
            ModuleImage::Cubin(_) => "cubin",
            ModuleImage::Ptx(_) => "ptx",
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            ModuleImage::Cubin(bytes) => bytes,
            ModuleImage::Ptx(text) => text.as_bytes(),
        }
    }
}

/// A compiled module as the cache keeps it: its image and the names of the kernels it defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedModule {
    /// What the driver loads.
    pub image: ModuleImage,
    /// The `extern "C" __global__` kernels it defines.
    pub entries: Vec<String>,
}

/// Where compiled kernels are kept, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskCache {
    directory: Option<PathBuf>,
}

impl DiskCache {
    /// The cache `GPUWORTHY_KERNEL_CACHE` names (a directory, or `off`), else `gpuworthy/cuda` in the user's cache
    /// directory; none when neither is known.
    pub fn from_env() -> Result<DiskCache> {
        let directory = match env::read("GPUWORTHY_KERNEL_CACHE")? {
            Some(value) if value.eq_ignore_ascii_case("off") => None,
            Some(value) => Some(PathBuf::from(value)),
            None => dirs::cache_dir().map(|dir| dir.join("gpuworthy").join("cuda")),
        };
        Ok(DiskCache { directory })
    }

    /// A cache in `directory`.
    pub fn at(directory: impl Into<PathBuf>) -> DiskCache {
        DiskCache { directory: Some(directory.into()) }
    }

    /// No cache: every kernel is compiled.
    pub fn off() -> DiskCache {
        DiskCache { directory: None }
    }

    /// The directory, if there is a cache.
    pub fn directory(&self) -> Option<&Path> {
        self.directory.as_deref()
    }

    fn entry(&self, key: &str) -> Option<PathBuf> {
        Some(self.directory.as_ref()?.join(format!("{key}.module")))
    }

    /// The module stored under `key`, if an entry is there and its checksum holds.
    pub fn load(&self, key: &str) -> Option<CachedModule> {
        let whole = fs::read(self.entry(key)?).ok()?;
        let (header, rest) = split_line(&whole)?;
        let (entries, image) = split_line(rest)?;
        let mut words = std::str::from_utf8(header).ok()?.split(' ');
        let (magic, kind, checksum) = (words.next()?, words.next()?, words.next()?);
        if magic != MAGIC || words.next().is_some() || checksum != hex_sha256(&[kind.as_bytes(), entries, image]) {
            return None;
        }
        let entries = std::str::from_utf8(entries).ok()?.split_whitespace().map(str::to_owned).collect();
        let image = match kind {
            "cubin" => ModuleImage::Cubin(image.to_vec()),
            // PTX is handed to the driver as a C string: one with a NUL inside is no entry of this cache's making.
            "ptx" => ModuleImage::Ptx(String::from_utf8(image.to_vec()).ok().filter(|ptx| !ptx.contains('\0'))?),
            _ => return None,
        };
        Some(CachedModule { image, entries })
    }

    /// Stores `module` under `key`, replacing any entry there; failures are ignored (the next run compiles again).
    pub fn store(&self, key: &str, module: &CachedModule) {
        let (Some(directory), Some(path)) = (self.directory.as_ref(), self.entry(key)) else { return };
        let (kind, image, entries) = (module.image.kind(), module.image.bytes(), module.entries.join(" "));
        let write = || -> std::io::Result<()> {
            fs::create_dir_all(directory)?;
            // A name of this process and this write: threads compiling the same source at once (the compile
            // cache does not hold its lock while NVRTC runs) each write a file of their own, and the last rename wins.
            static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temporary = directory.join(format!("{key}.{}.{write}.tmp", std::process::id()));
            let mut file = fs::File::create(&temporary)?;
            writeln!(file, "{MAGIC} {kind} {}", hex_sha256(&[kind.as_bytes(), entries.as_bytes(), image]))?;
            writeln!(file, "{entries}")?;
            file.write_all(image)?;
            // Not synced to disk: an entry cut short by a crash fails its checksum and is compiled again, and a sync
            // would put the disk's latency into the first call, which this cache exists to shorten.
            drop(file);
            fs::rename(&temporary, &path).inspect_err(|_| {
                let _ = fs::remove_file(&temporary);
            })
        };
        let _ = write();
    }

    /// Removes the entry under `key`, if any: for an entry whose checksum held but that the driver refused.
    pub fn forget(&self, key: &str) {
        if let Some(path) = self.entry(key) {
            let _ = fs::remove_file(path);
        }
    }
}

/// `bytes` cut at its first newline: the line without it, and the rest.
fn split_line(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    Some((&bytes[..end], &bytes[end + 1..]))
}

/// The hexadecimal SHA-256 of `parts`, each prefixed by its length so that no two lists of parts run together.
pub fn hex_sha256(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The key of a module: a hash of its source, its compile options and the toolchain (driver and NVRTC versions).
pub fn module_key(source: &str, options: &[String], toolchain: &str) -> String {
    let mut parts: Vec<&[u8]> = vec![source.as_bytes(), toolchain.as_bytes()];
    parts.extend(options.iter().map(|o| o.as_bytes()));
    hex_sha256(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gpuworthy-cache-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn module(image: ModuleImage, entries: &[&str]) -> CachedModule {
        CachedModule { image, entries: entries.iter().map(|e| (*e).to_owned()).collect() }
    }

    #[test]
    fn an_entry_comes_back_as_stored() {
        let dir = scratch("round-trip");
        let cache = DiskCache::at(&dir);
        assert_eq!(cache.load("k"), None);
        let binary = module(ModuleImage::Cubin(vec![0x7f, b'E', b'L', b'F', 0, b'\n', 0xff]), &["square", "scale"]);
        cache.store("k", &binary);
        assert_eq!(cache.load("k"), Some(binary));
        let text = module(ModuleImage::Ptx(".version 8.0\n.entry square(\n".into()), &["square"]);
        cache.store("k", &text);
        assert_eq!(cache.load("k"), Some(text));
        let none = module(ModuleImage::Cubin(Vec::new()), &[]);
        cache.store("k", &none);
        assert_eq!(cache.load("k"), Some(none));
        cache.forget("k");
        assert_eq!(cache.load("k"), None);
        let _ = fs::remove_dir_all(dir);
    }

    /// A truncated, edited or foreign file is not loaded: the caller compiles again and overwrites it.
    #[test]
    fn a_corrupt_entry_is_not_trusted() {
        let dir = scratch("corrupt");
        let cache = DiskCache::at(&dir);
        let stored = module(ModuleImage::Cubin(b"\x7fELF binary\nret".to_vec()), &["k"]);
        cache.store("k", &stored);
        let path = dir.join("k.module");
        let whole = fs::read(&path).unwrap();
        let replace = |from: &[u8], to: &[u8]| {
            let at = whole.windows(from.len()).position(|w| w == from).unwrap();
            [&whole[..at], to, &whole[at + from.len()..]].concat()
        };
        for corrupt in [
            whole[..whole.len() - 3].to_vec(),
            replace(b"ret", b"RET"),
            replace(b"\nk\n", b"\nj\n"),
            replace(b" cubin ", b" ptx "),
            replace(MAGIC.as_bytes(), b"gpuworthy-module-1"),
            b"\x7fELF binary\nret".to_vec(),
            Vec::new(),
            format!("{MAGIC}\n").into_bytes(),
            vec![0xff, 0xfe, b'\n', 0x00],
        ] {
            fs::write(&path, &corrupt).unwrap();
            assert_eq!(cache.load("k"), None, "{corrupt:?}");
        }
        // PTX with a NUL inside, its checksum right: not of this cache's making, and no C string for the driver.
        let nul = b"a\0b";
        let forged = [format!("{MAGIC} ptx {}\n\n", hex_sha256(&[b"ptx", b"", nul])).as_bytes(), nul].concat();
        fs::write(&path, forged).unwrap();
        assert_eq!(cache.load("k"), None);
        cache.store("k", &stored);
        assert_eq!(cache.load("k"), Some(stored));
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn no_directory_means_no_cache_and_no_error() {
        let ptx = module(ModuleImage::Ptx("ptx".into()), &[]);
        let cache = DiskCache::off();
        cache.store("k", &ptx);
        assert_eq!(cache.load("k"), None);
        // A directory that cannot be made (under a file) is no cache either.
        let file = scratch("not-a-directory");
        fs::write(&file, "a file").unwrap();
        let cache = DiskCache::at(file.join("below"));
        cache.store("k", &ptx);
        assert_eq!(cache.load("k"), None);
        let _ = fs::remove_file(file);
    }

    #[test]
    fn a_key_changes_with_the_source_every_option_and_the_toolchain() {
        let options = vec!["--gpu-architecture=compute_90".to_owned(), "-lineinfo".to_owned()];
        let key = module_key("kernel", &options, "driver 13000, nvrtc 13.0");
        assert_eq!(key.len(), 64);
        assert_eq!(key, module_key("kernel", &options, "driver 13000, nvrtc 13.0"));
        assert_ne!(key, module_key("kernel ", &options, "driver 13000, nvrtc 13.0"));
        assert_ne!(key, module_key("kernel", &options[..1], "driver 13000, nvrtc 13.0"));
        assert_ne!(key, module_key("kernel", &options, "driver 13010, nvrtc 13.0"));
        // Lengths separate the parts: moving text from one part to the next changes the key.
        assert_ne!(module_key("ab", &["c".into()], ""), module_key("a", &["bc".into()], ""));
    }
}
