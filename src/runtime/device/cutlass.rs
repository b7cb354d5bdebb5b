//! The CUTLASS tier's build: `kernels/cutlass/gemm.cu` (embedded in the binary) compiled by
//! nvcc against CUTLASS's headers into one shared object a (dtype, epilogue) at first use, as
//! PyTorch's `load_inline` builds an extension, then loaded with its small C ABI.
//!
//! Why at first use and not at `cargo build`: the build needs nvcc and CUTLASS's headers,
//! which a machine running kernlab's other tiers (CI, a laptop) need not have, and a CUTLASS
//! 3.x Hopper GEMM takes about a minute of nvcc a configuration; built on demand, only the
//! configurations a run uses are built, once a machine, and a machine without the tools still
//! builds and runs everything else.
//!
//! The shared object is kept in kernlab's cache (`cutlass/`), keyed by the source, the
//! configuration and the architecture alone, so a cache filled on another machine (the GPU
//! machine has no compiler) is used as it is. Built to a temporary file and renamed into
//! place: processes building at once leave no torn library.
//!
//! Tools: nvcc is `$KERNLAB_NVCC`, else `nvcc` on the PATH, `$CUDA_HOME/bin/nvcc`,
//! `/usr/local/cuda/bin/nvcc`; pinned to CUDA 13.0 (`pip install nvidia-cuda-nvcc==13.0.88`
//! with the matching runtime, crt, nvvm and cccl wheels), whose code the 13.0 driver loads.
//! CUTLASS's headers are `$KERNLAB_CUTLASS` (a folder holding `include/cutlass/cutlass.h`),
//! else those of the `nvidia-cutlass` wheel that `$KERNLAB_PYTHON` (else `python3`) imports
//! (4.2.0.0 has them under `cutlass_library/source`).

use super::nvrtc::cache_root;
use crate::runtime::error::{Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// The GEMM's source.
pub static SOURCE: &str = include_str!("../../../kernels/cutlass/gemm.cu");

/// The unit's kernels (`KL_KERNEL` 0, 1, 2): schedule, CTA tile M×N and cluster shape, as
/// `kernels/cutlass/gemm.cu` defines them. The first is the default.
pub const KERNELS: [&str; 3] = [
    "coop_128x256_2x1",
    "coop_256x128_1x2",
    "pingpong_64x256_2x1",
];

/// One library of the GEMM: its element type, its epilogue and its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    /// `bf16` or `f16`.
    pub element: &'static str,
    /// 0 none; 1 + bias; 2 GeLU tanh of (· + bias); 3 GeLU erf of (· + bias).
    pub epilogue: u8,
    /// An index into [`KERNELS`].
    pub kernel: u8,
}

impl Config {
    fn defines(&self) -> [String; 3] {
        let e = match self.element {
            "f16" => "cutlass::half_t",
            _ => "cutlass::bfloat16_t",
        };
        [
            format!("-DKL_ELEMENT={e}"),
            format!("-DKL_EPILOGUE={}", self.epilogue),
            format!("-DKL_KERNEL={}", self.kernel),
        ]
    }
    fn name(&self) -> String {
        library_name(self)
    }
}

/// A configuration's name (its library's stem): `kl_cutlass_bf16_e2_coop_128x256_2x1`.
pub fn library_name(c: &Config) -> String {
    format!(
        "kl_cutlass_{}_e{}_{}",
        c.element,
        c.epilogue,
        KERNELS.get(c.kernel as usize).unwrap_or(&"unknown")
    )
}

/// The tools a build needs.
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub nvcc: PathBuf,
    /// CUTLASS's `include` and `tools/util/include`, and CUDA 13's `include/cccl`.
    pub includes: Vec<PathBuf>,
    /// nvcc's `lib` or `lib64` (the static CUDA runtime the library links).
    pub libs: Vec<PathBuf>,
}

fn unavailable(why: String) -> Error {
    Error::Unavailable {
        what: "the cutlass tier".into(),
        why,
    }
}

impl Toolchain {
    /// The tools from the environment (see the module's docs).
    pub fn find() -> Result<Toolchain> {
        Toolchain::find_with(
            std::env::var("KERNLAB_NVCC").ok().as_deref(),
            std::env::var("KERNLAB_CUTLASS").ok().as_deref(),
        )
    }

    /// The tools, nvcc and CUTLASS's folder given where they are known.
    pub fn find_with(nvcc: Option<&str>, cutlass: Option<&str>) -> Result<Toolchain> {
        let nvcc = match nvcc.filter(|s| !s.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => find_nvcc().ok_or_else(|| {
                unavailable(
                    "nvcc was not found (KERNLAB_NVCC, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin); \
                     pip install nvidia-cuda-nvcc==13.0.88 gives one"
                        .into(),
                )
            })?,
        };
        if !nvcc.is_file() {
            return Err(unavailable(format!(
                "nvcc {} does not exist",
                nvcc.display()
            )));
        }
        let root = match cutlass.filter(|s| !s.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => cutlass_from_python().ok_or_else(|| {
                unavailable(
                    "CUTLASS's headers were not found (KERNLAB_CUTLASS, or the nvidia-cutlass \
                     wheel: pip install nvidia-cutlass==4.2.0.0)"
                        .into(),
                )
            })?,
        };
        if !root.join("include/cutlass/cutlass.h").is_file() {
            return Err(unavailable(format!(
                "{} holds no include/cutlass/cutlass.h",
                root.display()
            )));
        }
        let mut includes = vec![root.join("include"), root.join("tools/util/include")];
        let mut libs = Vec::new();
        // CUDA 13 keeps libcu++ under include/cccl, which CUTLASS includes as <cccl/...>'s
        // targets; with nvcc's own include folder, and its libraries.
        if let Some(cuda) = nvcc.parent().and_then(Path::parent) {
            let inc = cuda.join("include");
            if inc.join("cccl").is_dir() {
                includes.push(inc.join("cccl"));
            }
            includes.push(inc);
            libs.extend(
                ["lib64", "lib"]
                    .iter()
                    .map(|l| cuda.join(l))
                    .filter(|l| l.is_dir()),
            );
        }
        Ok(Toolchain {
            nvcc,
            includes,
            libs,
        })
    }

    /// `nvcc --version`'s release line.
    pub fn nvcc_version(&self) -> Result<String> {
        let out = Command::new(&self.nvcc)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| unavailable(format!("{} could not be run ({e})", self.nvcc.display())))?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text
            .lines()
            .find(|l| l.contains("release"))
            .unwrap_or("")
            .trim()
            .to_string())
    }
}

fn find_nvcc() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(h) = std::env::var_os("CUDA_HOME") {
        dirs.push(PathBuf::from(h).join("bin"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.into_iter()
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

fn cutlass_from_python() -> Option<PathBuf> {
    let out = Command::new(super::triton::python())
        .args([
            "-c",
            "import cutlass_library, os; print(os.path.dirname(cutlass_library.__file__))",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let root = PathBuf::from(dir).join("source");
    (out.status.success() && root.is_dir()).then_some(root)
}

/// The nvcc command line of a configuration (its output `-o` appended by the caller).
pub fn nvcc_args(t: &Toolchain, c: &Config, arch: &str, src: &Path) -> Vec<String> {
    // NDEBUG: CUTLASS's device-side asserts are calls, and ptxas serialises wgmma across a
    // call (its warning C7510).
    let mut v: Vec<String> = [
        "-std=c++17",
        "-O3",
        "-DNDEBUG",
        "--expt-relaxed-constexpr",
        "-shared",
        "-Xcompiler=-fPIC",
        "-cudart=static",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // SASS only: the driver loads it without JIT, whatever PTX version nvcc would emit.
    let sm = arch.trim_start_matches("sm_");
    v.push(format!("-gencode=arch=compute_{sm},code=sm_{sm}"));
    v.extend(c.defines());
    v.extend(t.includes.iter().map(|i| format!("-I{}", i.display())));
    v.extend(t.libs.iter().map(|l| format!("-L{}", l.display())));
    v.push(src.display().to_string());
    v
}

fn cache_key(c: &Config, arch: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"kernlab-cutlass-v1\0");
    h.update(SOURCE.as_bytes());
    for d in c.defines() {
        h.update(b"\0");
        h.update(d.as_bytes());
    }
    h.update(format!("\0{arch}").as_bytes());
    h.finalize().to_hex()[..24].to_string()
}

/// Where a configuration's library is kept: `cutlass/` in kernlab's cache (none when the
/// cache is off: then it is built into a temporary folder each process).
pub fn library_path(dir: &Path, c: &Config, arch: &str) -> PathBuf {
    dir.join(format!("{}-{arch}-{}.so", c.name(), cache_key(c, arch)))
}

/// The kernels (indices into [`KERNELS`]) whose libraries for `element` on `arch` can be had
/// here: every one where nvcc and the headers are at hand, else those the cache holds a
/// library of, built from this source (a cache filled elsewhere; another epilogue's library
/// missing then refuses).
pub fn obtainable_kernels(element: &'static str, arch: &str) -> Vec<u8> {
    if Toolchain::find().is_ok() {
        return (0..KERNELS.len() as u8).collect();
    }
    cache_dir().map_or_else(Vec::new, |d| kernels_built(&d, element, arch))
}

/// The kernels of which `dir` holds a library for `element` on `arch`, any epilogue.
fn kernels_built(dir: &Path, element: &'static str, arch: &str) -> Vec<u8> {
    (0..KERNELS.len() as u8)
        .filter(|&kernel| {
            (0..4).any(|epilogue| {
                let c = Config {
                    element,
                    epilogue,
                    kernel,
                };
                library_path(dir, &c, arch).is_file()
            })
        })
        .collect()
}

/// The cache folder of built libraries.
pub fn cache_dir() -> Option<PathBuf> {
    cache_root().map(|r| r.join("cutlass"))
}

/// Build a configuration's library at `path` with `t` (no cache lookup).
pub fn build(t: &Toolchain, c: &Config, arch: &str, path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let src = tempfile::Builder::new()
        .suffix(".cu")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    std::fs::write(src.path(), SOURCE).map_err(|e| Error::io(src.path(), e))?;
    let out = tempfile::Builder::new()
        .suffix(".so")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    let mut args = nvcc_args(t, c, arch, src.path());
    args.push("-o".into());
    args.push(out.path().display().to_string());
    let done = Command::new(&t.nvcc)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unavailable(format!("{} could not be run ({e})", t.nvcc.display())))?;
    if !done.status.success() {
        let log = String::from_utf8_lossy(&done.stderr);
        let log: Vec<&str> = log
            .lines()
            .filter(|l| !l.contains("Warning: The"))
            .collect();
        return Err(Error::Compile {
            file: "kernels/cutlass/gemm.cu".into(),
            kernel: c.name(),
            options: args.join(" "),
            log: log.join("\n"),
        });
    }
    out.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Every configuration the GEMM ops use (both dtypes, the four epilogues, every kernel).
pub fn all_configs() -> Vec<Config> {
    let mut v = Vec::new();
    for element in ["bf16", "f16"] {
        for epilogue in 0..4 {
            for kernel in 0..KERNELS.len() as u8 {
                v.push(Config {
                    element,
                    epilogue,
                    kernel,
                });
            }
        }
    }
    v
}

/// Build every configuration missing from the cache for `arch` whose name contains one of
/// `only` (all where `only` is empty), one nvcc a core at once; how many were built.
pub fn build_all(arch: &str, only: &[String]) -> Result<usize> {
    let dir = cache_dir().ok_or_else(|| {
        Error::Invalid("the cache is off (KERNLAB_CACHE_DIR=off): nowhere to keep them".into())
    })?;
    let t = Toolchain::find()?;
    let todo: Vec<Config> = all_configs()
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.name().contains(o.as_str())))
        .filter(|c| !library_path(&dir, c, arch).is_file())
        .collect();
    // One nvcc a core (each takes a core and a few GB for about a minute).
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
    for batch in todo.chunks(at_once) {
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|c| {
                    let (t, dir) = (&t, &dir);
                    s.spawn(move || build(t, c, arch, &library_path(dir, c, arch)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Invalid("a build panicked".into())))
                })
                .collect()
        });
        for r in results {
            r?;
        }
    }
    Ok(todo.len())
}

/// A loaded configuration: its two C functions.
pub struct CutlassGemm {
    _lib: libloading::Library,
    /// (m, n, k, raster, swizzle) → bytes.
    pub workspace_bytes: unsafe extern "C" fn(i32, i32, i32, i32, i32) -> usize,
    #[allow(clippy::type_complexity)]
    pub gemm: unsafe extern "C" fn(
        *const std::ffi::c_void,
        *const std::ffi::c_void,
        *const std::ffi::c_void,
        *mut std::ffi::c_void,
        i32,
        i32,
        i32,
        i32,
        i32,
        *mut std::ffi::c_void,
        *mut std::ffi::c_void,
        *mut std::ffi::c_char,
        i32,
    ) -> i32,
}

/// A configuration's library for `arch`: loaded if this process has it, else read from the
/// cache, else built (about a minute of nvcc, said on stderr) and kept. Loaded once a process.
pub fn load(c: &Config, arch: &str) -> Result<Arc<CutlassGemm>> {
    type Loaded = HashMap<(Config, String), Arc<CutlassGemm>>;
    static LOADED: Mutex<Option<Loaded>> = Mutex::new(None);
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    let map = loaded.get_or_insert_with(HashMap::new);
    if let Some(g) = map.get(&(*c, arch.to_string())) {
        return Ok(g.clone());
    }
    let tmp;
    let dir = match cache_dir() {
        Some(d) => d,
        None => {
            tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
            tmp.path().to_path_buf()
        }
    };
    let path = library_path(&dir, c, arch);
    if !path.is_file() {
        let t = Toolchain::find()?;
        stderr_line!(
            "kernlab: building the CUTLASS GEMM {} for {arch} with {} (about a minute, once)",
            c.name(),
            t.nvcc.display()
        );
        build(&t, c, arch, &path)?;
    }
    // SAFETY: the library is kernlab's own build of kernels/cutlass/gemm.cu, whose two C
    // functions have exactly these signatures; it is never unloaded while in use (kept for
    // the process's life).
    let g = unsafe {
        let lib = libloading::Library::new(&path)
            .map_err(|e| Error::Invalid(format!("loading {}: {e}", path.display())))?;
        let workspace_bytes = *lib
            .get(b"kl_cutlass_workspace_bytes\0")
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        let gemm = *lib
            .get(b"kl_cutlass_gemm\0")
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        CutlassGemm {
            _lib: lib,
            workspace_bytes,
            gemm,
        }
    };
    let g = Arc::new(g);
    map.insert((*c, arch.to_string()), g.clone());
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_configuration_and_the_arch() {
        let a = Config {
            element: "bf16",
            epilogue: 2,
            kernel: 0,
        };
        let b = Config {
            element: "f16",
            ..a
        };
        let c = Config { kernel: 2, ..a };
        assert_ne!(cache_key(&a, "sm_90a"), cache_key(&b, "sm_90a"));
        assert_ne!(cache_key(&a, "sm_90a"), cache_key(&c, "sm_90a"));
        assert_ne!(cache_key(&a, "sm_90a"), cache_key(&a, "sm_100a"));
        assert_eq!(cache_key(&a, "sm_90a"), cache_key(&a, "sm_90a"));
        let p = library_path(Path::new("/c"), &a, "sm_90a");
        assert!(p
            .to_str()
            .unwrap()
            .starts_with("/c/kl_cutlass_bf16_e2_coop_128x256_2x1-sm_90a-"));
    }

    #[test]
    fn a_cache_filled_elsewhere_offers_the_kernels_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let put = |element, epilogue, kernel, arch: &str| {
            let c = Config {
                element,
                epilogue,
                kernel,
            };
            std::fs::write(library_path(dir.path(), &c, arch), b"").unwrap();
        };
        put("bf16", 2, 0, "sm_90a");
        put("bf16", 0, 2, "sm_90a");
        put("f16", 1, 1, "sm_90a");
        put("bf16", 1, 1, "sm_100a");
        // A library of another source (an older key) does not count.
        std::fs::write(
            dir.path()
                .join("kl_cutlass_f16_e0_pingpong_64x256_2x1-sm_90a-000000000000000000000000.so"),
            b"",
        )
        .unwrap();
        assert_eq!(kernels_built(dir.path(), "bf16", "sm_90a"), vec![0, 2]);
        assert_eq!(kernels_built(dir.path(), "f16", "sm_90a"), vec![1]);
        assert!(kernels_built(dir.path(), "f16", "sm_100a").is_empty());
    }

    #[test]
    fn missing_tools_are_a_one_line_refusal() {
        let e = Toolchain::find_with(Some("/nonexistent/nvcc"), Some("/nonexistent")).unwrap_err();
        assert!(matches!(e, Error::Unavailable { .. }), "{e}");
        assert_eq!(e.to_string().lines().count(), 1);
        assert!(e.to_string().contains("/nonexistent/nvcc"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("nvcc");
        std::fs::write(&fake, "").unwrap();
        let e = Toolchain::find_with(fake.to_str(), dir.path().to_str()).unwrap_err();
        assert!(e.to_string().contains("include/cutlass/cutlass.h"), "{e}");
    }
}
