//! The `kernlab` command line, as a library module so tests can drive it: [`run`] parses
//! arguments and writes its report to the writer it is given; progress goes to stderr. One file
//! per subcommand; the flags an op takes (`--gelu`, `--log-softmax`, `--activation`, `--eps`)
//! come from the ops' descriptors, added to every command that runs ops.

mod autotune;
mod bench;
mod compile;
mod doctor;
mod inspect;
mod list;
mod profile;
mod run_args;
mod sweep;

use crate::ops::{FlagKind, FlagValues, Op};
use crate::runtime::dtype::DType;
use crate::runtime::tensor::parse_shape;
use anyhow::{bail, Context, Result};
use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "kernlab",
    version = concat!(env!("CARGO_PKG_VERSION"), " (build ", env!("KERNLAB_BUILD_ID"), ")"),
    about = "A laboratory for GPU kernels: GeLU, softmax, matmul, linear and rmsnorm in every tier, validated against f64, then timed",
    long_about = "kernlab runs every variant of an op — the lecture's manual composition of primitive \
kernels, numbered hand-written CUDA versions, vendor libraries, fused CPU loops — validates each \
against an f64 reference on fresh random inputs, and only then times it, against the copy \
bandwidth measured on the same device in the same run. Without a GPU it runs on the CPU."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// CPU threads for kernlab's own CPU work: the CPU tier's kernels, the f64 reference, the
    /// CPU copy ceiling (default: RAYON_NUM_THREADS if set, else one a core). Reports name the
    /// count that ran; the command's output is written when it finishes
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// The CPU tier's instruction paths: best (everything the CPU has: AVX-512 where it has
    /// AVX-512F, BW and VL, else AVX2 + FMA; F16C; AMX's bf16 tiles for the `amx` GEMMs),
    /// avx2-fma (AVX2 + FMA and F16C, no AVX-512), avx2 (AVX2 alone, no FMA or F16C) or
    /// portable (the build's baseline, no run-time dispatch), so that each path can be tested
    /// and timed; reports name the paths that ran
    /// [default: best]
    #[arg(
        long,
        global = true,
        value_enum,
        env = "KERNLAB_CPU_PATH",
        value_name = "PATH"
    )]
    cpu_path: Option<CpuPathArg>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum CpuPathArg {
    Best,
    Avx2Fma,
    Avx2,
    Portable,
}

impl From<CpuPathArg> for crate::runtime::simd::CpuPath {
    fn from(a: CpuPathArg) -> Self {
        match a {
            CpuPathArg::Best => Self::Best,
            CpuPathArg::Avx2Fma => Self::Avx2Fma,
            CpuPathArg::Avx2 => Self::Avx2,
            CpuPathArg::Portable => Self::Portable,
        }
    }
}

/// Runs `f` with the CPU tier capped at `path` (where given), the cap restored afterwards.
fn with_cpu_path<R>(path: Option<CpuPathArg>, f: impl FnOnce() -> R) -> R {
    use crate::runtime::simd;
    let Some(p) = path else { return f() };
    let before = simd::cap();
    simd::set_cap(p.into());
    let r = f();
    simd::set_cap(before);
    r
}

#[derive(Subcommand)]
enum Cmd {
    /// Validate, then time, every variant of an op (every op when none is named)
    Bench(bench::BenchArgs),
    /// Validate and time every variant of one op over a range of sizes: a table of GB/s,
    /// and a plot with --plot
    Sweep(sweep::SweepArgs),
    /// List every registered variant: op, variant, tier, device, dtypes, summary
    List(list::ListArgs),
    /// Read what the compiler made of a variant's kernels: ptxas report, occupancy, a census
    /// of the PTX (and SASS with --sass), the PTX itself with --ptx or --out
    Inspect(inspect::InspectArgs),
    /// Run one variant N times under CUPTI: every kernel, copy and launch call, as a table like
    /// torch.profiler's (and a Chrome trace with --trace)
    Profile(profile::ProfileArgs),
    /// Measure every configuration of the tunable versions on one shape (each validated
    /// first) and keep the winners in the autotune cache, which default dispatch then uses
    Autotune(autotune::AutotuneArgs),
    /// Show the device, the CUDA libraries that load, the kernel cache and the ceilings
    Doctor(doctor::DoctorArgs),
    /// Show what kernlab's compiler makes of an op's graph or your own expression (--expr): the
    /// graph, the fusion plan, the generated CUDA (--source), its ptxas report; --run checks
    /// and times it on the GPU
    Compile(compile::CompileArgs),
}

/// The subcommands that run ops, and so take the ops' flags.
const RUNS_OPS: [&str; 6] = [
    "bench", "sweep", "inspect", "profile", "autotune", "compile",
];

/// The command line: the derived commands, each that runs ops given every op's flags (one flag
/// a name, however many ops declare it).
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for name in RUNS_OPS {
        cmd = cmd.mut_subcommand(name, |mut sub| {
            let mut seen: Vec<&str> = Vec::new();
            for op in Op::all() {
                for f in op.flags() {
                    if seen.contains(&f.name) {
                        continue;
                    }
                    seen.push(f.name);
                    let mut arg = Arg::new(f.name).long(f.name).help_heading("Op flags");
                    arg = match f.kind {
                        FlagKind::Switch => arg.action(ArgAction::SetTrue).help(f.help),
                        FlagKind::Value {
                            value_name,
                            default,
                            values,
                        } => {
                            let mut help = f.help.to_string();
                            if let Some(v) = values {
                                help += &format!(" [possible values: {}]", v.join(", "));
                            }
                            help += &format!(" [default: {default}]");
                            arg.value_name(value_name)
                                .action(ArgAction::Set)
                                .allow_negative_numbers(true)
                                .help(help)
                        }
                    };
                    sub = sub.arg(arg);
                }
            }
            sub
        });
    }
    cmd.mut_subcommand("sweep", |s| s.after_help(sweep::after_help()))
        .mut_subcommand("autotune", |s| s.after_help(autotune::after_help()))
}

/// The op flags given on the command line.
fn op_flags(m: &ArgMatches) -> FlagValues {
    let mut flags = FlagValues::default();
    for op in Op::all() {
        for f in op.flags() {
            match f.kind {
                FlagKind::Switch => {
                    if m.try_get_one::<bool>(f.name).ok().flatten() == Some(&true) {
                        flags.set(f.name, "true");
                    }
                }
                FlagKind::Value { .. } => {
                    if let Ok(Some(v)) = m.try_get_one::<String>(f.name) {
                        flags.set(f.name, v.clone());
                    }
                }
            }
        }
    }
    flags
}

/// Op flags given for ops a run does not take would be ignored: say so instead. `does` is what
/// the command does to its ops ("time", "profile", "tune", "inspect").
fn check_op_flags(ops: &[Op], does: &str, flags: &FlagValues) -> Result<()> {
    for name in flags.names() {
        if ops.iter().any(|o| o.flags().iter().any(|f| f.name == name)) {
            continue;
        }
        let owners: Vec<&str> = Op::all()
            .iter()
            .filter(|o| o.flags().iter().any(|f| f.name == name))
            .map(|o| o.name())
            .collect();
        bail!(
            "--{name} applies to {}, which this run does not {does}",
            owners.join(" and ")
        );
    }
    Ok(())
}

/// Parse `args` (the first is the program name) and run the command, writing its report to
/// `out`. Errors come back to the caller (the binary prints them and exits 1).
pub fn run<I, T>(args: I, out: &mut dyn Write) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = command().try_get_matches_from(args)?;
    let flags = matches
        .subcommand()
        .map(|(_, m)| op_flags(m))
        .unwrap_or_default();
    let cli = Cli::from_arg_matches(&matches)?;
    for note in retired_env_notes(std::env::vars().map(|(k, _)| k)) {
        stderr_line!("{note}");
    }
    let path = cli.cpu_path;
    let Some(n) = cli.threads else {
        return with_cpu_path(path, || dispatch(cli.cmd, &flags, out));
    };
    // A pool of its own (not rayon's global one, which a process can build only once): every
    // parallel loop the command runs, and `rayon::current_num_threads()`, see its N threads.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n as usize)
        .build()
        .with_context(|| format!("--threads {n}: no thread pool"))?;
    let mut buf: Vec<u8> = Vec::new();
    let cmd = cli.cmd;
    let result = with_cpu_path(path, || pool.install(|| dispatch(cmd, &flags, &mut buf)));
    out.write_all(&buf)?;
    result
}

fn dispatch(cmd: Cmd, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    match cmd {
        Cmd::Bench(a) => bench::run(a, flags, out),
        Cmd::Sweep(a) => sweep::run(a, flags, out),
        Cmd::List(a) => list::run(a, out),
        Cmd::Inspect(a) => inspect::run(a, flags, out),
        Cmd::Profile(a) => profile::run(a, flags, out),
        Cmd::Autotune(a) => autotune::run(a, flags, out),
        Cmd::Doctor(a) => doctor::run(a, out),
        Cmd::Compile(a) => compile::run(a, flags, out),
    }
}

/// A note for each environment variable set that kernlab once read as a launch knob and no
/// longer does: launch configurations are typed tunings that `kernlab autotune` searches.
fn retired_env_notes(names: impl Iterator<Item = String>) -> Vec<String> {
    let retired = |k: &str| {
        let versioned = |p: &str| {
            k.strip_prefix(p)
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        };
        versioned("KERNLAB_V")
            || versioned("KL_V")
            || [
                "KERNLAB_ALLOC",
                "KERNLAB_STREAM",
                "KERNLAB_FLUSH",
                "KERNLAB_NVRTC_DEFINES",
            ]
            .contains(&k)
    };
    let mut names: Vec<String> = names.filter(|k| retired(k)).collect();
    names.sort();
    names
        .into_iter()
        .map(|k| {
            format!(
                "note: {k} is not read any more: launch configurations are typed tunings that \
                 `kernlab autotune OP` measures and caches (`kernlab autotune --help`); --no-flush \
                 and --rotate are the timing options"
            )
        })
        .collect()
}

/// The longest --warmup-ms or --rep-ms taken: ten minutes a variant.
const MAX_DURATION_MS: f64 = 600_000.0;

/// --warmup-ms ≥ 0 and --rep-ms > 0, both at most [`MAX_DURATION_MS`] (NaN, inf and the like
/// are refused, not run for ever).
fn check_durations(warmup_ms: f64, rep_ms: f64) -> Result<()> {
    let ok = |v: f64| v.is_finite() && v <= MAX_DURATION_MS;
    if !(ok(warmup_ms) && ok(rep_ms) && warmup_ms >= 0.0 && rep_ms > 0.0) {
        bail!(
            "--warmup-ms must be a finite number ≥ 0 and --rep-ms a finite number > 0, both milliseconds and at most {MAX_DURATION_MS} (ten minutes a variant); got {} and {}",
            crate::tools::bench::report::fmt_sig(warmup_ms),
            crate::tools::bench::report::fmt_sig(rep_ms)
        );
    }
    Ok(())
}

fn parse_dtypes(s: &str) -> Result<Vec<DType>> {
    // Every entry is checked; `all` (None here) anywhere in the list means every dtype.
    let named = parse_list(s, |d| {
        if d.eq_ignore_ascii_case("all") {
            return Ok(None);
        }
        d.parse::<DType>().map(Some).map_err(anyhow::Error::msg)
    })?;
    Ok(if named.contains(&None) {
        DType::ALL.to_vec()
    } else {
        named.into_iter().flatten().collect()
    })
}

/// A comma list, each item trimmed and parsed; an item named twice is kept once, in the
/// order first named.
fn parse_list<T: PartialEq>(s: &str, parse: impl Fn(&str) -> Result<T>) -> Result<Vec<T>> {
    let items = s
        .split(',')
        .map(|item| parse(item.trim()))
        .collect::<Result<Vec<_>>>()?;
    Ok(once_each(items))
}

/// Each value once, in the order first named.
fn once_each<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len());
    for v in items {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// `--shape` flags, parsed; a shape named twice (8x8 and 8×8 alike) is run once.
fn parse_shapes(flags: &[String]) -> Result<Vec<Vec<usize>>> {
    let shapes = flags
        .iter()
        .map(|s| parse_shape(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(once_each(shapes))
}

fn parse_ops(s: &str) -> Result<Vec<Op>> {
    // Every entry is checked; `all` (None here) anywhere in the list means every op.
    let named = parse_list(s, |o| {
        if o.eq_ignore_ascii_case("all") {
            return Ok(None);
        }
        Ok(Some(o.parse::<Op>()?))
    })?;
    Ok(if named.contains(&None) {
        Op::all().to_vec()
    } else {
        named.into_iter().flatten().collect()
    })
}

/// An output file the run will write at its end: refuse a directory, a missing folder, or a
/// file that cannot be opened for writing, now rather than after the whole run (a file this
/// check creates is removed again; an existing one is left as it is).
fn check_output_path(flag: &str, path: Option<&Path>) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    if path.is_dir()
        || path
            .as_os_str()
            .to_string_lossy()
            .ends_with(std::path::MAIN_SEPARATOR)
    {
        bail!(
            "{flag} {}: that is a directory; give a file name",
            path.display()
        );
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent.filter(|d| !d.is_dir()) {
        bail!(
            "{flag} {}: the folder {} does not exist",
            path.display(),
            dir.display()
        );
    }
    // An existing regular file is opened to append (nothing written); a new one is created and
    // removed again. Anything else that exists (a symlink, a pipe) is left to the final write.
    let probe = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(|_| ()),
        Ok(_) => Ok(()),
        Err(_) => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map(|_| {
                let _ = std::fs::remove_file(path);
            }),
    };
    if let Err(e) = probe {
        bail!("{flag} {}: cannot be written ({e})", path.display());
    }
    Ok(())
}

/// Where a path's file lands: its folder, resolved, and its name (so `out.csv` and
/// `./out.csv` are one file).
fn output_target(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match path.file_name() {
        Some(name) => dir.join(name),
        None => path.to_path_buf(),
    }
}

/// Refuse two output flags naming the same file (the later write would replace the earlier).
fn check_distinct_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let given: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|(f, p)| p.map(|p| (*f, p)))
        .collect();
    for (i, (f1, p1)) in given.iter().enumerate() {
        for (f2, p2) in &given[i + 1..] {
            if output_target(p1) == output_target(p2) {
                bail!(
                    "{f1} and {f2} both name {}: give each its own file",
                    p1.display()
                );
            }
        }
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    stderr_line!("wrote {}", path.display());
    Ok(())
}

/// Progress through a run's points: a bar on a terminal; elsewhere (a log, a pipe, CI) one
/// plain line on stderr each time the count moves, so a long sweep shows that it is alive.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    what: &'static str,
    len: std::cell::Cell<u64>,
    shown: std::cell::Cell<Option<u64>>,
    msg: std::cell::RefCell<String>,
}

impl Progress {
    fn set_length(&self, n: u64) {
        self.len.set(n);
        if let Some(b) = &self.bar {
            b.set_length(n);
        }
    }
    fn set_message(&self, m: String) {
        match &self.bar {
            Some(b) => b.set_message(m),
            None => *self.msg.borrow_mut() = m,
        }
    }
    fn set_position(&self, done: u64) {
        match &self.bar {
            Some(b) => b.set_position(done),
            None if self.shown.get() != Some(done) => {
                self.shown.set(Some(done));
                let msg = self.msg.borrow();
                let sep = if msg.is_empty() { "" } else { " · " };
                stderr_line!("  {done}/{} {}{sep}{msg}", self.len.get(), self.what);
            }
            None => {}
        }
    }
    fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
    fn finish_and_clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// A [`Progress`] counting `what` (points, candidates).
fn progress_bar(what: &'static str) -> Progress {
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{bar:30.cyan/blue}} {{pos}}/{{len}} {what} · {{elapsed}} (eta {{eta}}) · {{wide_msg}}"
            ))
            .expect("the template is valid")
            .progress_chars("█▉▊▋▌▍▎▏ "),
        );
        bar
    });
    Progress {
        bar,
        what,
        len: std::cell::Cell::new(0),
        shown: std::cell::Cell::new(None),
        msg: std::cell::RefCell::new(String::new()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn retired_launch_knobs_get_a_note_and_paths_do_not() {
        let names = [
            "KERNLAB_V11_CHUNK",
            "KL_V9_SMS",
            "KERNLAB_STREAM",
            "KERNLAB_CACHE_DIR",
            "KERNLAB_PYTHON",
            "KERNLAB_LAUNCH_BLOCKING",
            "KERNLAB_VERBOSE",
            "PATH",
        ];
        let notes = super::retired_env_notes(names.iter().map(|s| s.to_string()));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].starts_with("note: KERNLAB_STREAM is not read any more"));
        assert!(notes.iter().all(|n| n.contains("kernlab autotune")));
    }
}
