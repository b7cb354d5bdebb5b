use crate::common::nvrtc_or_skip;
use kernlab::ops::{gelu, matmul, softmax};
use kernlab::runtime::device::nvrtc::{self, ptx_entry_body};
use kernlab::runtime::kernels::KernelSource;
use kernlab::tools::inspect::{
    find_sass_tool, inspect, parse_sass, Category, Census, InspectRequest, Level, Occupancy,
};
use kernlab::{DType, DeviceSpec, Error, Op};

/// Real `cuobjdump -sass` output (CUDA 13.2) of two GeLU kernels NVRTC 13.0 built for sm_90a.
const GELU_CUOBJDUMP: &str = include_str!("data/gelu_sm90a.cuobjdump.sass");
/// Real `nvdisasm -c` output (CUDA 13.2) of `data/census_probe.cu` built for sm_90a.
const PROBE_NVDISASM: &str = include_str!("data/census_probe_sm90a.nvdisasm.sass");

static PROBE: KernelSource = KernelSource {
    file: "census_probe.cu",
    src: include_str!("data/census_probe.cu"),
};

/// A request that never touches a GPU, so the tests read the same on every machine.
fn request(op: Op, variant: &str, dtype: DType) -> InspectRequest {
    let mut r = InspectRequest::new(op, variant);
    r.dtype = dtype;
    r.arch = Some("sm_90a".into());
    r.device = DeviceSpec::Cpu;
    r
}

#[test]
fn naive_gelu_loads_4_bytes_a_thread_and_v3_loads_16() {
    if !nvrtc_or_skip() {
        return;
    }
    let mut req = request(gelu::OP, "v1_naive", DType::F32);
    req.variants.push("v3_vec16_ilp".into());
    let r = inspect(&req).unwrap();
    assert_eq!(r.kernels.len(), 2, "one tanh f32 kernel per variant");
    let (v1, v3) = (&r.kernels[0], &r.kernels[1]);
    assert_eq!(v1.kernel, "gelu_v1_naive_tanh_f32");
    assert_eq!(v3.kernel, "gelu_v3_vec16_ilp_tanh_f32");
    assert_eq!(v1.ptx_census.level, Level::Ptx);
    assert_eq!(
        v1.ptx_census.widths(Category::GlobalLoad),
        vec![(4, 1)],
        "v1: one 4-byte load, nothing wider"
    );
    assert_eq!(v1.widest_global_load_bytes, Some(4));
    assert_eq!(v3.widest_global_load_bytes, Some(16));
    let v3_loads = v3.ptx_census.widths(Category::GlobalLoad);
    assert!(
        v3_loads[0].0 == 16 && v3_loads[0].1 >= 4,
        "v3: at least 4 16-byte loads a thread (its tile): {v3_loads:?}"
    );
    assert_eq!(v3.ptx_census.widest(Category::GlobalStore), Some(16));
    // Elementwise kernels synchronise nothing and share nothing.
    for k in &r.kernels {
        let c = &k.ptx_census;
        for cat in [
            Category::Barrier,
            Category::SharedLoad,
            Category::SharedStore,
            Category::LocalLoad,
            Category::LocalStore,
        ] {
            assert_eq!(
                c.count(cat),
                0,
                "{}: {cat} in an elementwise kernel",
                k.kernel
            );
        }
        // The tanh GeLU's tanh is one ex2 (common.cuh), in every version.
        assert!(c.count(Category::Special) >= 1, "{}: no ex2", k.kernel);
        assert!(matches!(k.occupancy, Occupancy::NotComputed { .. }));
    }
    let text = r.to_string();
    println!("{text}");
    let regs = v1.ptxas.as_ref().expect("ptxas reports v1").registers;
    assert!(
        text.contains(&format!("ptxas: {regs} registers")),
        "the report shows the register count"
    );
    assert!(text.contains("1×4B") && text.contains("×16B"), "{text}");
    assert!(text.contains("occupancy not computed"), "{text}");
    assert!(!text.contains(".entry"), "PTX is printed only when asked");
}

#[test]
fn the_manual_and_primitive_kernels_have_no_barriers_but_row_reductions_do() {
    if !nvrtc_or_skip() {
        return;
    }
    let r = inspect(&request(gelu::OP, "manual", DType::BF16)).unwrap();
    let names: Vec<&str> = r.kernels.iter().map(|k| k.kernel.as_str()).collect();
    // The compiler's kernels, one a node of manual_gelu's graph: x to f32 first.
    assert!(
        names.contains(&"kl_eager_gelu_tanh_bf16_tanh10")
            && names.contains(&"kl_eager_gelu_tanh_bf16_float_scalar"),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("erf")),
        "tanh GeLU by default: {names:?}"
    );
    for k in &r.kernels {
        assert_eq!(k.ptx_census.count(Category::Barrier), 0, "{}", k.kernel);
        assert!(
            k.ptx_census.count(Category::GlobalStore) >= 1,
            "{}",
            k.kernel
        );
    }
    let r = inspect(&request(softmax::OP, "manual", DType::F32)).unwrap();
    let row_max = r
        .kernels
        .iter()
        .find(|k| k.kernel.starts_with("kl_eager_softmax_f32_row_max"))
        .unwrap_or_else(|| {
            panic!(
                "{:?}",
                r.kernels.iter().map(|k| &k.kernel).collect::<Vec<_>>()
            )
        });
    assert!(row_max.ptx_census.count(Category::Barrier) >= 1);
}

#[test]
fn softmax_v2_reduces_a_row_with_warp_shuffles_and_no_barrier() {
    if !nvrtc_or_skip() {
        return;
    }
    let r = inspect(&request(softmax::OP, "v2_warp_row", DType::F32)).unwrap();
    assert_eq!(
        r.kernels.len(),
        14,
        "k1..k8 and w4..w16 (several rows a warp), vec and scalar"
    );
    for k in &r.kernels {
        let c = &k.ptx_census;
        // Two reductions (max, sum) of log2(lanes) shuffles each: 10 for a whole warp, 4 for
        // rows of 4 lanes.
        let lanes: u32 = ["w4", "w8", "w16"]
            .iter()
            .find(|w| k.kernel.contains(&format!("_{w}_")))
            .map_or(32, |w| w[1..].parse().unwrap());
        assert!(
            c.count(Category::Shuffle) >= 2 * lanes.trailing_zeros(),
            "{}: {:?}",
            k.kernel,
            c.rows
        );
        assert_eq!(
            c.count(Category::Barrier),
            0,
            "{}: a warp per row",
            k.kernel
        );
        if k.kernel.contains("_vec_") {
            assert_eq!(c.widest(Category::GlobalLoad), Some(16), "{}", k.kernel);
        }
    }
    // One kernel on its own, with its PTX in the report.
    let mut req = request(softmax::OP, "softmax/v1_block_row", DType::F32);
    req.kernel = Some("softmax_v1_block_row_f32".into());
    req.show_ptx = true;
    let r = inspect(&req).unwrap();
    assert_eq!(r.kernels.len(), 1);
    let c = &r.kernels[0].ptx_census;
    assert!(c.count(Category::Barrier) >= 1 && c.count(Category::SharedStore) >= 1);
    assert!(r.to_string().contains(".entry softmax_v1_block_row_f32("));
    assert!(r.ptx().contains(".entry softmax_v1_block_row_f32("));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["arch"], "sm_90a");
    assert_eq!(json["kernels"][0]["ptx_census"]["level"], "ptx");
    assert_eq!(json["kernels"][0]["occupancy"]["status"], "not_computed");
    assert!(json["kernels"][0]["ptxas"]["registers"].as_u64().unwrap() > 0);
}

#[test]
fn unknown_variants_kernels_and_dtypes_are_clear_errors() {
    // These fail before NVRTC is needed.
    let e = inspect(&request(gelu::OP, "v9_warp_speed", DType::F32)).unwrap_err();
    assert!(matches!(e, Error::UnknownVariant { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("v9_warp_speed") && msg.contains("v3_vec16_ilp"),
        "{msg}"
    );
    assert!(
        !msg.contains("fused"),
        "only CUDA variants are offered: {msg}"
    );
    let msg = inspect(&request(gelu::OP, "fused", DType::F32))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("runs on the CPU"), "{msg}");
    let mut req = request(gelu::OP, "v1_naive", DType::F32);
    req.kernel = Some("gelu_v1_naive_tanh_bf16".into());
    let msg = inspect(&req).unwrap_err().to_string();
    assert!(
        msg.contains("gelu_v1_naive_tanh_bf16") && msg.contains("gelu_v1_naive_tanh_f32"),
        "{msg}"
    );
    let mut req = request(gelu::OP, "v1_naive", DType::F32);
    req.arch = Some("hopper".into());
    let msg = inspect(&req).unwrap_err().to_string();
    assert!(msg.contains("hopper") && msg.contains("sm_90a"), "{msg}");
}

#[test]
fn ptx_census_finds_tensor_cores_local_memory_atomics_and_async_copies() {
    if !nvrtc_or_skip() {
        return;
    }
    let c = nvrtc::compile(&PROBE, "sm_90a", &nvrtc::base_options("sm_90a"), "probe")
        .unwrap_or_else(|e| panic!("{e}"));
    let census = |k: &str| Census::of_ptx(ptx_entry_body(&c.ptx, k).unwrap());
    let local = census("probe_local");
    assert!(local.count(Category::LocalStore) >= 1 && local.count(Category::LocalLoad) >= 1);
    let mma = census("probe_mma");
    assert_eq!(mma.count(Category::Mma), 1);
    assert_eq!(mma.count(Category::Ldmatrix), 1);
    assert_eq!(mma.count(Category::Barrier), 1);
    let wgmma = census("probe_wgmma");
    // fence, mma_async, commit_group, wait_group
    assert_eq!(wgmma.count(Category::Wgmma), 4, "{:?}", wgmma.rows);
    assert!(wgmma
        .rows
        .iter()
        .any(|r| r.form.starts_with("wgmma.mma_async")));
    let misc = census("probe_atomic_cp_async");
    assert_eq!(misc.widths(Category::CpAsync)[0], (16, 1));
    assert_eq!(misc.count(Category::Atomic), 1);
}

#[test]
fn sass_census_of_a_recorded_cuobjdump_listing() {
    let fns = parse_sass(GELU_CUOBJDUMP);
    let names: Vec<&str> = fns.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["gelu_v2_vec16_tanh_f32", "gelu_v1_naive_tanh_f32"]);
    let v1 = Census::of_sass(&fns[1]);
    assert_eq!(v1.level, Level::Sass);
    assert_eq!(v1.widths(Category::GlobalLoad), vec![(4, 1)]);
    assert_eq!(v1.widths(Category::GlobalStore), vec![(4, 1)]);
    let mufu: Vec<&str> = v1
        .rows
        .iter()
        .filter(|r| r.category == Category::Special)
        .map(|r| r.form.as_str())
        .collect();
    assert_eq!(mufu, ["MUFU.EX2", "MUFU.RCP"]);
    // 32 instructions up to EXIT, then the `BRA` to itself; the NOP padding is not counted.
    assert_eq!(v1.instructions, 33);
    let v2 = Census::of_sass(&fns[0]);
    assert_eq!(v2.widths(Category::GlobalLoad), vec![(16, 1), (4, 1)]);
    assert!(v2.rows.iter().any(|r| r.form == "LDG.E.128"));
    assert_eq!(
        v2.count(Category::LocalLoad) + v2.count(Category::LocalStore),
        0
    );
    assert!(fns[1].text.contains("MUFU.EX2 R4, R4 ;"));
}

#[test]
fn sass_census_of_a_recorded_nvdisasm_listing() {
    let fns = parse_sass(PROBE_NVDISASM);
    let get = |n: &str| {
        let f = fns.iter().find(|f| f.name == n).unwrap_or_else(|| {
            panic!(
                "{n} not in {:?}",
                fns.iter().map(|f| &f.name).collect::<Vec<_>>()
            )
        });
        Census::of_sass(f)
    };
    assert_eq!(fns.len(), 4);
    let local = get("probe_local");
    assert_eq!(local.widths(Category::LocalStore), vec![(16, 16), (4, 1)]);
    assert_eq!(local.count(Category::LocalLoad), 2);
    let mma = get("probe_mma");
    assert_eq!(mma.count(Category::Mma), 1);
    assert_eq!(mma.count(Category::Ldmatrix), 1);
    let wgmma = get("probe_wgmma");
    assert!(wgmma.rows.iter().any(|r| r.form == "HGMMA.64x8x16.F32"));
    let misc = get("probe_atomic_cp_async");
    assert_eq!(
        misc.widths(Category::CpAsync)[0],
        (16, 1),
        "LDGSTS.E.BYPASS.128"
    );
    assert_eq!(misc.count(Category::Atomic), 1, "REDG.E.ADD");
    assert_eq!(misc.count(Category::Barrier), 1);
}

#[test]
fn sass_census_from_the_disassembler_when_one_is_here() {
    if !nvrtc_or_skip() {
        return;
    }
    let Some(tool) = find_sass_tool() else {
        println!("skipped: neither cuobjdump nor nvdisasm is on PATH");
        let mut req = request(gelu::OP, "v1_naive", DType::F32);
        req.sass = true;
        let r = inspect(&req).unwrap();
        assert!(r
            .sass_note
            .as_deref()
            .unwrap()
            .contains("SASS census skipped"));
        assert!(r.kernels[0].sass.is_none());
        return;
    };
    let mut req = request(gelu::OP, "v1_naive", DType::F32);
    req.variants.push("v3_vec16_ilp".into());
    req.sass = true;
    req.show_sass = true;
    let r = inspect(&req).unwrap();
    assert!(r.sass_note.as_deref().unwrap().contains(tool.name));
    let v1 = r.kernels[0].sass.as_ref().expect("SASS for v1");
    let v3 = r.kernels[1].sass.as_ref().expect("SASS for v3");
    assert_eq!(v1.census.widest(Category::GlobalLoad), Some(4));
    assert_eq!(v3.census.widest(Category::GlobalLoad), Some(16));
    assert_eq!(v3.census.count(Category::LocalLoad), 0, "no spills");
    let text = r.to_string();
    assert!(
        text.contains("LDG (SASS)") && text.contains("MUFU.EX2"),
        "{text}"
    );
}

#[test]
fn every_cuda_variant_of_an_op_when_none_is_named() {
    if !nvrtc_or_skip() {
        return;
    }
    // The defaults: device auto, the GPU's architecture if there is one, else sm_90a.
    let mut req = InspectRequest::new(gelu::OP, "v1_naive");
    req.variants.clear();
    let r = inspect(&req).unwrap();
    if r.device.is_none() {
        assert_eq!(r.arch, "sm_90a");
        let note = r.occupancy_note.as_deref().unwrap();
        assert!(note.starts_with("no GPU") && note.ends_with("occupancy not computed"));
    }
    let variants: Vec<&str> = r.kernels.iter().map(|k| k.variant.as_str()).collect();
    for v in [
        "gelu/manual",
        "gelu/v1_naive",
        "gelu/v2_vec16",
        "gelu/v3_vec16_ilp",
    ] {
        assert!(variants.contains(&v), "{v} missing from {variants:?}");
    }
    assert!(
        !variants.contains(&"gelu/fused"),
        "CPU variants have no kernels"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn occupancy_comes_from_the_driver_on_a_gpu() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let gpu = dev.cuda().unwrap();
    let mut req = InspectRequest::new(softmax::OP, "v2_warp_row");
    req.kernel = Some("softmax_v2_warp_row_vec_k1_f32".into());
    req.device = DeviceSpec::Cuda(gpu.ordinal);
    req.block_size = Some(128);
    let r = inspect(&req).unwrap();
    assert_eq!(r.arch, gpu.arch, "the GPU's own architecture by default");
    assert!(r.occupancy_note.is_none(), "{:?}", r.occupancy_note);
    match &r.kernels[0].occupancy {
        Occupancy::Computed {
            block_size,
            blocks_per_sm,
            warps_per_sm,
            max_warps_per_sm,
        } => {
            assert_eq!(*block_size, 128);
            assert!(*blocks_per_sm >= 1);
            assert_eq!(*warps_per_sm, blocks_per_sm * 4);
            assert!(warps_per_sm <= max_warps_per_sm && *max_warps_per_sm >= 32);
        }
        other => panic!("no occupancy on a GPU: {other}"),
    }
    assert!(r.to_string().contains("blocks/SM of 128 threads"));
    // Another architecture than the GPU's: the report says why occupancy is missing.
    req.arch = Some(
        if gpu.arch == "sm_80" {
            "sm_90a"
        } else {
            "sm_80"
        }
        .into(),
    );
    let r = inspect(&req).unwrap();
    assert!(r
        .occupancy_note
        .as_deref()
        .unwrap()
        .contains("occupancy not computed"));
}

#[test]
fn with_no_variant_named_inspect_takes_those_that_have_the_dtype() {
    if !nvrtc_or_skip() {
        return;
    }
    // matmul's tensor-core versions take 16-bit inputs only: an f32 inspect of every matmul
    // variant leaves them out instead of failing on the first.
    let mut req = request(matmul::OP, "", DType::F32);
    req.variants.clear();
    let r = inspect(&req).unwrap();
    assert!(r.kernels.iter().any(|k| k.variant == "matmul/v1_naive"));
    assert!(
        r.kernels.iter().all(|k| k.variant != "matmul/v5_mma"),
        "v5_mma has no f32 kernel"
    );
    // Named, it is still an error.
    let e = inspect(&request(matmul::OP, "v5_mma", DType::F32)).unwrap_err();
    assert!(e.to_string().contains("does not support dtype f32"), "{e}");
}
