//! What `bench` and `sweep` share: the run's flags (dtypes, device, variants, timing, outputs),
//! the benchmark configuration made from them, and the output files.

use super::{
    check_distinct_outputs, check_durations, check_op_flags, check_output_path, parse_dtypes,
    parse_list, write_file,
};
use crate::ops::{FlagValues, Op};
use crate::runtime::device::{Device, DeviceSpec};
use crate::tools::bench::{self, harness::TimingOpts, BenchConfig};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What `bench` and `sweep` share: dtypes, device, variants, timing, outputs.
#[derive(Args)]
pub(super) struct RunArgs {
    /// Comma-separated dtypes: f32, bf16, f16, or all
    #[arg(long, default_value = "f32")]
    pub(super) dtype: String,
    /// auto (a CUDA GPU if there is one, else the CPU), cpu, cuda or cuda:N
    #[arg(long, default_value = "auto")]
    pub(super) device: String,
    /// Comma-separated variant names (see `kernlab list`); default: all but the reference
    #[arg(long)]
    pub(super) variants: Option<String>,
    /// Write the report (every record, the ceilings, the device) as JSON to this path
    #[arg(long, value_name = "PATH")]
    pub(super) json: Option<PathBuf>,
    /// Write one CSV line per record to this path (times, GB/s, TFLOP/s, % of the ceilings;
    /// `form`: the GeLU form, softmax or log_softmax, linear's epilogue; rows/cols: the
    /// output's; `picked`: the version a dispatching variant such as `auto` ran). The file is
    /// rewritten after each point, so a run cut short keeps the points it finished (the
    /// PyTorch columns come after the last point)
    #[arg(long, value_name = "PATH")]
    pub(super) csv: Option<PathBuf>,
    /// Seed for the random inputs (default: a fresh one each run, printed)
    #[arg(long, allow_negative_numbers = true)]
    pub(super) seed: Option<u64>,
    /// Warm-up duration per variant, ms
    #[arg(long, default_value_t = 25.0, allow_negative_numbers = true)]
    pub(super) warmup_ms: f64,
    /// Measurement duration per variant, ms
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub(super) rep_ms: f64,
    /// Do not flush the cache before each timed call
    #[arg(long)]
    pub(super) no_flush: bool,
    /// Repeat the whole measurement K times; tables show the spread of the K medians and mark
    /// differences within it (~) as noise
    #[arg(
        long,
        value_name = "K",
        default_value_t = 1,
        allow_hyphen_values = true
    )]
    pub(super) repeat: usize,
    /// CUDA: time replays of a CUDA graph of N captured calls (for launch-bound work); the L2
    /// is not flushed between replays
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(super) graph: Option<usize>,
    /// Cycle through N copies of the input (and output) buffers, call by call; `auto`: as many
    /// as make the copies (inputs and output) 4× the L2 (the CPU's last-level cache), at most
    /// 1024, so that no call finds its input still cached (even lines loaded L2::evict_last,
    /// which the flush leaves); not with --graph. With --torch, the PyTorch columns are rotated
    /// the same way
    #[arg(
        long,
        value_name = "N|auto",
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub(super) rotate: crate::tools::bench::harness::Rotate,
    /// Also run baselines/torch_baselines.py (or $KERNLAB_BASELINES) with python3 (or
    /// $KERNLAB_PYTHON): PyTorch manual and native, torch.compile and Triton, as extra columns
    /// (timed by do_bench, with --rotate's copies). For the ops with an `auto` (softmax,
    /// rmsnorm, matmul, linear), also `kernlab_do_bench`: `auto` called in that process through
    /// the kernlab Python package (`pip install ./python` for that Python, from the same
    /// sources as this kernlab) and timed by the same do_bench, so that µs-sized calls compare
    /// kernels rather than processes (not with --row-stride or --graph). GPU calls under 1 ms, on both sides, are also
    /// timed settled (the stream parked behind each flush until it finished: the host's pace
    /// out of the time; `settled_ms` in the CSV and JSON), and the verdict under the table
    /// judges by those too. `--torch=LIST` runs only the PyTorch columns named (of
    /// torch_manual, torch_native, torch_compile, torch_compile_ro, triton; an op runs those it
    /// has): `--torch=torch_native` skips torch.compile's compile at every point of a sweep
    #[arg(
        long,
        value_name = "COLUMNS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub(super) torch: Option<String>,
    /// Measure the matmul ceiling again instead of reading it from the cache
    #[arg(long)]
    pub(super) fresh_ceilings: bool,
}

/// The benchmark configuration from the shared arguments, and the device it runs on.
pub(super) fn config(
    a: &RunArgs,
    flags: &FlagValues,
    ops: Vec<Op>,
    shapes: Vec<Vec<usize>>,
) -> Result<(BenchConfig, Device, String)> {
    check_distinct_outputs(&[("--json", a.json.as_deref()), ("--csv", a.csv.as_deref())])?;
    check_output_path("--json", a.json.as_deref())?;
    check_output_path("--csv", a.csv.as_deref())?;
    let dtypes = parse_dtypes(&a.dtype)?;
    let spec: DeviceSpec = a.device.parse().map_err(anyhow::Error::msg)?;
    check_op_flags(&ops, "time", flags)?;
    // Each op's parameters, checked before any work starts.
    for op in &ops {
        let names: Vec<&str> = op.flags().iter().map(|f| f.name).collect();
        op.params(&flags.only(&names))?;
    }
    check_durations(a.warmup_ms, a.rep_ms)?;
    if a.repeat == 0 || a.graph == Some(0) {
        bail!("--repeat and --graph take a count of at least 1");
    }
    let (dev, line) = Device::open(spec)?;
    if a.graph.is_some() && dev.cuda().is_none() {
        bail!("--graph times CUDA-graph replays and needs a CUDA device (this run is on the CPU)");
    }
    let variants = a
        .variants
        .as_deref()
        .map(|v| parse_list(v, |s| Ok(s.to_string())))
        .transpose()?
        .map(|mut names| {
            names.retain(|n| !n.is_empty());
            names
        });
    if variants.as_ref().is_some_and(|v| v.is_empty()) {
        bail!("--variants names no variant (see `kernlab list`; leave the flag out for all)");
    }
    // Unknown variant names are an error before any work starts.
    if let Some(names) = &variants {
        for op in &ops {
            for n in names {
                crate::ops::find(*op, n, dev.kind())?;
            }
        }
    }
    let cfg = BenchConfig {
        ops,
        shapes,
        dtypes,
        variants,
        flags: flags.clone(),
        seed: a.seed,
        timing: TimingOpts {
            warmup_ms: a.warmup_ms,
            rep_ms: a.rep_ms,
            flush: !a.no_flush,
            repeat: a.repeat,
            graph: a.graph,
            rotate: a.rotate,
            ..TimingOpts::default()
        },
        row_stride: None,
        torch: match a.torch.as_deref() {
            None => None,
            Some("") => Some(bench::torch::TorchConfig::locate()),
            Some(list) => Some(bench::torch::TorchConfig {
                columns: Some(bench::torch::parse_columns(list)?),
                ..bench::torch::TorchConfig::locate()
            }),
        },
        ceiling_cache: bench::ceiling::cache_path(),
        fresh_ceilings: a.fresh_ceilings,
        flag_sweep: None,
        check_only: false,
    };
    Ok((cfg, dev, line))
}

/// `--csv` kept current while a run works: after each point, the records so far replace the
/// file, so that a run cut short (a time limit, Ctrl-C, an error at a later point) keeps the
/// points it finished; the write at the end replaces it with the whole report. Only a regular
/// file, or one not there yet, is written this way, through `<file>.partial` renamed over it so
/// that a reader never finds half a file (in place where the folder takes no new files); a pipe
/// or a symlink gets the final write alone. A failed write is reported once, and the run goes
/// on.
pub(super) struct PartialCsv<'a> {
    path: Option<&'a Path>,
}

impl<'a> PartialCsv<'a> {
    pub(super) fn new(csv: Option<&'a Path>) -> Self {
        let path = csv.filter(|p| match std::fs::symlink_metadata(p) {
            Ok(m) => m.is_file(),
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        });
        PartialCsv { path }
    }

    pub(super) fn write(&mut self, report: &bench::BenchReport) {
        use std::io::Write as _;
        let Some(path) = self.path else { return };
        let text = report.to_csv();
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        let tmp = PathBuf::from(tmp);
        // A `.partial` left by a run that was killed (or a link by that name) goes first: the
        // new one is created, never opened through a link.
        let _ = std::fs::remove_file(&tmp);
        let via_tmp = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            // The file keeps its permissions when the new one replaces it.
            if let Ok(m) = std::fs::metadata(path) {
                std::fs::set_permissions(&tmp, m.permissions())?;
            }
            std::fs::rename(&tmp, path)
        })();
        let written = match via_tmp {
            Ok(()) => Ok(()),
            // A folder the run may not create files in: the file itself, in place.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && path.is_file() => {
                let _ = std::fs::remove_file(&tmp);
                std::fs::write(path, &text)
            }
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            self.path = None;
            stderr_line!(
                "note: --csv {}: the points so far could not be written ({e}); the file is written if the run completes",
                path.display()
            );
        }
    }
}

/// Write the JSON and CSV files a run asked for.
/// Start a measuring run: from now on the first Ctrl-C stops it after the point it is on (the
/// finished points are written and shown), and the files an earlier run left at this run's
/// output paths are removed first, so that a run that dies never leaves one looking like its
/// own.
pub(super) fn start_run(a: &RunArgs, more: &[Option<&Path>]) -> Result<()> {
    crate::runtime::interrupt::install();
    let outputs = [a.json.as_deref(), a.csv.as_deref()];
    for p in outputs.iter().chain(more).flatten() {
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(p)
                .with_context(|| format!("removing the earlier {} first", p.display()))?;
        }
    }
    Ok(())
}

/// A run stopped by Ctrl-C is an error once what it measured is written and shown.
pub(super) fn check_interrupted(report: &bench::BenchReport) -> Result<()> {
    if let Some(i) = report.interrupted {
        bail!(
            "interrupted (Ctrl-C) after {} of {} points: the tables and files hold those",
            i.points_done,
            i.points_planned
        );
    }
    Ok(())
}

pub(super) fn write_outputs(
    a: &RunArgs,
    json: impl FnOnce() -> Result<String>,
    csv: &str,
) -> Result<()> {
    if let Some(path) = &a.json {
        write_file(path, &json()?)?;
    }
    if let Some(path) = &a.csv {
        write_file(path, csv)?;
    }
    Ok(())
}

/// Under a table with PyTorch columns: where `auto` and its call in PyTorch's process were slower
/// than PyTorch native or torch.compile, then the notes on what failed or was refused.
pub(super) fn write_notes(report: &bench::BenchReport, out: &mut dyn Write) -> Result<()> {
    let verdict = report.against_pytorch();
    if !verdict.is_empty() {
        writeln!(out)?;
        for v in &verdict {
            writeln!(out, "{v}")?;
        }
    }
    let problems = report.problems();
    if !problems.is_empty() {
        writeln!(out)?;
        for p in &problems {
            writeln!(out, "note: {p}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of two CPU points, with its Point events' record counts and CSVs.
    fn two_points() -> (bench::BenchReport, Vec<usize>, Vec<String>) {
        let mut cfg = bench::BenchConfig::new(
            vec![crate::ops::softmax::OP],
            vec![vec![4, 32], vec![4, 48]],
            vec![crate::runtime::dtype::DType::F32],
        );
        cfg.timing.warmup_ms = 0.1;
        cfg.timing.rep_ms = 0.5;
        cfg.timing.max_calls = 3;
        cfg.seed = Some(3);
        cfg.ceiling_cache = None;
        let (mut counts, mut csvs) = (Vec::new(), Vec::new());
        let report = bench::run(&cfg, &crate::runtime::device::Device::Cpu, &mut |e| {
            if let bench::Event::Point(r) = e {
                counts.push(r.records.len());
                csvs.push(r.to_csv());
            }
        })
        .unwrap();
        (report, counts, csvs)
    }

    /// The partial CSV holds exactly the report so far, replaces what was there, and leaves
    /// no `.partial` file behind.
    #[test]
    fn the_partial_csv_is_the_report_so_far() {
        let (report, counts, csvs) = two_points();
        assert_eq!(counts.len(), 2, "one Point event a point: {counts:?}");
        assert!(
            counts[0] > 0 && counts[1] == report.records.len(),
            "{counts:?}"
        );
        // What a point's event carries is the final report's first rows, speedups included.
        let last = report.to_csv();
        for (csv, n) in csvs.iter().zip(&counts) {
            let want: Vec<_> = last.lines().take(1 + n).collect();
            assert_eq!(csv.lines().collect::<Vec<_>>(), want);
        }
        let speedup = bench::report::CSV_COLUMNS
            .iter()
            .position(|c| *c == "speedup_vs_manual")
            .unwrap();
        assert!(
            last.lines()
                .skip(1)
                .all(|l| !l.split(',').nth(speedup).unwrap().is_empty()),
            "a row without its speedup: {last}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.csv");
        std::fs::write(&path, "an older run\n").unwrap();
        let mut first = report.clone();
        first.records.truncate(counts[0]);
        let mut partial = PartialCsv::new(Some(&path));
        partial.write(&first);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, first.to_csv());
        assert_eq!(text.lines().count(), 1 + counts[0], "{text}");
        partial.write(&report);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), report.to_csv());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("run.csv")]);
    }

    /// A symlink is not replaced by a file, and a file that cannot be written stops the
    /// partial writes without failing the run.
    #[test]
    fn the_partial_csv_leaves_links_alone_and_survives_a_failed_write() {
        let (report, _, _) = two_points();
        let dir = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        {
            let target = dir.path().join("target.csv");
            std::fs::write(&target, "kept\n").unwrap();
            let link = dir.path().join("link.csv");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            PartialCsv::new(Some(&link)).write(&report);
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
            // A stale `.partial` that is a link is replaced, not written through.
            let victim = dir.path().join("victim");
            std::fs::write(&victim, "kept\n").unwrap();
            let csv = dir.path().join("run2.csv");
            std::os::unix::fs::symlink(&victim, dir.path().join("run2.csv.partial")).unwrap();
            PartialCsv::new(Some(&csv)).write(&report);
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept\n");
            assert_eq!(std::fs::read_to_string(&csv).unwrap(), report.to_csv());
            assert!(!dir.path().join("run2.csv.partial").exists());
        }
        let gone = dir.path().join("no such folder").join("run.csv");
        let mut partial = PartialCsv::new(Some(&gone));
        assert!(
            partial.path.is_some(),
            "a file not there yet is written as it goes"
        );
        partial.write(&report);
        assert!(
            partial.path.is_none(),
            "after a failed write, no more tries"
        );
        assert!(!gone.exists());
        let mut none = PartialCsv::new(None);
        none.write(&report);
    }
}
