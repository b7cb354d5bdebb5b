use crate::common::nvrtc_or_skip;
use kernlab::ops;
use kernlab::runtime::device::nvrtc::{self, ptx_entry_body};
use kernlab::runtime::kernels;
use kernlab::DType;

const ARCHS: [&str; 2] = ["sm_80", "sm_90a"];

/// The GPU, when there is one and `arch` is its own architecture.
fn gpu_for(arch: &str) -> Option<std::sync::Arc<kernlab::runtime::device::CudaDevice>> {
    kernlab::runtime::device::cuda_probe().ok()?;
    crate::common::cuda()?
        .cuda()
        .filter(|d| d.arch == arch)
        .cloned()
}

fn compile_all(arch: &str) -> Vec<nvrtc::Compiled> {
    ops::kernel_sources()
        .into_iter()
        .map(|src| {
            let opts = nvrtc::base_options(arch);
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
        let mut log_missing = 0;
        for (v, (src, symbols)) in
            ops::all().flat_map(|v| v.sources().into_iter().map(move |s| (v, s)))
        {
            // Kernels of a newer architecture (clusters: sm_90) are checked on that one only.
            let arch_num: u32 = arch
                .trim_start_matches("sm_")
                .trim_end_matches('a')
                .parse()
                .unwrap();
            if v.min_arch > arch_num {
                continue;
            }
            let c = compiled
                .iter()
                .find(|c| c.file == src.file)
                .expect("every variant's source is among ops::kernel_sources()");
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
                    match c.ptxas_info(&sym) {
                        Some(info) => {
                            assert!(info.registers > 0, "{sym}: ptxas reports no registers");
                            assert_eq!(
                                (info.spill_store_bytes, info.spill_load_bytes, info.stack_frame_bytes),
                                (0, 0, 0),
                                "{sym} ({arch}) spills or uses a stack frame: {info:?}"
                            );
                        }
                        // Seen on the GPU machine (CUDA 13.0 there): NVRTC returned an empty log
                        // for sm_90a. Ask the driver instead when this is the GPU's own arch.
                        None => match (gpu_for(arch), crate::common::gpu_present()) {
                            (Some(dev), _) => {
                                let r = dev.kernel_resources(src, &sym).unwrap();
                                assert!(r.registers > 0, "{sym}: the driver reports no registers");
                                assert_eq!(r.local_bytes, 0, "{sym} ({arch}) spills or uses a stack frame: {r:?}");
                                log_missing += 1;
                            }
                            // Another arch on a GPU machine: its CUBIN cannot load here, and this
                            // machine's NVRTC gave no report. CI (pinned NVRTC, no GPU) checks it.
                            (None, true) => log_missing += 1,
                            (None, false) => panic!(
                                "{sym} ({arch}): no ptxas report line (NVRTC {:?}, log {} bytes); the log begins:\n{}",
                                nvrtc::nvrtc_version(),
                                c.log.len(),
                                c.log.lines().take(12).collect::<Vec<_>>().join("\n")
                            ),
                        },
                    }
                    // A vec16 variant's packed kernels must really issue 16-byte loads:
                    // ld.global.v4, or, in a kernel fed by bulk copies (TMA), ld.shared.v4
                    // from the staged tiles. Its `_scalar_` fallbacks (odd widths) are exempt.
                    if v.vec16 && !sym.contains("_scalar_") {
                        let bulk = body.contains("cp.async.bulk.");
                        let v4_load = body.lines().any(|l| {
                            (l.contains("ld.global") || (bulk && l.contains("ld.shared")))
                                && l.contains(".v4")
                        });
                        assert!(
                            v4_load,
                            "{} claims 16-byte loads but {sym} ({arch}) has no ld.global*.v4 (nor ld.shared.v4 after bulk copies)",
                            v.id()
                        );
                    }
                    // Instructions the variant claims (mma.sync, wgmma, TMA...) are in each of
                    // its own kernels (`_v6_` in the symbol for v6_wgmma); a fallback kernel of
                    // another version is exempt.
                    let version = v.name.split('_').next().unwrap_or(v.name);
                    if sym.contains(&format!("_{version}_")) {
                        for claim in v.ptx_claims {
                            assert!(
                                body.contains(claim),
                                "{} claims `{claim}` but {sym} ({arch}) has none in its PTX",
                                v.id()
                            );
                        }
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 50, "only {checked} kernels checked for {arch}");
        if log_missing > 0 {
            println!(
                "{arch}: {log_missing} kernels had no ptxas report in NVRTC's log (seen with the GPU machine's NVRTC); \
                 checked through the driver where the GPU runs this arch, else left to CI"
            );
        }
    }
}

#[test]
fn the_naive_gelu_really_is_scalar_and_the_vec16_one_is_not() {
    if !nvrtc_or_skip() {
        return;
    }
    let all = compile_all("sm_90a");
    let c = all.iter().find(|c| c.file == "gelu.cu").unwrap();
    let v1 = ptx_entry_body(&c.ptx, "gelu_v1_naive_tanh_f32").unwrap();
    assert!(v1
        .lines()
        .any(|l| l.contains("ld.global") && l.contains(".f32")));
    assert!(!v1
        .lines()
        .any(|l| l.contains("ld.global") && l.contains(".v4")));
    let v3 = ptx_entry_body(&c.ptx, "gelu_v3_vec16_ilp_tanh_bf16").unwrap();
    assert!(v3
        .lines()
        .any(|l| l.contains("ld.global") && l.contains(".v4")));
    assert!(v3
        .lines()
        .any(|l| l.contains("st.global") && l.contains(".v4")));
}

/// softmax.cu (alone) compiled for sm_90a.
fn softmax_sm90a() -> nvrtc::Compiled {
    softmax_for("sm_90a")
}

/// softmax.cu (alone) compiled for `arch`.
fn softmax_for(arch: &str) -> nvrtc::Compiled {
    let src = &ops::softmax::SOURCE;
    let opts = nvrtc::base_options(arch);
    nvrtc::compile(src, arch, &opts, "(all)").unwrap_or_else(|e| panic!("{e}"))
}

/// The register-resident softmax kernels take their 16-bit rows' max two values an
/// instruction (max.NaN.bf16x2 / f16x2, NaN-propagating) and fold e^(x − m) into one FMA
/// before the ex2; the f32 kernels keep the exact subtract-then-scale form.
#[test]
fn softmax_16_bit_rows_take_the_packed_max_and_the_folded_exponent() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = softmax_sm90a();
    // How many ex2.approx take their argument straight from an fma.rn.f32 (PTX registers are
    // defined once, so the defining line of the ex2's source operand says which form fed it).
    let ex2_from_fma = |body: &str| {
        let mut def = std::collections::HashMap::new();
        for l in body.lines() {
            let mut w = l.split_whitespace();
            if let (Some(op), Some(dst)) = (w.next(), w.next()) {
                def.insert(dst.trim_end_matches(',').to_string(), op.to_string());
            }
        }
        body.lines()
            .filter_map(|l| l.trim().strip_prefix("ex2.approx.ftz.f32"))
            .filter_map(|rest| rest.split(',').nth(1))
            .filter(|src| {
                def.get(src.trim().trim_end_matches(';'))
                    .is_some_and(|op| op == "fma.rn.f32")
            })
            .count()
    };
    // (kernel, elements a thread holds = 8 a pack × K slots)
    for (dt, max2) in [("bf16", "max.NaN.bf16x2"), ("f16", "max.NaN.f16x2")] {
        for (sym, elems) in [
            (format!("softmax_v2_warp_row_vec_k4_{dt}"), 32),
            (format!("softmax_v3_block_regs_vec_k4_{dt}"), 32),
            (format!("softmax_v3_block_regs_vec_k8_{dt}"), 64),
            (format!("softmax_v6_split_vec_{dt}"), 64),
            (format!("softmax_v8_onchip_{dt}"), 64),
            (format!("softmax_v8_packed_{dt}"), 64),
            (format!("softmax_v9_gridsync_{dt}"), 64),
            (format!("softmax_v9_pingpong_{dt}"), 64),
        ] {
            let body = ptx_entry_body(&c.ptx, &sym).unwrap();
            assert!(body.contains(max2), "{sym} has no {max2}");
            // The folded exponent: an ex2 fed by x·log2e + c for each element, in the sum and
            // in the write.
            let n = ex2_from_fma(body);
            assert!(
                n >= 2 * elems,
                "{sym}: {n} ex2 fed by an fma, fewer than the {} of the folded exponent",
                2 * elems
            );
        }
    }
    // f32 keeps the exact form: no ex2 fed by an fma in v3's sum and write.
    let f32 = ptx_entry_body(&c.ptx, "softmax_v3_block_regs_vec_k4_f32").unwrap();
    assert!(!f32.contains("max.NaN.bf16x2") && !f32.contains("max.NaN.f16x2"));
    assert_eq!(
        ex2_from_fma(f32),
        0,
        "softmax_v3_block_regs_vec_k4_f32 folds its exponent"
    );
}

/// v8 merges a row's (max, sum) across its cluster through distributed shared memory on
/// sm_90: each kernel must map a peer's shared memory, read it, and split the cluster barrier
/// (arrive after the reads, wait before the exit) and copy its shared-memory packs with
/// cp.async; the peeling kernels take the row from the cluster's index, and the packed ones
/// (rows with no scalar head or tail) carry no scalar code.
#[test]
fn softmax_v8_uses_cp_async_and_the_cluster_exchange_on_sm_90() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = softmax_sm90a();
    for (dt, packed) in ["f32", "bf16", "f16"]
        .into_iter()
        .flat_map(|dt| [(dt, false), (dt, true)])
    {
        let sym = format!(
            "softmax_v8_{}_{dt}",
            if packed { "packed" } else { "onchip" }
        );
        let body = ptx_entry_body(&c.ptx, &sym).unwrap();
        for needle in [
            "cp.async.cg.shared.global",
            "cp.async.wait_all",
            "mapa.shared::cluster",
            "ld.shared::cluster.v2.f32",
            "barrier.cluster.arrive.release.aligned",
            "barrier.cluster.wait.acquire.aligned",
            "%cluster_ctarank",
        ] {
            assert!(body.contains(needle), "{sym} has no {needle}");
        }
        if packed {
            // The kernel for rows with no scalar head or tail has no scalar code at all, and
            // takes its row as blockIdx.x / csize (docs/perf-notes.md, "softmax v8").
            for scalar in [
                "cp.async.ca.shared.global",
                "ld.global.u16",
                "ld.global.f32",
                "%clusterid.x",
            ] {
                assert!(!body.contains(scalar), "{sym} has {scalar}");
            }
            continue;
        }
        // The row is the cluster's index, not blockIdx.x / csize (docs/perf-notes.md,
        // "softmax v8").
        assert!(body.contains("%clusterid.x"), "{sym} has no %clusterid.x");
        // The scalar head and tail: ptxas issued a plain load of them only once the packs had
        // landed (docs/perf-notes.md, "softmax v8"). 16-bit rows copy them by
        // 4-byte cp.async with the packs, but for the two whose word reaches past the row,
        // which are prefetched to L1 with the packs and loaded plainly; f32 rows load them
        // plainly (the load seeds the register max) and copy none.
        let copies = body.contains("cp.async.ca.shared.global");
        if dt == "f32" {
            assert!(!copies, "{sym} copies its scalars by cp.async");
            assert!(body.contains("ld.global.f32"), "{sym} has no scalar load");
        } else {
            assert!(copies, "{sym} has no 4-byte cp.async for its scalars");
            assert!(
                body.contains("prefetch.global.L1"),
                "{sym} has no L1 prefetch for its row-end scalars"
            );
        }
    }
}

/// The kernels that hold rows on chip (v2, v3, v6, v8, v9) load their 16-byte packs with an
/// L2 evict_last cache policy (ld16_row), on sm_90a and on sm_80.
#[test]
fn softmax_row_loads_carry_the_evict_last_policy() {
    if !nvrtc_or_skip() {
        return;
    }
    for c in [softmax_sm90a(), softmax_for("sm_80")] {
        for dt in ["f32", "bf16", "f16"] {
            let mut syms = vec![
                format!("softmax_v2_warp_row_vec_k4_{dt}"),
                format!("softmax_v2_warp_row_vec_w8_{dt}"),
                format!("softmax_v3_block_regs_vec_k4_{dt}"),
                format!("softmax_v3_block_regs_vec_k8_{dt}"),
                format!("softmax_v3_block_regs_shift_k4_{dt}"),
                format!("softmax_v3_block_regs_shift_k8_{dt}"),
                format!("softmax_v6_split_vec_{dt}"),
                format!("softmax_v8_onchip_{dt}"),
                format!("softmax_v8_packed_{dt}"),
                format!("softmax_v9_gridsync_{dt}"),
            ];
            if dt != "f32" {
                syms.push(format!("softmax_v3_block_regs_shiftsplit_k4_{dt}"));
                syms.push(format!("softmax_v3_block_regs_shiftsplit_k8_{dt}"));
            }
            for sym in syms {
                let body = ptx_entry_body(&c.ptx, &sym)
                    .unwrap_or_else(|| panic!("{sym} not in the {} PTX", c.arch));
                assert!(
                    body.contains("createpolicy.fractional.L2::evict_last.b64"),
                    "{sym} ({}) makes no evict_last policy",
                    c.arch
                );
                assert!(
                    body.contains("ld.global.L2::cache_hint.v4.u32"),
                    "{sym} ({}) has no 16-byte load with the cache policy",
                    c.arch
                );
            }
            // Every one of v3's eight packs a thread, not just one of them.
            let k8 = ptx_entry_body(&c.ptx, &format!("softmax_v3_block_regs_vec_k8_{dt}")).unwrap();
            assert!(
                k8.matches("ld.global.L2::cache_hint.v4.u32").count() >= 8,
                "v3 k8 {dt} ({}) loads some packs without the policy",
                c.arch
            );
            assert!(
                !k8.contains("ld.global.v4"),
                "v3 k8 {dt} ({}) has a plain 16-byte load",
                c.arch
            );
        }
    }
}

/// v9 (both forms) copies its shared-memory packs with cp.async and exchanges (max, sum)
/// through tagged 64-bit global slots (relaxed, single-copy atomic), with no cluster
/// instructions: its CTAs need not share a cluster. The scalar head and tail are prefetched
/// to L1 before the copies (without it ptxas loads them after the cp.async wait).
#[test]
fn softmax_v9_uses_cp_async_and_the_global_exchange() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = softmax_sm90a();
    for sym in ["f32", "bf16", "f16"]
        .iter()
        .flat_map(|dt| ["gridsync", "pingpong"].map(|form| format!("softmax_v9_{form}_{dt}")))
    {
        let body = ptx_entry_body(&c.ptx, &sym).unwrap();
        for needle in [
            "cp.async.cg.shared.global",
            "cp.async.wait_all",
            "prefetch.global.L1",
            "st.relaxed.gpu.global.v2.u64",
            "ld.relaxed.gpu.global.v2.u64",
            "st.global.v4",
        ] {
            assert!(body.contains(needle), "{sym} has no {needle}");
        }
        assert!(
            body.contains("ld.global.v4") || body.contains("ld.global.L2::cache_hint.v4"),
            "{sym} has no 16-byte global load"
        );
        assert!(!body.contains("cluster"), "{sym} uses cluster instructions");
    }
    // The ping-pong form polls its partner's slot before it loads: one poll loop more than the
    // plain form's exchange (on sm_90a; its sm_80 symbol is the plain form).
    let polls = |sym: &str| {
        ptx_entry_body(&c.ptx, sym)
            .unwrap()
            .matches("ld.relaxed.gpu.global.v2.u64")
            .count()
    };
    for dt in ["f32", "bf16", "f16"] {
        let (plain, pp) = (
            polls(&format!("softmax_v9_gridsync_{dt}")),
            polls(&format!("softmax_v9_pingpong_{dt}")),
        );
        assert!(
            pp > plain,
            "softmax_v9_pingpong_{dt} has {pp} polls, the plain form {plain}: no turn-taking"
        );
    }
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
        &nvrtc::base_options("sm_90a"),
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
    // The cache folder is passed in, not set through KERNLAB_CACHE_DIR: tests that compile
    // at the same time (inspect, the CLI) would write theirs into this folder.
    let kdir = dir.path().join("kernels");
    let first = nvrtc::compile_cached_in(Some(&kdir), &ops::gelu::SOURCE, "sm_80", "x").unwrap();
    let second = nvrtc::compile_cached_in(Some(&kdir), &ops::gelu::SOURCE, "sm_80", "x").unwrap();
    assert!(!first.from_cache && second.from_cache);
    assert_eq!(first.ptx, second.ptx);
    assert_eq!(first.cubin, second.cubin);
    // One entry, in the folder given.
    assert_eq!(
        std::fs::read_dir(dir.path().join("kernels"))
            .unwrap()
            .count(),
        1
    );
    let _ = DType::F32;
}

/// NVRTC 12.9+ serves a program it has compiled before from a cache of its own, and such a
/// program's log has no ptxas report: the base options turn that cache off, so every compile
/// (the second of the same program in one process included) carries registers and spills.
#[test]
fn every_compile_carries_the_ptxas_report_even_the_same_program_twice() {
    if !nvrtc_or_skip() {
        return;
    }
    static TWICE: kernels::KernelSource = kernels::KernelSource {
        file: "twice.cu",
        src: "extern \"C\" __global__ void twice_kernel(float* x) { x[threadIdx.x] *= 3.0f; }",
    };
    let opts = nvrtc::base_options("sm_90a");
    let version = nvrtc::nvrtc_version().unwrap();
    assert_eq!(
        opts.iter().any(|o| o == "--no-cache"),
        version >= (12, 9),
        "NVRTC {version:?}: {opts:?}"
    );
    for round in 0..2 {
        let c = nvrtc::compile(&TWICE, "sm_90a", &opts, "twice_kernel").unwrap();
        let info = c
            .ptxas_info("twice_kernel")
            .unwrap_or_else(|| panic!("compile {round}: no ptxas report in {:?}", c.log));
        assert!(info.registers > 0, "compile {round}: {info:?}");
    }
}
