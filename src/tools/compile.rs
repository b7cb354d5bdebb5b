//! `kernlab compile`: what kernlab's compiler makes of an op's graph: the graph, the fusion
//! plan, the generated CUDA, and NVRTC's ptxas report for it.

use crate::compiler::Graph;
use crate::ops::{Op, Params};
use crate::runtime::device::nvrtc::{self, PtxasInfo};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use std::fmt::Write as _;

/// What the compiler made of one op.
#[derive(Debug)]
pub struct CompileReport {
    /// The graph, one node a line.
    pub graph: String,
    /// The fusion plan in words: which kernel, and why its boundaries are where they are.
    pub plan: String,
    /// The generated translation unit.
    pub source: String,
    /// The target it was compiled for.
    pub arch: String,
    /// Each generated kernel: its name, ptxas's report (none where this NVRTC's info log was
    /// empty, as some builds return) and its global accesses' widths; or why nothing was
    /// compiled (no NVRTC here).
    pub ptxas: std::result::Result<Vec<(String, Option<PtxasInfo>, String)>, String>,
    /// The cold compile's wall time, ms (NVRTC, no cache).
    pub compile_ms: Option<f64>,
    /// A cached compile's wall time, ms (the kernel cache read back).
    pub warm_ms: Option<f64>,
}

/// `op`'s graph for `params` in `g`, or an error naming the ops that have one.
pub fn op_graph<'g>(op: Op, params: &Params, g: &'g Graph) -> Result<crate::compiler::Expr<'g>> {
    op.graph(g, params).ok_or_else(|| {
        Error::Invalid(format!(
            "{op} is not written as a graph yet (ops with one: {})",
            Op::all()
                .iter()
                .filter(|o| o.graph(&Graph::new(), &o.default_params()).is_some())
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?
}

/// Build `op`'s graph for `params`, generate its kernel for `dtype`, compile it for `arch`.
pub fn compile(op: Op, params: &Params, dtype: DType, arch: &str) -> Result<CompileReport> {
    let g = Graph::new();
    let out = op_graph(op, params, &g)?;
    compile_graph(
        &g,
        out.id,
        &crate::ops::compiled::stem("compiled", op, params, dtype),
        dtype,
        arch,
    )
}

/// Generate node `out` of `g`'s kernel for `dtype` (symbols named from `name`) and compile it
/// for `arch`: cold (NVRTC), then warm (from a kernel cache of its own, as a later process
/// finds it in kernlab's).
pub fn compile_graph(
    g: &Graph,
    out: crate::compiler::NodeId,
    name: &str,
    dtype: DType,
    arch: &str,
) -> Result<CompileReport> {
    crate::tools::inspect::check_arch(arch)?;
    let (plan, src, symbols) = if crate::compiler::gemm::has_matmul(g, out) {
        let k = crate::compiler::gemm::build(
            g,
            out,
            dtype,
            name,
            &crate::ops::matmul::sm90::generated_tiles(),
        )?;
        (gemm_plan(&k), k.source, k.symbols.clone())
    } else {
        let k = crate::compiler::kernel::build(g, out, dtype, name)?;
        (k.plan(), k.source, k.generated.symbols.clone())
    };
    let (ptxas, compile_ms, warm_ms) = match nvrtc::nvrtc_available() {
        Err(e) => (Err(e.to_string()), None, None),
        Ok(()) => {
            let t = std::time::Instant::now();
            let c = nvrtc::compile(src, arch, &nvrtc::base_options(arch), &symbols[0])?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            use crate::tools::inspect::{Category, Census};
            let infos = symbols
                .iter()
                .map(|s| {
                    let info = c.ptxas_info(s);
                    // The global accesses' widths, from the PTX (as `kernlab inspect` counts).
                    let census = nvrtc::ptx_entry_body(&c.ptx, s).map(Census::of_ptx);
                    let widths = census.map_or(String::new(), |c| {
                        format!(
                            "ld.global {}, st.global {}",
                            c.widths_text(Category::GlobalLoad),
                            c.widths_text(Category::GlobalStore)
                        )
                    });
                    (s.clone(), info, widths)
                })
                .collect::<Vec<_>>();
            (Ok(infos), Some(ms), warm_compile_ms(src, arch))
        }
    };
    Ok(CompileReport {
        graph: g.to_string(),
        plan,
        source: src.src.to_string(),
        arch: arch.to_string(),
        ptxas,
        compile_ms,
        warm_ms,
    })
}

/// A generated GEMM's fusion plan in words.
fn gemm_plan(k: &crate::compiler::gemm::GemmKernel) -> String {
    let inputs = if k.inputs.is_empty() {
        String::from("no other input")
    } else {
        k.inputs
            .iter()
            .map(|(n, l)| format!("{n} ({l:?})").to_lowercase())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "one GEMM for {} operations: {} · {}ᵀ on the tensor cores (matmul v7's template: TMA \
         loads, wgmma, its tile stored by TMA; v6's register stores where the output's rows \
         are not 16-byte multiples), the rest its epilogue ({} operations after the fusion \
         rewrites), applied to the f32 accumulator in registers before the one store (reading \
         {inputs}); {} instantiations, one a tile the launcher picks from",
        k.operations,
        k.a,
        k.w,
        k.epilogue_ops,
        k.symbols.len()
    )
}

/// The time a cached compile takes: the source compiled into a fresh cache folder, then
/// compiled again (read back from it). `None` where no folder can be made.
fn warm_compile_ms(src: &KernelSource, arch: &str) -> Option<f64> {
    let dir = std::env::temp_dir().join(format!("kernlab-compile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let warm = (|| {
        nvrtc::compile_cached_in(Some(&dir), src, arch, "warm").ok()?;
        let t = std::time::Instant::now();
        let c = nvrtc::compile_cached_in(Some(&dir), src, arch, "warm").ok()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        c.from_cache.then_some(ms)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    warm
}

impl CompileReport {
    /// The report as text; the generated source only with `source`.
    pub fn render(&self, source: bool) -> String {
        let mut s = String::new();
        writeln!(s, "graph:\n{}", self.graph).ok();
        writeln!(s, "fusion: {}\n", self.plan).ok();
        if source {
            writeln!(s, "generated CUDA:\n{}", self.source).ok();
        }
        match &self.ptxas {
            Ok(infos) => {
                let ms = self
                    .compile_ms
                    .map_or(String::new(), |m| format!(", cold compile {m:.0} ms"));
                let ms = ms
                    + &self
                        .warm_ms
                        .map_or(String::new(), |m| format!(", cached {m:.1} ms"));
                writeln!(s, "ptxas ({}{ms}):", self.arch).ok();
                for (kernel, info, widths) in infos {
                    match info {
                        Some(i) => writeln!(
                            s,
                            "  {kernel}: {} registers, {} B spill stores, {} B spill loads, {} B smem; {widths}",
                            i.registers,
                            i.spill_store_bytes,
                            i.spill_load_bytes,
                            i.smem_bytes
                        ),
                        None => writeln!(
                            s,
                            "  {kernel}: no ptxas report (NVRTC's log has no line for it); {widths}"
                        ),
                    }
                    .ok();
                }
            }
            Err(why) => {
                writeln!(s, "ptxas: not run ({why})").ok();
            }
        }
        s
    }
}

/// One tier of [`run_graph`]: its launches, its check against the f64 interpretation, and
/// (where it passed) its time.
#[derive(Debug)]
pub struct RunRow {
    pub tier: &'static str,
    pub launches: usize,
    pub check: crate::check::Check,
    pub stats: Option<crate::tools::bench::harness::Stats>,
    pub gbps: Option<f64>,
}

/// A graph run on the GPU: each tier validated, then timed.
#[derive(Debug)]
pub struct RunReport {
    pub rows: usize,
    pub cols: usize,
    pub dtype: DType,
    pub seed: u64,
    /// The bytes a call moves at least: each input read once, the output written once.
    pub bytes: usize,
    pub copy_gbps: f64,
    pub tiers: Vec<RunRow>,
}

/// Run node `out` of `g` (a full `rows × cols` value) on a CUDA device, fused (`compiled`)
/// and eagerly (`manual`, one launch a node), on random N(0, 1) inputs from `seed`: each
/// output NaN-poisoned, then checked against the graph's f64 interpretation; those that pass
/// are timed as `kernlab bench` times (do_bench's method, the L2 flushed before each call).
pub fn run_graph(
    g: &Graph,
    out: crate::compiler::NodeId,
    name: &str,
    dtype: DType,
    (rows, cols): (usize, usize),
    seed: u64,
    device: &crate::runtime::device::Device,
) -> Result<RunReport> {
    use crate::compiler::{eager, kernel, Layout};
    use crate::runtime::tensor::{Init, Tensor};
    use crate::tools::bench::harness::{CudaTimer, TimingOpts};
    use std::collections::HashMap;
    let dev = device.cuda().cloned().ok_or_else(|| {
        Error::Invalid("--run needs a CUDA GPU (none here; the report above needs none)".into())
    })?;
    if crate::compiler::gemm::has_matmul(g, out) {
        return Err(Error::Invalid(
            "--run takes element-wise and row graphs; a graph with a matmul runs as the GEMM \
             ops' compiled variant: kernlab bench linear --variants compiled,v7_wgmma_tma_store \
             --dtype bf16"
                .into(),
        ));
    }
    if g.layout(out) != Layout::Full {
        return Err(Error::Invalid(
            "--run writes a full rows × cols output: this expression is one value a row or \
             less (combine it with a full input, e.g. `x - logsumexp(x)`)"
                .into(),
        ));
    }
    if rows == 0 || cols == 0 {
        return Err(Error::Invalid(format!(
            "shape {rows}x{cols}: nothing to run"
        )));
    }
    let cpu = crate::runtime::device::Device::Cpu;
    let mut host: HashMap<String, Vec<f64>> = HashMap::new();
    let mut tensors: Vec<(String, Tensor)> = Vec::new();
    let mut bytes = rows * cols * dtype.size();
    for (i, (n, l)) in g.inputs().into_iter().enumerate() {
        let shape = match l {
            Layout::Full => vec![rows, cols],
            Layout::Row => vec![rows],
            Layout::Col => vec![cols],
            Layout::Scalar => vec![1],
        };
        let init = Init::Normal {
            mean: 0.0,
            std: 1.0,
        };
        let t = Tensor::random(&shape, dtype, init, seed.wrapping_add(i as u64), None, &cpu)?;
        bytes += t.numel() * dtype.size();
        host.insert(n.clone(), t.to_f64_vec()?);
        tensors.push((n, t.to_device(device)?));
    }
    let reference = g.eval(out, &host, rows, cols, dtype)?;
    let compiled = kernel::build(g, out, dtype, name)?;
    let manual = eager::plan(g, out, dtype, &format!("{name}_eager"))?;
    let named: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let opts = TimingOpts::default();
    let copy_gbps = crate::tools::bench::ceiling::copy_ceiling(device, &opts)?.gbps;
    let mut timer = CudaTimer::new(&dev)?;
    let mut tiers = Vec::new();
    type Call<'a> = &'a dyn Fn(&mut Tensor) -> Result<()>;
    let runs: [(&'static str, usize, Call); 2] = [
        ("manual", manual.launches(), &|y| manual.run(&named, y)),
        ("compiled", 1, &|y| compiled.launch(&named, y).map(|_| ())),
    ];
    for (tier, launches, f) in runs {
        let mut y = Tensor::empty(&[rows, cols], dtype, device)?;
        y.poison_nan()?;
        f(&mut y)?;
        dev.sync()?;
        let check = crate::check::compare::compare(&y.to_f64_vec()?, &reference, cols, dtype);
        let stats = if check.passed {
            Some(timer.time(&opts, &mut || f(&mut y))?)
        } else {
            None
        };
        let gbps = stats.as_ref().map(|s| bytes as f64 / (s.median_ms * 1e6));
        tiers.push(RunRow {
            tier,
            launches,
            check,
            stats,
            gbps,
        });
    }
    Ok(RunReport {
        rows,
        cols,
        dtype,
        seed,
        bytes,
        copy_gbps,
        tiers,
    })
}

impl RunReport {
    pub fn render(&self) -> String {
        let mut s = String::new();
        writeln!(
            s,
            "run: {} × {} {} (seed {}), {:.1} MB moved at least; copy ceiling {:.0} GB/s\n\
             each tier's output checked against the graph's f64 interpretation, then timed \
             (L2 flushed before each call)",
            self.rows,
            self.cols,
            self.dtype,
            self.seed,
            self.bytes as f64 / 1e6,
            self.copy_gbps
        )
        .ok();
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header([
            "tier",
            "launches",
            "ms (median)",
            "GB/s",
            "% copy",
            "max rel err",
            "status",
        ]);
        for r in &self.tiers {
            let ms = r
                .stats
                .as_ref()
                .map_or("—".into(), |s| format!("{:.4}", s.median_ms));
            let gbps = r.gbps.map_or("—".into(), |g| format!("{g:.0}"));
            let pct = r.gbps.map_or("—".into(), |g| {
                format!("{:.1}", 100.0 * g / self.copy_gbps)
            });
            let status = if r.check.passed {
                "ok".to_string()
            } else {
                format!("FAILED: {}", r.check.describe())
            };
            t.add_row([
                r.tier.to_string(),
                r.launches.to_string(),
                ms,
                gbps,
                pct,
                format!("{:.1e}", r.check.max_rel_err),
                status,
            ]);
        }
        writeln!(s, "{t}").ok();
        s
    }

    /// Whether every tier passed its check.
    pub fn passed(&self) -> bool {
        self.tiers.iter().all(|r| r.check.passed)
    }
}
