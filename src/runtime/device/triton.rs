//! Triton kernels compiled ahead of launch by Triton's own compiler, then loaded and launched
//! by kernlab like any other cubin.
//!
//! A kernel is a `@triton.jit` function in `kernels/triton/` (embedded in the binary) and a
//! [`TritonSpec`]: its argument types, its compile-time constants, warps and stages. kernlab
//! runs `kernels/triton/compile.py` with `$KERNLAB_PYTHON` (else `python3`), which calls
//! `triton.compile` for the device's architecture and writes the cubin, every IR stage
//! (TTIR, TTGIR, LLVM IR, PTX) and the launch facts (entry name, shared memory, warps). The
//! result is kept in kernlab's cache (`triton/` beside NVRTC's `kernels/`), keyed by the
//! source, the compile step, the spec, the architecture and Triton's version, so that a
//! kernel is compiled once per machine and a later run starts at once.
//!
//! Triton's launch ABI (3.x): the non-constexpr arguments in order, then two pointers, the
//! global and the profile scratch (null where the sizes are 0, which kernlab requires).

use super::nvrtc::{cache_root, read_parts, warn_once, write_parts};
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The compile step kernlab hands to Python (`kernels/triton/compile.py`).
pub static COMPILE_STEP: &str = include_str!("../../../kernels/triton/compile.py");

/// One kernel to compile: the `@triton.jit` function `kernel` in `source`, with its
/// signature (every argument's Triton type, in order: `*bf16`, `i32`, `fp32`, `constexpr`),
/// the constexprs' values, and the launch's warps and pipeline stages.
#[derive(Debug, Clone, Serialize)]
pub struct TritonSpec {
    #[serde(skip)]
    pub source: &'static KernelSource,
    pub kernel: &'static str,
    pub signature: Vec<(String, String)>,
    pub constexprs: Vec<(String, serde_json::Value)>,
    /// Arguments the launcher vouches are multiples of 16 (pointers: 16-byte aligned), as
    /// Triton's own launcher specializes them (its loads may then be vectorised).
    pub divisible: Vec<String>,
    pub num_warps: u32,
    pub num_stages: u32,
}

impl TritonSpec {
    pub fn new(source: &'static KernelSource, kernel: &'static str) -> TritonSpec {
        TritonSpec {
            source,
            kernel,
            signature: Vec::new(),
            constexprs: Vec::new(),
            divisible: Vec::new(),
            num_warps: 4,
            num_stages: 3,
        }
    }
    /// An argument passed at launch, of Triton type `ty`.
    pub fn arg(mut self, name: &str, ty: &str) -> TritonSpec {
        self.signature.push((name.into(), ty.into()));
        self
    }
    /// An argument passed at launch whose value (a pointer's address) is a multiple of 16
    /// when `divisible`, as Triton's launcher would specialize it.
    pub fn arg_hinted(mut self, name: &str, ty: &str, divisible: bool) -> TritonSpec {
        if divisible {
            self.divisible.push(name.into());
        }
        self.arg(name, ty)
    }
    /// A compile-time constant.
    pub fn constexpr(mut self, name: &str, value: impl Into<serde_json::Value>) -> TritonSpec {
        self.signature.push((name.into(), "constexpr".into()));
        self.constexprs.push((name.into(), value.into()));
        self
    }
    pub fn warps(self, num_warps: u32) -> TritonSpec {
        TritonSpec { num_warps, ..self }
    }
    pub fn stages(self, num_stages: u32) -> TritonSpec {
        TritonSpec { num_stages, ..self }
    }
    /// The arguments a launch passes (the signature less its constexprs).
    pub fn launch_args(&self) -> usize {
        self.signature
            .iter()
            .filter(|(_, t)| t != "constexpr")
            .count()
    }
    /// A short name for tables and errors: the kernel and its constants.
    pub fn label(&self) -> String {
        let c: Vec<String> = self
            .constexprs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "{}[{}, warps={}, stages={}]",
            self.kernel,
            c.join(", "),
            self.num_warps,
            self.num_stages
        )
    }
}

/// The Triton type of a kernlab dtype's pointer or value (`*bf16`, `fp32`).
pub fn triton_type(dtype: crate::runtime::dtype::DType, pointer: bool) -> String {
    use crate::runtime::dtype::DType;
    let t = match dtype {
        DType::F32 => "fp32",
        DType::BF16 => "bf16",
        DType::F16 => "fp16",
    };
    if pointer {
        format!("*{t}")
    } else {
        t.into()
    }
}

/// Warps for a program holding a row in one block of `block` elements, the fused-softmax
/// tutorial's rule: 4, 8 from 2048 elements, 16 from 4096.
pub fn row_block_warps(block: usize) -> u32 {
    match block {
        b if b >= 4096 => 16,
        b if b >= 2048 => 8,
        _ => 4,
    }
}

/// What the compile step reports about a kernel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TritonMeta {
    /// The cubin's entry point.
    pub name: String,
    /// Dynamic shared memory a launch must give it, in bytes.
    pub shared: u32,
    pub num_warps: u32,
    pub num_stages: u32,
    pub num_ctas: u32,
    pub cluster_dims: [u32; 3],
    pub global_scratch_size: u64,
    pub profile_scratch_size: u64,
    pub launch_cooperative_grid: bool,
    pub launch_pdl: bool,
    pub triton_version: String,
    /// `ptxas -v` on the PTX, by the ptxas Triton compiles with.
    pub ptxas_log: String,
}

/// A compiled Triton kernel.
#[derive(Debug, Clone)]
pub struct TritonKernel {
    pub meta: TritonMeta,
    /// The IR stages, in compile order: ttir, ttgir, llir, ptx.
    pub ir: Vec<(&'static str, String)>,
    pub cubin: Vec<u8>,
    pub from_cache: bool,
}

/// The IR stages the compile step writes, in order.
pub const STAGES: [&str; 4] = ["ttir", "ttgir", "llir", "ptx"];

impl TritonKernel {
    pub fn stage(&self, name: &str) -> Option<&str> {
        self.ir
            .iter()
            .find(|(s, _)| *s == name)
            .map(|(_, t)| t.as_str())
    }
    /// Launch facts kernlab cannot honour are refused here, not at launch.
    pub fn check_launchable(&self, what: &str) -> Result<()> {
        let m = &self.meta;
        let why = if m.global_scratch_size > 0 || m.profile_scratch_size > 0 {
            Some("it asks for global or profile scratch memory")
        } else if m.num_ctas != 1 || m.cluster_dims != [1, 1, 1] {
            Some("it asks for clusters of CTAs")
        } else if m.launch_cooperative_grid || m.launch_pdl {
            Some("it asks for a cooperative or programmatic-dependent launch")
        } else {
            None
        };
        match why {
            Some(why) => Err(Error::Invalid(format!(
                "{what}: kernlab does not launch this Triton kernel: {why}"
            ))),
            None => Ok(()),
        }
    }
}

/// The Python kernlab runs: `$KERNLAB_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("KERNLAB_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// Triton's version as that Python has it installed (asked once a process, without importing
/// Triton); an `Unavailable` error saying why where there is no Python or no Triton.
pub fn triton_version() -> Result<String> {
    static VERSION: OnceLock<std::result::Result<String, String>> = OnceLock::new();
    VERSION
        .get_or_init(|| triton_version_of(&python()))
        .clone()
        .map_err(|why| Error::Unavailable {
            what: "the triton tier".into(),
            why,
        })
}

/// [`triton_version`] for the Python `py`, asked now: the version, or why there is none.
pub fn triton_version_of(py: &str) -> std::result::Result<String, String> {
    let out = Command::new(py)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('triton'))",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{py} could not be run ({e}); set KERNLAB_PYTHON"))?;
    if !out.status.success() {
        return Err(format!(
            "Triton is not installed for {py} (pip install triton, or point KERNLAB_PYTHON at \
             a Python that has it)"
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The architecture number Triton takes (`sm_90a` → 90).
pub fn arch_number(arch: &str) -> Result<u32> {
    arch.trim_start_matches("sm_")
        .trim_end_matches(['a', 'f'])
        .parse()
        .map_err(|_| Error::Invalid(format!("not a CUDA architecture: {arch}")))
}

/// Where compiled Triton kernels are kept: the `triton` folder of kernlab's cache.
pub fn cache_dir() -> Option<PathBuf> {
    cache_root().map(|r| r.join("triton"))
}

const MAGIC: &[u8; 8] = b"KLTRIT01";

fn cache_key(spec: &TritonSpec, arch: u32, version: &str) -> Result<String> {
    let mut h = blake3::Hasher::new();
    h.update(b"kernlab-triton-cache-v1\0");
    h.update(COMPILE_STEP.as_bytes());
    h.update(b"\0");
    h.update(spec.source.file.as_bytes());
    h.update(b"\0");
    h.update(spec.source.src.as_bytes());
    h.update(b"\0");
    h.update(
        serde_json::to_string(spec)
            .map_err(|e| Error::Invalid(format!("a Triton spec: {e}")))?
            .as_bytes(),
    );
    h.update(format!("\0{arch}\0{version}").as_bytes());
    Ok(h.finalize().to_hex()[..32].to_string())
}

/// Compile one kernel for architecture `arch` (`sm_90a`), through the disk cache when one is
/// usable.
pub fn compile_cached(spec: &TritonSpec, arch: &str) -> Result<TritonKernel> {
    compile_cached_in(cache_dir().as_deref(), spec, arch)
}

/// [`compile_cached`] with the cache folder `dir` (none: compile every time).
pub fn compile_cached_in(
    dir: Option<&Path>,
    spec: &TritonSpec,
    arch: &str,
) -> Result<TritonKernel> {
    let version = triton_version()?;
    let arch = arch_number(arch)?;
    let key = cache_key(spec, arch, &version)?;
    let Some(dir) = dir else {
        return compile(spec, arch);
    };
    let path = dir.join(format!("{}-{key}.bin", spec.kernel));
    if let Some(k) = read_entry(&path) {
        return Ok(k);
    }
    let k = compile(spec, arch)?;
    if let Err(e) = write_entry(dir, &path, &k) {
        warn_once(&format!(
            "kernlab: could not write the Triton cache at {} ({e}); compiling each run",
            dir.display()
        ));
    }
    Ok(k)
}

fn write_entry(dir: &Path, path: &Path, k: &TritonKernel) -> std::io::Result<()> {
    let meta = serde_json::to_vec(&k.meta)?;
    let mut parts: Vec<&[u8]> = vec![&meta];
    parts.extend(k.ir.iter().map(|(_, t)| t.as_bytes()));
    parts.push(&k.cubin);
    write_parts(dir, path, MAGIC, &parts)
}

fn read_entry(path: &Path) -> Option<TritonKernel> {
    let mut parts = read_parts(path, MAGIC, 2 + STAGES.len())?;
    let cubin = parts.pop()?;
    let meta = serde_json::from_slice(&parts[0]).ok()?;
    let ir = STAGES
        .iter()
        .zip(&parts[1..])
        .map(|(s, t)| Some((*s, String::from_utf8(t.clone()).ok()?)))
        .collect::<Option<Vec<_>>>()?;
    Some(TritonKernel {
        meta,
        ir,
        cubin,
        from_cache: true,
    })
}

/// Run the compile step for one kernel (no cache).
pub fn compile(spec: &TritonSpec, arch: u32) -> Result<TritonKernel> {
    compile_with(&python(), spec, arch)
}

/// [`compile`] with the Python `py`.
pub fn compile_with(py: &str, spec: &TritonSpec, arch: u32) -> Result<TritonKernel> {
    let out = tempfile::tempdir().map_err(|e| Error::Io {
        path: std::env::temp_dir().display().to_string(),
        err: e,
    })?;
    let signature: serde_json::Map<String, serde_json::Value> = spec
        .signature
        .iter()
        .map(|(k, t)| (k.clone(), t.clone().into()))
        .collect();
    let constexprs: serde_json::Map<String, serde_json::Value> = spec
        .constexprs
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let request = serde_json::json!({
        "file": spec.source.file,
        "source": spec.source.src,
        "kernel": spec.kernel,
        "signature": signature,
        "constexprs": constexprs,
        "divisible": spec.divisible,
        "num_warps": spec.num_warps,
        "num_stages": spec.num_stages,
        "arch": arch,
        "out": out.path(),
    });
    let py = py.to_string();
    let mut child = Command::new(&py)
        .args(["-c", COMPILE_STEP])
        // Triton's own cache stays out of it: kernlab's cache is keyed on everything the
        // compile depends on, and Triton's would hand back IR of an earlier compile.
        .env("TRITON_CACHE_DIR", out.path().join("triton-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Unavailable {
            what: "the triton tier".into(),
            why: format!("{py} could not be run ({e}); set KERNLAB_PYTHON"),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        // A compile step that dies early closes its stdin; its exit status says why.
        let _ = stdin.write_all(request.to_string().as_bytes());
    }
    let done = child.wait_with_output().map_err(|e| Error::Io {
        path: py.clone(),
        err: e,
    })?;
    let stderr = String::from_utf8_lossy(&done.stderr).trim().to_string();
    match done.status.code() {
        Some(0) => {}
        Some(4) => {
            return Err(Error::Unavailable {
                what: "the triton tier".into(),
                why: stderr,
            })
        }
        _ => {
            return Err(Error::Compile {
                file: format!("kernels/triton/{}", spec.source.file),
                kernel: spec.label(),
                options: format!("triton.compile for sm_{arch}"),
                log: stderr,
            })
        }
    }
    let read = |name: &str| {
        let p = out.path().join(name);
        std::fs::read(&p).map_err(|e| Error::Io {
            path: p.display().to_string(),
            err: e,
        })
    };
    let meta: TritonMeta = serde_json::from_slice(&read("meta.json")?)
        .map_err(|e| Error::Invalid(format!("the Triton compile step's meta.json: {e}")))?;
    let mut ir = Vec::new();
    for s in STAGES {
        let text = String::from_utf8_lossy(&read(&format!("kernel.{s}"))?).into_owned();
        ir.push((s, text));
    }
    Ok(TritonKernel {
        meta,
        ir,
        cubin: read("kernel.cubin")?,
        from_cache: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    static SRC: KernelSource = KernelSource {
        file: "t.py",
        src: "x",
    };

    #[test]
    fn arch_numbers_and_types() {
        assert_eq!(arch_number("sm_90a").unwrap(), 90);
        assert_eq!(arch_number("sm_80").unwrap(), 80);
        assert!(arch_number("gfx90a").is_err());
        assert_eq!(triton_type(crate::DType::BF16, true), "*bf16");
        assert_eq!(triton_type(crate::DType::F32, false), "fp32");
    }

    #[test]
    fn a_spec_counts_its_launch_arguments_and_keys_on_everything() {
        let s = TritonSpec::new(&SRC, "k")
            .arg("x", "*bf16")
            .arg("n", "i32")
            .constexpr("BLOCK", 1024)
            .warps(8);
        assert_eq!(s.launch_args(), 2);
        assert_eq!(s.label(), "k[BLOCK=1024, warps=8, stages=3]");
        let k = cache_key(&s, 90, "3.6.0").unwrap();
        assert_eq!(k, cache_key(&s, 90, "3.6.0").unwrap());
        assert_ne!(k, cache_key(&s, 100, "3.6.0").unwrap());
        assert_ne!(k, cache_key(&s, 90, "3.5.0").unwrap());
        assert_ne!(k, cache_key(&s.clone().stages(2), 90, "3.6.0").unwrap());
        assert_ne!(
            k,
            cache_key(&s.clone().constexpr("X", true), 90, "3.6.0").unwrap()
        );
    }
}
