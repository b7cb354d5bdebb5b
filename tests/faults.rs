//! Faults a long-lived lab meets: several kernlab processes writing one cache folder at once.

use kernlab::runtime::tuning::{self, Entry};
use kernlab::tools::bench::ceiling::{self, Ceilings, CopyCeiling};
use kernlab::tools::bench::harness::Stats;
use std::path::Path;

const WRITES: usize = 25;
const WRITERS: usize = 4;

fn write_entries(dir: &Path, who: &str) {
    let entry = Entry {
        variant: "v3_block_regs".into(),
        config: "k4".into(),
        shape: vec![4096, 4096],
        median_ms: 0.1,
        candidates: 3,
        tuned_at: "2026-12-06T00:00:00Z".into(),
        kernlab_version: "0".into(),
    };
    let ceilings = Ceilings {
        device: who.into(),
        measured_at: "2026-12-06T00:00:00Z".into(),
        kernlab_version: "0".into(),
        copy: CopyCeiling {
            bytes: 1 << 20,
            stats: Stats::from_samples(&[1.0]).unwrap(),
            gbps: 2.0,
            how: "test".into(),
        },
        matmul: vec![],
        notes: vec![],
    };
    for i in 0..WRITES {
        let key = format!("{who}-{i}");
        tuning::store(&dir.join("autotune.json"), &key, &entry).unwrap();
        ceiling::store(&dir.join("ceilings.json"), &key, &ceilings).unwrap();
    }
}

/// One writer of [`several_processes_writing_one_cache_lose_and_tear_nothing`], run in a
/// child process (the folder and the writer's name come in the environment).
#[test]
#[ignore = "a helper: several_processes_writing_one_cache_lose_and_tear_nothing runs it in child processes"]
fn cache_writer() {
    // Run with the ignored tests (tools/gpu-suite.sh does) but not by its parent: nothing to
    // write to.
    let (Ok(dir), Ok(who)) = (
        std::env::var("KERNLAB_TEST_CACHE_DIR"),
        std::env::var("KERNLAB_TEST_WRITER"),
    ) else {
        println!("a helper: only its parent test runs it with a folder to write to");
        return;
    };
    write_entries(Path::new(&dir), &who);
}

/// Several processes (this test binary, run again as writers) storing autotune entries and
/// ceilings into the same files at once: every file still parses, and every writer's every
/// entry is there (each store is a locked read-change-rename, so none is torn or lost).
#[test]
fn several_processes_writing_one_cache_lose_and_tear_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "faults::cache_writer",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("KERNLAB_TEST_CACHE_DIR", dir.path())
                .env("KERNLAB_TEST_WRITER", format!("w{w}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer failed");
    }
    let auto = dir.path().join("autotune.json");
    assert_eq!(
        tuning::describe_file(&auto),
        format!("{} entries", WRITERS * WRITES)
    );
    for w in 0..WRITERS {
        for i in 0..WRITES {
            let key = format!("w{w}-{i}");
            assert!(tuning::lookup_in(&auto, &key).is_some(), "{key} lost");
            assert!(
                ceiling::load(&dir.path().join("ceilings.json"), &key).is_some(),
                "ceilings {key} lost"
            );
        }
    }
}

/// The run [`ctrl_c_keeps_the_finished_points`] interrupts, in a child process (the output
/// paths come in the environment): a long CPU sweep, its error printed for the parent.
#[test]
#[ignore = "a helper: ctrl_c_keeps_the_finished_points runs it in a child process"]
fn interruptible_sweep() {
    let (Ok(json), Ok(csv)) = (
        std::env::var("KERNLAB_TEST_JSON"),
        std::env::var("KERNLAB_TEST_CSV"),
    ) else {
        println!("a helper: only its parent test runs it with files to write");
        return;
    };
    let args = [
        "kernlab",
        "sweep",
        "mlp",
        "--device",
        "cpu",
        "--rows",
        "16",
        "--cols",
        "64",
        "--layers",
        "1..400:1",
        "--warmup-ms",
        "1",
        "--rep-ms",
        "20",
        "--json",
        &json,
        "--csv",
        &csv,
    ];
    let mut out = Vec::new();
    match kernlab::cli::run(args, &mut out) {
        Ok(()) => println!("RESULT: finished"),
        Err(e) => println!("RESULT: {e:#}"),
    }
}

/// Ctrl-C during a sweep: the point being measured finishes, the run stops there and says so,
/// and the JSON and CSV hold exactly the finished points; the earlier run's files at those
/// paths are gone from the start, so a run that dies never leaves one looking like its own.
#[test]
fn ctrl_c_keeps_the_finished_points() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("run.json"), dir.path().join("run.csv"));
    std::fs::write(&json, "{\"stale\": true}").unwrap();
    std::fs::write(&csv, "stale\n").unwrap();
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "faults::interruptible_sweep",
            "--ignored",
            "--nocapture",
        ])
        .env("KERNLAB_TEST_JSON", &json)
        .env("KERNLAB_TEST_CSV", &csv)
        .env("KERNLAB_CACHE_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The stale files go first; then the CSV comes back with the first finished point.
    let started = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(&csv).unwrap_or_default();
        if text.lines().count() >= 2 && !text.starts_with("stale") {
            break;
        }
        assert!(started.elapsed().as_secs() < 120, "no point was written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("RESULT: interrupted (Ctrl-C) after"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let done = report["interrupted"]["points_done"].as_u64().unwrap() as usize;
    let planned = report["interrupted"]["points_planned"].as_u64().unwrap();
    assert!(done >= 1 && (done as u64) < planned, "{done} of {planned}");
    assert_eq!(report["records"].as_array().unwrap().len(), done);
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(rows, done + 1, "a header and a line a finished point");
}

/// A point that does not fit (here: `--rotate`'s copies, more than the host or the device has)
/// is that point's error, named in its records; the next point still runs and is timed.
fn a_point_that_does_not_fit_leaves_the_next_one_running(dev: &kernlab::Device) {
    let (device, variant) = match dev {
        kernlab::Device::Cpu => ("cpu", "fused"),
        kernlab::Device::Cuda(_) => ("cuda", "auto"),
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    // 1024 copies of 8192×4096 f32 in and out: 256 GiB.
    let err = crate::common::run_cli(&[
        "bench",
        "softmax",
        "--device",
        device,
        "--variants",
        variant,
        "--shape",
        "8192x4096",
        "--shape",
        "64x64",
        "--rotate",
        "1024",
        "--warmup-ms",
        "1",
        "--rep-ms",
        "2",
        "--json",
        json.to_str().unwrap(),
    ])
    .expect_err("a point that did not fit must fail the run");
    assert!(err.contains("raised errors"), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = doc["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    let (big, small) = (&records[0], &records[1]);
    assert_eq!(big["shape"], serde_json::json!([8192, 4096]));
    assert_eq!(big["status"], "error");
    let note = big["note"].as_str().unwrap();
    assert!(
        note.contains("does not fit") && note.contains("--rotate 1024"),
        "{note}"
    );
    assert_eq!(small["shape"], serde_json::json!([64, 64]));
    assert_eq!(small["status"], "ok", "{small}");
    assert!(small["median_ms"].as_f64().unwrap() > 0.0);
}
crate::test_device!(
    a_point_that_does_not_fit_leaves_the_next_one_running,
    super::a_point_that_does_not_fit_leaves_the_next_one_running
);
