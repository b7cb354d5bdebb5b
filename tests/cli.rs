//! The command line, driven through `kernlab::cli::run` (no binary path needed, so these run
//! on the GPU machine too).

use crate::common::run_cli as run;

#[test]
fn bad_arguments_get_clear_errors() {
    for (args, want) in [
        (
            &["bench", "--shape", "12xq"][..],
            "'q' is not a whole number",
        ),
        (&["bench", "--shape", "0x4"], "at least 1"),
        (
            &["bench", "gelux"],
            "unknown op 'gelux' (known: gelu, softmax, matmul, linear, rmsnorm, mlp)",
        ),
        (
            &["bench", "linear", "--device", "cpu", "--activation", "relu"],
            "unknown activation 'relu'",
        ),
        (
            &["bench", "matmul", "--device", "cpu", "--shape", "8x8"],
            "M×N×K",
        ),
        (
            &["sweep", "matmul", "--device", "cpu", "--cols", "8..16:8"],
            "use --square",
        ),
        (
            &["sweep", "softmax", "--device", "cpu", "--square", "64"],
            "--square is for matmul",
        ),
        (&["autotune", "gelu"], "nothing to tune"),
        (&["autotune", "matmul", "--device", "cpu"], "needs a GPU"),
        (
            &["autotune", "matmul", "--device", "cpu", "--shape", "8x8"],
            "M×N×K",
        ),
        (
            &["bench", "softmax", "--device", "cpu", "--variants", "v9"],
            "unknown variant 'v9' for op softmax",
        ),
        (
            &["bench", "mlp", "--device", "cpu", "--torch=torch_eager"],
            "no PyTorch column 'torch_eager' (the columns: torch_manual",
        ),
        (&["bench", "--dtype", "f64"], "unknown dtype 'f64'"),
        (&["bench", "--dtype", "all,f64"], "unknown dtype 'f64'"),
        (
            &[
                "bench",
                "--device",
                "cpu",
                "--csv",
                "same.out",
                "--json",
                "./same.out",
            ],
            "both name ./same.out",
        ),
        (&["bench", "--device", "tpu"], "unknown device 'tpu'"),
        (&["bench", "--gelu", "cubic"], "unknown GeLU approximation"),
        (&["bench", "--device", "cuda:99"], "cuda"),
        (&["list", "--op", "matmulx"], "unknown op"),
        (&["sweep", "softmax", "--cols", "1..9"], "needs a step"),
        (
            &["sweep", "softmax", "--rows", "4", "--cols", "9..1:1"],
            "runs backwards",
        ),
        (
            &["sweep", "gelu", "--numel", "2^8", "--rows", "4"],
            "either --numel",
        ),
        (
            &["sweep", "gelu", "--numel", "2^8..2^4:x2"],
            "runs backwards",
        ),
        (&["sweep", "softmax", "--plot", "x.pdf"], ".svg or .png"),
        (&["sweep"], "<OP>"),
        (
            &["sweep", "gelu", "--device", "cpu", "--graph", "4"],
            "needs a CUDA device",
        ),
        (&["bench", "--device", "cpu", "--repeat", "0"], "at least 1"),
        // Not a panic, an abort or a silent wrong answer: overflowing or too-large shapes and
        // strides, durations that would never end, names that select nothing.
        (
            &[
                "sweep",
                "softmax",
                "--device",
                "cpu",
                "--rows",
                "4611686018427387905",
                "--cols",
                "4",
            ],
            "too many elements",
        ),
        (
            &[
                "bench",
                "softmax",
                "--device",
                "cpu",
                "--shape",
                "9x16",
                "--row-stride",
                "2305843009213693952",
            ],
            "too many elements",
        ),
        (
            &[
                "bench",
                "softmax",
                "--device",
                "cpu",
                "--shape",
                "100000000x100000000",
            ],
            "of host memory",
        ),
        (
            &[
                "bench",
                "softmax",
                "--device",
                "cpu",
                "--shape",
                "8x16",
                "--row-stride",
                "2",
            ],
            "less than the rows' width of 16",
        ),
        (&["bench", "--shape", "4x4,8x8"], "repeat the flag"),
        (&["bench", "--device", "cpu", "--rep-ms", "inf"], "finite"),
        (&["bench", "--device", "cpu", "--rep-ms", "nan"], "finite"),
        (&["bench", "--device", "cpu", "--warmup-ms", "-1"], "≥ 0"),
        (&["autotune", "softmax", "--rep-ms", "inf"], "finite"),
        (
            &[
                "bench",
                "--device",
                "cpu",
                "--csv",
                "/nonexistent-kernlab-dir/x.csv",
            ],
            "does not exist",
        ),
        (
            &["bench", "--device", "cpu", "--json", "/tmp"],
            "is a directory",
        ),
        (
            &[
                "sweep",
                "softmax",
                "--plot",
                "/nonexistent-kernlab-dir/p.svg",
            ],
            "does not exist",
        ),
        (
            &["bench", "softmax", "--device", "cpu", "--variants", " , "],
            "names no variant",
        ),
        (
            &[
                "bench",
                "softmax",
                "--device",
                "cpu",
                "--variants",
                "v9_gridsync",
            ],
            "softmax/v9_gridsync is a CUDA variant; this run is on the CPU",
        ),
        // Flags of an op the run does not time are refused, not ignored.
        (
            &["bench", "gelu", "--device", "cpu", "--log-softmax"],
            "--log-softmax applies to softmax",
        ),
        (
            &["bench", "softmax", "--device", "cpu", "--gelu", "erf"],
            "--gelu applies to gelu and mlp, which this run does not time",
        ),
        (
            &["sweep", "gelu", "--device", "cpu", "--activation", "none"],
            "--activation applies to linear",
        ),
        (
            &["profile", "gelu", "--variant", "v1_naive", "--log-softmax"],
            "which this run does not profile",
        ),
        (
            &["profile", "softmax", "--variant", "auto", "--gelu", "erf"],
            "--gelu applies to gelu and mlp, which this run does not profile",
        ),
        (
            &["autotune", "softmax", "--activation", "none"],
            "--activation applies to linear, which this run does not tune",
        ),
        (
            &["inspect", "softmax", "--gelu", "erf"],
            "--gelu applies to gelu and mlp, which this run does not inspect",
        ),
        // Outputs: one file a flag, and a file that can be written, checked before the run.
        (
            &[
                "bench", "--device", "cpu", "--csv", "same.out", "--json", "same.out",
            ],
            "both name same.out",
        ),
        (
            &["sweep", "softmax", "--plot", "p.svg", "--csv", "p.svg"],
            "both name p.svg",
        ),
        (
            &["bench", "--device", "cpu", "--csv", "/proc/kernlab-x.csv"],
            "cannot be written",
        ),
        // Too many --rotate copies for the host: refused before any is made.
        (
            &[
                "bench",
                "gelu",
                "--device",
                "cpu",
                "--shape",
                "1024x1024",
                "--rotate",
                "100000000",
            ],
            "--rotate 100000000",
        ),
        // A GEMM's M×N output counts against host memory, however small its operands.
        (
            &[
                "bench",
                "matmul",
                "--device",
                "cpu",
                "--shape",
                "1000000x1000000x1",
            ],
            "of host memory",
        ),
        // Every variant refusing its input is not a successful run.
        (
            &[
                "bench",
                "gelu",
                "--device",
                "cpu",
                "--shape",
                "64x64",
                "--row-stride",
                "100",
                "--rep-ms",
                "1",
            ],
            "nothing was timed",
        ),
        (
            &[
                "sweep",
                "softmax",
                "--device",
                "cpu",
                "--cols",
                "64",
                "--max-elements",
                "0",
            ],
            "--max-elements 0",
        ),
        // A GEMM named with a row stride, or a point past the host's memory after one that
        // fits, is refused before any point runs.
        (
            &[
                "bench",
                "matmul,softmax",
                "--device",
                "cpu",
                "--shape",
                "64x64",
                "--row-stride",
                "100",
            ],
            "--row-stride 100 applies to rows",
        ),
        (
            &[
                "bench",
                "matmul,all",
                "--device",
                "cpu",
                "--shape",
                "64x64",
                "--row-stride",
                "100",
            ],
            "not to matmul",
        ),
        (
            &[
                "bench", "softmax", "--device", "cpu", "--shape", "64x64", "--shape", "4x2^36",
            ],
            "of host memory",
        ),
        (
            &[
                "sweep",
                "softmax",
                "--device",
                "cpu",
                "--cols",
                "64",
                "--max-elements",
                "2..8:2",
            ],
            "takes one number",
        ),
        (
            &["bench", "--device", "cpu", "--rep-ms", "1e10"],
            "at most 600000",
        ),
        (
            &["bench", "--device", "cpu", "--rotate", "-1"],
            "at least 1",
        ),
        (
            &[
                "inspect",
                "gelu",
                "--variant",
                "v1_naive",
                "--out",
                "/proc/x.ptx",
            ],
            "cannot be written",
        ),
        (&["inspect", "gelu", "--variant", ","], "names no variant"),
        // A negative size is the parsers' error, not clap's "unexpected argument".
        (
            &["bench", "gelu", "--shape", "-5x3"],
            "'-5' is not a whole number",
        ),
        (
            &["profile", "gelu", "--variant", "manual", "--shape", "-4x4"],
            "'-4' is not a whole number",
        ),
        (
            &["autotune", "softmax", "--shape", "-1x8"],
            "'-1' is not a whole number",
        ),
        (
            &["sweep", "softmax", "--cols", "-5..10"],
            "'-5' is not a whole number",
        ),
        // An architecture older than the kernels' is named as such.
        (
            &["inspect", "gelu", "--arch", "sm_75"],
            "need sm_80 or newer",
        ),
    ] {
        let e = run(args).expect_err(&format!("{args:?} must fail"));
        assert!(
            e.to_lowercase().contains(&want.to_lowercase()),
            "{args:?}: {e}"
        );
    }
}

/// `all` brings in the GEMMs, which take no row stride: they are left out, and the rows run.
/// `all` may stand anywhere in the op list.
#[test]
fn a_row_stride_with_every_op_runs_the_row_ops() {
    let out = run(&[
        "bench",
        "all,gelu",
        "--device",
        "cpu",
        "--shape",
        "16x64",
        "--row-stride",
        "80",
        "--variants",
        "reference",
        "--warmup-ms",
        "0",
        "--rep-ms",
        "1",
        "--seed",
        "3",
    ])
    .unwrap();
    assert!(
        out.contains("softmax f32 16×64") && out.contains("gelu (tanh) f32 16×64"),
        "{out}"
    );
    // No GEMM table (their titles say "M×N×K, …"; the header still names the matmul ceiling).
    assert!(!out.contains("M×N×K"), "{out}");
}

/// A reader that stops early (`| head`) ends the run with the pipe's error, after the output
/// files were written.
#[test]
fn files_are_written_before_the_tables() {
    struct Closed;
    impl std::io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let dir = std::env::temp_dir().join(format!("kernlab-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for cmd in ["bench", "sweep"] {
        let csv = dir.join(format!("{cmd}.csv"));
        let _ = std::fs::remove_file(&csv);
        let csv_arg = csv.to_str().unwrap();
        let mut args = vec!["kernlab", cmd, "gelu", "--device", "cpu"];
        args.extend(if cmd == "bench" {
            ["--shape", "64"]
        } else {
            ["--numel", "64"]
        });
        args.extend(["--warmup-ms", "0", "--rep-ms", "1", "--csv", csv_arg]);
        let e = kernlab::cli::run(args, &mut Closed).expect_err("stdout is closed");
        let io = e
            .chain()
            .find_map(|c| c.downcast_ref::<std::io::Error>())
            .expect("an I/O error");
        assert_eq!(io.kind(), std::io::ErrorKind::BrokenPipe, "{cmd}: {e:#}");
        let text = std::fs::read_to_string(&csv).expect("the CSV was written");
        assert!(text.lines().count() >= 2, "{cmd}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_json_holds_every_registry_row() {
    let out = run(&["list", "--json"]).unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), kernlab::ops::all().count());
    for r in &rows {
        for key in ["op", "variant", "tier", "device", "dtypes", "summary"] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    assert!(rows
        .iter()
        .any(|r| r["variant"] == "v1_naive" && r["tier"] == "cuda"));
    let table = run(&["list", "--op", "softmax"]).unwrap();
    assert!(table.contains("v4_online") && !table.contains("v1_naive"));
}

#[test]
fn an_end_to_end_cpu_bench_validates_times_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.json");
    let out = run(&[
        "bench",
        "all",
        "--device",
        "cpu",
        "--shape",
        "64x300",
        "--dtype",
        "f32,bf16",
        "--warmup-ms",
        "1",
        "--rep-ms",
        "5",
        "--json",
        path.to_str().unwrap(),
    ])
    .unwrap();
    assert!(
        out.contains("copy ceiling") && out.contains("softmax") && out.contains("gelu (tanh)"),
        "{out}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let records = report["records"].as_array().unwrap();
    // 3 row ops (gelu, softmax, rmsnorm) × 2 dtypes × (manual, fused), and the MLP (64
    // layers of 300) × 2 dtypes × faer; the GEMMs take M×N×K shapes and are left out.
    assert_eq!(records.len(), 14, "{report}");
    for r in records {
        for key in [
            "op",
            "variant",
            "tier",
            "device",
            "dtype",
            "shape",
            "median_ms",
            "gbps",
            "pct_of_copy",
            "validated",
            "max_rel_err",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["validated"], true);
        assert_eq!(r["device"], "cpu");
        assert_eq!(r["shape"], serde_json::json!([64, 300]));
        let ms = r["median_ms"].as_f64().unwrap();
        let gbps = r["gbps"].as_f64().unwrap();
        let bytes = r["bytes"].as_f64().unwrap();
        assert!(ms > 0.0 && (gbps - bytes / (ms * 1e-3) / 1e9).abs() < 1e-6 * gbps.max(1.0));
        let pct = r["pct_of_copy"].as_f64().unwrap();
        let copy = report["copy"]["gbps"].as_f64().unwrap();
        assert!((pct - 100.0 * gbps / copy).abs() < 1e-6 * pct.max(1.0));
        assert!(r["max_rel_err"].as_f64().unwrap() <= 8e-3);
    }
    // manual's speedup over itself is 1.
    assert!(records
        .iter()
        .filter(|r| r["tier"] == "manual")
        .all(|r| r["speedup_vs_manual"] == 1.0));
}

#[test]
fn doctor_shows_the_device_libraries_cache_and_ceilings() {
    let out = run(&["doctor", "--device", "cpu"]).unwrap();
    for want in [
        "CUDA driver library:",
        "NVRTC:",
        "cuBLAS:",
        "cuBLASLt:",
        "CUPTI:",
        "NCCL:",
        "kernel cache:",
        "device: cpu",
        "the CPU: ",
        "ceilings (",
        "copy ",
        "matmul ",
        "faer f32",
    ] {
        assert!(out.contains(want), "{want} missing in\n{out}");
    }
}

#[test]
fn inspect_shows_the_load_width_difference_between_gelu_v1_and_v2() {
    if !crate::common::nvrtc_or_skip() {
        return;
    }
    let out = run(&[
        "inspect",
        "gelu",
        "--variant",
        "v1_naive,v2_vec16",
        "--device",
        "cpu",
        "--json",
    ])
    .unwrap();
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let kernels = report["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2, "{report}");
    let widest = |i: usize| kernels[i]["widest_global_load_bytes"].as_u64();
    assert_eq!(widest(0), Some(4), "v1 loads 4 bytes per instruction");
    assert_eq!(widest(1), Some(16), "v2 loads 16 bytes per instruction");
    let dir = tempfile::tempdir().unwrap();
    let ptx = dir.path().join("v2.ptx");
    let text = run(&[
        "inspect",
        "gelu",
        "--variant",
        "v2_vec16",
        "--device",
        "cpu",
        "--out",
        ptx.to_str().unwrap(),
    ])
    .unwrap();
    assert!(text.contains("ptxas:"), "{text}");
    assert!(std::fs::read_to_string(&ptx)
        .unwrap()
        .contains(".entry gelu_v2_vec16_tanh_f32"));
    let e = run(&["inspect", "gelu", "--variant", "fused"]).unwrap_err();
    assert!(e.contains("CPU"), "{e}");
}

#[test]
fn a_dtype_op_or_shape_named_twice_runs_once() {
    let out = run(&[
        "bench",
        "softmax,softmax",
        "--device",
        "cpu",
        "--shape",
        "8x8",
        "--shape",
        "8×8",
        "--dtype",
        "f32,F32",
        "--variants",
        "fused,fused",
        "--warmup-ms",
        "1",
        "--rep-ms",
        "1",
    ])
    .unwrap();
    assert_eq!(out.matches("softmax f32 8×8").count(), 1, "{out}");
    assert_eq!(out.matches("│ fused").count(), 1, "{out}");
}

/// `kernlab autotune softmax` on the GPU: every candidate is validated and timed, or skipped
/// because it refuses the shape; the `auto` entry names the fastest timed one; `--dry-run`
/// writes no cache.
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn autotune_softmax_keeps_the_fastest_candidate_as_auto() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("tune.json");
    let args = [
        "autotune",
        "softmax",
        "--shape",
        "256x1024",
        "--dtype",
        "f32",
        "--rep-ms",
        "2",
        "--warmup-ms",
        "1",
        "--dry-run",
        "--json",
    ];
    let mut argv = args.to_vec();
    argv.push(json.to_str().unwrap());
    let table = run(&argv).unwrap_or_else(|e| panic!("{e}"));
    assert!(table.contains("v2_warp_row"), "{table}");
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &reports[0];
    assert!(r["cache"].is_null(), "--dry-run keeps no cache: {r}");
    // Timed as `bench --rotate auto`: 2 MiB a call (input and output), so copies enough to
    // make 4× the L2.
    let l2 = dev.cuda().unwrap().props.l2_bytes;
    let copies = kernlab::tools::bench::harness::Rotate::Auto.copies(2 * 256 * 1024 * 4, l2);
    assert!(copies > 1, "{copies} copies for a {l2}-byte L2");
    assert_eq!(r["rotate_copies"].as_u64(), Some(copies as u64), "{r}");
    assert!(
        table.contains(&format!("cycling through {copies} copies")),
        "{table}"
    );
    let trials = r["trials"].as_array().unwrap();
    assert!(trials.len() >= 4, "{r}");
    let mut best: Option<(f64, &str)> = None;
    for t in trials {
        let v = t["variant"].as_str().unwrap();
        match t["median_ms"].as_f64() {
            Some(ms) => {
                assert!(ms > 0.0 && t["max_rel_err"].as_f64().unwrap() < 1e-3, "{t}");
                if best.is_none_or(|(b, _)| ms < b) {
                    best = Some((ms, v));
                }
            }
            // Not timed: only a shape the candidate refuses, never an error or a failed check.
            None => assert!(
                t["note"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("skipped:")),
                "{t}"
            ),
        }
    }
    // v2 holds a 1024-column f32 row: it must have run.
    assert!(
        trials
            .iter()
            .any(|t| t["variant"] == "v2_warp_row" && t["median_ms"].is_f64()),
        "{r}"
    );
    let (_, fastest) = best.expect("some candidate was timed");
    let stored = r["stored"].as_array().unwrap();
    let auto = stored
        .iter()
        .find(|e| e[0].as_str().unwrap().contains("softmax/auto"))
        .unwrap_or_else(|| panic!("no auto entry: {r}"));
    assert_eq!(auto[1]["variant"], fastest, "{r}");
}

/// `kernlab autotune rmsnorm` on the GPU: v1 refuses a row a warp cannot hold, v2 runs in each
/// of its named configurations and v3 as it is, each validated; `auto`'s entry is the fastest.
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn autotune_rmsnorm_measures_v2_in_each_configuration() {
    if crate::common::cuda().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("tune.json");
    let argv = [
        "autotune",
        "rmsnorm",
        "--shape",
        "256x4096",
        "--dtype",
        "bf16",
        "--rep-ms",
        "2",
        "--warmup-ms",
        "1",
        "--dry-run",
        "--json",
        json.to_str().unwrap(),
    ];
    let table = run(&argv).unwrap_or_else(|e| panic!("{e}"));
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &reports[0];
    let trials = r["trials"].as_array().unwrap();
    let timed = |v: &str, c: &str| {
        trials.iter().any(|t| {
            t["variant"] == v
                && t["config"] == c
                && t["median_ms"].is_f64()
                && t["max_rel_err"].as_f64().unwrap() < 8e-3
        })
    };
    for c in ["default", "k1", "k2", "k4", "k8"] {
        assert!(timed("v2_block_regs", c), "v2 {c}: {table}");
    }
    assert!(timed("v3_two_pass", ""), "{table}");
    let v1 = trials
        .iter()
        .find(|t| t["variant"] == "v1_warp_row")
        .unwrap();
    assert!(
        v1["median_ms"].is_null() && v1["note"].as_str().unwrap().starts_with("skipped:"),
        "{v1}"
    );
    let fastest = trials
        .iter()
        .filter_map(|t| Some((t["median_ms"].as_f64()?, t)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap()
        .1;
    let stored = r["stored"].as_array().unwrap();
    let auto = stored
        .iter()
        .find(|e| e[0].as_str().unwrap().contains("rmsnorm/auto"))
        .unwrap_or_else(|| panic!("no auto entry: {r}"));
    assert_eq!(auto[1]["variant"], fastest["variant"], "{r}");
    assert_eq!(auto[1]["config"], fastest["config"], "{r}");
}

/// `kernlab compile --expr`: a user's expression, its inputs' layouts declared, and its
/// mistakes named.
#[test]
fn compile_takes_a_users_expression_with_declared_layouts() {
    let out = run(&["compile", "--expr", "silu(a) * b", "--dtype", "bf16"]).unwrap();
    assert!(
        out.starts_with("kernlab compile `silu(a) * b`, bf16, for sm_90a"),
        "{out}"
    );
    assert!(
        out.contains("= input a") && out.contains("= input b"),
        "{out}"
    );
    assert!(
        out.contains("fusion: 1 kernel") && out.contains("element-wise"),
        "{out}"
    );
    let out = run(&[
        "compile",
        "--expr",
        "x * rsqrt(mean(x * x) + 1e-6) * w",
        "--input",
        "w:col",
    ])
    .unwrap();
    assert!(
        out.contains("= input w ") && out.contains("1×cols"),
        "{out}"
    );
    assert!(
        out.contains("one row kernel") && out.contains("row_mean"),
        "{out}"
    );
    for (args, says) in [
        (vec!["compile", "--expr", "x +"], "expected a value"),
        (
            vec!["compile", "--expr", "x", "--input", "y:col"],
            "no input 'y'",
        ),
        (
            vec!["compile", "--expr", "x", "--input", "x:diag"],
            "layout 'diag'",
        ),
        (vec!["compile"], "name an op"),
        (
            vec!["compile", "gelu", "--expr", "x"],
            "cannot be used with",
        ),
    ] {
        let e = run(&args).unwrap_err();
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

/// `kernlab compile`: the graph, one fused kernel in place of the eager launches, the generated
/// CUDA on request, and ptxas's report where NVRTC loads; ops without a graph and other ops'
/// flags are clear errors.
#[test]
fn compile_shows_the_graph_the_fusion_and_the_generated_kernel() {
    let out = run(&["compile", "gelu", "--gelu", "erf", "--dtype", "bf16"]).unwrap();
    assert!(
        out.starts_with("kernlab compile gelu (erf), bf16, for sm_90a"),
        "{out}"
    );
    assert!(out.contains("= erf %"), "{out}");
    assert!(
        out.contains("fusion: 1 kernel") && out.contains("element-wise"),
        "{out}"
    );
    assert!(
        !out.contains("generated CUDA:"),
        "the source only with --source: {out}"
    );
    let nvrtc = kernlab::runtime::device::nvrtc::nvrtc_available().is_ok();
    if nvrtc {
        assert!(out.contains("ptxas (sm_90a, cold compile"), "{out}");
        assert!(out.contains("kl_compiled_gelu_erf_bf16_scalar: "), "{out}");
        assert!(out.contains("ld.global 1×16B, st.global 1×16B"), "{out}");
        // ptxas's figures for both kernels: NVRTC's own cache, which drops them, is off.
        assert!(!out.contains("no ptxas report"), "{out}");
        assert_eq!(
            out.matches(" 0 B spill stores, 0 B spill loads").count(),
            2,
            "{out}"
        );
    } else {
        assert!(out.contains("ptxas: not run ("), "{out}");
    }
    let out = run(&["compile", "softmax", "--source", "--arch", "sm_80"]).unwrap();
    assert!(
        out.contains("one row kernel") && out.contains("%1 row_max"),
        "{out}"
    );
    assert!(
        out.contains("generated CUDA:") && out.contains("kl_gen_block_max("),
        "{out}"
    );
    assert!(out.contains("(eager: 5 launches)"), "{out}");
    let out = run(&["compile", "rmsnorm", "--eps", "1e-6"]).unwrap();
    assert!(
        out.contains("(eps 1e-6)") && out.contains("row_mean"),
        "{out}"
    );
    // linear: the matmul on the tensor cores, bias + GeLU its generated epilogue (bf16 by
    // default), 1 + tanh(u) as 2·sigmoid(2u).
    let out = run(&["compile", "linear", "--source", "--arch", "sm_90a"]).unwrap();
    assert!(
        out.contains("linear (bias + gelu-tanh), bf16")
            && out.contains("%2   = matmul %0, %1")
            && out.contains("one GEMM for 11 operations")
            && out.contains("the rest its epilogue (11 operations after the fusion rewrites)"),
        "{out}"
    );
    assert!(
        out.contains("struct Epi {")
            && out.contains("fast_exp(-v17)")
            && out.contains("v7_body<T, 256, 3>"),
        "{out}"
    );
    if out.contains("ptxas (sm_90a") {
        let line = out
            .lines()
            .find(|l| l.contains("kl_compiled_linear_bias_gelu_tanh_bf16_v7_128x256x64_s3: "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains("0 B spill stores, 0 B spill loads"), "{line}");
    }
    let e = run(&["compile", "matmul", "--dtype", "f32"]).unwrap_err();
    assert!(e.contains("bf16 or f16"), "{e}");
    let e = run(&["compile", "--expr", "matmul(x, w) + x"]).unwrap_err();
    assert!(e.contains("cannot also be read element-wise"), "{e}");
    let e = run(&["compile", "gelu", "--eps", "1"]).unwrap_err();
    assert!(e.contains("--eps applies to rmsnorm"), "{e}");
    let e = run(&["compile", "gelu", "--arch", "volta"]).unwrap_err();
    assert!(e.contains("bad architecture 'volta'"), "{e}");
}

/// `autotune --help` names what each op's tuner compares, from the op's descriptor, and every
/// version it names is a variant of that op.
#[test]
fn autotune_help_names_the_versions_each_op_compares() {
    let help = run(&["autotune", "--help"]).unwrap_err();
    let mut tuned = 0;
    for op in kernlab::Op::all() {
        let Some(t) = op.tuning() else { continue };
        tuned += 1;
        assert!(help.contains(&format!("  {op}: ")), "{help}");
        for v in t.versions {
            assert!(
                op.variants().iter().any(|r| r.name == *v),
                "{op}'s tuner names {v}, which is not one of its variants"
            );
            assert!(help.contains(v), "{v} missing from:\n{help}");
        }
    }
    assert!(tuned >= 4, "{tuned} ops with a tuner");
    assert!(
        help.contains("v11_deal") && help.contains("v7_wgmma_tma_store"),
        "{help}"
    );
}

/// A tiny problem behind a cache flush gets as many timed calls as fill the measurement's
/// wall time, flushes included (do_bench's estimate covers its cache clear), not 10,000 calls
/// of a few µs each behind a flush of milliseconds; without the flush, the calls fill it alone.
#[test]
fn tiny_problems_take_the_flush_into_the_call_count() {
    let dir = std::env::temp_dir().join(format!("kernlab-tiny-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let calls = |extra: &[&str]| -> Vec<u64> {
        let json = dir.join("b.json");
        let mut args = vec![
            "bench",
            "gelu",
            "--device",
            "cpu",
            "--shape",
            "64x64",
            "--seed",
            "1",
            "--variants",
            "fused",
            "--warmup-ms",
            "2",
            "--rep-ms",
            "50",
            "--json",
        ];
        let path = json.to_str().unwrap().to_string();
        args.push(&path);
        args.extend_from_slice(extra);
        run(&args).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["calls"].as_u64().unwrap())
            .collect()
    };
    let flushed = calls(&[]);
    let unflushed = calls(&["--no-flush"]);
    let _ = std::fs::remove_dir_all(&dir);
    // A flush of 64 MiB or more takes a millisecond or more: 50 ms hold at most ~50 cycles.
    assert!(
        flushed.iter().all(|&c| (5..=200).contains(&c)),
        "{flushed:?}"
    );
    assert!(
        unflushed.iter().zip(&flushed).all(|(u, f)| u > f),
        "{unflushed:?} {flushed:?}"
    );
}

/// `bench --check-only`: every variant validated twice, nothing timed (no ceilings, no timed
/// calls), one table; it refuses the flags that only make sense for timing.
#[test]
fn check_only_validates_and_times_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("check.json");
    let out = run(&[
        "bench",
        "softmax,gelu",
        "--check-only",
        "--device",
        "cpu",
        "--dtype",
        "f32,bf16",
        "--shape",
        "3x4097",
        "--shape",
        "1x1",
        "--json",
        json.to_str().unwrap(),
    ])
    .unwrap();
    assert!(
        out.contains("--check-only: each variant validated twice"),
        "{out}"
    );
    assert!(!out.contains("copy ceiling"), "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc["copy"].is_null());
    let records = doc["records"].as_array().unwrap();
    // softmax and gelu: manual and fused each, 2 dtypes, 2 shapes.
    assert_eq!(records.len(), 16, "{records:?}");
    for r in records {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["median_ms"].is_null(), "{r}");
        assert!(r["max_rel_err"].as_f64().unwrap() < 1e-2, "{r}");
    }
    assert!(
        out.contains("checked: 16 (variant, dtype, shape) cases passed twice"),
        "{out}"
    );
    for flag in [&["--torch"][..], &["--graph", "2"], &["--repeat", "3"]] {
        let mut args = vec!["bench", "gelu", "--check-only", "--device", "cpu"];
        args.extend_from_slice(flag);
        let err = run(&args).unwrap_err();
        assert!(err.contains("cannot be used with"), "{flag:?}: {err}");
    }
}

/// `--cpu-path` caps the CPU tier's instruction paths for one command (the report names the
/// path), and the cap is lifted when the command ends; an unknown path is refused.
#[test]
fn cpu_path_caps_the_cpu_tier_for_one_command_and_the_report_names_it() {
    use kernlab::runtime::simd;
    let _only = crate::common::cpu_path_lock();
    let args = [
        "bench",
        "gelu",
        "--device",
        "cpu",
        "--check-only",
        "--shape",
        "64x64",
    ];
    let mut portable = vec!["--cpu-path", "portable"];
    portable.extend(args);
    let out = run(&portable).unwrap();
    assert!(out.contains("portable (--cpu-path portable)"), "{out}");
    assert_eq!(simd::cap(), simd::CpuPath::Best);
    let out = run(&args).unwrap();
    assert!(!out.contains("--cpu-path"), "{out}");
    let e = run(&["--cpu-path", "fast", "list"]).unwrap_err();
    assert!(
        e.contains("invalid value 'fast'") && e.contains("portable"),
        "{e}"
    );
}

/// `--threads N` runs the command's CPU work on N threads, and the report says how many; 0 is
/// refused by the parser.
#[test]
fn threads_sets_the_cpu_pool_and_the_report_names_it() {
    for (n, says) in [("1", "1 thread;"), ("3", "3 threads;")] {
        let out = run(&[
            "bench",
            "gelu",
            "--device",
            "cpu",
            "--threads",
            n,
            "--check-only",
            "--shape",
            "64x64",
        ])
        .unwrap();
        assert!(out.contains(says), "--threads {n}:\n{out}");
    }
    let e = run(&["--threads", "0", "list"]).unwrap_err();
    assert!(e.contains("--threads"), "{e}");
}

/// `bench collectives` on the CPU test backend: every collective validated then timed, one row a
/// size, bus bandwidth = algorithm bandwidth × nccl-tests' factor, the JSON written; flags
/// that do not apply, and a missing GPU for NCCL, are clear errors.
#[test]
fn bench_collectives_validates_times_and_reports_bus_bandwidth() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("coll.json");
    let svg = dir.path().join("coll.svg");
    let out = run(&[
        "bench",
        "collectives",
        "--backend",
        "cpu",
        "--ranks",
        "3",
        "--bytes",
        "4096,2^16",
        "--dtype",
        "bf16",
        "--iters",
        "3",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ])
    .unwrap();
    assert!(
        out.contains("cpu over 3 rank(s), bf16; 3 timed calls"),
        "{out}"
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("<svg") && drawn.contains("bus bandwidth"));
    assert!(out.contains("the cpu backend is a test backend"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v[0][1].as_array().unwrap();
    assert_eq!(rows.len(), 6, "{v}");
    for r in rows {
        let name = r["collective"].as_str().unwrap();
        let factor = match name {
            "all-reduce" => 2.0 * 2.0 / 3.0,
            "reduce-scatter" | "all-gather" => 2.0 / 3.0,
            other => panic!("{other} was not asked for"),
        };
        let (alg, bus) = (
            r["algbw_gbs"].as_f64().unwrap(),
            r["busbw_gbs"].as_f64().unwrap(),
        );
        assert!(alg > 0.0 && (bus - alg * factor).abs() <= 1e-9 * alg, "{r}");
        assert_eq!(r["max_rel_err"].as_f64().unwrap(), 0.0, "{r}");
        // The split collectives round to whole blocks of 3: 4096 B of bf16 is 2046 elements.
        let count = r["count"].as_u64().unwrap();
        if name != "all-reduce" {
            assert_eq!(count % 3, 0, "{r}");
        }
        assert!(out.contains(&format!("{name} ")), "{out}");
    }
    for (args, want) in [
        (
            &["bench", "collectives", "--backend", "cpu", "--shape", "4x4"][..],
            "takes no --shape",
        ),
        (
            &["bench", "collectives", "--backend", "mpi"],
            "--backend mpi: nccl or cpu",
        ),
        (
            &[
                "bench",
                "collectives",
                "--backend",
                "cpu",
                "--collectives",
                "all-to-all",
            ],
            "unknown collective 'all-to-all'",
        ),
        (
            &["bench", "collectives", "--backend", "cpu", "--ranks", "0"],
            "--ranks takes a whole number",
        ),
        (
            &[
                "bench",
                "collectives",
                "--backend",
                "cpu",
                "--bytes",
                "8..2",
            ],
            "runs backwards",
        ),
        (
            &[
                "bench",
                "collectives",
                "--backend",
                "cpu",
                "--plot",
                "x.pdf",
            ],
            "must end in .svg or .png",
        ),
    ] {
        let e = format!("{:#}", run(args).unwrap_err());
        assert!(e.contains(want), "{args:?}: {e}");
    }
    if kernlab::runtime::device::cuda_probe().is_err() {
        let e = format!("{:#}", run(&["bench", "collectives"]).unwrap_err());
        assert!(e.contains("--backend cpu runs the test backend"), "{e}");
    }
}
