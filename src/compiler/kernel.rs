//! A generated kernel made runnable: the fusion decision (one element-wise kernel, or one row
//! kernel where the graph reduces rows), its source handed to the runtime's NVRTC module cache
//! (compiled once a process, and kept on disk by a hash of the source and the architecture),
//! and its launch on tensors named as the graph's inputs.

use super::codegen::{self, Generated, ROW_FORMS};
use super::graph::{Graph, Layout, Node, NodeId};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::{aligned16, allow_dynamic_smem};
use crate::runtime::tensor::Tensor;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How a graph was fused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Every operation in one element-wise kernel.
    Elementwise,
    /// Row reductions and everything around them in one row kernel, a block a row.
    Rows,
}

/// A fused kernel for one graph, ready to launch.
#[derive(Debug)]
pub struct Kernel {
    pub generated: Generated,
    pub fusion: Fusion,
    /// The output's storage dtype.
    pub dtype: DType,
    /// The inputs' storage dtype (the output's, but for a conversion).
    pub in_dtype: DType,
    /// The source as the runtime's module cache takes it (one per distinct source a process).
    pub source: &'static KernelSource,
    /// The graph's operations: the launches eager code makes for it.
    pub operations: usize,
    /// The row reductions, as `%id row_op`.
    pub reductions: Vec<String>,
    /// The graph's inputs in the order it declared them (the op's inputs, position by position).
    pub declared: Vec<String>,
}

/// Fuse node `out` of `g` into one kernel stored in `dtype`, its symbols named from `name`,
/// after the fusion rewrites ([`super::rewrite`]). The kernel's plan counts `g`'s operations.
pub fn build(g: &Graph, out: NodeId, dtype: DType, name: &str) -> Result<Kernel> {
    if out >= g.len() {
        return Err(Error::Invalid(format!("node %{out} is not in the graph")));
    }
    let (m, m_out) = super::rewrite::for_fusion(g, out)?;
    let mut k = build_io(&m, m_out, dtype, dtype, name)?;
    k.operations = codegen::operations(g, out);
    k.declared = g.inputs().into_iter().map(|(n, _)| n).collect();
    Ok(k)
}

/// One kernel for node `out` of `g` as it is (no rewrites), with inputs stored as `in_dtype`
/// (an element-wise graph only where it differs from `dtype`: a conversion between storage
/// types).
pub fn build_io(
    g: &Graph,
    out: NodeId,
    in_dtype: DType,
    dtype: DType,
    name: &str,
) -> Result<Kernel> {
    if out >= g.len() {
        return Err(Error::Invalid(format!("node %{out} is not in the graph")));
    }
    // The reductions the output needs (a reduction nothing reads is not a row kernel's).
    let reductions: Vec<String> = codegen::needed(g, out)
        .into_iter()
        .filter_map(|i| match g.node(i) {
            Node::Reduce(r, _) => Some(format!("%{i} row_{}", r.name())),
            _ => None,
        })
        .collect();
    let (generated, fusion) = if reductions.is_empty() {
        (
            codegen::elementwise_converting(g, out, in_dtype, dtype, name)?,
            Fusion::Elementwise,
        )
    } else if in_dtype != dtype {
        return Err(Error::Invalid(format!(
            "{name}: a row kernel reads and stores one dtype ({in_dtype} inputs, {dtype} output)"
        )));
    } else {
        (codegen::row_kernel(g, out, dtype, name)?, Fusion::Rows)
    };
    let source = intern(&generated.name, &generated.source);
    Ok(Kernel {
        generated,
        fusion,
        dtype,
        in_dtype,
        source,
        operations: codegen::operations(g, out),
        reductions,
        declared: g.inputs().into_iter().map(|(n, _)| n).collect(),
    })
}

/// A generated source as a `'static` [`KernelSource`] (the runtime's module cache keys modules
/// by file name and holds them for the process): one leaked copy per distinct source, its
/// file name made unique by the source's hash.
pub fn intern(name: &str, source: &str) -> &'static KernelSource {
    static SOURCES: Mutex<Option<HashMap<String, &'static KernelSource>>> = Mutex::new(None);
    let mut map = SOURCES.lock().unwrap_or_else(|e| e.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(s) = map.get(source) {
        return s;
    }
    let hash = blake3::hash(source.as_bytes()).to_hex();
    let s: &'static KernelSource = Box::leak(Box::new(KernelSource {
        file: Box::leak(format!("{name}_{}.cu", &hash[..16]).into_boxed_str()),
        src: Box::leak(source.to_string().into_boxed_str()),
    }));
    map.insert(source.to_string(), s);
    s
}

/// A process-wide cache of built things by `key` (an op, its parameters and a dtype), so a
/// timed call does not generate its source again: fused kernels, eager plans.
pub struct Memo<T>(Mutex<Option<HashMap<String, Arc<T>>>>);

impl<T> Default for Memo<T> {
    fn default() -> Memo<T> {
        Memo::new()
    }
}

impl<T> Memo<T> {
    pub const fn new() -> Memo<T> {
        Memo(Mutex::new(None))
    }

    /// The value kept for `key`, else `make`'s, kept. `make` runs without the lock held.
    pub fn get_or_make(&self, key: &str, make: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        let lock = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = lock().get_or_insert_with(HashMap::new).get(key) {
            return Ok(v.clone());
        }
        let v = Arc::new(make()?);
        lock()
            .get_or_insert_with(HashMap::new)
            .insert(key.to_string(), v.clone());
        Ok(v)
    }
}

/// How a call launches: which form (symbol), its grid, and its dynamic shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    pub symbol: String,
    pub cfg: (u32, u32, u32),
    pub packed: bool,
    pub staged: bool,
    /// The register form's packs a thread (0: another form).
    pub regs: usize,
}

/// Threads a row for a row kernel: about four steps (packs or elements) a thread, in whole
/// warps, at most 1024.
pub fn row_threads(cols: usize, width: usize) -> u32 {
    let steps = cols.div_ceil(width);
    (steps.div_ceil(4).div_ceil(32) * 32).clamp(32, 1024) as u32
}

/// One named operand of a generated kernel's launch, checked before any launch: the tensor
/// `inputs` gives for `name`, stored as `dtype`, on CUDA device `ordinal`, spanning `layout`'s
/// part of a `rows × cols` frame. A full input has `rows` rows of `cols` columns, each
/// contiguous (its row stride is returned; with `vectors`, in a one-row or one-column frame,
/// any contiguous vector of the frame's length); any other is `layout.len` contiguous values.
/// `what` names the kernel in errors.
#[allow(clippy::too_many_arguments)]
pub fn operand<'a>(
    what: &str,
    inputs: &[(&str, &'a Tensor)],
    name: &str,
    layout: Layout,
    dtype: DType,
    ordinal: usize,
    (rows, cols): (usize, usize),
    vectors: bool,
) -> Result<(&'a cudarc::driver::CudaSlice<u8>, Option<usize>)> {
    let t = inputs
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{what}: no tensor for the graph's input '{name}' (given: {})",
                inputs
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    if t.dtype() != dtype {
        return Err(Error::Invalid(format!(
            "{what}: input '{name}' is {}, the kernel reads {dtype}",
            t.dtype()
        )));
    }
    let buf = t
        .cuda_buf()
        .filter(|_| t.device().cuda().map(|d| d.ordinal) == Some(ordinal))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{what}: input '{name}' is on {}, the output on cuda:{ordinal}",
                t.device().describe()
            ))
        })?;
    let ld = match layout {
        Layout::Full => {
            let (tr, tc, ld) = t.rows_cols();
            // A vector frame (one row or one column) takes any contiguous vector of its length.
            let vector = vectors
                && (rows == 1 || cols == 1)
                && t.is_contiguous()
                && t.numel() == rows * cols;
            if !vector && ((tr, tc) != (rows, cols) || !(t.is_contiguous() || t.is_row_strided())) {
                return Err(Error::Invalid(format!(
                    "{what}: input '{name}' must be {rows} rows of {cols} columns, each \
                     contiguous (got {:?}, strides {:?})",
                    t.shape(),
                    t.strides()
                )));
            }
            Some(if vector { cols } else { ld })
        }
        l => {
            let want = l.len(rows, cols);
            if t.numel() != want || !t.is_contiguous() {
                return Err(Error::Invalid(format!(
                    "{what}: input '{name}' is {:?}: it must be {want} contiguous values ({} of \
                     a {rows} × {cols} output)",
                    t.shape(),
                    match l {
                        Layout::Col => "a value a column",
                        Layout::Row => "a value a row",
                        _ => "one value",
                    }
                )));
            }
            None
        }
    };
    Ok((buf, ld))
}

impl Kernel {
    /// The fusion in words: what fused, why its boundaries are where they are.
    pub fn plan(&self) -> String {
        let ops = self.operations;
        let s = &self.generated.symbols;
        match self.fusion {
            Fusion::Elementwise => format!(
                "1 kernel: the {ops} operations fuse into one element-wise kernel (eager: {ops} \
                 launches), a packed form with 16-byte loads ({}) and a scalar form ({}) for \
                 other widths and alignments",
                s[0], s[1]
            ),
            Fusion::Rows => format!(
                "1 kernel: the {ops} operations fuse into one row kernel, a block a row (eager: \
                 {ops} launches); its {} reduction(s) ({}) each take a pass over the row, then a \
                 last pass writes the output. Staged forms ({}, {}) copy the row's {} into shared \
                 memory once and every pass reads it there; looped forms ({}, {}) read global \
                 memory each pass, for rows wider than shared memory holds{}",
                self.reductions.len(),
                self.reductions.join(", "),
                s[0],
                s[1],
                if self.generated.staged.is_empty() {
                    "(no input: nothing to stage)".to_string()
                } else {
                    self.generated.staged.join(", ")
                },
                s[2],
                s[3],
                if s.len() > ROW_FORMS.len() {
                    format!(
                        "; register forms ({}) hold a packed row in registers, P packs a \
                         thread as loaded, for rows of up to 1024·P packs",
                        s[ROW_FORMS.len()..].join(", ")
                    )
                } else {
                    String::new()
                }
            ),
        }
    }

    /// The launch for an output of `rows × cols` where 16-byte accesses are possible
    /// (`packed`), with `smem_limit` bytes of shared memory a block at most.
    pub fn launch_plan(
        &self,
        rows: usize,
        cols: usize,
        packed: bool,
        smem_limit: usize,
    ) -> Result<LaunchPlan> {
        let n = 16 / self.dtype.size();
        let syms = &self.generated.symbols;
        match self.fusion {
            Fusion::Elementwise => {
                // A converting kernel has its scalar form only.
                let packed = packed && syms.len() == 2;
                let w = if packed { n } else { 1 };
                let threads = ((rows as u64) * cols as u64).div_ceil(w as u64);
                let blocks = threads.div_ceil(256);
                if blocks > i32::MAX as u64 {
                    return Err(Error::Invalid(format!(
                        "{rows} × {cols} elements need {blocks} blocks: over the grid limit"
                    )));
                }
                Ok(LaunchPlan {
                    symbol: syms[if packed { 0 } else { syms.len() - 1 }].clone(),
                    cfg: (blocks as u32, 256, 0),
                    packed,
                    staged: false,
                    regs: 0,
                })
            }
            Fusion::Rows => {
                if rows > i32::MAX as usize {
                    return Err(Error::Invalid(format!(
                        "{rows} rows: a row kernel takes at most 2^31 − 1 (a block a row)"
                    )));
                }
                // The row in registers where a register form holds it (packed rows of up to
                // 8192 packs): P = 4 up to 4096 packs, else 8.
                let packs = cols.div_ceil(n);
                let p = codegen::register_packs(self.generated.staged.len())
                    .into_iter()
                    .find(|p| packs <= 1024 * p);
                if let Some(p) = p.filter(|_| packed) {
                    let sym = format!("{}_regs{p}", syms[0]);
                    return Ok(LaunchPlan {
                        symbol: sym,
                        cfg: (
                            rows as u32,
                            (packs.div_ceil(p).div_ceil(32) * 32).clamp(32, 1024) as u32,
                            0,
                        ),
                        packed,
                        staged: false,
                        regs: p,
                    });
                }
                let bytes = self.generated.staged.len() * packs * n * self.dtype.size();
                let staged = bytes <= smem_limit;
                let form = ROW_FORMS
                    .iter()
                    .position(|&(_, s, p)| s == staged && p == packed)
                    .expect("every form is generated");
                let width = if packed { n } else { 1 };
                Ok(LaunchPlan {
                    symbol: syms[form].clone(),
                    cfg: (
                        rows as u32,
                        if staged {
                            row_threads(cols, width)
                        } else {
                            1024
                        },
                        if staged { bytes as u32 } else { 0 },
                    ),
                    packed,
                    staged,
                    regs: 0,
                })
            }
        }
    }

    /// Launch on `inputs` (by the graph's input names), writing `y`: every input of the
    /// kernel's dtype, on y's device, in its layout's shape (a full input of y's shape,
    /// contiguous or with strided rows; a column vector of `cols`, a row vector of `rows`
    /// values, or one value); y contiguous. The form is the packed one where the width, the
    /// row strides and every address allow 16-byte accesses. Returns the plan it launched.
    pub fn launch(&self, inputs: &[(&str, &Tensor)], y: &mut Tensor) -> Result<LaunchPlan> {
        let what = &self.generated.name;
        let dev = y
            .device()
            .cuda()
            .cloned()
            .ok_or_else(|| Error::Invalid(format!("{what}: the output is not on CUDA")))?;
        if y.dtype() != self.dtype || !(y.is_contiguous() || y.is_row_strided()) || y.numel() == 0 {
            return Err(Error::Invalid(format!(
                "{what}: the output must be a non-empty {} tensor with contiguous rows (got {} \
                 {:?}, strides {:?})",
                self.dtype,
                y.dtype(),
                y.shape(),
                y.strides()
            )));
        }
        let ld_y = y.rows_cols().2;
        // The frame: the output's, or for one value a row, the full inputs' rows.
        let (rows, cols) = if self.generated.out_layout == Layout::Row {
            let full = self
                .generated
                .inputs
                .iter()
                .find(|(_, l)| *l == Layout::Full)
                .and_then(|(n, _)| inputs.iter().find(|(m, _)| m == n));
            match full {
                Some((_, t)) => (y.numel(), t.rows_cols().1),
                None => (y.numel(), 1),
            }
        } else {
            let (r, c, _) = y.rows_cols();
            (r, c)
        };
        if cols > i32::MAX as usize - 16 {
            return Err(Error::Invalid(format!(
                "{what}: rows of {cols} columns: at most 2^31 − 17"
            )));
        }
        let n = 16 / self.dtype.size();
        let mut packed = cols.is_multiple_of(n)
            && ld_y.is_multiple_of(n)
            && aligned16(&dev, y.cuda_buf().expect("checked: on CUDA"));
        let mut operands = Vec::with_capacity(self.generated.inputs.len());
        for (name, layout) in &self.generated.inputs {
            let (buf, ld) = operand(
                what,
                inputs,
                name,
                *layout,
                self.in_dtype,
                dev.ordinal,
                (rows, cols),
                true,
            )?;
            if let Some(ld) = ld {
                packed &= ld.is_multiple_of(n);
            }
            let ld = ld.map(|l| l as i64);
            if matches!(layout, Layout::Full | Layout::Col) {
                packed &= aligned16(&dev, buf);
            }
            operands.push((buf, ld));
        }
        let plan = self.launch_plan(rows, cols, packed, dev.props.max_smem_per_block_optin)?;
        let f = dev.function(self.source, &plan.symbol)?;
        if plan.cfg.2 > 48 * 1024 {
            allow_dynamic_smem(&dev, &f, &plan.symbol, plan.cfg.2 as usize)?;
        }
        let cfg = LaunchConfig {
            grid_dim: (plan.cfg.0, 1, 1),
            block_dim: (plan.cfg.1, 1, 1),
            shared_mem_bytes: plan.cfg.2,
        };
        let (rows_i, cols_i, ld_y) = (rows as i64, cols as i32, ld_y as i64);
        let ybuf = y.cuda_buf_mut().expect("checked: on CUDA");
        let mut b = dev.stream.launch_builder(&f);
        for (buf, ld) in &operands {
            b.arg(*buf);
            if let Some(ld) = ld {
                b.arg(ld);
            }
        }
        b.arg(ybuf);
        b.arg(&ld_y);
        b.arg(&rows_i);
        b.arg(&cols_i);
        // SAFETY: the arguments follow the generated signature (each input, a full input's
        // row stride, y, rows, cols), checked above against the layouts the kernel reads;
        // the buffers outlive the enqueue and are freed stream-ordered.
        unsafe { b.launch(cfg) }.map_err(crate::runtime::device::cuda::launch_err(&plan.symbol))?;
        dev.after_launch(&plan.symbol)?;
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn softmax(g: &Graph) -> NodeId {
        let x = g.input("x", Layout::Full).unwrap();
        let e = (x - x.row_max()).exp();
        (e / e.sum()).id
    }

    #[test]
    fn a_graph_with_reductions_fuses_into_a_row_kernel_else_an_elementwise_one() {
        let g = Graph::new();
        let out = softmax(&g);
        let k = build(&g, out, DType::BF16, "kl_t_softmax").unwrap();
        assert_eq!(k.fusion, Fusion::Rows);
        assert_eq!(k.operations, 5);
        assert_eq!(k.reductions, ["%1 row_max", "%4 row_sum"]);
        assert!(
            k.plan().contains("copy the row's x into shared memory"),
            "{}",
            k.plan()
        );
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let k = build(&g, (x * 2.0).exp().id, DType::F32, "kl_t_ew").unwrap();
        assert_eq!(k.fusion, Fusion::Elementwise);
        assert!(
            k.plan().starts_with("1 kernel: the 2 operations"),
            "{}",
            k.plan()
        );
    }

    #[test]
    fn launch_plans_pick_the_form_from_the_layout_and_shared_memory() {
        let g = Graph::new();
        let out = softmax(&g);
        let k = build(&g, out, DType::F32, "kl_t_rows").unwrap();
        // 4096 f32 columns, packed: 1024 packs, four a thread, held in registers.
        let p = k.launch_plan(8192, 4096, true, 227 * 1024).unwrap();
        assert_eq!((p.symbol.as_str(), p.regs), ("kl_t_rows_regs4", 4));
        assert_eq!(p.cfg, (8192, 256, 0));
        // 32768 f32 columns: 8 packs a thread, 1024 threads; 33 packs: a warp.
        let p = k.launch_plan(4096, 32768, true, 227 * 1024).unwrap();
        assert_eq!(
            (p.symbol.as_str(), p.cfg),
            ("kl_t_rows_regs8", (4096, 1024, 0))
        );
        let p = k.launch_plan(2, 132, true, 227 * 1024).unwrap();
        assert_eq!((p.symbol.as_str(), p.cfg), ("kl_t_rows_regs4", (2, 32, 0)));
        // Past 8192 packs: staged in shared memory, about four packs a thread.
        let p = k.launch_plan(8, 40000, true, 227 * 1024).unwrap();
        assert_eq!((p.symbol.as_str(), p.cfg), ("kl_t_rows", (8, 1024, 160000)));
        // bf16 holds its packs as loaded: 65536 columns are 8192 packs, 8 a thread.
        let kb = build(&g, out, DType::BF16, "kl_t_rows_b").unwrap();
        let p = kb.launch_plan(8, 65536, true, 227 * 1024).unwrap();
        assert_eq!(
            (p.symbol.as_str(), p.cfg),
            ("kl_t_rows_b_regs8", (8, 1024, 0))
        );
        let p = kb.launch_plan(8, 32768, true, 227 * 1024).unwrap();
        assert_eq!(p.symbol, "kl_t_rows_b_regs4");
        // Wider than shared memory: looped, 1024 threads, none staged.
        let p = k.launch_plan(1024, 131072, true, 227 * 1024).unwrap();
        assert_eq!(
            (p.symbol.as_str(), p.cfg),
            ("kl_t_rows_looped", (1024, 1024, 0))
        );
        // An odd width: scalar; staged still (the row is padded to a pack in shared memory).
        let p = k.launch_plan(3, 33, false, 227 * 1024).unwrap();
        assert_eq!(
            (p.symbol.as_str(), p.cfg),
            ("kl_t_rows_staged_scalar", (3, 32, 36 * 4))
        );
        let p = k.launch_plan(3, 65537, false, 227 * 1024).unwrap();
        assert_eq!(p.symbol, "kl_t_rows_looped_scalar");
        assert!(k.launch_plan(1 << 31, 8, true, 1 << 20).is_err());
        // Element-wise: 256 threads a block, a pack (or an element) a thread.
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let k = build(&g, x.exp().id, DType::BF16, "kl_t_ew").unwrap();
        let p = k.launch_plan(16384, 16384, true, 0).unwrap();
        assert_eq!(
            (p.symbol.as_str(), p.cfg),
            ("kl_t_ew", (16384 * 16384 / 8 / 256, 256, 0))
        );
        let p = k.launch_plan(3, 33, false, 0).unwrap();
        assert_eq!((p.symbol.as_str(), p.cfg), ("kl_t_ew_scalar", (1, 256, 0)));
    }

    #[test]
    fn one_interned_source_per_text_with_a_unique_file_name() {
        let a = intern("kl_t", "// a");
        let b = intern("kl_t", "// b");
        assert!(std::ptr::eq(a, intern("kl_t", "// a")));
        assert_ne!(a.file, b.file);
        assert!(
            a.file.starts_with("kl_t_") && a.file.ends_with(".cu"),
            "{}",
            a.file
        );
        assert!(!a.file.contains('/'));
    }

    #[test]
    fn row_threads_give_about_four_steps_a_thread_in_whole_warps() {
        assert_eq!(row_threads(4096, 4), 256);
        assert_eq!(row_threads(4096, 8), 128);
        assert_eq!(row_threads(12672, 4), 800);
        assert_eq!(row_threads(1, 1), 32);
        assert_eq!(row_threads(1 << 20, 8), 1024);
    }
}
