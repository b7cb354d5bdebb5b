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
