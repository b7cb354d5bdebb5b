//! Ops kernlab does not ship, written as tensor expressions with ordinary operators, fused by
//! kernlab's compiler, checked against the f64 interpretation of the same graph and timed
//! against their eager form (one launch a node):
//!
//! - SwiGLU's element-wise part, `silu(a) · b`;
//! - the sigmoid GeLU, `x · sigmoid(1.702 x)`;
//! - a row-wise log-softmax, `x − logsumexp(x)`.
//!
//!     cargo run --release --example custom_op [-- ROWSxCOLS [bf16|f32|f16]]
//!
//! Without a GPU it prints what the compiler made of each (the graph, the fusion, ptxas's
//! report where NVRTC loads); with one it also runs them.

use kernlab::compiler::{Expr, Graph, Layout};
use kernlab::runtime::device::{Device, DeviceSpec};
use kernlab::tools::compile::{compile_graph, run_graph};
use kernlab::DType;

fn sigmoid(x: Expr<'_>) -> Expr<'_> {
    1.0 / (1.0 + (-x).exp())
}

fn main() -> kernlab::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shape = kernlab::runtime::tensor::parse_shape(args.first().map_or("4096x4096", |s| s))?;
    let [rows, cols] = shape[..] else {
        return Err(kernlab::Error::Invalid(
            "give the shape as ROWSxCOLS".into(),
        ));
    };
    let dtype: DType = args
        .get(1)
        .map_or("bf16", |s| s)
        .parse()
        .map_err(kernlab::Error::Invalid)?;
    let gpu = Device::open(DeviceSpec::Cuda(0)).ok().map(|(d, _)| d);

    type Build = for<'g> fn(&'g Graph) -> kernlab::Result<Expr<'g>>;
    let ops: [(&str, &str, Build); 3] = [
        ("swiglu", "silu(a) · b", |g| {
            let (a, b) = (g.input("a", Layout::Full)?, g.input("b", Layout::Full)?);
            Ok(a * sigmoid(a) * b)
        }),
        ("sigmoid_gelu", "x · sigmoid(1.702 x)", |g| {
            let x = g.input("x", Layout::Full)?;
            Ok(x * sigmoid(1.702 * x))
        }),
        ("log_softmax", "x − logsumexp(x)", |g| {
            let x = g.input("x", Layout::Full)?;
            let m = x.row_max();
            Ok(x - (m + (x - m).exp().sum().log()))
        }),
    ];
    for (name, what, build) in ops {
        let g = Graph::new();
        let y = build(&g)?;
        let kernel = format!("kl_{name}_{dtype}");
        println!("== {name}: {what}");
        print!(
            "{}",
            compile_graph(&g, y.id, &kernel, dtype, "sm_90a")?.render(false)
        );
        match &gpu {
            Some(dev) => {
                let seed = kernlab::check::fresh_seed();
                let r = run_graph(&g, y.id, &kernel, dtype, (rows, cols), seed, dev)?;
                print!("{}", r.render());
                if !r.passed() {
                    return Err(kernlab::Error::Invalid(format!("{name} failed its check")));
                }
            }
            None => println!("(no CUDA GPU: not run)"),
        }
        println!();
    }
    Ok(())
}
