//! kernlab's fusion compiler (its torch.compile): tensor expressions written once as a graph
//! ([`graph`]), interpreted exactly in f64 as the oracle, and generated as CUDA ([`codegen`]:
//! one element-wise kernel, or one row kernel where the graph reduces rows), and built and
//! launched ([`kernel`]), or run one launch a node ([`eager`], the manual tier). A matmul and
//! its element-wise tail become one GEMM with a generated epilogue ([`gemm`]). The lecture's compositions
//! (`manual_gelu`, `manual_softmax`, rmsnorm) are written in it by their op modules.
//!
//! Between the runtime and the ops: it knows devices and dtypes, and no op.

pub mod codegen;
pub mod eager;
pub mod gemm;
pub mod graph;
pub mod kernel;
pub mod parse;
pub mod rewrite;

pub use graph::{Expr, Graph, Layout, Node, NodeId};
pub use kernel::{Fusion, Kernel};
