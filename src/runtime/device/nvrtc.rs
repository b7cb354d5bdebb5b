//! NVRTC: compile kernlab's CUDA sources at run time for the exact device in hand, keep the
//! PTX, the CUBIN and the ptxas report, and cache the result in memory and on disk.
//!
//! The disk cache key is a hash of the source (with its headers), the options, the target
//! architecture and NVRTC's version. Entries are written atomically (temp file + rename) and
//! carry a checksum: a corrupt or truncated entry is recompiled, never trusted.

use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::{KernelSource, HEADERS};
use cudarc::nvrtc::{result as nvrtc, sys};
use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What NVRTC produced for one source file and one architecture.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub file: String,
    pub arch: String,
    pub options: Vec<String>,
    pub ptx: String,
    pub cubin: Vec<u8>,
    /// NVRTC's log, including the ptxas `-v` report.
    pub log: String,
    /// Whether this came from the disk cache.
    pub from_cache: bool,
}

/// What a compiled file is loaded from: its CUBIN, or its PTX where NVRTC gave none.
pub enum ModuleImage<'a> {
    Cubin(&'a [u8]),
    Ptx(&'a str),
}

impl Compiled {
    /// The image kernlab loads this module from.
    pub fn image(&self) -> ModuleImage<'_> {
        if self.cubin.is_empty() {
            ModuleImage::Ptx(&self.ptx)
        } else {
            ModuleImage::Cubin(&self.cubin)
        }
    }
}

/// One kernel's line of the ptxas report.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PtxasInfo {
    pub kernel: String,
    pub registers: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub smem_bytes: u32,
    pub barriers: u32,
}

impl Compiled {
    /// The ptxas report, one entry per kernel (entry function) in the module.
    pub fn ptxas_report(&self) -> Vec<PtxasInfo> {
        parse_ptxas_log(&self.log)
    }

    pub fn ptxas_info(&self, kernel: &str) -> Option<PtxasInfo> {
        self.ptxas_report().into_iter().find(|r| r.kernel == kernel)
    }

    /// True when the PTX defines this entry point.
    pub fn has_entry(&self, kernel: &str) -> bool {
        ptx_entry_body(&self.ptx, kernel).is_some()
    }
}

/// The text of one `.entry` in a PTX module, from its header to the closing brace.
pub fn ptx_entry_body<'a>(ptx: &'a str, kernel: &str) -> Option<&'a str> {
    let needle = format!(".entry {kernel}(");
    let start = ptx.find(&needle)?;
    let rest = &ptx[start..];
    // The body ends at the first line that is exactly "}" after the opening brace.
    let end = rest.find("\n}\n").map(|e| e + 3).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Parse `ptxas info` lines (NVRTC with `-Xptxas=-v`).
pub fn parse_ptxas_log(log: &str) -> Vec<PtxasInfo> {
    let mut out: Vec<PtxasInfo> = Vec::new();
    let mut current: Option<usize> = None;
    let num_before = |s: &str, key: &str| -> Option<u32> {
        let i = s.find(key)?;
        s[..i].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        let l = line.trim();
        // Match on the message, not the prefix's spacing ("ptxas info    : ..." in 13.0).
        if let Some(rest) = l.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(PtxasInfo {
                kernel: name,
                ..Default::default()
            });
            current = Some(out.len() - 1);
            continue;
        }
        if let Some(rest) = l.split("Function properties for ").nth(1) {
            let name = rest.trim();
            current = out.iter().position(|r| r.kernel == name).or(current);
            continue;
        }
        let Some(ix) = current else { continue };
        let r = &mut out[ix];
        if l.contains("bytes stack frame") {
            r.stack_frame_bytes = num_before(l, "bytes stack frame").unwrap_or(0);
            r.spill_store_bytes = num_before(l, "bytes spill stores").unwrap_or(0);
            r.spill_load_bytes = num_before(l, "bytes spill loads").unwrap_or(0);
        }
        if l.contains("Used ") && l.contains("registers") {
            r.registers = num_before(l, "registers").unwrap_or(0);
            r.barriers = l
                .find("used ")
                .and_then(|i| l[i + 5..].split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            r.smem_bytes = num_before(l, "bytes smem").unwrap_or(0);
        }
    }
    out
}

/// Whether libnvrtc can be loaded here (cudarc panics on first use otherwise).
pub fn nvrtc_available() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    if *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() }) {
        Ok(())
    } else {
        Err(Error::MissingLibrary {
            lib: "NVRTC (libnvrtc.so)",
            why: "not found on the library path; install the CUDA toolkit or \
                  `pip install nvidia-cuda-nvrtc` and add its nvidia/cu13/lib to LD_LIBRARY_PATH"
                .into(),
        })
    }
}

/// NVRTC's (major, minor) version.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    nvrtc_available()?;
    let (mut major, mut minor) = (0, 0);
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Nvrtc {
            call: "nvrtcVersion".into(),
            err: e.to_string(),
        })?;
    Ok((major, minor))
}

/// The options kernlab compiles every kernel with, for one architecture such as `sm_90a` (part
/// of the kernel cache's key; the PTX tests check what they make).
pub fn base_options(arch: &str) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".into(),
        "-Xptxas=-v".into(),
        "-lineinfo".into(),
    ];
    // NVRTC 12.9+ keeps a cache of its own where a driver is installed, and a program it
    // serves from there comes back without ptxas's report (registers, spills): kernlab keeps
    // its own cache, report included, so NVRTC's is turned off.
    if nvrtc_version().is_ok_and(|v| v >= (12, 9)) {
        o.push("--no-cache".into());
    }
    o
}

/// Compile one source for one architecture, through the disk cache when one is usable.
pub fn compile_cached(src: &KernelSource, arch: &str, kernel_for_errors: &str) -> Result<Compiled> {
    compile_cached_in(cache_dir().as_deref(), src, arch, kernel_for_errors)
}

/// [`compile_cached`] with the kernel cache folder `dir` (none: compile every time).
pub fn compile_cached_in(
    dir: Option<&Path>,
    src: &KernelSource,
    arch: &str,
    kernel_for_errors: &str,
) -> Result<Compiled> {
    let options = base_options(arch);
    let version = nvrtc_version()?;
    let key = cache_key(src, &options, arch, version);
    if let Some(dir) = dir {
        let path = dir.join(format!("{}-{key}.bin", src.file.replace('.', "_")));
        if let Some(mut c) = read_entry(&path) {
            c.file = src.file.to_string();
            c.arch = arch.to_string();
            c.options = options;
            c.from_cache = true;
            return Ok(c);
        }
        let c = compile(src, arch, &options, kernel_for_errors)?;
        if let Err(e) = write_entry(dir, &path, &c) {
            warn_once(&format!(
                "kernlab: could not write the kernel cache at {} ({e}); compiling each run",
                dir.display()
            ));
        }
        return Ok(c);
    }
    compile(src, arch, &options, kernel_for_errors)
}

/// Compile one source for one architecture with NVRTC (no cache).
pub fn compile(
    src: &KernelSource,
    arch: &str,
    options: &[String],
    kernel_for_errors: &str,
) -> Result<Compiled> {
    nvrtc_available()?;
    let nv_err = |call: &str, e: nvrtc::NvrtcError| Error::Nvrtc {
        call: call.into(),
        err: e.to_string(),
    };
    let c_src = CString::new(src.src).map_err(|_| Error::Invalid("NUL in kernel source".into()))?;
    let c_name = CString::new(src.file).unwrap();
    let hdr_srcs: Vec<CString> = HEADERS
        .iter()
        .map(|h| CString::new(h.src).unwrap())
        .collect();
    let hdr_names: Vec<CString> = HEADERS
        .iter()
        .map(|h| CString::new(h.file).unwrap())
        .collect();
    let hdr_src_ptrs: Vec<*const c_char> = hdr_srcs.iter().map(|c| c.as_ptr()).collect();
    let hdr_name_ptrs: Vec<*const c_char> = hdr_names.iter().map(|c| c.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    unsafe {
        sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            c_src.as_ptr(),
            c_name.as_ptr(),
            HEADERS.len() as i32,
            hdr_src_ptrs.as_ptr(),
            hdr_name_ptrs.as_ptr(),
        )
        .result()
        .map_err(|e| nv_err("nvrtcCreateProgram", e))?;
    }
    let prog = unsafe { prog.assume_init() };
    let compiled = unsafe { nvrtc::compile_program(prog, options) };
    let log = unsafe { nvrtc::get_program_log(prog) }
        .map(|v| c_chars_to_string(&v))
        .unwrap_or_default();
    let result = (|| {
        if let Err(e) = compiled {
            return Err(Error::Compile {
                file: src.file.to_string(),
                kernel: kernel_for_errors.to_string(),
                options: options.join(" "),
                log: if log.trim().is_empty() {
                    e.to_string()
                } else {
                    log.clone()
                },
            });
        }
        let ptx = unsafe { nvrtc::get_ptx(prog) }
            .map(|v| c_chars_to_string(&v))
            .map_err(|e| nv_err("nvrtcGetPTX", e))?;
        let mut size = 0usize;
        unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }
            .result()
            .map_err(|e| nv_err("nvrtcGetCUBINSize", e))?;
        let mut cubin = vec![0u8; size];
        if size > 0 {
            unsafe { sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut c_char) }
                .result()
                .map_err(|e| nv_err("nvrtcGetCUBIN", e))?;
        }
        Ok(Compiled {
            file: src.file.to_string(),
            arch: arch.to_string(),
            options: options.to_vec(),
            ptx,
            cubin,
            log: log.clone(),
            from_cache: false,
        })
    })();
    unsafe {
        let _ = nvrtc::destroy_program(prog);
    }
    result
}

fn c_chars_to_string(v: &[c_char]) -> String {
    let bytes: Vec<u8> = v.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn cache_key(src: &KernelSource, options: &[String], arch: &str, version: (i32, i32)) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"kernlab-kernel-cache-v1\0");
    h.update(src.file.as_bytes());
    h.update(b"\0");
    h.update(src.src.as_bytes());
    for hdr in HEADERS {
        h.update(b"\0");
        h.update(hdr.file.as_bytes());
        h.update(b"\0");
        h.update(hdr.src.as_bytes());
    }
    for o in options {
        h.update(b"\0");
        h.update(o.as_bytes());
    }
    h.update(format!("\0{arch}\0{}.{}", version.0, version.1).as_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// kernlab's cache folder: `$KERNLAB_CACHE_DIR`, else `$XDG_CACHE_HOME/kernlab`, else
/// `~/.cache/kernlab`. It holds the compiled kernels (`kernels/`), the measured ceilings
/// (`ceilings.json`) and the autotuning results (`autotune.json`). `KERNLAB_CACHE_DIR=off` (or
/// empty) turns all three off.
pub fn cache_root() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("KERNLAB_CACHE_DIR") {
        return (d != "off" && !d.is_empty()).then(|| PathBuf::from(d));
    }
    if let Ok(x) = std::env::var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(x).join("kernlab"));
    }
    let home = std::env::var("HOME").ok()?;
    Some(PathBuf::from(home).join(".cache").join("kernlab"))
}

/// Where compiled kernels are kept: the `kernels` folder of [`cache_root`].
pub fn cache_dir() -> Option<PathBuf> {
    cache_root().map(|r| r.join("kernels"))
}

const MAGIC: &[u8; 8] = b"KLKRNL01";

fn write_entry(dir: &Path, path: &Path, c: &Compiled) -> std::io::Result<()> {
    write_parts(
        dir,
        path,
        MAGIC,
        &[c.ptx.as_bytes(), c.log.as_bytes(), &c.cubin[..]],
    )
}

/// Read a cache entry; `None` (and a warning) when it is missing, truncated or corrupt.
fn read_entry(path: &Path) -> Option<Compiled> {
    let parts = read_parts(path, MAGIC, 3)?;
    let parsed = (|| {
        Some(Compiled {
            file: String::new(),
            arch: String::new(),
            options: Vec::new(),
            ptx: String::from_utf8(parts[0].clone()).ok()?,
            log: String::from_utf8(parts[1].clone()).ok()?,
            cubin: parts[2].clone(),
            from_cache: true,
        })
    })();
    if parsed.is_none() {
        forget_corrupt(path);
    }
    parsed
}

/// Write a cache file: `magic`, each part length-prefixed, then a blake3 sum of it all. It is
/// written to a temporary file in `dir` and renamed into place, so that a reader (another
/// process among them) sees the whole file or none.
pub(crate) fn write_parts(
    dir: &Path,
    path: &Path,
    magic: &[u8; 8],
    parts: &[&[u8]],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut body = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum::<usize>() + 40);
    body.extend_from_slice(magic);
    for part in parts {
        body.extend_from_slice(&(part.len() as u64).to_le_bytes());
        body.extend_from_slice(part);
    }
    let sum = blake3::hash(&body);
    body.extend_from_slice(sum.as_bytes());
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, &body)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Read the `n` parts of a cache file [`write_parts`] wrote; `None` when it is missing, and
/// `None` with a warning (the file removed) when it is truncated, corrupt or of another kind.
pub(crate) fn read_parts(path: &Path, magic: &[u8; 8], n: usize) -> Option<Vec<Vec<u8>>> {
    let data = std::fs::read(path).ok()?;
    let parsed = (|| {
        if data.len() < magic.len() + 32 || &data[..8] != magic {
            return None;
        }
        let (body, sum) = data.split_at(data.len() - 32);
        if blake3::hash(body).as_bytes() != sum {
            return None;
        }
        let mut at = 8usize;
        let mut parts = Vec::with_capacity(n);
        for _ in 0..n {
            let len = u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?) as usize;
            at += 8;
            parts.push(body.get(at..at.checked_add(len)?)?.to_vec());
            at += len;
        }
        (at == body.len()).then_some(parts)
    })();
    if parsed.is_none() {
        forget_corrupt(path);
    }
    parsed
}

fn forget_corrupt(path: &Path) {
    warn_once(&format!(
        "kernlab: ignoring a corrupt kernel-cache entry {} (recompiling)",
        path.display()
    ));
    let _ = std::fs::remove_file(path);
}

pub(crate) fn warn_once(msg: &str) {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.iter().any(|m| m == msg) {
        stderr_line!("{msg}");
        seen.push(msg.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_ptxas_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k_a' for 'sm_90a'\n\
ptxas info    : Function properties for k_a\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'k_b' for 'sm_90a'\n\
ptxas info    : Function properties for k_b\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 10 registers, used 0 barriers, 368 bytes cmem[0]\n";
        let r = parse_ptxas_log(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            PtxasInfo {
                kernel: "k_a".into(),
                registers: 40,
                stack_frame_bytes: 8,
                spill_store_bytes: 4,
                spill_load_bytes: 12,
                smem_bytes: 1024,
                barriers: 1
            }
        );
        assert_eq!(r[1].registers, 10);
        assert_eq!(r[1].spill_store_bytes, 0);
    }

    #[test]
    fn corrupt_cache_entries_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        let c = Compiled {
            file: "f.cu".into(),
            arch: "sm_90a".into(),
            options: vec![],
            ptx: ".entry k(".into(),
            cubin: vec![1, 2, 3],
            log: "log".into(),
            from_cache: false,
        };
        write_entry(dir.path(), &path, &c).unwrap();
        let back = read_entry(&path).expect("a good entry reads back");
        assert_eq!(back.ptx, c.ptx);
        assert_eq!(back.cubin, c.cubin);
        assert_eq!(back.log, c.log);
        // Flip one byte: the checksum must catch it, and the entry is removed.
        let mut data = std::fs::read(&path).unwrap();
        data[12] ^= 0xff;
        std::fs::write(&path, &data).unwrap();
        assert!(read_entry(&path).is_none());
        assert!(!path.exists());
        // A truncated file is rejected too.
        write_entry(dir.path(), &path, &c).unwrap();
        let data = std::fs::read(&path).unwrap();
        std::fs::write(&path, &data[..data.len() / 2]).unwrap();
        assert!(read_entry(&path).is_none());
    }
}
