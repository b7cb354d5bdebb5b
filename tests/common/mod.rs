//! Shared test helpers: the device under test, or a one-line skip.
//!
//! Every test that needs a GPU is `#[ignore]`d with that reason, so `cargo test` on a machine
//! without one reports it as ignored rather than passed; `tools/gpu-suite.sh` runs them with
//! `--include-ignored` and KERNLAB_REQUIRE_GPU=1 (then a missing GPU fails them). Run there
//! without the variable, one that finds no GPU prints a skip line and returns.

use kernlab::runtime::device::{self, nvrtc, CudaDevice};
use kernlab::Device;
use std::sync::{Arc, OnceLock};

/// Whether `var` is set to 1 or true: a requirement, so a skip becomes a failure.
pub fn required(var: &str) -> bool {
    std::env::var(var)
        .map(|v| v == "1" || v.eq_ignore_ascii_case("true"))
        .unwrap_or(false)
}

/// The CUDA device, opened once; `None` (after one printed line) where there is none,
/// a failure when KERNLAB_REQUIRE_GPU=1.
pub fn cuda() -> Option<Device> {
    static DEV: OnceLock<Result<Arc<CudaDevice>, String>> = OnceLock::new();
    let d = DEV.get_or_init(|| match device::cuda_probe() {
        Ok(_) => CudaDevice::open(0).map_err(|e| e.to_string()),
        Err(why) => Err(why),
    });
    match d {
        Ok(d) => Some(Device::Cuda(d.clone())),
        Err(why) => {
            if required("KERNLAB_REQUIRE_GPU") {
                panic!("KERNLAB_REQUIRE_GPU=1 but no CUDA device: {why}");
            }
            println!("skipped: no CUDA GPU ({why})");
            None
        }
    }
}

/// Whether NVRTC loads; `false` (after one printed line) where it does not, a failure when
/// KERNLAB_REQUIRE_NVRTC=1.
pub fn nvrtc_or_skip() -> bool {
    match nvrtc::nvrtc_available() {
        Ok(()) => true,
        Err(e) => {
            if required("KERNLAB_REQUIRE_NVRTC") {
                panic!("KERNLAB_REQUIRE_NVRTC=1 but {e}");
            }
            println!("skipped: {e}");
            false
        }
    }
}

/// One test body, two tests: `NAME::cpu` and `NAME::cuda` (candle's test_device!).
#[macro_export]
macro_rules! test_device {
    ($name:ident, $body:path) => {
        mod $name {
            #[test]
            fn cpu() {
                $body(&kernlab::Device::Cpu);
            }
            #[test]
            #[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
            fn cuda() {
                if let Some(d) = $crate::common::cuda() {
                    $body(&d);
                }
            }
        }
    };
}

/// A test body for CUDA kernels alone: one test, `NAME::cuda` (a one-line skip where there is
/// no GPU, a failure with KERNLAB_REQUIRE_GPU=1), and no CPU twin that would pass having run
/// nothing.
#[macro_export]
macro_rules! test_gpu {
    ($name:ident, $body:path) => {
        mod $name {
            #[test]
            #[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
            fn cuda() {
                if let Some(d) = $crate::common::cuda() {
                    $body(&d);
                }
            }
        }
    };
}

/// Whether a CUDA GPU is present (no skip line, no failure).
pub fn gpu_present() -> bool {
    device::cuda_probe().is_ok()
}

/// Run the command line (`kernlab ARGS…`) in-process: its report, or its error as text.
pub fn run_cli(args: &[&str]) -> Result<String, String> {
    let mut out = Vec::new();
    let mut argv = vec!["kernlab"];
    argv.extend_from_slice(args);
    kernlab::cli::run(argv, &mut out)
        .map(|_| String::from_utf8(out).unwrap())
        .map_err(|e| format!("{e:#}"))
}

/// Whether `e` is a tier refusing for a tool this machine lacks (Triton, nvcc, CUTLASS's
/// headers): a skip with one printed line, unless KERNLAB_REQUIRE_TRITON=1 (triton) or
/// KERNLAB_REQUIRE_CUTLASS=1 (cutlass) asks for the tier, when it fails.
pub fn tool_missing(v: &kernlab::ops::Variant, e: &kernlab::Error) -> bool {
    let kernlab::Error::Unavailable { .. } = e else {
        return false;
    };
    let switch = match v.tier {
        kernlab::Tier::Triton => "KERNLAB_REQUIRE_TRITON",
        kernlab::Tier::Cutlass => "KERNLAB_REQUIRE_CUTLASS",
        _ => return false,
    };
    if required(switch) {
        return false;
    }
    println!("skipped {}: {e}", v.id());
    true
}

/// Held by the tests that cap the CPU tier's instruction paths (`runtime::simd::set_cap`, a
/// process-wide setting), so that two of them never interleave; a test that failed while
/// holding it does not poison it for the others.
pub fn cpu_path_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
