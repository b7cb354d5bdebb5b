//! The bench harness and its reports: statistics, byte/FLOP accounting, the JSON and CSV
//! shapes, sweeps end to end on the CPU with their plots.

use kernlab::check;
use kernlab::ops::{gelu, linear, matmul, softmax};
use kernlab::tools::bench::harness::{flush_bytes, quantile, within_noise, Stats};
use kernlab::tools::bench::report::CSV_COLUMNS;
use kernlab::tools::bench::{self, BenchConfig, Event};
use kernlab::tools::sweep;
use kernlab::{DType, Device, Op};

use crate::common::run_cli;

/// Split CSV text into records of fields (RFC 4180: quoted fields may hold commas, quotes
/// and line breaks).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && row.is_empty(),
        "the CSV must end with a newline"
    );
    rows
}

#[test]
fn quantiles_and_stats_follow_do_bench() {
    let s: Vec<f64> = (1..=10).map(f64::from).collect();
    assert_eq!(quantile(&s, 0.5), 5.5);
    assert!((quantile(&s, 0.2) - 2.8).abs() < 1e-12);
    assert!((quantile(&s, 0.8) - 8.2).abs() < 1e-12);
    let st = Stats::from_samples(&[4.0, 2.0, 9.0, 1.0]).unwrap();
    assert_eq!((st.median_ms, st.min_ms, st.calls), (3.0, 1.0, 4));
    assert!(st.p20_ms <= st.median_ms && st.median_ms <= st.p80_ms);
}

#[test]
fn the_l2_flush_writes_at_least_twice_the_cache() {
    // H200: 60 MiB of L2 → the 256 MiB floor; a (hypothetical) 200 MiB L2 → 400 MiB.
    for l2 in [0usize, 50 << 20, 60 << 20, 128 << 20, 200 << 20] {
        let f = flush_bytes(l2);
        assert!(f >= 2 * l2 && f >= 256 << 20, "{l2} → {f}");
    }
    assert_eq!(flush_bytes(200 << 20), 400 << 20);
}

#[test]
fn rotate_auto_makes_the_copies_four_times_the_cache() {
    use kernlab::tools::bench::harness::Rotate;
    let l2 = 60 << 20; // the H200's
                       // A call's inputs and output: 4096 × 128 f32 softmax touches 4 MiB, 4096 × 2048 64 MiB.
    assert_eq!(Rotate::Auto.copies(4 << 20, l2), 60);
    assert_eq!(Rotate::Auto.copies(64 << 20, l2), 4);
    assert_eq!(Rotate::Auto.copies(100 << 20, l2), 3); // rounds up
    assert_eq!(Rotate::Auto.copies(240 << 20, l2), 1);
    assert_eq!(Rotate::Auto.copies(1 << 30, l2), 1);
    assert_eq!(Rotate::Auto.copies(128, l2), Rotate::AUTO_MAX_COPIES);
    assert_eq!(Rotate::Auto.copies(0, l2), Rotate::AUTO_MAX_COPIES);
    assert_eq!(Rotate::Copies(3).copies(1, l2), 3);
    assert_eq!(Rotate::Copies(0).copies(1, l2), 1);
    assert_eq!("auto".parse::<Rotate>().unwrap(), Rotate::Auto);
    assert_eq!(" 7 ".parse::<Rotate>().unwrap(), Rotate::Copies(7));
    for bad in ["0", "-1", "two", ""] {
        let e = bad.parse::<Rotate>().unwrap_err();
        assert!(e.contains("--rotate") && e.contains("auto"), "{bad}: {e}");
    }
    assert_eq!(serde_json::to_string(&Rotate::Auto).unwrap(), "\"auto\"");
    assert_eq!(serde_json::to_string(&Rotate::Copies(5)).unwrap(), "5");
}

#[test]
fn noise_needs_a_measured_spread() {
    assert!(within_noise(2.0, 0.1, 2.1, 0.0));
    assert!(!within_noise(2.0, 0.01, 2.1, 0.01));
    assert!(!within_noise(2.0, 0.0, 2.0, 0.0));
}

#[test]
fn bytes_and_flops_are_counted_per_op() {
    for dt in DType::ALL {
        // GeLU and softmax read the input once and write the output once.
        assert_eq!(
            gelu::OP.min_bytes(&[1024, 4096], dt, &gelu::OP.default_params()),
            2 * 1024 * 4096 * dt.size()
        );
        assert_eq!(
            softmax::OP.min_bytes(&[4096, 256], dt, &softmax::OP.default_params()),
            2 * 4096 * 256 * dt.size()
        );
        assert_eq!(
            gelu::OP.min_bytes(&[1 << 20], dt, &gelu::OP.default_params()),
            2 * (1 << 20) * dt.size()
        );
    }
    assert_eq!(gelu::OP.flops(&[10, 10], &gelu::OP.default_params()), 900.0);
    assert_eq!(
        softmax::OP.flops(&[4, 8], &softmax::OP.default_params()),
        160.0
    );
}

#[test]
fn a_run_measures_every_point_and_reports_its_steps() {
    let mut cfg = BenchConfig::new(
        vec![softmax::OP],
        vec![vec![8, 64], vec![8, 200]],
        vec![DType::F32, DType::BF16],
    );
    cfg.timing.warmup_ms = 0.5;
    cfg.timing.rep_ms = 2.0;
    cfg.timing.max_calls = 20;
    cfg.timing.flush = false;
    cfg.timing.repeat = 2;
    cfg.timing.rotate = bench::harness::Rotate::Copies(3);
    cfg.seed = Some(7);
    // No ceiling cache: the matmul ceiling is measured in the run.
    cfg.ceiling_cache = None;
    let (mut steps, mut so_far) = (Vec::new(), Vec::new());
    let report = bench::run(&cfg, &Device::Cpu, &mut |e| match e {
        Event::Step { done, total } => steps.push((done, total)),
        // The report so far after each point: that point's records added to the others'.
        Event::Point(r) => so_far.push(r.records.len()),
        Event::Note(_) => {}
    })
    .unwrap();
    assert_eq!(steps, vec![(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]);
    assert_eq!(so_far, vec![2, 4, 6, 8]);
    // 2 shapes × 2 dtypes × (manual, fused), in order of shape, then dtype.
    assert_eq!(report.records.len(), 8);
    assert_eq!(report.records[0].shape, vec![8, 64]);
    assert_eq!(report.records[4].shape, vec![8, 200]);
    for r in &report.records {
        assert_eq!(r.status, bench::Status::Ok, "{r:?}");
        assert_eq!(r.repeat_medians_ms.len(), 2);
        assert!(r.spread.unwrap() >= 0.0);
        // Speedups compare with manual at the same shape and dtype.
        assert!(r.speedup_vs_manual.is_some());
    }
    // Each (shape, dtype) point has its own seed; the first keeps the run's.
    assert_eq!(report.records[0].seed, 7 + DType::F32 as u64);
    assert_ne!(report.records[0].seed, report.records[4].seed);
    assert!(report.timing_note.contains("rotated among 3 buffers"));
    assert!(report.records.iter().all(|r| r.rotate_copies == Some(3)));
    // `auto` says what it did, and runs (1024 copies of these small inputs here).
    cfg.timing.rotate = bench::harness::Rotate::Auto;
    cfg.timing.repeat = 1;
    cfg.shapes = vec![vec![8, 64]];
    let auto = bench::run(&cfg, &Device::Cpu, &mut |_| {}).unwrap();
    assert!(
        auto.timing_note.contains("4× the last-level cache"),
        "{}",
        auto.timing_note
    );
    assert!(auto.records.iter().all(|r| r.status == bench::Status::Ok));
    // Each point's copies: its inputs and output (8 × 64 elements each) against the cache.
    let llc = bench::harness::cpu_llc_bytes();
    for r in &auto.records {
        let call_bytes = 2 * 8 * 64 * r.dtype.size();
        let want = bench::harness::Rotate::Auto.copies(call_bytes, llc);
        assert_eq!(r.rotate_copies, Some(want).filter(|&n| n > 1), "{r:?}");
    }
    // A graph's replays reuse the buffers of the calls it captured: no `auto` there.
    cfg.timing.graph = Some(8);
    let e = bench::run(&cfg, &Device::Cpu, &mut |_| {})
        .map(|_| ())
        .expect_err("--rotate auto with --graph is refused")
        .to_string();
    assert!(e.contains("--rotate auto") && e.contains("--graph"), "{e}");
    // The matmul ceiling was measured in the run (no cache given), and judges every record.
    assert_eq!(report.matmul.len(), 1);
    assert!(report.header().contains("matmul ceiling measured"));
    let m = report.matmul[0].tflops;
    for r in &report.records {
        let pct = r.pct_of_matmul.unwrap();
        assert!((pct - 100.0 * r.tflops.unwrap() / m).abs() <= 1e-9 * pct.max(1.0));
    }
    assert!(report.timing_note.contains("repeated 2×"));
}

#[test]
fn graph_timing_on_the_cpu_is_a_clear_error() {
    let mut cfg = BenchConfig::new(vec![gelu::OP], vec![vec![64]], vec![DType::F32]);
    cfg.timing.graph = Some(10);
    let e = bench::run(&cfg, &Device::Cpu, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("needs a CUDA device"), "{e}");
}

/// A point the host cannot hold, after one it can, ends the run before any point is made or
/// timed (not after the first was timed, its result lost).
#[test]
fn a_bad_point_is_refused_before_any_point_runs() {
    let cfg = BenchConfig::new(
        vec![softmax::OP],
        vec![vec![64, 64], vec![4, 1 << 36]],
        vec![DType::F32],
    );
    let mut seen = Vec::new();
    let e = bench::run(&cfg, &Device::Cpu, &mut |ev| {
        seen.push(match ev {
            bench::Event::Note(m) => m.to_string(),
            bench::Event::Step { done, total } => format!("step {done}/{total}"),
            bench::Event::Point(r) => format!("point, {} records", r.records.len()),
        })
    })
    .unwrap_err();
    assert!(e.to_string().contains("of host memory"), "{e}");
    assert!(seen.is_empty(), "work started before the refusal: {seen:?}");
}

#[test]
fn an_end_to_end_cpu_sweep_writes_table_json_csv_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (json, csv, svg, png) = (p("s.json"), p("s.csv"), p("s.svg"), p("s.png"));
    let out = run_cli(&[
        "sweep",
        "softmax",
        "--device",
        "cpu",
        "--rows",
        "16",
        "--cols",
        "64..256:64,1000",
        "--warmup-ms",
        "0.5",
        "--rep-ms",
        "2",
        "--seed",
        "1",
        "--json",
        &json,
        "--csv",
        &csv,
        "--plot",
        &svg,
    ])
    .unwrap();
    assert!(out.contains("against columns (rows = 16)"), "{out}");
    for want in [
        "cols",
        "16×1000",
        "manual",
        "fused",
        "fastest",
        "copy ceiling",
    ] {
        assert!(out.contains(want), "{want} missing in\n{out}");
    }
    // JSON: the report, plus what was swept.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["sweep"]["swept"], "cols");
    assert_eq!(doc["sweep"]["rows"], 16);
    let records = doc["records"].as_array().unwrap();
    assert_eq!(records.len(), 5 * 2);
    assert!(records.iter().all(|r| r["status"] == "ok"));
    assert!(doc["copy"]["gbps"].as_f64().unwrap() > 0.0);
    // CSV: a header, then one line per record, every line as wide as the header.
    let rows = parse_csv(&std::fs::read_to_string(&csv).unwrap());
    assert_eq!(rows[0], CSV_COLUMNS.to_vec());
    assert_eq!(rows.len(), 1 + 10);
    let col = |name: &str| CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
    for r in &rows[1..] {
        assert_eq!(r.len(), CSV_COLUMNS.len(), "{r:?}");
        let (ms, gbps, bytes): (f64, f64, f64) = (
            r[col("median_ms")].parse().unwrap(),
            r[col("gbps")].parse().unwrap(),
            r[col("bytes")].parse().unwrap(),
        );
        assert!((gbps - bytes / (ms * 1e-3) / 1e9).abs() <= 1e-9 * gbps.max(1.0));
        assert_eq!(r[col("rows")], "16");
    }
    // SVG: well-formed XML with a line per variant and the axis label as text.
    let text = std::fs::read_to_string(&svg).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    assert_eq!(xml.root_element().tag_name().name(), "svg");
    let texts: Vec<String> = xml
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect();
    for want in ["manual", "fused", "columns (rows = 16)"] {
        assert!(texts.iter().any(|t| t == want), "{want} not in {texts:?}");
    }
    assert!(texts.iter().any(|t| t.starts_with("copy ceiling")));
    // PNG from the same run's data, through the CLI again (the extension picks the format).
    run_cli(&[
        "sweep",
        "gelu",
        "--device",
        "cpu",
        "--numel",
        "2^8..2^12:x4",
        "--warmup-ms",
        "0.5",
        "--rep-ms",
        "2",
        "--plot",
        &png,
    ])
    .unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let (w, h) = (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    );
    assert_eq!((w, h), bench::plot::SIZE);
}

#[test]
fn a_plot_draws_text_with_the_embedded_font() {
    let spec = |title: &str| bench::plot::PlotSpec {
        title: title.into(),
        x_label: "x".into(),
        y_label: "y".into(),
        log_x: false,
        series: vec![bench::plot::Series {
            label: "a".into(),
            tier: "cuda".into(),
            points: vec![(1.0, 1.0), (2.0, 3.0)],
        }],
        hlines: vec![],
    };
    // The title's band (the top 40 pixel rows, above the chart) has dark pixels only where
    // glyphs were drawn.
    let dark_in_title = |title: &str| {
        let rgb = bench::plot::render_rgb(&spec(title)).unwrap();
        let w = bench::plot::SIZE.0 as usize;
        rgb[..40 * w * 3]
            .chunks(3)
            .filter(|p| p.iter().all(|&c| c < 128))
            .count()
    };
    assert!(dark_in_title("GB/s against columns") > 200);
    assert_eq!(dark_in_title(""), 0);
    let dir = tempfile::tempdir().unwrap();
    let e = bench::plot::render(&spec("t"), &dir.path().join("c.jpg")).unwrap_err();
    assert!(e.to_string().contains(".svg or .png"));
}

#[test]
fn sweep_specs_cover_the_issue_examples() {
    let p = sweep::plan(Some("4096"), Some("256..12672:128"), None).unwrap();
    assert_eq!(p.shapes.len(), 98);
    assert_eq!(p.shapes.last().unwrap(), &vec![4096, 12672]);
    let p = sweep::plan(None, None, Some("2^20..2^28:x2")).unwrap();
    assert_eq!(p.shapes.len(), 9);
    assert!(p.log_x);
    let p = sweep::plan(Some("4096"), Some("256,1024,4096"), None).unwrap();
    assert_eq!(
        p.shapes,
        vec![vec![4096, 256], vec![4096, 1024], vec![4096, 4096]]
    );
}

const TORCH_SAMPLE: &str = include_str!("data/torch_baselines_sample.json");

fn sample_shapes() -> Vec<Vec<usize>> {
    vec![vec![4096, 256], vec![4096, 1024]]
}

#[test]
fn the_torch_baselines_json_contract_parses_into_torch_records() {
    let doc = bench::torch::parse(TORCH_SAMPLE).unwrap();
    assert!(doc.available);
    assert_eq!(doc.torch_version.as_deref(), Some("2.11.0+cu130"));
    let params = softmax::OP.default_params();
    let recs = bench::torch::to_records(&doc, &sample_shapes(), &params, 4000.0).unwrap();
    assert_eq!(recs.len(), 8);
    let variants: Vec<&str> = recs[..4].iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(
        variants,
        ["torch_manual", "torch_native", "torch_compile", "triton"]
    );
    for (r, raw) in recs.iter().zip(doc.records.iter()) {
        assert_eq!(r.tier, bench::RecordTier::Torch);
        assert_eq!((r.op, r.dtype), (softmax::OP, DType::F32));
        assert_eq!(r.status, bench::Status::Ok);
        assert!(r.validated && r.max_rel_err.unwrap() < 1e-4);
        // Bytes are kernlab's count (the script agrees here); GB/s and % copy are derived.
        assert_eq!(r.bytes, raw.bytes);
        let (ms, gbps) = (r.median_ms.unwrap(), r.gbps.unwrap());
        assert!((gbps - r.bytes as f64 / (ms * 1e-3) / 1e9).abs() < 1e-9 * gbps);
        assert!((r.pct_of_copy.unwrap() - 100.0 * gbps / 4000.0).abs() < 1e-9);
        // ... and agree with the script's own figure to its rounding.
        assert!(
            (gbps - raw.gbps.unwrap()).abs() / gbps < 2e-3,
            "{gbps} vs {raw:?}"
        );
    }
    assert_eq!(recs[4].shape, vec![4096, 1024]);
    let json = serde_json::to_value(&recs[0]).unwrap();
    assert_eq!(json["tier"], "torch");
    // The unavailable form of the contract parses too.
    let none = bench::torch::parse(r#"{"available": false, "reason": "no torch", "records": []}"#)
        .unwrap();
    assert!(!none.available && none.reason.as_deref() == Some("no torch"));
    assert!(bench::torch::parse("{").is_err());
}

/// A stand-in for the baselines script: writes `doc` (with the arguments it got as its
/// `device`) to --json and exits with `code`.
fn stub_script(dir: &std::path::Path, doc: &str, code: i32) -> bench::torch::TorchConfig {
    let path = dir.join(format!("stub{code}.py"));
    let text = format!(
        "import json, sys\n\
         doc = json.loads(r'''{doc}''')\n\
         doc['device'] = ' '.join(sys.argv[1:])\n\
         path = sys.argv[sys.argv.index('--json') + 1]\n\
         json.dump(doc, open(path, 'w'))\n\
         print('torch_baselines: a line on stderr', file=sys.stderr)\n\
         sys.exit({code})\n"
    );
    std::fs::write(&path, text).unwrap();
    bench::torch::TorchConfig {
        python: "python3".into(),
        script: path,
        columns: None,
    }
}

/// On the CPU, --torch runs the script with `--device cpu`, the run's threads and the
/// last-level cache it flushes, and each table gets PyTorch's time ÷ each row's (`× torch`).
#[test]
fn cpu_runs_hand_the_script_the_device_and_threads_and_show_the_ratio_to_torch() {
    if !have_python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The sample, as a CPU run's document (its `threads`), at shapes this run asks for.
    let sample = TORCH_SAMPLE.replacen("\"records\"", "\"threads\": 2, \"records\"", 1);
    assert_ne!(sample, TORCH_SAMPLE);
    let mut cfg = BenchConfig::new(vec![softmax::OP], sample_shapes(), vec![DType::F32]);
    cfg.variants = Some(vec!["fused".into()]);
    cfg.timing.warmup_ms = 0.5;
    cfg.timing.rep_ms = 2.0;
    cfg.timing.max_calls = 5;
    cfg.seed = Some(3);
    cfg.ceiling_cache = None;
    cfg.torch = Some(stub_script(dir.path(), &sample, 0));
    let report = bench::run(&cfg, &Device::Cpu, &mut |_| {}).unwrap();
    let line = report
        .torch_notes
        .iter()
        .find(|l| l.starts_with("PyTorch baselines ("))
        .unwrap_or_else(|| panic!("{:?}", report.torch_notes));
    // The stub echoes its arguments as the document's device.
    assert!(line.contains("--device cpu --threads "), "{line}");
    assert!(line.contains("--cache-bytes "), "{line}");
    assert!(line.contains("timed as kernlab's CPU tier is"), "{line}");
    // No package column on the CPU, so no note about one.
    assert!(
        !report
            .torch_notes
            .iter()
            .any(|l| l.starts_with("kernlab_do_bench")),
        "{:?}",
        report.torch_notes
    );
    let tables = report.tables();
    assert_eq!(tables.len(), 2);
    for (title, t) in &tables {
        let text = t.to_string();
        assert!(text.contains("× torch"), "{title}\n{text}");
        let native = text
            .lines()
            .find(|l| l.contains("torch_native"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(native.contains("1.00×"), "{native}");
        // No manual in this run: the fused row's one ratio is against torch.
        let fused = text.lines().find(|l| l.contains("fused")).unwrap();
        assert_eq!(fused.matches('×').count(), 1, "{fused}");
    }
}

#[test]
fn the_torch_baselines_script_is_run_with_the_run_s_op_shapes_and_dtype() {
    use bench::torch::{run_script, Outcome, TorchConfig};
    if !have_python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut timing = bench::harness::TimingOpts::default();
    let l2 = 60 << 20;
    let run = |t: &TorchConfig, timing: &bench::harness::TimingOpts| {
        run_script(
            t,
            softmax::OP,
            &[],
            DType::F32,
            &sample_shapes(),
            timing,
            42,
            bench::torch::ScriptTarget::Cuda {
                ordinal: 0,
                l2_bytes: l2,
            },
            None,
            None,
            &[],
        )
    };
    let args_of = |o: Outcome| match o {
        Outcome::Ran(doc) => {
            assert_eq!(doc.records.len(), 8);
            doc.device.unwrap()
        }
        o => panic!("{o:?}"),
    };
    let args = args_of(run(&stub_script(dir.path(), TORCH_SAMPLE, 0), &timing));
    for want in [
        "--op softmax",
        "--dtype f32",
        "--shapes 4096x256,4096x1024",
        "--seed 42",
        "--warmup-ms 25",
        "--rep-ms 100",
    ] {
        assert!(args.contains(want), "{want} not in {args}");
    }
    // One buffer unless the run rotates; then the script rotates as kernlab does, counting
    // with the same L2.
    assert!(!args.contains("--rotate"), "{args}");
    assert!(
        !args.contains("--row-stride") && !args.contains("--kernlab-plans"),
        "{args}"
    );
    for (rotate, want) in [
        (
            bench::harness::Rotate::Auto,
            "--rotate auto --cache-bytes 62914560",
        ),
        (
            bench::harness::Rotate::Copies(7),
            "--rotate 7 --cache-bytes 62914560",
        ),
    ] {
        timing.rotate = rotate;
        let args = args_of(run(&stub_script(dir.path(), TORCH_SAMPLE, 0), &timing));
        assert!(args.contains(want), "{want} not in {args}");
    }
    timing.rotate = bench::harness::Rotate::Copies(1);
    // Every column unless --torch=LIST named some; then the script gets that list.
    assert!(!args.contains("--variants"), "{args}");
    let picked = TorchConfig {
        columns: Some(bench::torch::parse_columns("torch_native,torch_compile_ro").unwrap()),
        ..stub_script(dir.path(), TORCH_SAMPLE, 0)
    };
    let args = args_of(run(&picked, &timing));
    assert!(
        args.contains("--variants torch_native,torch_compile_ro"),
        "{args}"
    );
    let go = |t: &TorchConfig| run(t, &timing);
    let unavailable = r#"{"available": false, "reason": "no CUDA device", "records": []}"#;
    match go(&stub_script(dir.path(), unavailable, 3)) {
        Outcome::Unavailable(why) => assert_eq!(why, "no CUDA device"),
        o => panic!("{o:?}"),
    }
    match go(&stub_script(dir.path(), TORCH_SAMPLE, 1)) {
        Outcome::Failed(why) => assert!(why.contains("exited with 1: torch_baselines"), "{why}"),
        o => panic!("{o:?}"),
    }
    let no_python = TorchConfig {
        python: "/nonexistent/python3".into(),
        ..stub_script(dir.path(), TORCH_SAMPLE, 0)
    };
    match go(&no_python) {
        Outcome::Unavailable(why) => assert!(why.contains("not found"), "{why}"),
        o => panic!("{o:?}"),
    }
    let no_script = TorchConfig {
        python: "python3".into(),
        script: dir.path().join("missing.py"),
        columns: None,
    };
    match go(&no_script) {
        Outcome::Unavailable(why) => assert!(why.contains("KERNLAB_BASELINES"), "{why}"),
        o => panic!("{o:?}"),
    }
}

/// kernlab's own column in PyTorch's process (`kernlab_do_bench`): run_script asks the script
/// for it with the variant and kernlab's build (the package there must match it), and not
/// where the run does not want it.
#[test]
fn the_package_column_is_asked_for_with_kernlab_s_build() {
    use bench::torch::{run_script, Outcome};
    let dir = tempfile::tempdir().unwrap();
    let stub = stub_script(dir.path(), TORCH_SAMPLE, 0);
    let timing = bench::harness::TimingOpts::default();
    let shapes = sample_shapes();
    let args_with = |kernlab: Option<&str>| match run_script(
        &stub,
        softmax::OP,
        &[],
        DType::F32,
        &shapes,
        &timing,
        1,
        bench::torch::ScriptTarget::Cuda {
            ordinal: 0,
            l2_bytes: 60 << 20,
        },
        None,
        kernlab,
        &[],
    ) {
        // The stub echoes its arguments as the document's device.
        Outcome::Ran(doc) => doc.device.clone().unwrap(),
        o => panic!("{o:?}"),
    };
    let args = args_with(Some("auto"));
    assert!(
        args.contains(&format!(
            "--kernlab auto --kernlab-build {}",
            kernlab::BUILD_ID
        )),
        "{args}"
    );
    assert_eq!(kernlab::BUILD_ID.len(), 16);
    assert!(!args_with(None).contains("--kernlab"));
}

/// A Triton variant's launches (the baselines' `triton` column): what kernlab writes — the
/// kernel's file beside the plans, one plan a shape — is what the script's loader reads back
/// (run by python3 without torch or triton), and run_script hands the file to the script.
#[test]
fn triton_plans_written_by_kernlab_are_read_back_by_the_script() {
    use bench::torch::{run_script, write_triton_plans, Outcome, TritonPlan};
    use kernlab::ops::gelu::{triton_spec, GeluParams};
    use kernlab::runtime::launch::TritonLaunch;
    let spec = triton_spec(
        &GeluParams {
            gelu: kernlab::ops::gelu::GeluApprox::Tanh,
        },
        DType::BF16,
        true,
        true,
    );
    let plan = |rows: usize, grid: u32| TritonPlan {
        shape: vec![rows, 1024],
        launch: TritonLaunch::new(&spec, (grid, 1, 1)),
    };
    // A shape twice (`2x3x1024` and `6x1024` fold to one): planned once.
    let plans = vec![plan(4096, 4096), plan(6, 6), plan(6, 6)];
    let dir = tempfile::tempdir().unwrap();
    let path = write_triton_plans(dir.path(), gelu::OP, DType::BF16, &plans).unwrap();
    // The kernel's file, as kernlab compiled it.
    let file = std::fs::read_to_string(dir.path().join("gelu.py")).unwrap();
    assert_eq!(file, include_str!("../kernels/triton/gelu.py"));
    let code = format!(
        "{LOAD_BASELINES}\
         p = m.load_triton_plans({path:?}, 'gelu', 'bf16')\n\
         for k in sorted(p):\n\
         \x20   q = p[k]\n\
         \x20   print(k, q['file'], q['kernel'], q['constexprs'], q['num_warps'], q['num_stages'], q['grid'])\n"
    );
    if let Some(got) = baselines_python(&["-c", &code]) {
        let want = "(6, 1024) gelu.py gelu_kernel {'BLOCK': 1024, 'TANH': True} 4 1 [6, 1, 1]\n\
                    (4096, 1024) gelu.py gelu_kernel {'BLOCK': 1024, 'TANH': True} 4 1 [4096, 1, 1]\n";
        assert_eq!(got, want);
    }
    let stub = stub_script(dir.path(), TORCH_SAMPLE, 0);
    let timing = bench::harness::TimingOpts::default();
    match run_script(
        &stub,
        gelu::OP,
        &[],
        DType::BF16,
        &[vec![6, 1024]],
        &timing,
        1,
        bench::torch::ScriptTarget::Cuda {
            ordinal: 0,
            l2_bytes: 60 << 20,
        },
        None,
        None,
        &plans,
    ) {
        Outcome::Ran(doc) => {
            let args = doc.device.clone().unwrap();
            assert!(args.contains("--triton-plans "), "{args}");
            assert!(args.contains("triton_plans.json"), "{args}");
        }
        o => panic!("{o:?}"),
    }
}

/// The script's `--rotate auto` count for every op (its own byte count and rule, run by
/// python3 without torch) is kernlab's, so "the same count a shape" in the header holds.
#[test]
fn the_baselines_script_rotates_as_many_copies_as_kernlab() {
    use bench::harness::Rotate;
    let cases: Vec<(Op, DType, Vec<usize>)> = vec![
        (softmax::OP, DType::BF16, vec![4096, 32]),
        (softmax::OP, DType::F32, vec![4096, 256]),
        (softmax::OP, DType::F32, vec![7, 1000]),
        (gelu::OP, DType::F16, vec![1024, 4097]),
        (softmax::OP, DType::F32, vec![256, 1 << 20]),
        (matmul::OP, DType::BF16, vec![128, 192, 64]),
        (linear::OP, DType::F32, vec![1000, 300, 77]),
        (linear::OP, DType::BF16, vec![8192, 8192, 8192]),
    ];
    let l2 = 60usize << 20;
    let calls = cases
        .iter()
        .map(|(op, dt, s)| {
            let shape = s
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            format!("print(rotate_copies('auto', record_bytes('{op}', '{dt}', ({shape},)), {l2}))")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let code = format!(
        "{LOAD_BASELINES}\
         rotate_copies, record_bytes = m.rotate_copies, m.record_bytes\n{calls}\n"
    );
    let Some(stdout) = baselines_python(&["-c", &code]) else {
        return;
    };
    let got: Vec<usize> = stdout.lines().map(|l| l.trim().parse().unwrap()).collect();
    let want: Vec<usize> = cases
        .iter()
        .map(|(op, dt, s)| Rotate::Auto.copies(op.min_bytes(s, *dt, &op.default_params()), l2))
        .collect();
    assert_eq!(got, want);
    // The cases cover the rule's range: at most 1024, exactly 1 past 4x L2, and between.
    assert!(want.contains(&1) && want.iter().any(|&n| n > 1 && n < 1024));
}

#[test]
fn torch_records_merge_into_the_same_table_and_plot() {
    let mut cfg = BenchConfig::new(vec![softmax::OP], sample_shapes(), vec![DType::F32]);
    cfg.timing.warmup_ms = 0.5;
    cfg.timing.rep_ms = 2.0;
    cfg.timing.max_calls = 10;
    cfg.timing.flush = false;
    // Where the script finds no torch it says so (exit 3), the header says why in one line,
    // and the run goes on.
    let dir = tempfile::tempdir().unwrap();
    let missing =
        r#"{"available": false, "reason": "torch is not importable (stub)", "records": []}"#;
    cfg.torch = Some(stub_script(dir.path(), missing, 3));
    let mut report = bench::run(&cfg, &Device::Cpu, &mut |_| {}).unwrap();
    assert_eq!(report.records.len(), 4);
    if have_python3() {
        assert!(
            report
                .header()
                .contains("PyTorch baselines: unavailable: torch is not importable (stub)"),
            "{}",
            report.header()
        );
    }
    // The GPU path appends the parsed records, then fills speedups: do the same here.
    let doc = bench::torch::parse(TORCH_SAMPLE).unwrap();
    let recs = bench::torch::to_records(
        &doc,
        &sample_shapes(),
        &cfg.params(softmax::OP).unwrap(),
        report.copy_gbps(),
    )
    .unwrap();
    report.records.extend(recs);
    report.fill_speedups();
    // A failed baseline is a note, not kernlab's failure.
    assert!(!report.any_failed());
    report.records.last_mut().unwrap().status = bench::Status::Error;
    assert!(!report.any_failed() && report.problems().len() == 1);
    report.records.last_mut().unwrap().status = bench::Status::Ok;
    assert!(report.records[4..]
        .iter()
        .all(|r| r.speedup_vs_manual.is_some()));
    let plan = sweep::plan(Some("4096"), Some("256,1024"), None).unwrap();
    let table = sweep::table(&report, &plan).to_string();
    for want in ["manual", "fused", "torch_native", "triton", "torch_compile"] {
        assert!(table.contains(want), "{want} missing in\n{table}");
    }
    let spec = sweep::plot_spec(&report, &plan, "t");
    assert_eq!(spec.series.len(), 6);
    assert_eq!(spec.series.iter().filter(|s| s.tier == "torch").count(), 4);
    let tables = report.tables();
    assert_eq!(tables.len(), 2);
    assert!(tables[0].1.to_string().contains("torch_native"));
}

#[test]
fn the_real_baselines_script_runs_or_says_why_not() {
    // Here (no torch): exit 3 and its reason; on the GPU machine with torch: records, timed
    // over three rotated copies, the softmax's in two rounds (--repeat 2; the GEMM's in one).
    let t = bench::torch::TorchConfig::locate();
    let timing = bench::harness::TimingOpts {
        warmup_ms: 1.0,
        rep_ms: 5.0,
        rotate: bench::harness::Rotate::Copies(3),
        repeat: 2,
        ..Default::default()
    };
    let l2 = 60 << 20;
    // A softmax (manual, native and torch.compile: its Triton column runs kernlab's own plans,
    // none here), on contiguous rows and on rows 1008 apart (the gaps NaN: a variant reading
    // past a row fails), then a GEMM, whose a, w and bias rotate too.
    for (op, shape, variants, ld) in [
        (softmax::OP, vec![256, 1000], Some(3), Some(1008)),
        (linear::OP, vec![128, 192, 64], None, None),
    ] {
        let shapes = vec![shape.clone()];
        let params = op.default_params();
        let args = (op.torch().unwrap().args)(&params).unwrap();
        match bench::torch::run_script(
            &t,
            op,
            &args,
            DType::F32,
            &shapes,
            &timing,
            1,
            bench::torch::ScriptTarget::Cuda {
                ordinal: 0,
                l2_bytes: l2,
            },
            ld,
            None,
            &[],
        ) {
            bench::torch::Outcome::Ran(doc) => {
                let recs = bench::torch::to_records(&doc, &shapes, &params, 1000.0).unwrap();
                assert!(!recs.is_empty(), "{op}: no records");
                if let Some(n) = variants {
                    assert_eq!(recs.len(), n, "{op}");
                }
                let rounds = if op.grammar() == kernlab::ops::Grammar::Gemm {
                    1
                } else {
                    2
                };
                assert_eq!(doc.repeat, Some(rounds), "{op}");
                for r in &recs {
                    assert_eq!(r.shape, shape, "{r:?}");
                    assert_eq!(r.status, bench::Status::Ok, "{r:?}");
                    assert_eq!(r.rotate_copies, Some(3), "{r:?}");
                    if rounds == 2 {
                        let m = &r.repeat_medians_ms;
                        assert!(m.len() == 2 && m.iter().all(|&v| v > 0.0), "{r:?}");
                        assert!(m.contains(&r.median_ms.unwrap()), "{r:?}");
                        assert!(r.spread.is_some_and(|s| s >= 0.0), "{r:?}");
                    } else {
                        assert!(
                            r.repeat_medians_ms.is_empty() && r.spread.is_none(),
                            "{r:?}"
                        );
                    }
                }
            }
            // Without torch the first call says so, and there is nothing more to run.
            bench::torch::Outcome::Unavailable(why) if op == softmax::OP => {
                println!("skipped: the PyTorch baselines are unavailable ({why})");
                return;
            }
            o => panic!("the baselines script on a {op}: {o:?}"),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn cuda_graph_replays_rotation_and_repeats_time_every_variant() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let mut cfg = BenchConfig::new(
        vec![gelu::OP, softmax::OP],
        vec![vec![512, 1000]],
        vec![DType::BF16],
    );
    cfg.timing = bench::harness::TimingOpts {
        warmup_ms: 2.0,
        rep_ms: 10.0,
        graph: Some(8),
        rotate: bench::harness::Rotate::Copies(3),
        repeat: 2,
        ..Default::default()
    };
    let report = bench::run(&cfg, &dev, &mut |_| {}).unwrap();
    assert!(
        report.timing_note.contains("NOT flushed"),
        "{}",
        report.timing_note
    );
    assert!(!report.records.is_empty());
    // Every op had something timed, not only refusals.
    for op in [gelu::OP, softmax::OP] {
        assert!(
            report
                .records
                .iter()
                .any(|r| r.op == op && r.status == bench::Status::Ok),
            "no {op} record was timed"
        );
    }
    for r in &report.records {
        if r.status == bench::Status::Unsupported {
            continue;
        }
        assert_eq!(r.status, bench::Status::Ok, "{r:?}");
        // Each timed replay is 8 calls.
        assert_eq!(r.calls.unwrap() % 8, 0, "{r:?}");
        assert!(r.median_ms.unwrap() > 0.0 && r.repeat_medians_ms.len() == 2);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn cuda_ceilings_measure_cublas_bf16_and_exact_f32() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let (c, p) = bench::device_ceilings(&dev, None, true).unwrap();
    assert_eq!(p, bench::ceiling::Provenance::Measured);
    assert!(c.copy.gbps > 50.0, "{:?}", c.copy);
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        assert!(c.notes[0].contains("cuBLAS"), "{:?}", c.notes);
        println!("skipped: no cuBLAS here, so no matmul ceiling to check (its note says why)");
        return;
    }
    assert_eq!(c.matmul.len(), 2, "{c:?}");
    let (bf16, f32) = (&c.matmul[0], &c.matmul[1]);
    assert_eq!((bf16.dtype.as_str(), f32.dtype.as_str()), ("bf16", "f32"));
    // Tensor cores: bf16 runs several times faster than exact f32 on any GPU with them.
    assert!(bf16.tflops > 2.0 * f32.tflops && f32.tflops > 1.0, "{c:?}");
}

const TORCH_MATMUL_SAMPLE: &str = include_str!("data/torch_matmul_sample.json");

#[test]
fn the_torch_baselines_gemm_records_map_to_kernlab_shapes_and_flops() {
    let doc = bench::torch::parse(TORCH_MATMUL_SAMPLE).unwrap();
    let shapes = vec![vec![8192, 8192, 8192], vec![127, 255, 63]];
    let params = linear::OP.default_params();
    let recs = bench::torch::to_records(&doc, &shapes, &params, 4000.0).unwrap();
    assert!(!recs.is_empty());
    for (r, raw) in recs.iter().zip(doc.records.iter()) {
        assert_eq!(r.op, linear::OP);
        assert_eq!(r.shape, raw.shape, "M×N×K kept as kernlab's shape");
        assert!(shapes.contains(&r.shape));
        let [m, n, k] = [r.shape[0], r.shape[1], r.shape[2]];
        assert_eq!(r.flops, 2.0 * (m * n * k) as f64);
        assert_eq!(r.bytes, raw.bytes, "bytes agree with the script's count");
        assert_eq!(r.params, params);
        assert_eq!(r.params.form().as_deref(), Some("bias + gelu-tanh"));
        assert_eq!(raw.error_metric.as_deref(), Some("max_row_rel_l2"));
        if let (Some(ms), Some(t)) = (r.median_ms, r.tflops) {
            assert!((t - r.flops / (ms * 1e-3) / 1e12).abs() < 1e-9 * t);
        }
    }
}

/// Past the element count given, a softmax or GeLU reference covers sampled rows (GeLU:
/// blocks of 4096 elements; the first and last among them), checks their values, and checks
/// every other block for NaN/inf: a poisoned element outside the sample still fails, and so
/// does a wrong value inside it; indices in the failure are the output's.
#[test]
fn a_sampled_reference_checks_its_rows_and_every_row_for_nan() {
    use kernlab::runtime::tensor::Tensor;
    let cases: [(Op, &[usize], Option<usize>, usize); 4] = [
        (softmax::OP, &[300, 33], None, 33),
        (softmax::OP, &[300, 33], Some(40), 33),
        (gelu::OP, &[300, 33], None, 4096),
        (gelu::OP, &[300 * 4096 + 5], None, 4096), // 1-D, the last block short
    ];
    for (op, shape, row_stride, width) in cases {
        let what = format!("{op} {shape:?} {row_stride:?}");
        let numel: usize = shape.iter().product();
        let blocks = numel.div_ceil(width);
        let p = op.default_params();
        let host =
            check::make_inputs(op, shape, DType::F32, 5, row_stride, &op.default_params()).unwrap();
        let full = check::make_reference(op, shape, &host, &p, 5).unwrap();
        assert!(full.rows.is_none());
        // 20 blocks' worth of elements; a smaller problem (the 2-D GeLU) is checked in full.
        let r = check::Reference::make(op, shape, &host, &p, 5, 20 * width).unwrap();
        if numel <= 20 * width {
            assert!(r.rows.is_none(), "{what}");
            continue;
        }
        let sampled = r.rows.clone().expect("sampled");
        assert_eq!(sampled.len(), 20, "{what}");
        assert_eq!((sampled[0], *sampled.last().unwrap()), (0, blocks - 1));
        assert_eq!(r.cols, width);
        // The sampled reference holds the full one's values on those blocks.
        let pick: Vec<f64> = sampled
            .iter()
            .flat_map(|&b| {
                full.values[b * width..((b + 1) * width).min(numel)]
                    .iter()
                    .copied()
            })
            .collect();
        assert_eq!(r.values, pick, "{what}");
        // An output made from the full reference passes; the description says what was checked.
        let out = |v: &[f64]| Tensor::from_f64(v, shape, DType::F32).unwrap();
        let c = r.check(&out(&full.values)).unwrap();
        assert!(c.passed, "{what}: {}", c.describe());
        assert!(r
            .describe(numel)
            .contains(&format!("20 sampled {} of {blocks}", r.unit)));
        // An inf outside the sample fails, named with its index in the output.
        let outside = (0..blocks).find(|b| !sampled.contains(b)).unwrap();
        let mut v = full.values.clone();
        v[outside * width + 7] = f64::INFINITY;
        let c = r.check(&out(&v)).unwrap();
        assert!(
            !c.passed && c.special_mismatches == 1,
            "{what}: {}",
            c.describe()
        );
        assert_eq!(c.outside_sample.map(|o| o.0), Some(outside * width + 7));
        assert!(c.max_rel_err.is_infinite());
        // A NaN inside the sample is counted once, at its index in the output.
        let mut v = full.values.clone();
        v[sampled[1] * width + 3] = f64::NAN;
        let c = r.check(&out(&v)).unwrap();
        assert!(
            !c.passed && c.special_mismatches == 1,
            "{what}: {}",
            c.describe()
        );
        assert_eq!(c.worst.map(|w| w.0), Some(sampled[1] * width + 3));
        // A wrong value inside the sample fails, at its index in the output.
        let mut v = full.values.clone();
        v[sampled[2] * width + 5] += 0.25;
        let c = r.check(&out(&v)).unwrap();
        assert!(!c.passed, "{what}: {}", c.describe());
        assert_eq!(c.worst.map(|w| w.0), Some(sampled[2] * width + 5));
    }
    // Softmax's sampled reference is the softmax of those rows.
    let p = softmax::SoftmaxParams::default();
    let host = check::make_inputs(
        softmax::OP,
        &[64, 9],
        DType::F32,
        3,
        None,
        &softmax::OP.default_params(),
    )
    .unwrap();
    let r = check::Reference::make(
        softmax::OP,
        &[64, 9],
        &host,
        &kernlab::Params::new(p),
        3,
        16 * 9,
    )
    .unwrap();
    let rows = r.rows.clone().unwrap();
    assert_eq!(rows.len(), 16);
    let x = host[0].blocks_f64(9, &rows).unwrap();
    assert_eq!(r.values, softmax::reference(&x, 9, &p));
}

/// A GEMM past 2^31 multiply-adds is checked on sampled rows, row by row (relative L2), and
/// every other row for NaN/inf.
#[test]
fn a_sampled_gemm_reference_checks_rows_and_scans_the_rest() {
    use kernlab::runtime::tensor::Tensor;
    let (m, n, k) = (4096, 512, 2048); // 2^32 multiply-adds: half the rows sampled
    let host = check::make_inputs(
        matmul::OP,
        &[m, n, k],
        DType::F32,
        9,
        None,
        &matmul::OP.default_params(),
    )
    .unwrap();
    let r = check::make_reference(
        matmul::OP,
        &[m, n, k],
        &host,
        &matmul::OP.default_params(),
        9,
    )
    .unwrap();
    let rows = r.rows.clone().expect("sampled rows");
    assert_eq!((rows.len(), r.cols), (2048, n));
    // The sampled rows' values in place, zeros elsewhere: passes (zeros are finite).
    let mut y = vec![0.0; m * n];
    for (i, &row) in rows.iter().enumerate() {
        y[row * n..(row + 1) * n].copy_from_slice(&r.values[i * n..(i + 1) * n]);
    }
    let out = |v: &[f64]| Tensor::from_f64(v, &[m, n], DType::F32).unwrap();
    let c = r.check(&out(&y)).unwrap();
    assert!(c.passed, "{}", c.describe());
    // A row of the sample off by 1% fails.
    let mut bad = y.clone();
    let row = rows[rows.len() / 2];
    bad[row * n..(row + 1) * n]
        .iter_mut()
        .for_each(|v| *v *= 1.01);
    assert!(!r.check(&out(&bad)).unwrap().passed);
    // A NaN in a row outside the sample fails.
    let outside = (0..m).find(|i| rows.binary_search(i).is_err()).unwrap();
    let mut bad = y;
    bad[outside * n + 1] = f64::NAN;
    let c = r.check(&out(&bad)).unwrap();
    assert!(!c.passed && c.outside_sample.map(|o| o.0) == Some(outside * n + 1));
}

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn cuda_the_flush_overwrites_the_whole_buffer() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let Device::Cuda(d) = &dev else {
        unreachable!("common::cuda returns a CUDA device")
    };
    use kernlab::tools::bench::harness::CudaTimer;
    let mut t = CudaTimer::new(d).unwrap();
    assert_eq!(
        t.flush_bytes,
        kernlab::tools::bench::harness::flush_bytes(d.props.l2_bytes)
    );
    // Zeros over a buffer filled with 0xa5 first.
    t.fill_flush(0xa5).unwrap();
    t.flush_l2().unwrap();
    let b = t.flush_contents().unwrap();
    assert_eq!(b.len(), t.flush_bytes);
    let bad = b.iter().position(|&v| v != 0);
    assert!(bad.is_none(), "byte {bad:?} not overwritten");
}

/// The settled form times calls that only enqueue, and one that waits on the GPU from the
/// host inside the timed window fails with an error saying so (its watchdog frees the parked
/// stream) instead of hanging; launch-blocking mode is refused before the stream is parked; the
/// timer works again afterwards. A bench run gives a µs-sized call its settled median.
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn cuda_settled_timing_times_what_enqueues_and_refuses_what_waits() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let Device::Cuda(d) = &dev else {
        unreachable!("common::cuda returns a CUDA device")
    };
    use kernlab::tools::bench::harness::CudaTimer;
    let mut t = CudaTimer::new(d).unwrap();
    let mut buf = d.alloc_bytes(1 << 20, "a test buffer").unwrap();
    let s = t
        .settled(20, &mut || d.memset_pattern(&mut buf, 1, 7, 1 << 20))
        .unwrap();
    assert!(s.median_ms > 0.0 && s.median_ms < 1.0, "{s:?}");
    assert_eq!(s.calls, 20);
    // The form's point: host time between the events stays out. A call that sleeps 200 µs on
    // the host between two launches holds that sleep in do_bench's loop (the GPU waits for the
    // second launch inside the events), not in the settled one (both launches are queued
    // before the stream is freed).
    let mut slow = || -> kernlab::Result<()> {
        d.memset_pattern(&mut buf, 1, 5, 1 << 20)?;
        std::thread::sleep(std::time::Duration::from_micros(200));
        d.memset_pattern(&mut buf, 1, 6, 1 << 20)
    };
    let opts = bench::harness::TimingOpts {
        warmup_ms: 1.0,
        rep_ms: 5.0,
        ..Default::default()
    };
    let queued = t.time(&opts, &mut slow).unwrap();
    let settled = t.settled(20, &mut slow).unwrap();
    assert!(queued.median_ms > 0.15, "{queued:?}");
    assert!(settled.median_ms < 0.1, "{settled:?}");
    let started = std::time::Instant::now();
    let e = t
        .settled(3, &mut || {
            d.memset_pattern(&mut buf, 1, 9, 1 << 20)?;
            d.sync()
        })
        .unwrap_err();
    assert!(e.to_string().contains("waited on the GPU"), "{e}");
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    d.set_sync_each_launch(true);
    let e = t.settled(3, &mut || Ok(())).unwrap_err();
    d.set_sync_each_launch(false);
    assert!(e.to_string().contains("launch-blocking"), "{e}");
    let again = t
        .settled(5, &mut || d.memset_pattern(&mut buf, 1, 3, 1 << 20))
        .unwrap();
    assert!(again.median_ms > 0.0, "{again:?}");
    assert_eq!(d.dtoh(&buf, 4).unwrap(), [3, 3, 3, 3]);

    let mut cfg = BenchConfig::new(vec![softmax::OP], vec![vec![4096, 64]], vec![DType::BF16]);
    cfg.variants = Some(vec!["auto".into()]);
    cfg.timing = bench::harness::TimingOpts {
        warmup_ms: 2.0,
        rep_ms: 5.0,
        ..Default::default()
    };
    let report = bench::run(&cfg, &dev, &mut |_| {}).unwrap();
    let r = &report.records[0];
    assert_eq!(r.status, bench::Status::Ok, "{r:?}");
    let settled = r
        .settled_ms
        .expect("a µs-sized call has its settled median");
    assert!(settled > 0.0 && settled < 1.0, "{r:?}");
    // No settled median for graph replays (not flushed call by call).
    cfg.timing.graph = Some(4);
    let report = bench::run(&cfg, &dev, &mut |_| {}).unwrap();
    assert_eq!(report.records[0].settled_ms, None);
}

/// The `kernlab_do_bench` column end to end (GPU machine, with torch and the kernlab package
/// installed, as tools/gpu-suite.sh does): `auto` at each softmax point, a row split across
/// CTAs included, is called through the package in the baselines' process, validated there
/// against f64 and timed; the note under the table counts them and its `picked` is `auto`'s.
/// Without torch the script says why and the test stops after one line (a failure with
/// KERNLAB_REQUIRE_GPU=1).
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn kernlab_do_bench_calls_auto_in_pytorch_s_process() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let shapes = [vec![256, 1000], vec![64, 4097], vec![2, 1 << 20]];
    let mut cfg = BenchConfig::new(vec![softmax::OP], shapes.to_vec(), vec![DType::BF16]);
    cfg.variants = Some(vec!["auto".into()]);
    cfg.torch = Some(bench::torch::TorchConfig::locate());
    cfg.timing = bench::harness::TimingOpts {
        warmup_ms: 1.0,
        rep_ms: 5.0,
        rotate: bench::harness::Rotate::Copies(3),
        ..Default::default()
    };
    let report = bench::run(&cfg, &dev, &mut |_| {}).unwrap();
    if let Some(n) = report
        .torch_notes
        .iter()
        .find(|n| n.contains("unavailable"))
    {
        // On the GPU machine the suite installs torch's side: its absence is a failure there.
        assert!(
            !crate::common::required("KERNLAB_REQUIRE_GPU"),
            "KERNLAB_REQUIRE_GPU=1 but the PyTorch baselines are unavailable: {n}"
        );
        println!("skipped: {n}");
        return;
    }
    let dt = DType::BF16;
    for shape in &shapes {
        let got: Vec<_> = report
            .records
            .iter()
            .filter(|r| {
                r.variant == bench::torch::KERNLAB_VARIANT && r.dtype == dt && &r.shape == shape
            })
            .collect();
        assert_eq!(got.len(), 1, "{dt} {shape:?}");
        let r = got[0];
        assert_eq!(r.status, bench::Status::Ok, "{r:?}");
        assert!(r.max_rel_err.unwrap() <= dt.tolerance(), "{r:?}");
        assert!(r.rotate_copies == Some(3), "{r:?}");
        let mine = report
            .records
            .iter()
            .find(|k| k.variant == "auto" && k.dtype == dt && &k.shape == shape)
            .expect("auto's record");
        assert!(r.picked.is_some() && r.picked == mine.picked, "{r:?}");
        // Every shape here is a µs-sized call: timed in the settled form too, in PyTorch's
        // process as here.
        assert!(r.settled_ms.is_some_and(|s| s > 0.0), "{r:?}");
        assert!(mine.settled_ms.is_some_and(|s| s > 0.0), "{mine:?}");
    }
    let note = report
        .torch_notes
        .iter()
        .find(|n| n.starts_with("kernlab_do_bench") && n.contains(&format!("softmax {dt}")))
        .unwrap_or_else(|| panic!("no note for {dt}: {:?}", report.torch_notes));
    assert!(
        note.contains("at 3 of 3") && !note.contains("failed"),
        "{note}"
    );
    // The verdict under the table: `auto` and the package's column at their three (native is
    // timed at every one of them); each may have more lines, kernel against kernel, where
    // the script took queued medians and where both sides took settled ones.
    let v = report.against_pytorch();
    let first: Vec<_> = v
        .iter()
        .filter(|l| l.contains(" against PyTorch native and torch.compile: "))
        .collect();
    assert_eq!(first.len(), 2, "{v:?}");
    assert!(
        first[0].starts_with("`auto` against PyTorch"),
        "{}",
        first[0]
    );
    assert!(
        first[1].starts_with("`kernlab_do_bench`")
            && (first[1].contains(" of 3 points") || first[1].contains("all 3 points")),
        "{}",
        first[1]
    );
    for l in v.iter().filter(|l| !first.contains(l)) {
        assert!(
            (l.contains(" against their queued times: at or ahead at ")
                || l.contains(" against their settled times: at or ahead at "))
                && (l.starts_with("`auto`") || l.starts_with("`kernlab_do_bench`")),
            "{l}"
        );
    }
}

/// The baselines script's own checks (its parsers, error measures, JSON contract, Triton-plan
/// loader, package check and command line; no torch needed) pass, so a change to either side of the contract
/// kernlab parses is caught here, without a GPU.
#[test]
fn the_baselines_script_passes_its_self_test() {
    let Some(stdout) = baselines_python(&["baselines/torch_baselines.py", "--self-test"]) else {
        return;
    };
    assert!(stdout.contains("self-test: ok"), "{stdout}");
}

/// Python's lines that load the baselines script as module `m` (tests run from the checkout's
/// root), for `python3 -c`.
const LOAD_BASELINES: &str = "import importlib.util as u\n\
     s = u.spec_from_file_location('tb', 'baselines/torch_baselines.py')\n\
     m = u.module_from_spec(s); s.loader.exec_module(m)\n";

/// python3 run with `args` where the baselines script is (the checkout's root): its stdout,
/// once it has exited 0 (the test fails with both outputs otherwise); `None`, after a one-line
/// skip, where the script or python3 is not here.
/// Whether `python3` runs here (a skip line where it does not).
fn have_python3() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_ok();
    if !ok {
        println!("skipped: no python3");
    }
    ok
}

fn baselines_python(args: &[&str]) -> Option<String> {
    if !std::path::Path::new("baselines/torch_baselines.py").is_file() {
        println!("skipped: baselines/torch_baselines.py is not here");
        return None;
    }
    let out = match std::process::Command::new("python3").args(args).output() {
        Ok(o) => o,
        Err(_) => {
            println!("skipped: no python3");
            return None;
        }
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    Some(stdout.into_owned())
}
