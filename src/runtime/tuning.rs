//! The tuning cache: what `kernlab autotune` chose, keyed by device, op, variant, dtype and
//! shape bucket. Default dispatch looks its choice up here and falls back to a heuristic where
//! the cache has no entry.
//!
//! The cache is `autotune.json` in kernlab's cache folder (`~/.cache/kernlab`, or
//! `$KERNLAB_CACHE_DIR`; `KERNLAB_CACHE_DIR=off` turns it off). It is written atomically (a
//! temporary file renamed over the old one); a corrupt or stale file (another format version)
//! is ignored with one warning, and rewritten by the next `kernlab autotune`.

use crate::runtime::device::{nvrtc, CudaDevice};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One tuned choice.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The variant that won (for `auto` entries: which numbered version to run).
    pub variant: String,
    /// Its configuration's name (tile sizes, stages, GROUP_M…); empty for untunable ones.
    pub config: String,
    /// The shape it was tuned on, and its median time there.
    pub shape: Vec<usize>,
    pub median_ms: f64,
    /// How many candidates were measured.
    pub candidates: usize,
    pub tuned_at: String,
    pub kernlab_version: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: BTreeMap<String, Entry>,
}

const CACHE_VERSION: u32 = 1;

/// `autotune.json` in kernlab's cache folder ([`nvrtc::cache_root`]); None when the cache is
/// off.
pub fn cache_path() -> Option<PathBuf> {
    Some(nvrtc::cache_root()?.join("autotune.json"))
}

/// The device part of a key: model, arch, SM count and driver (a new driver tunes again).
pub fn device_key(d: &CudaDevice) -> String {
    device_key_of(
        &d.props.name,
        &d.arch,
        d.props.sm_count,
        &d.props.driver_version,
    )
}

/// [`device_key`] from its parts.
pub fn device_key_of(name: &str, arch: &str, sm_count: u32, driver: &str) -> String {
    format!("{name} · {arch} · {sm_count} SMs · CUDA driver {driver}")
}

/// The cache key of one entry.
pub fn key(device: &str, op: &str, variant: &str, dtype: DType, bucket: &str) -> String {
    format!("{device} | {op}/{variant} | {dtype} | {bucket}")
}

/// Read a cache file: Ok(None) when absent; Err(why) when unreadable, corrupt or stale.
fn read(path: &Path) -> std::result::Result<Option<CacheFile>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let file: CacheFile =
        serde_json::from_str(&text).map_err(|e| format!("it is not valid JSON ({e})"))?;
    if file.version != CACHE_VERSION {
        return Err(format!(
            "it has format version {} (this kernlab writes {CACHE_VERSION})",
            file.version
        ));
    }
    Ok(Some(file))
}

/// One phrase about a cache file for `kernlab doctor`: its entry count, or why it is ignored.
pub fn describe_file(path: &Path) -> String {
    match read(path) {
        Ok(None) => "none yet: `kernlab autotune` writes it".into(),
        Ok(Some(f)) => format!("{} entries", f.entries.len()),
        Err(why) => format!("ignored: {why}"),
    }
}

/// What this process has read from the cache (read once, updated by `store`).
static MEMO: Mutex<Option<(PathBuf, BTreeMap<String, Entry>)>> = Mutex::new(None);

/// The cached entry for `key` in the cache at `path` (read once per process; a corrupt or
/// stale file gives one warning on stderr and no entries).
pub fn lookup_in(path: &Path, key: &str) -> Option<Entry> {
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if memo.as_ref().is_none_or(|(p, _)| p != path) {
        let entries = match read(path) {
            Ok(Some(f)) => f.entries,
            Ok(None) => BTreeMap::new(),
            Err(why) => {
                stderr_line!(
                    "warning: ignoring the autotune cache {}: {why}; default heuristics apply \
                     until `kernlab autotune` rewrites it",
                    path.display()
                );
                BTreeMap::new()
            }
        };
        *memo = Some((path.to_path_buf(), entries));
    }
    memo.as_ref().and_then(|(_, m)| m.get(key).cloned())
}

/// The tuned entry for (device, op, variant, dtype, shape bucket), if any. The op's
/// descriptor makes the bucket (`OpDef::bucket`).
pub fn lookup(
    dev: &CudaDevice,
    op: &str,
    variant: &str,
    dtype: DType,
    bucket: &str,
) -> Option<Entry> {
    let path = cache_path()?;
    lookup_in(&path, &key(&device_key(dev), op, variant, dtype, bucket))
}

/// Run `f` holding an exclusive lock on `path`'s sibling lock file (`NAME.lock`): processes
/// that read, change and rewrite the same cache file take turns, so none loses another's
/// entry. The lock goes with the file handle when `f` returns.
pub fn locked<R>(path: &Path, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock_path = path.with_extension("lock");
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?;
    lock.lock().map_err(|e| Error::io(&lock_path, e))?;
    f()
}

/// Keep `entry` under `key`, with every other entry: under the cache's lock ([`locked`]),
/// written to a temporary file in the same folder, then renamed over the old one (a reader
/// never sees half a file). A corrupt or stale file is replaced.
pub fn store(path: &Path, key: &str, entry: &Entry) -> Result<()> {
    locked(path, || store_unlocked(path, key, entry))
}

fn store_unlocked(path: &Path, key: &str, entry: &Entry) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = read(path).ok().flatten().unwrap_or_default();
    file.version = CACHE_VERSION;
    file.entries.insert(key.to_string(), entry.clone());
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::Invalid(format!("serialising the autotune cache: {e}")))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, m)) = memo.as_mut() {
        if p == path {
            m.insert(key.to_string(), entry.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_key_names_model_arch_sms_and_driver() {
        assert_eq!(
            device_key_of("NVIDIA H200", "sm_90a", 132, "13.0"),
            "NVIDIA H200 · sm_90a · 132 SMs · CUDA driver 13.0"
        );
    }

    fn entry(v: &str) -> Entry {
        Entry {
            variant: v.into(),
            config: "128x256x64".into(),
            shape: vec![8192, 8192, 8192],
            median_ms: 1.5,
            candidates: 4,
            tuned_at: "2026-11-30T00:00:00Z".into(),
            kernlab_version: "0".into(),
        }
    }

    #[test]
    fn entries_round_trip_and_other_keys_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("autotune.json");
        store(&path, "a", &entry("v5_mma")).unwrap();
        store(&path, "b", &entry("v6_wgmma")).unwrap();
        let f = read(&path).unwrap().unwrap();
        assert_eq!(f.entries.len(), 2);
        assert_eq!(f.entries["a"].variant, "v5_mma");
        assert_eq!(lookup_in(&path, "b").unwrap().variant, "v6_wgmma");
        assert!(lookup_in(&path, "c").is_none());
    }

    #[test]
    fn a_corrupt_or_stale_cache_is_reported_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("autotune.json");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(read(&path).unwrap_err().contains("not valid JSON"));
        assert!(lookup_in(&path, "a").is_none());
        store(&path, "a", &entry("v4_grouped")).unwrap();
        assert_eq!(
            read(&path).unwrap().unwrap().entries["a"].variant,
            "v4_grouped"
        );
        std::fs::write(&path, r#"{"version": 99, "entries": {}}"#).unwrap();
        assert!(read(&path).unwrap_err().contains("version 99"));
    }
}
