//! `kernlab profile`: CUPTI records parsed from raw structs, the key_averages table and the
//! Chrome trace from a recorded manual GeLU (tests/data/profile_gelu_manual.json: 2 iterations
//! of 9 elementwise kernels at 8192x8192 f32, with their cuLaunchKernel calls), and on the GPU
//! the lecture's observation: manual GeLU launches 9 kernels per call, the fused one 1.

use kernlab::tools::profile::cupti::{parse_record, Parsed};
use kernlab::tools::profile::summary::{self, RowKind};
use kernlab::tools::profile::{self, trace, MemKind, Recording};
use std::collections::{HashMap, HashSet};

fn fixture() -> Recording {
    // Embedded: the GPU machine runs the test binary where this checkout's paths do not exist.
    serde_json::from_str(include_str!("data/profile_gelu_manual.json")).unwrap()
}

const MANUAL_TANH: [&str; 9] = [
    "mul_scalar_f32",
    "mul_f32",
    "mul_f32",
    "add_f32",
    "mul_scalar_f32",
    "tanh_f32",
    "add_scalar_f32",
    "mul_scalar_f32",
    "mul_f32",
];

#[test]
fn recorded_manual_gelu_has_nine_launches_per_iteration_in_order() {
    let rec = fixture();
    let per = rec.kernels_per_iteration();
    assert_eq!(per.len(), 2);
    for it in per {
        let names: Vec<&str> = it.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, MANUAL_TANH);
    }
}

#[test]
fn key_averages_groups_by_kernel_and_sorts_by_gpu_time() {
    let rec = fixture();
    let rows = summary::key_averages(&rec);
    // Sorted by GPU total, API rows (no GPU time) last.
    let gpu: Vec<u64> = rows.iter().map(|r| r.gpu_total_ns).collect();
    assert!(gpu.windows(2).all(|w| w[0] >= w[1]), "{gpu:?}");
    let by: HashMap<&str, &summary::Row> = rows.iter().map(|r| (r.name.as_str(), r)).collect();
    let mul = by["mul_f32"];
    assert_eq!(rows[0].name, "mul_f32");
    assert_eq!((mul.kind, mul.calls), (RowKind::Kernel, 6));
    // 3 calls × 195.4 µs per iteration, the second iteration's 0.6 µs slower.
    assert_eq!(mul.gpu_total_ns, 6 * 195_400 + 3 * 600);
    assert_eq!((mul.gpu_min_ns, mul.gpu_max_ns), (195_400, 196_000));
    assert_eq!(mul.gpu_avg_ns(), (6 * 195_400 + 3 * 600) / 6);
    // CPU launch time joins on the correlation id: 6 cuLaunchKernel calls of 4.3 µs.
    assert_eq!((mul.cpu_calls, mul.cpu_total_ns), (6, 6 * 4_300));
    // The first launch of the run (6.2 µs) belongs to mul_scalar_f32.
    let ms = by["mul_scalar_f32"];
    assert_eq!((ms.calls, ms.cpu_total_ns), (6, 6_200 + 5 * 4_300));
    assert_eq!(by["tanh_f32"].calls, 2);
    assert_eq!(
        by["tanh_f32"].launch.as_deref(),
        Some("grid 262144 · block 256 · 18 regs · 0 B smem")
    );
    // Percentages of GPU time add up to 100 over kernels.
    let pct: f64 = rows
        .iter()
        .filter(|r| r.kind != RowKind::Api)
        .map(|r| r.gpu_pct)
        .sum();
    assert!((pct - 100.0).abs() < 1e-9, "{pct}");
    let total: u64 = rec.kernels.iter().map(|k| k.end_ns - k.start_ns).sum();
    assert!((mul.gpu_pct - 100.0 * mul.gpu_total_ns as f64 / total as f64).abs() < 1e-9);
    // Driver-API rows: their own CPU time, no GPU time.
    let launch = by["cuLaunchKernel"];
    assert_eq!(
        (launch.kind, launch.calls, launch.gpu_total_ns),
        (RowKind::Api, 18, 0)
    );
    assert_eq!(launch.cpu_total_ns, 6_200 + 17 * 4_300);
    assert_eq!(by["cuEventRecord"].calls, 2);
    assert_eq!(by["cuStreamSynchronize"].calls, 1);
    assert_eq!(rows.len(), 5 + 3);
}

#[test]
fn table_reads_like_torch_key_averages_and_honours_row_limit() {
    let rec = fixture();
    let full = summary::render(&rec, 2, None);
    for col in [
        "Name",
        "Calls",
        "GPU total",
        "GPU avg",
        "% GPU",
        "CPU launch total",
    ] {
        assert!(full.contains(col), "missing column {col}:\n{full}");
    }
    assert!(
        full.contains("kernel launches per iteration: 9 (all 2 iterations)"),
        "{full}"
    );
    assert!(full.contains("18 kernels"), "{full}");
    // 2.8728 ms of kernels in the 2.8932 ms from the first start to the last end.
    assert!(
        full.contains("GPU busy 99.3% of the 2.893ms from the first kernel's start to the last one's end (20.400us idle)"),
        "{full}"
    );
    // mul_f32's row comes before tanh_f32's (more GPU time).
    assert!(full.find("mul_f32").unwrap() < full.find("tanh_f32").unwrap());
    let short = summary::render(&rec, 2, Some(2));
    assert!(
        short.contains("mul_f32") && short.contains("mul_scalar_f32"),
        "{short}"
    );
    assert!(!short.contains("tanh_f32"), "{short}");
    assert!(short.contains("6 more rows not shown"), "{short}");
}

#[test]
fn durations_print_in_torch_units() {
    assert_eq!(summary::fmt_ns(850), "850ns");
    assert_eq!(summary::fmt_ns(12_345), "12.345us");
    assert_eq!(summary::fmt_ns(1_234_567), "1.235ms");
    assert_eq!(summary::fmt_ns(2_500_000_000), "2.500s");
}

/// The trace-event format: `{"traceEvents": [...]}`; `X` events with name, ph, ts, dur (µs,
/// ≥ 0), numeric pid and tid; `M` events naming every track used; flows paired by id.
#[test]
fn trace_is_valid_chrome_trace_event_json() {
    let rec = fixture();
    let v = trace::chrome_trace(&rec, "gelu/manual f32 8192x8192 (tanh)");
    // Through text and back, as a viewer reads it.
    let v: serde_json::Value = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
    let events = v["traceEvents"]
        .as_array()
        .expect("traceEvents is an array");
    let mut named_threads = HashSet::new();
    let mut named_procs = HashSet::new();
    let (mut starts, mut finishes) = (HashSet::new(), HashSet::new());
    let mut used = HashSet::new();
    let mut by_cat: HashMap<String, usize> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("every event has ph");
        let pid = e["pid"].as_u64().expect("numeric pid");
        match ph {
            "M" => {
                let name = e["name"].as_str().unwrap();
                match name {
                    "thread_name" => {
                        named_threads.insert((pid, e["tid"].as_u64().unwrap()));
                        assert!(e["args"]["name"].is_string());
                    }
                    "process_name" => {
                        named_procs.insert(pid);
                        assert!(e["args"]["name"].is_string());
                    }
                    "thread_sort_index" | "process_sort_index" => {
                        assert!(e["args"]["sort_index"].is_number())
                    }
                    other => panic!("unknown metadata event {other}"),
                }
            }
            "X" => {
                assert!(e["name"].is_string());
                let ts = e["ts"].as_f64().expect("ts in µs");
                let dur = e["dur"].as_f64().expect("dur in µs");
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
                used.insert((pid, e["tid"].as_u64().expect("numeric tid")));
                *by_cat
                    .entry(e["cat"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
            "s" => {
                starts.insert(e["id"].as_u64().unwrap());
            }
            "f" => {
                assert_eq!(e["bp"], "e");
                finishes.insert(e["id"].as_u64().unwrap());
            }
            "C" => {
                // The host's counter track: a name, a time, a whole number ≥ 0.
                assert_eq!(e["name"], "queued kernels");
                assert_eq!(e["pid"].as_u64(), Some(trace::HOST_PID as u64));
                assert!(e["ts"].as_f64().unwrap() >= 0.0);
                assert!(e["args"]["kernels"].as_i64().unwrap() >= 0, "{e}");
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    for t in &used {
        assert!(named_threads.contains(t), "track {t:?} has no thread_name");
        assert!(named_procs.contains(&t.0), "process {} has no name", t.0);
    }
    assert_eq!(starts, finishes, "every launch flow ends at its kernel");
    assert_eq!(starts.len(), 18);
    assert_eq!(by_cat["kernel"], 18);
    assert_eq!(by_cat["cuda_driver"], 21);
    assert_eq!(by_cat["kernlab"], 3, "the workload and 2 iterations");
    // Tracks: kernlab ranges, driver API, and stream 13.
    assert_eq!(used.len(), 3);
    assert!(used.contains(&(trace::GPU_PID as u64, 13)));
    // Kernel slices carry the launch configuration; times start at 0.
    let k = events
        .iter()
        .find(|e| e["cat"] == "kernel")
        .expect("a kernel slice");
    assert_eq!(k["args"]["grid"], serde_json::json!([262144, 1, 1]));
    assert_eq!(k["args"]["registers per thread"], 16);
    let min_ts = events
        .iter()
        .filter_map(|e| e["ts"].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(min_ts, 0.0);
    // The first kernel starts 13.7 µs after the workload range opened (0.5 µs before T).
    assert!(
        (k["ts"].as_f64().unwrap() - 13.7).abs() < 1e-6,
        "{}",
        k["ts"]
    );
}

#[test]
fn demangle_names_cpp_kernels_and_leaves_extern_c_alone() {
    assert_eq!(profile::demangle("tanh_f32"), "tanh_f32");
    assert_eq!(
        profile::demangle("_Z10add_kernelPfS_i"),
        "add_kernel(float*, float*, int)"
    );
    assert_eq!(
        profile::demangle("_ZN7cutlass7Kernel2I14GemmTraitsEEEvNT_6ParamsE"),
        "_ZN7cutlass7Kernel2I14GemmTraitsEEEvNT_6ParamsE",
        "an unparsable symbol comes back unchanged"
    );
}

mod raw {
    //! Raw CUPTI records as cuptiActivityGetNextRecord hands them over, built in memory with
    //! the CUDA 13.0 layouts cudarc defines.
    use super::*;
    use cudarc::cupti::sys;
    use std::ptr::addr_of_mut;

    /// A zeroed, 8-byte aligned buffer the size of `T`, with the kind in its first 4 bytes.
    fn buffer<T>(kind: u32) -> Vec<u64> {
        let mut b = vec![0u64; std::mem::size_of::<T>().div_ceil(8)];
        unsafe { (b.as_mut_ptr() as *mut u32).write(kind) };
        b
    }

    fn parse(b: &[u64]) -> Option<Parsed> {
        unsafe {
            parse_record(b.as_ptr() as *const sys::CUpti_Activity, &|cbid| {
                format!("api{cbid}")
            })
        }
    }

    #[test]
    fn kernel_record_fields_and_demangled_name() {
        let name = std::ffi::CString::new("_Z10add_kernelPfS_i").unwrap();
        let mut b = buffer::<sys::CUpti_ActivityKernel10>(10);
        let p = b.as_mut_ptr() as *mut sys::CUpti_ActivityKernel10;
        unsafe {
            addr_of_mut!((*p).registersPerThread).write_unaligned(40);
            addr_of_mut!((*p).start).write_unaligned(1_000);
            addr_of_mut!((*p).end).write_unaligned(3_500);
            addr_of_mut!((*p).deviceId).write_unaligned(1);
            addr_of_mut!((*p).streamId).write_unaligned(7);
            addr_of_mut!((*p).gridX).write_unaligned(132);
            addr_of_mut!((*p).gridY).write_unaligned(2);
            addr_of_mut!((*p).gridZ).write_unaligned(1);
            addr_of_mut!((*p).blockX).write_unaligned(128);
            addr_of_mut!((*p).blockY).write_unaligned(1);
            addr_of_mut!((*p).blockZ).write_unaligned(1);
            addr_of_mut!((*p).staticSharedMemory).write_unaligned(1024);
            addr_of_mut!((*p).dynamicSharedMemory).write_unaligned(49152);
            addr_of_mut!((*p).correlationId).write_unaligned(77);
            addr_of_mut!((*p).name).write_unaligned(name.as_ptr());
        }
        let Some(Parsed::Kernel(k)) = parse(&b) else {
            panic!("not a kernel record")
        };
        assert_eq!(k.name, "add_kernel(float*, float*, int)");
        assert_eq!(k.mangled.as_deref(), Some("_Z10add_kernelPfS_i"));
        assert_eq!((k.start_ns, k.end_ns), (1_000, 3_500));
        assert_eq!((k.device, k.stream, k.correlation), (1, 7, 77));
        assert_eq!((k.grid, k.block), ([132, 2, 1], [128, 1, 1]));
        assert_eq!(
            (k.registers, k.static_smem, k.dynamic_smem),
            (40, 1024, 49152)
        );
        // The same layout under the legacy KERNEL kind (3); an extern "C" name stays as is.
        let plain = std::ffi::CString::new("gelu_v2_vec16_tanh_f32").unwrap();
        unsafe {
            (b.as_mut_ptr() as *mut u32).write(3);
            addr_of_mut!((*p).name).write_unaligned(plain.as_ptr());
        }
        let Some(Parsed::Kernel(k)) = parse(&b) else {
            panic!("not a kernel record")
        };
        assert_eq!(
            (k.name.as_str(), k.mangled),
            ("gelu_v2_vec16_tanh_f32", None)
        );
    }

    #[test]
    fn memcpy_memset_and_driver_api_records() {
        let mut b = buffer::<sys::CUpti_ActivityMemcpy6>(1);
        let p = b.as_mut_ptr() as *mut sys::CUpti_ActivityMemcpy6;
        unsafe {
            addr_of_mut!((*p).copyKind).write_unaligned(1);
            addr_of_mut!((*p).bytes).write_unaligned(1 << 20);
            addr_of_mut!((*p).start).write_unaligned(10);
            addr_of_mut!((*p).end).write_unaligned(60);
            addr_of_mut!((*p).streamId).write_unaligned(13);
            addr_of_mut!((*p).correlationId).write_unaligned(5);
        }
        let Some(Parsed::Mem(m)) = parse(&b) else {
            panic!("not a memcpy")
        };
        assert_eq!((m.kind, m.direction.as_str()), (MemKind::Memcpy, "HtoD"));
        assert_eq!((m.bytes, m.start_ns, m.end_ns), (1 << 20, 10, 60));
        assert_eq!(
            (m.stream, m.correlation, m.label()),
            (13, 5, "[memcpy HtoD]".into())
        );

        let mut b = buffer::<sys::CUpti_ActivityMemset4>(2);
        let p = b.as_mut_ptr() as *mut sys::CUpti_ActivityMemset4;
        unsafe {
            addr_of_mut!((*p).bytes).write_unaligned(4096);
            addr_of_mut!((*p).start).write_unaligned(100);
            addr_of_mut!((*p).end).write_unaligned(140);
            addr_of_mut!((*p).correlationId).write_unaligned(6);
        }
        let Some(Parsed::Mem(m)) = parse(&b) else {
            panic!("not a memset")
        };
        assert_eq!(
            (m.kind, m.bytes, m.label()),
            (MemKind::Memset, 4096, "[memset]".into())
        );

        let mut b = buffer::<sys::CUpti_ActivityAPI>(4);
        let p = b.as_mut_ptr() as *mut sys::CUpti_ActivityAPI;
        unsafe {
            addr_of_mut!((*p).cbid).write_unaligned(307);
            addr_of_mut!((*p).start).write_unaligned(5);
            addr_of_mut!((*p).end).write_unaligned(9);
            addr_of_mut!((*p).threadId).write_unaligned(42);
            addr_of_mut!((*p).correlationId).write_unaligned(77);
        }
        let Some(Parsed::Api(a)) = parse(&b) else {
            panic!("not an API record")
        };
        assert_eq!(
            (a.name.as_str(), a.cbid, a.thread, a.correlation),
            ("api307", 307, 42, 77)
        );
        assert_eq!((a.start_ns, a.end_ns), (5, 9));
        // kernlab's own names for the launch calls, without CUPTI.
        assert_eq!(
            kernlab::tools::profile::cupti::known_driver_api(307),
            Some("cuLaunchKernel")
        );
        assert_eq!(
            kernlab::tools::profile::cupti::known_driver_api(652),
            Some("cuLaunchKernelEx")
        );

        // Kinds kernlab does not keep (here CUPTI_ACTIVITY_KIND_RUNTIME), and no record.
        assert_eq!(parse(&buffer::<sys::CUpti_ActivityAPI>(5)), None);
        assert_eq!(
            unsafe { parse_record(std::ptr::null(), &|_| String::new()) },
            None
        );
    }
}

#[test]
fn profile_without_a_gpu_is_a_clear_error() {
    if crate::common::gpu_present() {
        println!("skipped: a GPU is present (this test is of the error without one)");
        return;
    }
    let mut out = Vec::new();
    let err = kernlab::cli::run(
        [
            "kernlab",
            "profile",
            "gelu",
            "--variant",
            "manual",
            "--shape",
            "64x64",
        ],
        &mut out,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("needs a CUDA GPU"), "{err}");
}

/// On the GPU: the lecture's observation as assertions.
mod gpu {
    use super::*;
    use kernlab::ops::gelu;
    use kernlab::ops::gelu::{GeluApprox, GeluParams};
    use kernlab::ops::softmax::{self, SoftmaxParams};
    use kernlab::{DType, DeviceSpec, Op, Params};

    fn profile(variant: &str, sync_each_launch: bool) -> Option<profile::ProfileReport> {
        let tanh = Params::new(GeluParams {
            gelu: GeluApprox::Tanh,
        });
        profile_op(gelu::OP, variant, tanh, sync_each_launch)
    }

    fn profile_op(
        op: Op,
        variant: &str,
        params: Params,
        sync_each_launch: bool,
    ) -> Option<profile::ProfileReport> {
        crate::common::cuda()?;
        if let Err(why) = profile::cupti::available() {
            if crate::common::required("KERNLAB_REQUIRE_GPU") {
                panic!("KERNLAB_REQUIRE_GPU=1 but CUPTI is missing: {why}");
            }
            println!("skipped: {why}");
            return None;
        }
        let req = profile::ProfileRequest {
            op,
            variant: variant.into(),
            shape: vec![2048, 2048],
            dtype: DType::F32,
            params,
            iters: 4,
            seed: Some(7),
            device: DeviceSpec::Cuda(0),
            sync_each_launch,
        };
        Some(profile::run(&req, &mut |_| {}).unwrap())
    }

    /// One test, so the two recordings never overlap (CUPTI's state is process-wide).
    #[test]
    fn manual_gelu_launches_nine_kernels_per_call_and_fused_one() {
        let Some(manual) = profile("manual", false) else {
            return;
        };
        let rec = &manual.recording;
        let per = rec.kernels_per_iteration();
        assert_eq!(per.len(), 4);
        for it in &per {
            let names: Vec<&str> = it.iter().map(|k| k.name.as_str()).collect();
            // The compiler's eager kernels, one a node of manual_gelu's graph, in its order.
            let eager: Vec<String> = [
                "mul2", "mul4", "mul5", "mul6", "add7", "mul9", "tanh10", "add12", "mul13",
            ]
            .iter()
            .map(|n| format!("kl_eager_gelu_tanh_f32_{n}"))
            .collect();
            assert_eq!(names, eager, "manual GeLU's kernels in one iteration");
            for k in it {
                assert!(k.end_ns > k.start_ns && k.block[0] > 0 && k.registers > 0);
            }
        }
        assert_eq!(rec.dropped, 0);
        // Every kernel has its launch call, and the table shows CPU launch time.
        let launches: HashSet<u32> = rec
            .api
            .iter()
            .filter(|a| a.is_launch())
            .map(|a| a.correlation)
            .collect();
        assert!(rec
            .kernels
            .iter()
            .all(|k| launches.contains(&k.correlation)));
        let text = manual.render(None);
        assert!(
            text.contains("kernel launches per iteration: 9 (all 4 iterations)"),
            "{text}"
        );
        assert!(manual.overhead.plain_gpu_ms > 0.0 && manual.overhead.profiled_gpu_ms > 0.0);
        println!("{text}");

        let fused = profile("v2_vec16", false).unwrap();
        let per = fused.recording.kernels_per_iteration();
        assert_eq!(per.len(), 4);
        for it in &per {
            assert_eq!(it.len(), 1, "the fused GeLU is one kernel per call");
            assert!(it[0].name.starts_with("gelu_v2_vec16"), "{}", it[0].name);
        }
        let v = trace::chrome_trace(&fused.recording, &fused.workload);
        assert!(v["traceEvents"].as_array().unwrap().len() > 4);
        println!("{}", fused.render(None));

        // Synchronising after every launch leaves the GPU idle between kernels.
        let synced = profile("manual", true).unwrap();
        let busy = |r: &profile::ProfileReport| {
            let k = &r.recording.kernels;
            let span = k.iter().map(|k| k.end_ns).max().unwrap()
                - k.iter().map(|k| k.start_ns).min().unwrap();
            k.iter().map(|k| k.end_ns - k.start_ns).sum::<u64>() as f64 / span as f64
        };
        let (free, blocking) = (busy(&manual), busy(&synced));
        assert!(
            blocking < 0.9 * free,
            "GPU busy {blocking:.3} with a sync per launch vs {free:.3} without"
        );
        let syncs = synced
            .recording
            .api
            .iter()
            .filter(|a| a.name.contains("Synchronize"))
            .count();
        assert!(syncs >= 9 * 4, "{syncs} synchronisations for 36 launches");
        let text = synced.render(None);
        assert!(text.contains("GPU busy"), "{text}");
        println!("{text}");

        // log_softmax, validated against its own f64 reference before the recording, is
        // named in the workload and runs softmax's one kernel a call.
        let log = Params::new(SoftmaxParams { log_softmax: true });
        let lsm = profile_op(softmax::OP, "v3_block_regs", log, false).unwrap();
        assert!(lsm.workload.contains("(log_softmax)"), "{}", lsm.workload);
        let per = lsm.recording.kernels_per_iteration();
        assert_eq!(per.len(), 4);
        for it in &per {
            assert_eq!(it.len(), 1, "softmax v3 is one kernel per call");
            assert!(
                it[0].name.starts_with("softmax_v3_block_regs"),
                "{}",
                it[0].name
            );
        }
    }
}

/// The host runs ahead: the recorded manual GeLU launches its kernels every ~6 µs while each
/// runs ~195 µs, so the queue of launched, unfinished kernels grows to a whole iteration and
/// more; it never goes negative, ends empty, and its largest value is what counting at each
/// launch's return finds.
#[test]
fn the_queue_depth_counts_kernels_launched_and_not_finished() {
    let rec = fixture();
    let steps = rec.queue_depth();
    assert!(steps.iter().all(|&(_, d)| d >= 0), "{steps:?}");
    assert_eq!(steps.last().unwrap().1, 0);
    assert!(steps.windows(2).all(|w| w[0].0 <= w[1].0));
    let launch_end: HashMap<u32, u64> = rec
        .api
        .iter()
        .filter(|a| a.is_launch())
        .map(|a| (a.correlation, a.end_ns))
        .collect();
    let brute = rec
        .kernels
        .iter()
        .map(|k| {
            let t = launch_end[&k.correlation].min(k.start_ns);
            let launched = rec
                .kernels
                .iter()
                .filter(|j| launch_end[&j.correlation].min(j.start_ns) <= t)
                .count() as i64;
            let done = rec.kernels.iter().filter(|j| j.end_ns <= t).count() as i64;
            launched - done
        })
        .max()
        .unwrap();
    let (max, mean) = rec.queue_summary().unwrap();
    assert_eq!(max, brute);
    assert!(max >= 9, "{max}");
    assert!(mean > 1.0 && mean <= max as f64, "{mean}");
    let text = summary::render(&rec, 2, None);
    assert!(text.contains(&format!("up to {max} kernels")), "{text}");
    let t = trace::chrome_trace(&rec, "gelu");
    let counters = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "queued kernels")
        .count();
    assert_eq!(counters, steps.len());
}
