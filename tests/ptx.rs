use crate::common::nvrtc_or_skip;
use kernlab::device::nvrtc::{self, ptx_entry_body};
use kernlab::kernels;
use kernlab::registry::VARIANTS;
use kernlab::DType;

const ARCHS: [&str; 2] = ["sm_80", "sm_90a"];

fn compile_all(arch: &str) -> Vec<nvrtc::Compiled> {
    kernels::ALL
        .iter()
        .map(|src| {
            let opts = nvrtc::default_options(arch);
            nvrtc::compile(src, arch, &opts, "(all)").unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

#[test]
fn every_registered_kernel_compiles_for_sm80_and_sm90a_with_no_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    for arch in ARCHS {
        let compiled = compile_all(arch);
        let mut checked = 0;
        for v in VARIANTS {
            let (Some(src), Some(symbols)) = (v.source, v.symbols) else {
                continue;
            };
            let c = compiled
                .iter()
                .find(|c| c.file == src.file)
                .expect("every variant's source is in kernels::ALL");
            assert!(
                !c.cubin.is_empty(),
                "{} for {arch}: NVRTC returned no CUBIN",
                src.file
            );
            for dt in v.dtypes {
                for sym in symbols(*dt) {
                    let body = ptx_entry_body(&c.ptx, &sym).unwrap_or_else(|| {
                        panic!(
                            "{} ({arch}): {sym} is not in the PTX of {}",
                            v.id(),
                            src.file
                        )
                    });
                    let info = c.ptxas_info(&sym).unwrap_or_else(|| {
                        let head: String = c.log.lines().take(12).collect::<Vec<_>>().join("\n");
                        panic!("{sym} ({arch}): no ptxas report line; the log begins:\n{head}")
                    });
                    assert!(info.registers > 0, "{sym}: ptxas reports no registers");
                    assert_eq!(
                        (
                            info.spill_store_bytes,
                            info.spill_load_bytes,
                            info.stack_frame_bytes
                        ),
                        (0, 0, 0),
                        "{sym} ({arch}) spills or uses a stack frame: {info:?}"
                    );
                    // A vec16 variant's packed kernels must really issue 16-byte loads;
                    // its `_scalar_` fallbacks (odd widths) are exempt.
                    if v.vec16 && !sym.contains("_scalar_") {
                        let v4_load = body
                            .lines()
                            .any(|l| l.contains("ld.global") && l.contains(".v4"));
                        assert!(
                            v4_load,
                            "{} claims 16-byte loads but {sym} ({arch}) has no ld.global*.v4",
                            v.id()
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 50, "only {checked} kernels checked for {arch}");
    }
}

#[test]
fn the_naive_gelu_really_is_scalar_and_the_vec16_one_is_not() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = &compile_all("sm_90a")[0];
    assert_eq!(c.file, "gelu.cu");
    let v1 = ptx_entry_body(&c.ptx, "gelu_v1_naive_tanh_f32").unwrap();
    assert!(v1
        .lines()
        .any(|l| l.contains("ld.global") && l.contains(".f32")));
    assert!(!v1
        .lines()
        .any(|l| l.contains("ld.global") && l.contains(".v4")));
    let v3 = ptx_entry_body(&c.ptx, "gelu_v3_vec16_ilp_tanh_bf16").unwrap();
    assert!(v3.contains("ld.global.nc.L1::no_allocate.v4"));
    assert!(v3.contains("st.global.cs.v4"));
}

#[test]
fn a_compile_error_names_the_file_the_kernel_and_shows_the_log() {
    if !nvrtc_or_skip() {
        return;
    }
    static BAD: kernels::KernelSource = kernels::KernelSource {
        file: "broken.cu",
        src: "extern \"C\" __global__ void broken_kernel(float* x) { x[0] = undefined_thing; }",
    };
    let err = nvrtc::compile(
        &BAD,
        "sm_90a",
        &nvrtc::default_options("sm_90a"),
        "broken_kernel",
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("broken.cu"), "{msg}");
    assert!(msg.contains("broken_kernel"), "{msg}");
    assert!(
        msg.contains("undefined_thing"),
        "the NVRTC log must be shown: {msg}"
    );
    assert!(
        msg.contains("--gpu-architecture=sm_90a"),
        "the options must be shown: {msg}"
    );
}

#[test]
fn the_disk_cache_returns_what_nvrtc_compiled() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // SAFETY of the env var: this test alone reads the cache through compile_cached and the
    // variable is process-wide only while this test runs in its own binary thread; other
    // tests compile without the cache.
    std::env::set_var("KERNLAB_CACHE_DIR", dir.path());
    let first = nvrtc::compile_cached(&kernels::GELU, "sm_80", "x").unwrap();
    let second = nvrtc::compile_cached(&kernels::GELU, "sm_80", "x").unwrap();
    std::env::remove_var("KERNLAB_CACHE_DIR");
    assert!(!first.from_cache && second.from_cache);
    assert_eq!(first.ptx, second.ptx);
    assert_eq!(first.cubin, second.cubin);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let _ = DType::F32;
}
