//! Compiled kernels kept on disk between processes, so that a program's second run does not pay NVRTC again.
//!
//! Compiling a kernel costs tens to hundreds of milliseconds (an expression's first call, most of it); loading its
//! PTX from a file costs a few. Entries are named by a SHA-256 of everything that decides the compiled code: the
//! source, every compile option (the architecture among them), and the driver's and NVRTC's versions, so a new
//! toolkit or driver never loads an old entry. Each entry carries a SHA-256 of its own contents: a file that was cut
//! short, edited or overwritten does not match and is compiled again and rewritten, never loaded. Writes go to a
//! temporary file renamed into place, so a reader never sees half an entry, and two processes that compile the same
//! kernel at once both write a whole one.
//!
//! The cache is best effort: a directory that cannot be made or written leaves the backend compiling every time, as
//! with no cache. `GPUWORTHY_KERNEL_CACHE` names another directory, or `off`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use gpuworthy_core::{Result, env};
use sha2::{Digest, Sha256};

/// The first line of every entry, before the checksum of the rest.
const MAGIC: &str = "gpuworthy-ptx-1";

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
        Some(self.directory.as_ref()?.join(format!("{key}.ptx")))
    }

    /// The PTX stored under `key`, if an entry is there and its checksum holds.
    pub fn load(&self, key: &str) -> Option<String> {
        let text = fs::read_to_string(self.entry(key)?).ok()?;
        let (header, ptx) = text.split_once('\n')?;
        let (magic, checksum) = header.split_once(' ')?;
        (magic == MAGIC && checksum == hex_sha256(&[ptx.as_bytes()])).then(|| ptx.to_owned())
    }

    /// Stores `ptx` under `key`, replacing any entry there; failures are ignored (the next run compiles again).
    pub fn store(&self, key: &str, ptx: &str) {
        let (Some(directory), Some(path)) = (self.directory.as_ref(), self.entry(key)) else { return };
        let write = || -> std::io::Result<()> {
            fs::create_dir_all(directory)?;
            // A name of this process and this write: threads compiling the same source at once (the compile
            // cache does not hold its lock while NVRTC runs) each write a file of their own, and the last rename wins.
            static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temporary = directory.join(format!("{key}.{}.{write}.tmp", std::process::id()));
            let mut file = fs::File::create(&temporary)?;
            writeln!(file, "{MAGIC} {}", hex_sha256(&[ptx.as_bytes()]))?;
            file.write_all(ptx.as_bytes())?;
            file.sync_all()?;
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

    #[test]
    fn an_entry_comes_back_as_stored() {
        let dir = scratch("round-trip");
        let cache = DiskCache::at(&dir);
        assert_eq!(cache.load("k"), None);
        cache.store("k", ".version 8.0\n.entry square(\n");
        assert_eq!(cache.load("k").as_deref(), Some(".version 8.0\n.entry square(\n"));
        cache.store("k", "replaced\n");
        assert_eq!(cache.load("k").as_deref(), Some("replaced\n"));
        cache.forget("k");
        assert_eq!(cache.load("k"), None);
        let _ = fs::remove_dir_all(dir);
    }

    /// A truncated, edited or foreign file is not loaded: the caller compiles again and overwrites it.
    #[test]
    fn a_corrupt_entry_is_not_trusted() {
        let dir = scratch("corrupt");
        let cache = DiskCache::at(&dir);
        let ptx = ".version 8.0\n.visible .entry k(\n)\n{\n\tret;\n}\n";
        cache.store("k", ptx);
        let path = dir.join("k.ptx");
        let whole = fs::read_to_string(&path).unwrap();
        for corrupt in [
            whole[..whole.len() - 3].to_owned(),
            whole.replace("ret", "RET"),
            ptx.to_owned(),
            String::new(),
            format!("{MAGIC}\n{ptx}"),
            whole.replacen(MAGIC, "gpuworthy-ptx-0", 1),
        ] {
            fs::write(&path, &corrupt).unwrap();
            assert_eq!(cache.load("k"), None, "{corrupt:?}");
        }
        fs::write(&path, [0xff, 0xfe, b'\n', 0x00]).unwrap();
        assert_eq!(cache.load("k"), None);
        cache.store("k", ptx);
        assert_eq!(cache.load("k").as_deref(), Some(ptx));
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn no_directory_means_no_cache_and_no_error() {
        let cache = DiskCache::off();
        cache.store("k", "ptx");
        assert_eq!(cache.load("k"), None);
        // A directory that cannot be made (under a file) is no cache either.
        let file = scratch("not-a-directory");
        fs::write(&file, "a file").unwrap();
        let cache = DiskCache::at(file.join("below"));
        cache.store("k", "ptx");
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
