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
    /// ptxas's report of each generated kernel, or why there is none (no NVRTC here).
    pub ptxas: std::result::Result<Vec<PtxasInfo>, String>,
    /// The cold compile's wall time, ms (NVRTC, no cache).
    pub compile_ms: Option<f64>,
}

/// Build `op`'s graph for `params`, generate its kernel for `dtype`, compile it for `arch`.
pub fn compile(op: Op, params: &Params, dtype: DType, arch: &str) -> Result<CompileReport> {
    crate::tools::inspect::check_arch(arch)?;
    let g = Graph::new();
    let out = op.graph(&g, params).ok_or_else(|| {
        Error::Invalid(format!(
            "{op} is not written as a graph yet (ops with one: {})",
            Op::all()
                .iter()
                .filter(|o| o.graph(&Graph::new(), &o.default_params()).is_some())
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })??;
    let k = crate::compiler::kernel::build(
        &g,
        out.id,
        dtype,
        &format!("kl_compiled_{}_{dtype}", op.name()),
    )?;
    let plan = k.plan();
    let k = k.generated;
    let (ptxas, compile_ms) = match nvrtc::nvrtc_available() {
        Err(e) => (Err(e.to_string()), None),
        Ok(()) => {
            // NVRTC's source type holds 'static text: one generated unit a command.
            let src = KernelSource {
                file: "generated.cu",
                src: Box::leak(k.source.clone().into_boxed_str()),
            };
            let t = std::time::Instant::now();
            let c = nvrtc::compile(&src, arch, &nvrtc::base_options(arch), &k.name)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let infos = k
                .symbols
                .iter()
                .map(|s| {
                    c.ptxas_info(s)
                        .ok_or_else(|| Error::Invalid(format!("ptxas reported nothing for {s}")))
                })
                .collect::<Result<Vec<_>>>()?;
            (Ok(infos), Some(ms))
        }
    };
    Ok(CompileReport {
        graph: g.to_string(),
        plan,
        source: k.source,
        arch: arch.to_string(),
        ptxas,
        compile_ms,
    })
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
                writeln!(s, "ptxas ({}{ms}):", self.arch).ok();
                for i in infos {
                    writeln!(
                        s,
                        "  {}: {} registers, {} B spill stores, {} B spill loads, {} B smem",
                        i.kernel,
                        i.registers,
                        i.spill_store_bytes,
                        i.spill_load_bytes,
                        i.smem_bytes
                    )
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
