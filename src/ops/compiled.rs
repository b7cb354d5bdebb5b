//! The compiled tier: an op's graph ([`super::OpDef::graph`]) fused by kernlab's compiler into
//! one kernel, built once a process for each parameters and dtype, and launched on the op's
//! inputs (named, in order, as the graph declares them).

use super::op::Op;
use super::params::Params;
use crate::compiler::{kernel, Graph, Kernel};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use std::sync::Arc;

/// `op`'s fused kernel for parameters `p` in `dtype`.
pub fn kernel(op: Op, p: &Params, dtype: DType) -> Result<Arc<Kernel>> {
    kernel::cached(&format!("{op}|{p:?}|{dtype}"), || {
        let g = Graph::new();
        let out = op
            .graph(&g, p)
            .ok_or_else(|| Error::Invalid(format!("{op} has no graph to compile")))??;
        let form = p.form().map(|f| format!("_{f}")).unwrap_or_default();
        let name = format!("kl_compiled_{op}{form}_{dtype}")
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_");
        kernel::build(&g, out.id, dtype, &name)
    })
}

/// Run `op`'s compiled kernel: the call's inputs are the graph's, in its declaration order.
pub fn run(op: Op, p: &Params, inputs: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let k = kernel(op, p, y.dtype())?;
    let names = &k.declared;
    if names.len() != inputs.len() {
        return Err(Error::Invalid(format!(
            "{op}/compiled takes {} input(s) ({}), got {}",
            names.len(),
            names.join(", "),
            inputs.len()
        )));
    }
    let named: Vec<(&str, &Tensor)> = names
        .iter()
        .map(|n| n.as_str())
        .zip(inputs.iter().copied())
        .collect();
    k.launch(&named, y)?;
    Ok(())
}
