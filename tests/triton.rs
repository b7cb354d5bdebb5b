//! The Triton tier: every Triton variant's kernels compile with Triton's compiler for sm_90a
//! (no GPU needed) into what kernlab loads; the cache keeps and checks them; without Python or
//! Triton the tier refuses in one line. On the GPU: what kernlab reads of a loaded kernel
//! (registers, spills, shared memory) is what Triton's own loader reports.

use crate::common::required;
use kernlab::ops::{self, Grammar};
use kernlab::runtime::device::nvrtc::parse_ptxas_log;
use kernlab::runtime::device::triton::{self, compile_cached_in, compile_with, STAGES};
use kernlab::{DType, Error};

/// Whether Triton is at hand; `false` (after one printed line) where it is not, a failure
/// when KERNLAB_REQUIRE_TRITON=1 (the GPU suite sets it).
fn triton_or_skip() -> bool {
    match triton::triton_version() {
        Ok(_) => true,
        Err(e) => {
            if required("KERNLAB_REQUIRE_TRITON") {
                panic!("KERNLAB_REQUIRE_TRITON=1 but {e}");
            }
            println!("skipped: {e}");
            false
        }
    }
}

/// An awkward shape of each grammar (odd rows and columns, odd GEMM dimensions).
fn awkward(g: Grammar) -> Vec<usize> {
    match g {
        Grammar::Gemm => vec![129, 257, 72],
        _ => vec![1823, 781],
    }
}

#[test]
fn every_triton_variant_compiles_for_sm_90a_into_what_kernlab_loads() {
    if !triton_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for v in ops::all().filter(|v| v.triton.is_some()) {
        let shape = awkward(v.op.grammar());
        let p = v.op.default_params();
        for &dt in [DType::F32, DType::BF16].iter() {
            for spec in (v.triton.unwrap())(&p, dt, &shape).unwrap() {
                let k = compile_cached_in(Some(dir.path()), &spec, "sm_90a")
                    .unwrap_or_else(|e| panic!("{} {dt}: {e}", v.id()));
                assert!(!k.from_cache, "{}", spec.label());
                assert_eq!(k.meta.name, spec.kernel, "{}", spec.label());
                assert_eq!(k.meta.num_warps, spec.num_warps, "{}", spec.label());
                for s in STAGES {
                    assert!(
                        !k.stage(s).unwrap_or("").is_empty(),
                        "{} has no {s}",
                        spec.label()
                    );
                }
                // The entry and its launch arguments: the signature's, then the two scratch
                // pointers Triton's ABI appends.
                let ptx = k.stage("ptx").unwrap();
                let entry = ptx
                    .split(".entry ")
                    .nth(1)
                    .unwrap_or_else(|| panic!("{}: no entry in the PTX", spec.label()));
                let params = entry.split(')').next().unwrap().matches(".param").count();
                assert_eq!(params, spec.launch_args() + 2, "{}", spec.label());
                assert_eq!(&k.cubin[..4], b"\x7fELF", "{}", spec.label());
                let report = parse_ptxas_log(&k.meta.ptxas_log);
                assert!(
                    report
                        .iter()
                        .any(|r| r.kernel == k.meta.name && r.registers > 0),
                    "{}: {}",
                    spec.label(),
                    k.meta.ptxas_log
                );
                // The second time it comes from the cache, the same kernel.
                let again = compile_cached_in(Some(dir.path()), &spec, "sm_90a").unwrap();
                assert!(again.from_cache);
                assert_eq!(again.cubin, k.cubin);
                assert_eq!(again.ir, k.ir);
                seen += 1;
            }
        }
    }
    assert!(seen >= 10, "only {seen} Triton kernels");
}

#[test]
fn a_truncated_triton_cache_entry_is_compiled_again() {
    if !triton_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = ops::gelu::triton_spec(&Default::default(), DType::BF16, true, true);
    let first = compile_cached_in(Some(dir.path()), &spec, "sm_90a").unwrap();
    let entry = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "bin"))
        .unwrap();
    let bytes = std::fs::read(&entry).unwrap();
    std::fs::write(&entry, &bytes[..bytes.len() / 2]).unwrap();
    let again = compile_cached_in(Some(dir.path()), &spec, "sm_90a").unwrap();
    assert!(!again.from_cache);
    assert_eq!(again.meta.name, first.meta.name);
}

#[test]
fn without_python_or_triton_the_tier_refuses_in_one_line() {
    let spec = ops::gelu::triton_spec(&Default::default(), DType::F32, true, true);
    let missing = "/nonexistent/python3";
    let why = triton::triton_version_of(missing).unwrap_err();
    assert!(
        why.contains("could not be run") && why.contains("KERNLAB_PYTHON"),
        "{why}"
    );
    let err = compile_with(missing, &spec, 90).unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert_eq!(err.to_string().lines().count(), 1, "{err}");
    // A Python without Triton: python3 with its site-packages off.
    let Ok(py) = which_python() else {
        println!("skipped (the no-Triton half): no python3 on PATH");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shim = dir.path().join("python-without-triton");
    std::fs::write(&shim, format!("#!/bin/sh\nexec {py} -S -I \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shim = shim.to_str().unwrap();
    let why = triton::triton_version_of(shim).unwrap_err();
    assert!(why.contains("Triton is not installed"), "{why}");
    let err = compile_with(shim, &spec, 90).unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable { why, .. } if why.contains("Triton is not installed")),
        "{err}"
    );
}

fn which_python() -> Result<String, ()> {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .map_err(|_| ())?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if p.is_empty() {
        Err(())
    } else {
        Ok(p)
    }
}

/// On the GPU: kernlab's view of a loaded Triton kernel against Triton's loader's.
fn metadata_matches_tritons_own(d: &kernlab::Device) {
    if !triton_or_skip() {
        return;
    }
    let dev = d.cuda().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = ops::softmax::SoftmaxParams::default();
    let hint = |_: &str| true;
    for cols in [4096usize, 131072] {
        let spec = ops::softmax::triton_spec(&p, DType::BF16, cols, &hint).unwrap();
        let loaded = dev.triton(&spec).unwrap();
        let res = kernlab::runtime::device::CudaDevice::function_resources(&loaded.f).unwrap();
        let k = &loaded.kernel;
        let cubin = dir.path().join(format!("k{cols}.cubin"));
        std::fs::write(&cubin, &k.cubin).unwrap();
        // Triton's own loader: (module, function, n_regs, n_spills, n_max_threads).
        let script = format!(
            "import triton\n\
             u = triton.runtime.driver.active.utils\n\
             r = u.load_binary('{}', open('{}', 'rb').read(), {}, 0)\n\
             print(r[2], r[3])",
            k.meta.name,
            cubin.display(),
            k.meta.shared
        );
        let out = std::process::Command::new(triton::python())
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let nums: Vec<u32> = text
            .split_whitespace()
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(nums[0], res.registers, "{}: registers", spec.label());
        assert_eq!(nums[1], res.local_bytes / 4, "{}: spills", spec.label());
        if cols == 131072 {
            assert!(
                res.local_bytes > 0,
                "{}: the tutorial's spill",
                spec.label()
            );
        }
    }
}
crate::test_gpu!(
    triton_metadata_matches_tritons_loader,
    super::metadata_matches_tritons_own
);
