//! CUDA C from a graph. A graph with row reductions becomes one row kernel ([`row_kernel`]: a
//! block a row, a pass a reduction). An element-wise graph becomes one kernel ([`elementwise`]) in two
//! forms, a packed one (16-byte loads and stores, `Pack<T>::N` elements a thread) for rows whose
//! width and starts are multiples of the pack, and a scalar one (an element a thread) for any
//! other. Arithmetic is f32 whatever the storage dtype; the output is rounded once, at the
//! store. Inputs are read in their layout: a full tensor at the element, a column vector at its
//! column, a per-row value at its row.

use super::graph::{Binary, Graph, Layout, Node, NodeId, Reduce, Unary};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use std::fmt::Write as _;

/// A generated kernel: its CUDA source and what a launch passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The symbol of the packed form; the scalar form is `{name}_scalar`.
    pub name: String,
    /// The whole translation unit (it includes `common.cuh`).
    pub source: String,
    /// The inputs in parameter order, by name and layout; then `y`, `rows`, `cols`.
    pub inputs: Vec<(String, Layout)>,
}

impl Generated {
    /// The symbol of the scalar form.
    pub fn scalar_name(&self) -> String {
        format!("{}_scalar", self.name)
    }
}

/// The C type of a storage dtype, as `common.cuh` names it.
fn c_type(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "float",
        DType::BF16 => "bf16",
        DType::F16 => "f16",
    }
}

/// A float literal that round-trips (hex-free: `{:e}` of the f32 value, with inf and NaN by
/// name).
fn literal(v: f64) -> String {
    let f = v as f32;
    if f.is_nan() {
        "__int_as_float(0x7fc00000)".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "__int_as_float(0x7f800000)".into()
        } else {
            "__int_as_float(0xff800000)".into()
        }
    } else {
        format!("{f:e}f")
    }
}

/// The f32 expression of one node from its operands' names.
fn expr(g: &Graph, id: NodeId, name: &dyn Fn(NodeId) -> String) -> Result<String> {
    Ok(match g.node(id) {
        Node::Input { .. } => unreachable!("inputs are loaded, not computed"),
        Node::Const(v) => literal(v),
        Node::Unary(op, a) => {
            let a = name(a);
            match op {
                Unary::Neg => format!("-{a}"),
                Unary::Exp => format!("expf({a})"),
                Unary::Log => format!("logf({a})"),
                Unary::Tanh => format!("tanhf({a})"),
                Unary::Erf => format!("erff({a})"),
                Unary::Sqrt => format!("sqrtf({a})"),
                Unary::Rsqrt => format!("rsqrtf({a})"),
            }
        }
        Node::Powi(a, n) => {
            let a = name(a);
            match n {
                0 => "1.0f".into(),
                n if n > 0 && n <= 8 => vec![a; n as usize].join(" * "),
                n => format!("powf({a}, {}.0f)", n),
            }
        }
        Node::Binary(op, a, b) => {
            let (a, b) = (name(a), name(b));
            let cmp = |o: &str| format!("({a} {o} {b} ? 1.0f : 0.0f)");
            match op {
                Binary::Add => format!("{a} + {b}"),
                Binary::Sub => format!("{a} - {b}"),
                Binary::Mul => format!("{a} * {b}"),
                Binary::Div => format!("{a} / {b}"),
                // NaN propagates, as torch.maximum / torch.minimum (fmaxf would drop it).
                Binary::Max => {
                    format!("(({a} != {a}) || ({b} != {b}) ? {a} + {b} : fmaxf({a}, {b}))")
                }
                Binary::Min => {
                    format!("(({a} != {a}) || ({b} != {b}) ? {a} + {b} : fminf({a}, {b}))")
                }
                Binary::Lt => cmp("<"),
                Binary::Le => cmp("<="),
                Binary::Gt => cmp(">"),
                Binary::Ge => cmp(">="),
                Binary::Eq => cmp("=="),
            }
        }
        Node::Select(c, a, b) => format!("({} != 0.0f ? {} : {})", name(c), name(a), name(b)),
        Node::Cast(dt, a) => match dt {
            DType::F32 => name(a),
            dt => format!("to_f32(from_f32<{}>({}))", c_type(dt), name(a)),
        },
        Node::Reduce(op, _) => {
            return Err(Error::Invalid(format!(
                "the element-wise code generator takes no row reduction (row_{}); \
                 reductions fuse into row kernels",
                format!("{op:?}").to_lowercase()
            )))
        }
    })
}

/// The nodes `out` depends on, in order (inputs and constants included).
fn needed(g: &Graph, out: NodeId) -> Vec<NodeId> {
    needed_upto(g, out, false)
}

/// The nodes `out` depends on; with `cut`, every row reduction is a leaf
/// (its value is already known when `out` is computed).
fn needed_upto(g: &Graph, out: NodeId, cut: bool) -> Vec<NodeId> {
    let mut keep = vec![false; out + 1];
    keep[out] = true;
    for id in (0..=out).rev() {
        if !keep[id] {
            continue;
        }
        let ops: Vec<NodeId> = match g.node(id) {
            Node::Input { .. } | Node::Const(_) => vec![],
            Node::Reduce(..) if cut => vec![],
            Node::Unary(_, a) | Node::Powi(a, _) | Node::Cast(_, a) | Node::Reduce(_, a) => vec![a],
            Node::Binary(_, a, b) => vec![a, b],
            Node::Select(c, a, b) => vec![c, a, b],
        };
        for o in ops {
            keep[o] = true;
        }
    }
    (0..=out).filter(|&i| keep[i]).collect()
}

/// One element-wise kernel (packed and scalar forms) computing node `out` of `g`, stored in
/// `dtype`. The output spans the full `rows × cols` frame; `name` is the symbol's stem.
pub fn elementwise(g: &Graph, out: NodeId, dtype: DType, name: &str) -> Result<Generated> {
    if out >= g.len() {
        return Err(Error::Invalid(format!("node %{out} is not in the graph")));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || name.is_empty() {
        return Err(Error::Invalid(format!(
            "kernel name '{name}': letters, digits and _ only"
        )));
    }
    let nodes = needed(g, out);
    if let Some(&r) = nodes
        .iter()
        .find(|&&i| matches!(g.node(i), Node::Reduce(..)))
    {
        let Node::Reduce(op, _) = g.node(r) else {
            unreachable!()
        };
        let op = match op {
            Reduce::Sum => "sum",
            Reduce::Max => "max",
            Reduce::Mean => "mean",
        };
        return Err(Error::Invalid(format!(
            "%{r} is a row reduction (row_{op}): the element-wise code generator takes none; \
             reductions fuse into row kernels"
        )));
    }
    let inputs: Vec<(NodeId, String, Layout)> = nodes
        .iter()
        .filter_map(|&i| match g.node(i) {
            Node::Input { name, layout } => Some((i, name, layout)),
            _ => None,
        })
        .collect();
    let t = c_type(dtype);
    let mut s = String::new();
    writeln!(
        s,
        "// Generated by kernlab's compiler: node %{out} of this graph, stored as {dtype}."
    )
    .ok();
    for line in g.to_string().lines().take(out + 1) {
        writeln!(s, "//   {line}").ok();
    }
    writeln!(s, "#include \"common.cuh\"").ok();
    writeln!(s, "typedef {t} T;").ok();
    let params: String = inputs
        .iter()
        .map(|(_, n, _)| format!("const T* __restrict__ in_{n}, "))
        .collect();
    // The body for element j of the thread's elements: every needed node as an f32 temporary.
    let body = |s: &mut String, load: &dyn Fn(NodeId, &str, Layout) -> String| -> Result<()> {
        for &i in &nodes {
            let e = match g.node(i) {
                Node::Input { name, layout } => load(i, &name, layout),
                _ => expr(g, i, &|a| format!("v{a}"))?,
            };
            writeln!(s, "        const float v{i} = {e};").ok();
        }
        Ok(())
    };
    // Packed form: each thread a pack of N elements of the flat index; cols % N == 0, so a
    // pack stays in one row.
    writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__(256) {name}({params}T* __restrict__ y, i64 rows, int cols) {{"
    )
    .ok();
    writeln!(s, "    constexpr int N = Pack<T>::N;").ok();
    writeln!(
        s,
        "    const i64 i0 = ((i64)blockIdx.x * blockDim.x + threadIdx.x) * N;"
    )
    .ok();
    writeln!(s, "    if (i0 >= rows * (i64)cols) return;").ok();
    writeln!(s, "    const i64 r = i0 / cols;").ok();
    writeln!(s, "    const int c0 = (int)(i0 - r * cols);").ok();
    writeln!(s, "    (void)r; (void)c0;").ok();
    for (_, n, l) in &inputs {
        match l {
            Layout::Full => writeln!(
                s,
                "    float a_{n}[N]; unpack(ld16(in_{n} + i0), a_{n}, in_{n});"
            ),
            Layout::Col => writeln!(
                s,
                "    float a_{n}[N]; unpack(ld16(in_{n} + c0), a_{n}, in_{n});"
            ),
            Layout::Row => writeln!(s, "    const float a_{n} = to_f32(in_{n}[r]);"),
            Layout::Scalar => writeln!(s, "    const float a_{n} = to_f32(in_{n}[0]);"),
        }
        .ok();
    }
    writeln!(s, "    float out[N];").ok();
    writeln!(s, "    #pragma unroll").ok();
    writeln!(s, "    for (int j = 0; j < N; ++j) {{").ok();
    body(&mut s, &|_, n, l| match l {
        Layout::Full | Layout::Col => format!("a_{n}[j]"),
        Layout::Row | Layout::Scalar => format!("a_{n}"),
    })?;
    writeln!(s, "        out[j] = v{out};").ok();
    writeln!(s, "    }}").ok();
    writeln!(s, "    st16(y + i0, pack(out, y));").ok();
    writeln!(s, "}}").ok();
    // Scalar form: an element a thread, any width and alignment.
    writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__(256) {name}_scalar({params}T* __restrict__ y, i64 rows, int cols) {{"
    )
    .ok();
    writeln!(
        s,
        "    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;"
    )
    .ok();
    writeln!(s, "    if (i >= rows * (i64)cols) return;").ok();
    writeln!(s, "    const i64 r = i / cols;").ok();
    writeln!(s, "    const int c = (int)(i - r * cols);").ok();
    writeln!(s, "    (void)r; (void)c;").ok();
    writeln!(s, "    {{").ok();
    body(&mut s, &|_, n, l| match l {
        Layout::Full => format!("to_f32(in_{n}[i])"),
        Layout::Col => format!("to_f32(in_{n}[c])"),
        Layout::Row => format!("to_f32(in_{n}[r])"),
        Layout::Scalar => format!("to_f32(in_{n}[0])"),
    })?;
    writeln!(s, "        y[i] = from_f32<T>(v{out});").ok();
    writeln!(s, "    }}").ok();
    writeln!(s, "}}").ok();
    Ok(Generated {
        name: name.to_string(),
        source: s,
        inputs: inputs.into_iter().map(|(_, n, l)| (n, l)).collect(),
    })
}

/// The C initial value and combining expression of a reduction's accumulator `acc` with `v`.
fn reduce_c(op: Reduce) -> (&'static str, &'static str, &'static str) {
    match op {
        Reduce::Sum | Reduce::Mean => ("0.0f", "acc + v", "kl_gen_block_sum"),
        // NaN propagates (max.NaN), as torch.amax.
        Reduce::Max => (
            "__int_as_float(0xff800000)",
            "fmax_nan(acc, v)",
            "kl_gen_block_max",
        ),
    }
}

/// Block-wide reductions for generated row kernels, NaN-propagating for max; every thread
/// gets the result. `scratch` holds 32 floats.
const ROW_HELPERS: &str = r#"#ifndef KL_GEN_ROW_HELPERS
#define KL_GEN_ROW_HELPERS
__device__ __forceinline__ float kl_gen_block_sum(float v, float* scratch) {
    return block_sum(v, scratch);
}
__device__ __forceinline__ float kl_gen_block_max(float v, float* scratch) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmax_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : __int_as_float(0xff800000);
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmax_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
#endif
"#;

/// One row kernel computing node `out` of `g` (a full `rows × cols` value), row reductions
/// included, stored in `dtype`: a block a row, the looped form. Each reduction, in the order
/// the graph needs them, is one pass over the row (its producers recomputed from the inputs,
/// earlier reductions known), then a block-wide reduction; a last pass computes and writes the
/// output. A row is read once a reduction and once more for the output (softmax: three reads
/// and a write). `name` is the symbol.
pub fn row_kernel(g: &Graph, out: NodeId, dtype: DType, name: &str) -> Result<Generated> {
    if out >= g.len() {
        return Err(Error::Invalid(format!("node %{out} is not in the graph")));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || name.is_empty() {
        return Err(Error::Invalid(format!(
            "kernel name '{name}': letters, digits and _ only"
        )));
    }
    if g.layout(out) != Layout::Full {
        return Err(Error::Invalid(format!(
            "%{out} is {:?}: a row kernel writes a full rows × cols output",
            g.layout(out)
        )));
    }
    let all = needed(g, out);
    let inputs: Vec<(String, Layout)> = all
        .iter()
        .filter_map(|&i| match g.node(i) {
            Node::Input { name, layout } => Some((name, layout)),
            _ => None,
        })
        .collect();
    let t = c_type(dtype);
    let mut s = String::new();
    writeln!(s, "// Generated by kernlab's compiler: node %{out} of this graph, stored as {dtype}, a block a row.").ok();
    for line in g.to_string().lines().take(out + 1) {
        writeln!(s, "//   {line}").ok();
    }
    writeln!(s, "#include \"common.cuh\"").ok();
    writeln!(s, "typedef {t} T;").ok();
    s.push_str(ROW_HELPERS);
    let params: String = inputs
        .iter()
        .map(|(n, _)| format!("const T* __restrict__ in_{n}, "))
        .collect();
    writeln!(
        s,
        "extern \"C\" __global__ void __launch_bounds__(1024) {name}({params}T* __restrict__ y, i64 rows, int cols) {{"
    )
    .ok();
    writeln!(s, "    __shared__ float scratch[32];").ok();
    writeln!(s, "    const i64 r = blockIdx.x;").ok();
    writeln!(s, "    if (r >= rows) return;").ok();
    // The statements computing `target` at column `c` (reductions before it are leaves).
    let emit = |s: &mut String, target: NodeId, indent: &str| -> Result<()> {
        for i in needed_upto(g, target, true) {
            let e = match g.node(i) {
                Node::Input { name, layout } => match layout {
                    Layout::Full => format!("to_f32(in_{name}[r * cols + c])"),
                    Layout::Col => format!("to_f32(in_{name}[c])"),
                    Layout::Row => format!("to_f32(in_{name}[r])"),
                    Layout::Scalar => format!("to_f32(in_{name}[0])"),
                },
                Node::Reduce(..) => format!("red{i}"),
                _ => expr(g, i, &|a| format!("v{a}"))?,
            };
            writeln!(s, "{indent}const float v{i} = {e};").ok();
        }
        Ok(())
    };
    for &rid in all
        .iter()
        .filter(|&&i| matches!(g.node(i), Node::Reduce(..)))
    {
        let Node::Reduce(op, a) = g.node(rid) else {
            unreachable!()
        };
        let (init, combine, block) = reduce_c(op);
        match g.layout(a) {
            // A value a row (or one value): its reduction over one column is itself.
            Layout::Row | Layout::Scalar => {
                writeln!(s, "    float red{rid};").ok();
                writeln!(s, "    {{").ok();
                writeln!(s, "        const int c = 0; (void)c;").ok();
                emit(&mut s, a, "        ")?;
                writeln!(s, "        red{rid} = v{a};").ok();
                writeln!(s, "    }}").ok();
            }
            Layout::Full | Layout::Col => {
                writeln!(s, "    float acc{rid} = {init};").ok();
                writeln!(
                    s,
                    "    for (int c = threadIdx.x; c < cols; c += blockDim.x) {{"
                )
                .ok();
                emit(&mut s, a, "        ")?;
                writeln!(s, "        const float v = v{a}; float acc = acc{rid};").ok();
                writeln!(s, "        acc{rid} = {combine};").ok();
                writeln!(s, "    }}").ok();
                let fin = if op == Reduce::Mean {
                    " / (float)cols"
                } else {
                    ""
                };
                writeln!(
                    s,
                    "    const float red{rid} = {block}(acc{rid}, scratch){fin};"
                )
                .ok();
            }
        }
    }
    writeln!(
        s,
        "    for (int c = threadIdx.x; c < cols; c += blockDim.x) {{"
    )
    .ok();
    emit(&mut s, out, "        ")?;
    writeln!(s, "        y[r * cols + c] = from_f32<T>(v{out});").ok();
    writeln!(s, "    }}").ok();
    writeln!(s, "}}").ok();
    Ok(Generated {
        name: name.to_string(),
        source: s,
        inputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elementwise_graph_becomes_a_packed_and_a_scalar_kernel() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Col).unwrap();
        let y = (x * w + 1.0).exp();
        let k = elementwise(&g, y.id, DType::BF16, "kl_test").unwrap();
        assert_eq!(
            k.inputs,
            vec![
                ("x".to_string(), Layout::Full),
                ("w".to_string(), Layout::Col)
            ]
        );
        assert!(k.source.contains("typedef bf16 T;"), "{}", k.source);
        assert!(k.source.contains("void __launch_bounds__(256) kl_test(const T* __restrict__ in_x, const T* __restrict__ in_w, T* __restrict__ y, i64 rows, int cols)"));
        assert!(k.source.contains("unpack(ld16(in_w + c0)"), "{}", k.source);
        assert!(k.source.contains("expf(v4)"), "{}", k.source);
        assert!(k.source.contains("kl_test_scalar("));
        assert!(k.source.contains("to_f32(in_w[c])"));
        assert_eq!(k.scalar_name(), "kl_test_scalar");
    }

    #[test]
    fn reductions_and_bad_names_are_refused_with_reasons() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let s = x / x.sum();
        let e = elementwise(&g, s.id, DType::F32, "k")
            .unwrap_err()
            .to_string();
        assert!(e.contains("row reduction (row_sum)"), "{e}");
        let e = elementwise(&g, x.id, DType::F32, "bad name")
            .unwrap_err()
            .to_string();
        assert!(e.contains("letters, digits and _"), "{e}");
        assert!(elementwise(&g, 99, DType::F32, "k").is_err());
    }

    #[test]
    fn a_row_kernel_takes_one_pass_a_reduction_then_writes() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let e = (x - x.row_max()).exp();
        let y = e / e.sum();
        let k = row_kernel(&g, y.id, DType::F32, "kl_softmax").unwrap();
        let src = &k.source;
        // Two reductions, each its own loop and block reduction, then the output's loop.
        assert_eq!(
            src.matches("for (int c = threadIdx.x; c < cols; c += blockDim.x)")
                .count(),
            3,
            "{src}"
        );
        assert!(src.contains("kl_gen_block_max(acc1, scratch)"), "{src}");
        assert!(src.contains("kl_gen_block_sum(acc4, scratch)"), "{src}");
        // The sum's pass and the output's pass recompute e from x and the known max.
        assert_eq!(src.matches("= red1;").count(), 2, "{src}");
        assert!(src.contains("y[r * cols + c] = from_f32<T>(v5);"), "{src}");
        // A per-row output is refused.
        let e = row_kernel(&g, x.sum().id, DType::F32, "k")
            .unwrap_err()
            .to_string();
        assert!(e.contains("full rows × cols output"), "{e}");
    }

    #[test]
    fn literals_round_trip_and_special_values_are_spelled_out() {
        assert_eq!(literal(0.5), "5e-1f");
        assert_eq!(
            (literal(0.044715).trim_end_matches('f'))
                .parse::<f32>()
                .unwrap(),
            0.044715f32
        );
        assert!(literal(f64::INFINITY).contains("0x7f800000"));
        assert!(literal(f64::NEG_INFINITY).contains("0xff800000"));
        assert!(literal(f64::NAN).contains("0x7fc00000"));
    }
}
