//! The tiers kernlab's compiler makes from an op's graph ([`super::OpDef::graph`]): `compiled`,
//! the graph fused into one kernel, and `manual`, the graph run eagerly, one launch a node.
//! Each is built once a process for each parameters and dtype, and runs on the op's inputs
//! (named, in order, as the graph declares them).

use super::op::Op;
use super::params::Params;
use crate::compiler::eager::{self, Eager};
use crate::compiler::kernel::{self, Memo};
use crate::compiler::{Graph, Kernel};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::tensor::Tensor;
use std::sync::Arc;

/// The stem of the op's kernel names: `kl_{tier}_{op}[_{form}]_{dtype}`.
pub fn stem(tier: &str, op: Op, p: &Params, dtype: DType) -> String {
    let form = p.form().map(|f| format!("_{f}")).unwrap_or_default();
    let raw = format!("kl_{tier}_{op}{form}_{dtype}")
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_");
    // One underscore between words (`bias + gelu-tanh` → `bias_gelu_tanh`).
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out
}

/// Build `op`'s graph for `p` and hand it, with its output, to `f`.
fn with_graph<R>(op: Op, p: &Params, f: impl FnOnce(&Graph, usize) -> Result<R>) -> Result<R> {
    let g = Graph::new();
    let out = op
        .graph(&g, p)
        .ok_or_else(|| Error::Invalid(format!("{op} has no graph to compile")))??;
    f(&g, out.id)
}

/// `op`'s fused kernel for parameters `p` in `dtype`.
pub fn kernel(op: Op, p: &Params, dtype: DType) -> Result<Arc<Kernel>> {
    static KERNELS: Memo<Kernel> = Memo::new();
    KERNELS.get_or_make(&format!("{op}|{p:?}|{dtype}"), || {
        with_graph(op, p, |g, out| {
            kernel::build(g, out, dtype, &stem("compiled", op, p, dtype))
        })
    })
}

/// `op`'s eager plan (one launch a node) for parameters `p` in `dtype`.
pub fn eager_plan(op: Op, p: &Params, dtype: DType) -> Result<Arc<Eager>> {
    static PLANS: Memo<Eager> = Memo::new();
    PLANS.get_or_make(&format!("{op}|{p:?}|{dtype}"), || {
        with_graph(op, p, |g, out| {
            eager::plan(g, out, dtype, &stem("eager", op, p, dtype))
        })
    })
}

/// The call's inputs named as the graph declares them.
fn named<'a>(
    op: Op,
    tier: &str,
    declared: &'a [String],
    inputs: &[&'a Tensor],
) -> Result<Vec<(&'a str, &'a Tensor)>> {
    if declared.len() != inputs.len() {
        return Err(Error::Invalid(format!(
            "{op}/{tier} takes {} input(s) ({}), got {}",
            declared.len(),
            declared.join(", "),
            inputs.len()
        )));
    }
    Ok(declared
        .iter()
        .map(|n| n.as_str())
        .zip(inputs.iter().copied())
        .collect())
}

/// The checks of a call made past the registry's (the run functions are public): the first
/// input not empty, and the output of its dtype and shape.
fn check_output(op: Op, inputs: &[&Tensor], y: &Tensor) -> Result<()> {
    let Some(x) = inputs.first() else {
        return Err(Error::Invalid(format!("{op} takes at least one input")));
    };
    if x.numel() == 0 {
        return Err(Error::EmptyTensor {
            op: op.to_string(),
            shape: x.shape().to_vec(),
        });
    }
    if y.dtype() != x.dtype() || y.shape() != x.shape() {
        return Err(Error::ShapeMismatch {
            op: op.to_string(),
            why: format!(
                "the output ({} {:?}) must have the input's dtype and shape ({} {:?})",
                y.dtype(),
                y.shape(),
                x.dtype(),
                x.shape()
            ),
        });
    }
    Ok(())
}

/// Run `op`'s compiled kernel.
pub fn run(op: Op, p: &Params, inputs: &[&Tensor], y: &mut Tensor) -> Result<()> {
    check_output(op, inputs, y)?;
    let k = kernel(op, p, y.dtype())?;
    k.launch(&named(op, "compiled", &k.declared, inputs)?, y)?;
    Ok(())
}

/// Run `op`'s graph eagerly, one launch a node.
pub fn run_eager(op: Op, p: &Params, inputs: &[&Tensor], y: &mut Tensor) -> Result<()> {
    check_output(op, inputs, y)?;
    let e = eager_plan(op, p, y.dtype())?;
    e.run(&named(op, "manual", &e.declared, inputs)?, y)
}

/// The compiled kernel's source and symbols (a variant's `generated`).
pub fn kernels(
    op: Op,
    p: &Params,
    dtype: DType,
) -> Result<Vec<(&'static KernelSource, Vec<String>)>> {
    let k = kernel(op, p, dtype)?;
    Ok(vec![(k.source, k.generated.symbols.clone())])
}

/// The eager plan's sources and symbols, one a launch (a variant's `generated`).
pub fn eager_kernels(
    op: Op,
    p: &Params,
    dtype: DType,
) -> Result<Vec<(&'static KernelSource, Vec<String>)>> {
    let e = eager_plan(op, p, dtype)?;
    let mut out: Vec<(&'static KernelSource, Vec<String>)> = Vec::new();
    for k in e.kernels() {
        if !out.iter().any(|(s, _)| s.file == k.source.file) {
            out.push((k.source, k.generated.symbols.clone()));
        }
    }
    Ok(out)
}
