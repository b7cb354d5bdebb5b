//! A matmul and its element-wise tail as one GEMM: the tail (`act(x·wᵀ + b)`, a residual add,
//! a scale, a gate) becomes the epilogue functor of kernlab's Hopper GEMM template
//! (`kernels/matmul_sm90.cuh`, the body of matmul v6 and v7), applied to the f32 accumulator
//! in registers before the one store of the output, as the hand kernels' bias + GeLU is.
//!
//! The generated source defines the functor (`struct Epi`: the tail's inputs as members, one
//! f32 temporary a node) and one entry point a requested tile ([`Tile`]), each a thin
//! instantiation of the template's body. Launching it (tensor maps, the tile order, the
//! fallback from the TMA store) is the matmul op's: `ops::matmul::sm90::run_generated`.

use super::codegen::{c_type, expr, listing, load};
use super::graph::{Graph, Layout, Node, NodeId};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use std::fmt::Write as _;

/// One instantiation of the GEMM template: v7 (`tma_store`: the output through shared memory
/// and a TMA store) or v6 (stores from registers, any N), with a 128 × `bn` × 64 tile and
/// `stages` pipeline stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    pub tma_store: bool,
    pub bn: u32,
    pub stages: u32,
}

impl Tile {
    /// Its symbol in a source whose kernels are named from `stem`.
    pub fn symbol(&self, stem: &str) -> String {
        let v = if self.tma_store { "v7" } else { "v6" };
        format!("{stem}_{v}_128x{}x64_s{}", self.bn, self.stages)
    }
}

/// A GEMM with a generated epilogue, ready to hand to the matmul op's launcher.
#[derive(Debug)]
pub struct GemmKernel {
    /// The source as the runtime's module cache takes it (the functor and the entry points;
    /// the template comes in by `#include "matmul_sm90.cuh"`).
    pub source: &'static KernelSource,
    /// The entry points, one a tile, in the order the tiles were asked for.
    pub symbols: Vec<String>,
    pub tiles: Vec<Tile>,
    /// The matmul's operands by input name: a `[rows, K]`, w `[cols, K]`.
    pub a: String,
    pub w: String,
    /// The epilogue's inputs in parameter order (after the output): a pointer each, and a full
    /// input's row stride after it.
    pub inputs: Vec<(String, Layout)>,
    /// The graph's inputs in the order it declared them (the op's inputs, position by position).
    pub declared: Vec<String>,
    /// The operations of the tail (the matmul not counted), as the fused epilogue computes them.
    pub epilogue_ops: usize,
    /// The graph's operations (the matmul counted): the launches eager code makes for it.
    pub operations: usize,
    pub dtype: DType,
}

/// Whether `g`'s node `out` depends on a matmul (then [`build`] compiles it, not
/// [`super::kernel::build`]).
pub fn has_matmul(g: &Graph, out: NodeId) -> bool {
    out < g.len() && !g.matmuls(out).is_empty()
}

/// Compile node `out` of `g`, one matmul and element-wise operations over it and the other
/// inputs, into a GEMM with a generated epilogue, stored in `dtype` (bf16 or f16: the template
/// runs wgmma on 16-bit operands), its entry points named from `name`, one for each of
/// `tiles`.
pub fn build(
    g: &Graph,
    out: NodeId,
    dtype: DType,
    name: &str,
    tiles: &[Tile],
) -> Result<GemmKernel> {
    g.check(out)?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || name.is_empty() {
        return Err(Error::Invalid(format!(
            "kernel name '{name}': letters, digits and _ only"
        )));
    }
    if !matches!(dtype, DType::BF16 | DType::F16) {
        return Err(Error::Invalid(format!(
            "{name}: the GEMM template multiplies bf16 or f16 on the tensor cores (wgmma); \
             {dtype} is not one"
        )));
    }
    if tiles.is_empty() {
        return Err(Error::Invalid(format!("{name}: no tile to instantiate")));
    }
    let operations = super::codegen::operations(g, out);
    let (m, out) = super::rewrite::for_fusion(g, out)?;
    let mm = m.matmuls(out);
    let (a, w) = match mm.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::Invalid(format!(
                "{name}: the graph has no matmul; element-wise and row graphs compile with \
                 compiler::kernel::build"
            )))
        }
        more => {
            return Err(Error::Invalid(format!(
                "{name}: the graph has {} matmuls; one GEMM takes one, and its element-wise \
                 tail as the epilogue",
                more.len()
            )))
        }
    };
    let nodes = m.reaching(out);
    if let Some(&r) = nodes
        .iter()
        .find(|&&i| matches!(m.node(i), Node::Reduce(..)))
    {
        return Err(Error::Invalid(format!(
            "{name}: %{r} ({}) reduces a row; a GEMM's epilogue sees a tile of each row, so a \
             reduction after a matmul is a fusion boundary: compile the reduction as its own \
             graph over the GEMM's output",
            m.op_name(r)
        )));
    }
    let input_name = |i: NodeId| match m.node(i) {
        Node::Input { name, .. } => name,
        _ => unreachable!("checked: matmul operands are inputs"),
    };
    let (a_name, w_name) = (input_name(a), input_name(w));
    let inputs: Vec<(String, Layout)> = nodes
        .iter()
        .filter(|&&i| i != a && i != w)
        .filter_map(|&i| match m.node(i) {
            Node::Input { name, layout } => Some((name, layout)),
            _ => None,
        })
        .collect();
    let reads_rows = inputs
        .iter()
        .any(|(_, l)| matches!(l, Layout::Full | Layout::Row));

    let t = c_type(dtype);
    let mut s = String::new();
    writeln!(
        s,
        "// Generated by kernlab's compiler: node %{out} of this graph as one GEMM, stored as \
         {dtype}: %{} = {a_name} · {w_name}ᵀ on the tensor cores, the rest its epilogue.",
        nodes
            .iter()
            .find(|&&i| matches!(m.node(i), Node::MatMul(..)))
            .copied()
            .unwrap_or(out)
    )
    .ok();
    s.push_str(&listing(&m, &nodes));
    writeln!(s, "#include \"matmul_sm90.cuh\"").ok();
    writeln!(s, "typedef {t} T;").ok();
    writeln!(s).ok();
    writeln!(
        s,
        "// The epilogue: c[r, c] from the f32 accumulator `acc` (the matmul's value there)."
    )
    .ok();
    writeln!(s, "struct Epi {{").ok();
    writeln!(s, "    static constexpr bool READS_ROWS = {reads_rows};").ok();
    for (n, l) in &inputs {
        writeln!(s, "    const T* __restrict__ in_{n};").ok();
        if *l == Layout::Full {
            writeln!(s, "    i64 ld_{n};").ok();
        }
    }
    writeln!(
        s,
        "    __device__ __forceinline__ float operator()(float acc, int r, int c) const {{"
    )
    .ok();
    writeln!(s, "        (void)r; (void)c;").ok();
    let mut epilogue_ops = 0;
    for &i in &nodes {
        if i == a || i == w {
            continue;
        }
        let e = match m.node(i) {
            Node::Input { name, layout } => load(&name, layout),
            Node::MatMul(..) => "acc".to_string(),
            Node::Const(_) => expr(&m, i, &|x| format!("v{x}"))?,
            _ => {
                epilogue_ops += 1;
                expr(&m, i, &|x| format!("v{x}"))?
            }
        };
        writeln!(s, "        const float v{i} = {e};").ok();
    }
    writeln!(s, "        return v{out};").ok();
    writeln!(s, "    }}").ok();
    writeln!(s, "}};").ok();

    // The kernels' epilogue parameters, and the functor built from them.
    let mut params = String::new();
    let mut fields = Vec::new();
    for (n, l) in &inputs {
        params.push_str(&format!("const T* __restrict__ in_{n}, "));
        fields.push(format!("in_{n}"));
        if *l == Layout::Full {
            params.push_str(&format!("i64 ld_{n}, "));
            fields.push(format!("ld_{n}"));
        }
    }
    let epi = format!("Epi{{{}}}", fields.join(", "));
    let mut symbols = Vec::new();
    for tile in tiles {
        let sym = tile.symbol(name);
        writeln!(s).ok();
        let (c_param, body) = if tile.tma_store {
            ("const __grid_constant__ TmaDesc tc", "v7_body")
        } else {
            ("T* __restrict__ c", "v6_body")
        };
        let c_arg = if tile.tma_store { "&tc" } else { "c" };
        writeln!(
            s,
            "extern \"C\" __global__ void __launch_bounds__(384, 1) {sym}(\
             const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tw, {c_param}, \
             {params}int M, int N, int K, int group_m) {{"
        )
        .ok();
        writeln!(
            s,
            "    {body}<T, {}, {}>(&ta, &tw, {c_arg}, {epi}, M, N, K, group_m);",
            tile.bn, tile.stages
        )
        .ok();
        writeln!(s, "}}").ok();
        symbols.push(sym);
    }
    let source = super::kernel::intern(name, &s);
    Ok(GemmKernel {
        source,
        symbols,
        tiles: tiles.to_vec(),
        a: a_name,
        w: w_name,
        inputs,
        declared: g.inputs().into_iter().map(|(n, _)| n).collect(),
        epilogue_ops,
        operations,
        dtype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TILES: [Tile; 2] = [
        Tile {
            tma_store: true,
            bn: 256,
            stages: 3,
        },
        Tile {
            tma_store: false,
            bn: 128,
            stages: 6,
        },
    ];

    #[test]
    fn linear_bias_gelu_is_one_gemm_with_the_tail_as_its_epilogue() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Full).unwrap();
        let b = g.input("b", Layout::Col).unwrap();
        let z = x.matmul(w) + b;
        let y = 0.5 * z * (1.0 + (0.797_884_560_802_865_4 * (z + 0.044715 * z.powi(3))).tanh());
        let k = build(&g, y.id, DType::BF16, "kl_test_linear", &TILES).unwrap();
        assert_eq!((k.a.as_str(), k.w.as_str()), ("x", "w"));
        assert_eq!(k.inputs, vec![("b".to_string(), Layout::Col)]);
        assert_eq!(k.declared, vec!["x", "w", "b"]);
        assert_eq!(
            k.symbols,
            vec![
                "kl_test_linear_v7_128x256x64_s3",
                "kl_test_linear_v6_128x128x64_s6"
            ]
        );
        let src = k.source.src;
        assert!(src.contains("#include \"matmul_sm90.cuh\""), "{src}");
        assert!(src.contains("READS_ROWS = false"), "{src}");
        // 1 + tanh(u) becomes 2·sigmoid(2u) (no cancellation for x ≪ 0), as in the hand
        // epilogue; the bias is read at the column.
        assert!(src.contains("fast_exp("), "{src}");
        assert!(
            !src.contains("tanhf(") && !src.contains("tanh.approx"),
            "{src}"
        );
        assert!(src.contains("to_f32(in_b[c])"), "{src}");
        assert!(
            src.contains("v7_body<T, 256, 3>(&ta, &tw, &tc, Epi{in_b}"),
            "{src}"
        );
        assert!(
            src.contains("v6_body<T, 128, 6>(&ta, &tw, c, Epi{in_b}"),
            "{src}"
        );
    }

    #[test]
    fn a_residual_reads_rows_and_carries_its_stride() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Full).unwrap();
        let res = g.input("res", Layout::Full).unwrap();
        let s = g.input("s", Layout::Row).unwrap();
        let y = x.matmul(w) * s + res;
        let k = build(&g, y.id, DType::F16, "kl_res", &TILES[..1]).unwrap();
        let src = k.source.src;
        assert!(src.contains("READS_ROWS = true"), "{src}");
        assert!(src.contains("i64 ld_res"), "{src}");
        assert!(src.contains("in_res[r * ld_res + c]"), "{src}");
        assert!(src.contains("in_s[r]"), "{src}");
    }

    #[test]
    fn what_one_gemm_cannot_hold_is_refused_with_the_reason() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Full).unwrap();
        let v = g.input("v", Layout::Full).unwrap();
        let p = x.matmul(w);
        let msg = |id, dt| build(&g, id, dt, "k", &TILES).unwrap_err().to_string();
        assert!(msg(p.id, DType::F32).contains("bf16 or f16"));
        assert!(msg((p - p.row_max()).id, DType::BF16).contains("fusion boundary"));
        assert!(msg((p + x.matmul(v)).id, DType::BF16).contains("2 matmuls"));
        let e = msg((p + x).id, DType::BF16);
        assert!(e.contains("cannot also be read element-wise"), "{e}");
        assert!(msg((x + 1.0).id, DType::BF16).contains("no matmul"));
        let h = x * 2.0;
        assert!(msg(h.matmul(w).id, DType::BF16).contains("must be graph inputs"));
    }
}
