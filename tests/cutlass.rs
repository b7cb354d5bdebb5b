//! The CUTLASS tier's build: the GEMM unit (`kernels/cutlass/gemm.cu`, its largest epilogue:
//! bias + erf GeLU) compiles with nvcc against CUTLASS's headers for sm_90a (no GPU needed)
//! into a shared object exporting the two C functions kernlab loads. Skipped with one line
//! where nvcc or the headers are missing; a failure with KERNLAB_REQUIRE_CUTLASS=1 (CI sets it
//! where it installed them).

use crate::common::required;
use kernlab::runtime::device::cutlass::{build, library_path, nvcc_args, Config, Toolchain};

#[test]
fn the_cutlass_unit_builds_for_sm_90a_and_exports_its_c_functions() {
    let t = match Toolchain::find() {
        Ok(t) => t,
        Err(e) => {
            assert!(
                !required("KERNLAB_REQUIRE_CUTLASS"),
                "KERNLAB_REQUIRE_CUTLASS=1 but {e}"
            );
            println!("skipped: {e}");
            return;
        }
    };
    // The ping-pong kernel (the others differ only in tile and cluster shape).
    let c = Config {
        element: "bf16",
        epilogue: 3,
        kernel: 2,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = library_path(dir.path(), &c, "sm_90a");
    // SASS for sm_90a only, and NDEBUG (which keeps ptxas from serialising the wgmma).
    let args = nvcc_args(&t, &c, "sm_90a", std::path::Path::new("gemm.cu")).join(" ");
    assert!(
        args.contains("arch=compute_90a,code=sm_90a") && args.contains("-DNDEBUG"),
        "{args}"
    );
    build(&t, &c, "sm_90a", &path).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: kernlab's own build of the unit; only symbol addresses are read.
    unsafe {
        let lib = libloading::Library::new(&path).unwrap();
        for sym in ["kl_cutlass_workspace_bytes", "kl_cutlass_gemm"] {
            let f: Result<libloading::Symbol<unsafe extern "C" fn()>, _> = lib.get(sym.as_bytes());
            assert!(f.is_ok(), "{} does not export {sym}", path.display());
        }
    }
}
