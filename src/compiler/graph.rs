//! The expression graph: tensor expressions over rows, written with ordinary operators on
//! node handles ([`Expr`]), e.g. `0.5 * x * (1.0 + (k * (x + 0.044715 * x.powi(3))).tanh())`.
//!
//! Every value has a [`Layout`] over the same `rows × cols` frame: a full tensor, a value per
//! row (`rows × 1`, what a row reduction gives), a vector along the row (`1 × cols`, such as
//! rmsnorm's weight) or a scalar; binary operations broadcast between them. Nodes are interned
//! as they are built: an expression built twice is one node (common subexpressions), and an
//! operation on constants is folded into a constant.

use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

/// A node's index in its graph.
pub type NodeId = usize;

/// How a value spans the `rows × cols` frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `rows × cols`.
    Full,
    /// `rows × 1`: one value a row, broadcast along it.
    Row,
    /// `1 × cols`: one vector, the same for every row.
    Col,
    /// `1 × 1`.
    Scalar,
}

impl Layout {
    /// The layout of a binary operation's result: the broadcast of both.
    pub fn broadcast(self, other: Layout) -> Layout {
        use Layout::*;
        match (self, other) {
            (Full, _) | (_, Full) | (Row, Col) | (Col, Row) => Full,
            (Row, _) | (_, Row) => Row,
            (Col, _) | (_, Col) => Col,
            (Scalar, Scalar) => Scalar,
        }
    }
    /// The layout of a reduction over the last dimension.
    pub fn reduced(self) -> Layout {
        match self {
            Layout::Full | Layout::Row => Layout::Row,
            Layout::Col | Layout::Scalar => Layout::Scalar,
        }
    }
    /// Its element count in a `rows × cols` frame.
    pub fn len(self, rows: usize, cols: usize) -> usize {
        match self {
            Layout::Full => rows * cols,
            Layout::Row => rows,
            Layout::Col => cols,
            Layout::Scalar => 1,
        }
    }
    /// The index of element (r, c) of the frame in a value of this layout.
    fn index(self, r: usize, c: usize, cols: usize) -> usize {
        match self {
            Layout::Full => r * cols + c,
            Layout::Row => r,
            Layout::Col => c,
            Layout::Scalar => 0,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Layout::Full => "rows×cols",
            Layout::Row => "rows×1",
            Layout::Col => "1×cols",
            Layout::Scalar => "1×1",
        }
    }
}

/// Element-wise functions of one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unary {
    Neg,
    Exp,
    Log,
    Tanh,
    Erf,
    Sqrt,
    Rsqrt,
    /// 1 / (1 + e^(−a)); the fusion pass makes it from its spelled-out forms.
    Sigmoid,
    /// 1 / a; the fusion pass makes it for a divisor the row shares.
    Recip,
}

/// Element-wise functions of two operands (comparisons give 1.0 or 0.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

/// Reductions over the last dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduce {
    Sum,
    Max,
    Mean,
}

impl Reduce {
    /// Its name in printed graphs (after `row_`) and messages.
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Max => "max",
            Reduce::Mean => "mean",
        }
    }
}

/// One node of a graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A tensor the caller provides, stored in the graph's dtype.
    Input {
        name: String,
        layout: Layout,
    },
    Const(f64),
    Unary(Unary, NodeId),
    /// x^n for an integer n.
    Powi(NodeId, i32),
    Binary(Binary, NodeId, NodeId),
    /// `cond != 0 ? a : b`.
    Select(NodeId, NodeId, NodeId),
    /// The value rounded to a dtype and back (a store and a load in that dtype).
    Cast(DType, NodeId),
    Reduce(Reduce, NodeId),
    /// `a · wᵀ`: a `[rows, K]` and w `[cols, K]`, two inputs nothing else reads (see
    /// [`Graph::check`]); a full `rows × cols` value, summed in f32 on the tensor cores where
    /// it is compiled, the epilogue of which is the element-wise graph above it.
    MatMul(NodeId, NodeId),
}

/// The interning key of a node: its operation and operands, a constant by its bits.
impl Node {
    /// Its operands, in order.
    pub fn operands(&self) -> Vec<NodeId> {
        match *self {
            Node::Input { .. } | Node::Const(_) => vec![],
            Node::Unary(_, a) | Node::Powi(a, _) | Node::Cast(_, a) | Node::Reduce(_, a) => vec![a],
            Node::Binary(_, a, b) | Node::MatMul(a, b) => vec![a, b],
            Node::Select(c, a, b) => vec![c, a, b],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Input(String),
    Const(u64),
    Unary(Unary, NodeId),
    Powi(NodeId, i32),
    Binary(Binary, NodeId, NodeId),
    Select(NodeId, NodeId, NodeId),
    Cast(DType, NodeId),
    Reduce(Reduce, NodeId),
    MatMul(NodeId, NodeId),
}

fn key(n: &Node) -> Key {
    match n {
        Node::Input { name, .. } => Key::Input(name.clone()),
        // -0.0 and 0.0 stay distinct; every NaN is one constant.
        Node::Const(v) => Key::Const(if v.is_nan() {
            f64::NAN.to_bits()
        } else {
            v.to_bits()
        }),
        Node::Unary(op, a) => Key::Unary(*op, *a),
        Node::Powi(a, n) => Key::Powi(*a, *n),
        Node::Binary(op, a, b) => Key::Binary(*op, *a, *b),
        Node::Select(c, a, b) => Key::Select(*c, *a, *b),
        Node::Cast(dt, a) => Key::Cast(*dt, *a),
        Node::Reduce(op, a) => Key::Reduce(*op, *a),
        Node::MatMul(a, w) => Key::MatMul(*a, *w),
    }
}

#[derive(Default)]
struct Nodes {
    nodes: Vec<Node>,
    layouts: Vec<Layout>,
    interned: HashMap<Key, NodeId>,
}

/// An expression graph under construction (and, once built, to interpret or compile).
#[derive(Default)]
pub struct Graph {
    inner: RefCell<Nodes>,
}

/// A handle to a node of a graph, for building expressions with operators.
#[derive(Clone, Copy)]
pub struct Expr<'g> {
    graph: &'g Graph,
    pub id: NodeId,
}

impl fmt::Debug for Expr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.id)
    }
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    /// The node count.
    pub fn len(&self) -> usize {
        self.inner.borrow().nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The nodes that compute something (neither inputs nor constants): the kernel launches
    /// eager code would make.
    pub fn operations(&self) -> usize {
        self.inner
            .borrow()
            .nodes
            .iter()
            .filter(|n| !matches!(n, Node::Input { .. } | Node::Const(_)))
            .count()
    }

    /// A copy of node `id`.
    pub fn node(&self, id: NodeId) -> Node {
        self.inner.borrow().nodes[id].clone()
    }

    /// The layout of node `id`.
    pub fn layout(&self, id: NodeId) -> Layout {
        self.inner.borrow().layouts[id]
    }

    /// The inputs by name, in the order they were declared.
    pub fn inputs(&self) -> Vec<(String, Layout)> {
        self.inner
            .borrow()
            .nodes
            .iter()
            .filter_map(|n| match n {
                Node::Input { name, layout } => Some((name.clone(), *layout)),
                _ => None,
            })
            .collect()
    }

    /// A named input of this layout. Declaring a name twice with the same layout gives the
    /// same node; with another layout it is an error.
    pub fn input(&self, name: &str, layout: Layout) -> Result<Expr<'_>> {
        if let Some(&id) = self.inner.borrow().interned.get(&Key::Input(name.into())) {
            let had = self.layout(id);
            if had != layout {
                return Err(Error::Invalid(format!(
                    "graph input '{name}' is declared {} and {}",
                    had.name(),
                    layout.name()
                )));
            }
        }
        Ok(self.push(Node::Input {
            name: name.into(),
            layout,
        }))
    }

    /// A constant.
    pub fn constant(&self, v: f64) -> Expr<'_> {
        self.push(Node::Const(v))
    }

    /// `cond != 0 ? a : b`, broadcast over the three.
    pub fn select<'g>(&'g self, cond: Expr<'g>, a: Expr<'g>, b: Expr<'g>) -> Expr<'g> {
        self.push(Node::Select(cond.id, a.id, b.id))
    }

    /// Node `node`'s operation (a node of some graph) applied to this graph's `operands`, in
    /// the node's operand order ([`Node::operands`]); inputs and constants are copied as they
    /// are.
    pub fn apply(&self, node: &Node, operands: &[NodeId]) -> Result<Expr<'_>> {
        let want = node.operands().len();
        if operands.len() != want || operands.iter().any(|&o| o >= self.len()) {
            return Err(Error::Invalid(format!(
                "{node:?} takes {want} operand(s) of this graph, got {operands:?}"
            )));
        }
        let o = |i: usize| operands[i];
        Ok(self.push(match node {
            Node::Input { .. } | Node::Const(_) => node.clone(),
            Node::Unary(op, _) => Node::Unary(*op, o(0)),
            Node::Powi(_, n) => Node::Powi(o(0), *n),
            Node::Binary(op, _, _) => Node::Binary(*op, o(0), o(1)),
            Node::Select(..) => Node::Select(o(0), o(1), o(2)),
            Node::Cast(dt, _) => Node::Cast(*dt, o(0)),
            Node::Reduce(op, _) => Node::Reduce(*op, o(0)),
            Node::MatMul(..) => Node::MatMul(o(0), o(1)),
        }))
    }

    /// The operation a node performs, in words (`mul`, `tanh`, `row_sum`; `input`, `const`).
    pub fn op_name(&self, id: NodeId) -> String {
        match self.node(id) {
            Node::Input { .. } => "input".into(),
            Node::Const(_) => "const".into(),
            Node::Unary(op, _) => format!("{op:?}").to_lowercase(),
            Node::Powi(..) => "powi".into(),
            Node::Binary(op, _, _) => format!("{op:?}").to_lowercase(),
            Node::Select(..) => "select".into(),
            Node::Cast(dt, _) => format!("cast_{dt}"),
            Node::Reduce(op, _) => format!("row_{}", op.name()),
            Node::MatMul(..) => "matmul".into(),
        }
    }

    /// The nodes `out` depends on, itself included, in order.
    pub fn reaching(&self, out: NodeId) -> Vec<NodeId> {
        let inner = self.inner.borrow();
        let mut keep = vec![false; out + 1];
        keep[out] = true;
        for id in (0..=out).rev() {
            if keep[id] {
                for o in inner.nodes[id].operands() {
                    keep[o] = true;
                }
            }
        }
        (0..=out).filter(|&i| keep[i]).collect()
    }

    /// The inputs `out` reads as matmul operands: `(a, w)` for each matmul it depends on.
    pub fn matmuls(&self, out: NodeId) -> Vec<(NodeId, NodeId)> {
        self.reaching(out)
            .into_iter()
            .filter_map(|i| match self.node(i) {
                Node::MatMul(a, w) => Some((a, w)),
                _ => None,
            })
            .collect()
    }

    /// The checks a graph that holds matmuls must pass before it is evaluated or compiled:
    /// their operands are inputs (the `[rows, K]` and `[cols, K]` matrices, outside the
    /// `rows × cols` frame), one input is not both, and nothing else reads them.
    pub fn check(&self, out: NodeId) -> Result<()> {
        if out >= self.len() {
            return Err(Error::Invalid(format!("node %{out} is not in the graph")));
        }
        let mm = self.matmuls(out);
        if mm.is_empty() {
            return Ok(());
        }
        let name = |i: NodeId| match self.node(i) {
            Node::Input { name, .. } => Some(name),
            _ => None,
        };
        for &(a, w) in &mm {
            for (o, what) in [(a, "a [rows, K]"), (w, "w [cols, K]")] {
                if name(o).is_none() {
                    return Err(Error::Invalid(format!(
                        "matmul's operands must be graph inputs; its {what} is %{o} ({})",
                        self.op_name(o)
                    )));
                }
                if self.layout(o) != Layout::Full {
                    return Err(Error::Invalid(format!(
                        "matmul's {what} '{}' is declared {}: a matmul operand is a full matrix",
                        name(o).unwrap_or_default(),
                        self.layout(o).name()
                    )));
                }
            }
            if a == w {
                return Err(Error::Invalid(format!(
                    "matmul(%{a}, %{w}): one input cannot be both a [rows, K] and a [cols, K] \
                     matrix"
                )));
            }
            if let Some(&(a2, _)) = mm.iter().find(|&&(a2, w2)| a2 == w || w2 == a) {
                let both = if a2 == w { w } else { a };
                return Err(Error::Invalid(format!(
                    "input '{}' is a matmul's a in one place and its w in another",
                    name(both).unwrap_or_default()
                )));
            }
        }
        for i in self.reaching(out) {
            if matches!(self.node(i), Node::MatMul(..)) {
                continue;
            }
            for o in self.node(i).operands() {
                if mm.iter().any(|&(a, w)| o == a || o == w) {
                    return Err(Error::Invalid(format!(
                        "input '{}' is a matmul operand (a matrix with K columns) and cannot \
                         also be read element-wise (%{i} {})",
                        name(o).unwrap_or_default(),
                        self.op_name(i)
                    )));
                }
            }
        }
        Ok(())
    }

    fn constant_of(&self, id: NodeId) -> Option<f64> {
        match self.inner.borrow().nodes[id] {
            Node::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Add a node (or find the same one), folding operations whose operands are all constants.
    fn push(&self, node: Node) -> Expr<'_> {
        let folded = match &node {
            Node::Unary(op, a) => self.constant_of(*a).map(|a| unary(*op, a)),
            Node::Powi(a, n) => self.constant_of(*a).map(|a| a.powi(*n)),
            Node::Binary(op, a, b) => self
                .constant_of(*a)
                .zip(self.constant_of(*b))
                .map(|(a, b)| binary(*op, a, b)),
            Node::Select(c, a, b) => {
                match (
                    self.constant_of(*c),
                    self.constant_of(*a),
                    self.constant_of(*b),
                ) {
                    (Some(c), Some(a), Some(b)) => Some(if c != 0.0 { a } else { b }),
                    _ => None,
                }
            }
            Node::Cast(dt, a) => self.constant_of(*a).map(|a| dt.round(a)),
            // A reduction of a constant depends on the row's length, a product on K: not
            // folded.
            _ => None,
        };
        let node = folded.map_or(node, Node::Const);
        let k = key(&node);
        let mut inner = self.inner.borrow_mut();
        if let Some(&id) = inner.interned.get(&k) {
            return Expr { graph: self, id };
        }
        let l = |id: NodeId| inner.layouts[id];
        let layout = match &node {
            Node::Input { layout, .. } => *layout,
            Node::Const(_) => Layout::Scalar,
            Node::Unary(_, a) | Node::Powi(a, _) | Node::Cast(_, a) => l(*a),
            Node::Binary(_, a, b) => l(*a).broadcast(l(*b)),
            Node::Select(c, a, b) => l(*c).broadcast(l(*a)).broadcast(l(*b)),
            Node::Reduce(_, a) => l(*a).reduced(),
            Node::MatMul(..) => Layout::Full,
        };
        let id = inner.nodes.len();
        inner.nodes.push(node);
        inner.layouts.push(layout);
        inner.interned.insert(k, id);
        Expr { graph: self, id }
    }

    /// The f64 value of `out` for inputs given by name (each of its declared layout's length
    /// in a `rows × cols` frame), every input first rounded to `dtype` as stored there, every
    /// `Cast` rounded as it says: the graph's exact meaning, the oracle its compiled forms are
    /// judged against.
    pub fn eval(
        &self,
        out: NodeId,
        inputs: &HashMap<String, Vec<f64>>,
        rows: usize,
        cols: usize,
        dtype: DType,
    ) -> Result<Vec<f64>> {
        self.evaluate(out, inputs, rows, cols, dtype, false)
    }

    /// [`Graph::eval`] with every node's value rounded to f32, as a generated kernel's f32
    /// arithmetic keeps it (its functions and sums still exact): where f32 overflows or
    /// cancels and f64 does not, this is what a correct kernel computes.
    pub fn eval_f32(
        &self,
        out: NodeId,
        inputs: &HashMap<String, Vec<f64>>,
        rows: usize,
        cols: usize,
        dtype: DType,
    ) -> Result<Vec<f64>> {
        self.evaluate(out, inputs, rows, cols, dtype, true)
    }

    fn evaluate(
        &self,
        out: NodeId,
        inputs: &HashMap<String, Vec<f64>>,
        rows: usize,
        cols: usize,
        dtype: DType,
        f32_nodes: bool,
    ) -> Result<Vec<f64>> {
        self.check(out)?;
        let operands: Vec<NodeId> = self
            .matmuls(out)
            .into_iter()
            .flat_map(|(a, w)| [a, w])
            .collect();
        let inner = self.inner.borrow();
        let mut values: Vec<Option<Vec<f64>>> = vec![None; out + 1];
        for id in 0..=out {
            let layout = inner.layouts[id];
            let n = layout.len(rows, cols);
            let v = |i: NodeId| values[i].as_deref().expect("operands come first");
            // Element (r, c) of operand `i`, broadcast to this node's layout.
            let at = |i: NodeId, r: usize, c: usize| v(i)[inner.layouts[i].index(r, c, cols)];
            let (nr, nc) = match layout {
                Layout::Full => (rows, cols),
                Layout::Row => (rows, 1),
                Layout::Col => (1, cols),
                Layout::Scalar => (1, 1),
            };
            let map = |f: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
                let mut o = Vec::with_capacity(n);
                for r in 0..nr {
                    for c in 0..nc {
                        o.push(f(r, c));
                    }
                }
                o
            };
            let value = match &inner.nodes[id] {
                Node::Input { name, .. } => {
                    let x = inputs.get(name).ok_or_else(|| {
                        Error::Invalid(format!("graph input '{name}' was not given"))
                    })?;
                    // A matmul operand's K is its length over its rows (checked there).
                    if x.len() != n && !operands.contains(&id) {
                        return Err(Error::Invalid(format!(
                            "graph input '{name}' ({}) needs {n} values in a {rows}×{cols} frame, got {}",
                            layout.name(),
                            x.len()
                        )));
                    }
                    x.iter().map(|&e| dtype.round(e)).collect()
                }
                Node::Const(c) => vec![*c],
                Node::Unary(op, a) => map(&|r, c| unary(*op, at(*a, r, c))),
                Node::Powi(a, p) => map(&|r, c| at(*a, r, c).powi(*p)),
                Node::Binary(op, a, b) => map(&|r, c| binary(*op, at(*a, r, c), at(*b, r, c))),
                Node::Select(s, a, b) => map(&|r, c| {
                    if at(*s, r, c) != 0.0 {
                        at(*a, r, c)
                    } else {
                        at(*b, r, c)
                    }
                }),
                Node::Cast(dt, a) => map(&|r, c| dt.round(at(*a, r, c))),
                Node::MatMul(a, w) => {
                    let (a, w) = (v(*a), v(*w));
                    let k = a.len().checked_div(rows).unwrap_or(0);
                    if a.len() != rows * k || w.len() != cols * k {
                        return Err(Error::Invalid(format!(
                            "matmul %{id}: a has {} values and w {}: they must be [{rows}, K] \
                             and [{cols}, K] for one K",
                            a.len(),
                            w.len()
                        )));
                    }
                    map(&|r, c| {
                        let (ar, wc) = (&a[r * k..(r + 1) * k], &w[c * k..(c + 1) * k]);
                        ar.iter().zip(wc).map(|(x, y)| x * y).sum()
                    })
                }
                Node::Reduce(op, a) => {
                    // Over the operand's columns: `cols` of them, or one for a per-row value
                    // (whose mean and max are itself, and whose sum is itself).
                    let width = match inner.layouts[*a] {
                        Layout::Full | Layout::Col => cols,
                        Layout::Row | Layout::Scalar => 1,
                    };
                    map(&|r, _| {
                        let it = (0..width).map(|c| at(*a, r, c));
                        match op {
                            Reduce::Sum => it.sum(),
                            Reduce::Mean => it.sum::<f64>() / width as f64,
                            Reduce::Max => {
                                it.fold(f64::NEG_INFINITY, |m, x| binary(Binary::Max, m, x))
                            }
                        }
                    })
                }
            };
            let value = if f32_nodes {
                value.into_iter().map(|v| v as f32 as f64).collect()
            } else {
                value
            };
            values[id] = Some(value);
        }
        Ok(values.pop().flatten().unwrap_or_default())
    }
}

fn unary(op: Unary, a: f64) -> f64 {
    match op {
        Unary::Neg => -a,
        Unary::Exp => a.exp(),
        Unary::Log => a.ln(),
        Unary::Tanh => a.tanh(),
        Unary::Erf => libm::erf(a),
        Unary::Sqrt => a.sqrt(),
        Unary::Rsqrt => 1.0 / a.sqrt(),
        Unary::Sigmoid => 1.0 / (1.0 + (-a).exp()),
        Unary::Recip => 1.0 / a,
    }
}

fn binary(op: Binary, a: f64, b: f64) -> f64 {
    let t = |c: bool| if c { 1.0 } else { 0.0 };
    match op {
        Binary::Add => a + b,
        Binary::Sub => a - b,
        Binary::Mul => a * b,
        Binary::Div => a / b,
        // NaN propagates, as torch.maximum and torch.minimum.
        Binary::Max | Binary::Min if a.is_nan() || b.is_nan() => f64::NAN,
        Binary::Max => a.max(b),
        Binary::Min => a.min(b),
        Binary::Lt => t(a < b),
        Binary::Le => t(a <= b),
        Binary::Gt => t(a > b),
        Binary::Ge => t(a >= b),
        Binary::Eq => t(a == b),
    }
}

impl<'g> Expr<'g> {
    fn unary(self, op: Unary) -> Expr<'g> {
        self.graph.push(Node::Unary(op, self.id))
    }
    fn binary(self, op: Binary, other: Expr<'g>) -> Expr<'g> {
        self.graph.push(Node::Binary(op, self.id, other.id))
    }
    fn reduce(self, op: Reduce) -> Expr<'g> {
        self.graph.push(Node::Reduce(op, self.id))
    }
    /// This node's layout.
    pub fn layout(self) -> Layout {
        self.graph.layout(self.id)
    }
    pub fn exp(self) -> Expr<'g> {
        self.unary(Unary::Exp)
    }
    pub fn log(self) -> Expr<'g> {
        self.unary(Unary::Log)
    }
    pub fn tanh(self) -> Expr<'g> {
        self.unary(Unary::Tanh)
    }
    pub fn erf(self) -> Expr<'g> {
        self.unary(Unary::Erf)
    }
    pub fn sqrt(self) -> Expr<'g> {
        self.unary(Unary::Sqrt)
    }
    pub fn rsqrt(self) -> Expr<'g> {
        self.unary(Unary::Rsqrt)
    }
    pub fn sigmoid(self) -> Expr<'g> {
        self.unary(Unary::Sigmoid)
    }
    pub fn recip(self) -> Expr<'g> {
        self.unary(Unary::Recip)
    }
    pub fn powi(self, n: i32) -> Expr<'g> {
        self.graph.push(Node::Powi(self.id, n))
    }
    pub fn max(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Max, other)
    }
    pub fn min(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Min, other)
    }
    pub fn lt(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Lt, other)
    }
    pub fn le(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Le, other)
    }
    pub fn gt(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Gt, other)
    }
    pub fn ge(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Ge, other)
    }
    pub fn eq(self, other: Expr<'g>) -> Expr<'g> {
        self.binary(Binary::Eq, other)
    }
    /// The value rounded to `dt` and back.
    pub fn cast(self, dt: DType) -> Expr<'g> {
        self.graph.push(Node::Cast(dt, self.id))
    }
    /// Σ over the last dimension (a value per row).
    pub fn sum(self) -> Expr<'g> {
        self.reduce(Reduce::Sum)
    }
    /// The maximum over the last dimension (NaN if the row holds one).
    pub fn row_max(self) -> Expr<'g> {
        self.reduce(Reduce::Max)
    }
    /// The mean over the last dimension.
    pub fn mean(self) -> Expr<'g> {
        self.reduce(Reduce::Mean)
    }
    /// `self · wᵀ`, self an input `[rows, K]` and w an input `[cols, K]` (a Linear's weight):
    /// a full `rows × cols` value.
    pub fn matmul(self, w: Expr<'g>) -> Expr<'g> {
        self.graph.push(Node::MatMul(self.id, w.id))
    }
}

macro_rules! binary_ops {
    ($($tr:ident $f:ident $op:ident),*) => {$(
        impl<'g> std::ops::$tr for Expr<'g> {
            type Output = Expr<'g>;
            fn $f(self, rhs: Expr<'g>) -> Expr<'g> {
                self.binary(Binary::$op, rhs)
            }
        }
        impl<'g> std::ops::$tr<f64> for Expr<'g> {
            type Output = Expr<'g>;
            fn $f(self, rhs: f64) -> Expr<'g> {
                self.binary(Binary::$op, self.graph.constant(rhs))
            }
        }
        impl<'g> std::ops::$tr<Expr<'g>> for f64 {
            type Output = Expr<'g>;
            fn $f(self, rhs: Expr<'g>) -> Expr<'g> {
                rhs.graph.constant(self).binary(Binary::$op, rhs)
            }
        }
    )*};
}
binary_ops!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

impl<'g> std::ops::Neg for Expr<'g> {
    type Output = Expr<'g>;
    fn neg(self) -> Expr<'g> {
        self.unary(Unary::Neg)
    }
}

impl fmt::Display for Graph {
    /// One line a node, in SSA form: `%4 = mul %1, %3    rows×cols`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.borrow();
        // A matmul's operands are matrices with K columns, outside the frame.
        let role = |id: NodeId| {
            inner.nodes.iter().find_map(|n| match *n {
                Node::MatMul(a, _) if a == id => Some("rows×K"),
                Node::MatMul(_, w) if w == id => Some("cols×K"),
                _ => None,
            })
        };
        for (id, (n, l)) in inner.nodes.iter().zip(&inner.layouts).enumerate() {
            let lower = |s: String| s.to_lowercase();
            let text = match n {
                Node::Input { name, .. } => format!("input {name}"),
                Node::Const(v) => format!("const {v}"),
                Node::Unary(op, a) => format!("{} %{a}", lower(format!("{op:?}"))),
                Node::Powi(a, p) => format!("powi %{a}, {p}"),
                Node::Binary(op, a, b) => format!("{} %{a}, %{b}", lower(format!("{op:?}"))),
                Node::Select(c, a, b) => format!("select %{c}, %{a}, %{b}"),
                Node::Cast(dt, a) => format!("cast.{dt} %{a}"),
                Node::Reduce(op, a) => format!("row_{} %{a}", op.name()),
                Node::MatMul(a, w) => format!("matmul %{a}, %{w}"),
            };
            writeln!(f, "%{id:<3} = {text:<32} {}", role(id).unwrap_or(l.name()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(pairs: &[(&str, Vec<f64>)]) -> HashMap<String, Vec<f64>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn a_matmul_is_a_times_w_transposed_and_its_operands_are_matrices() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Full).unwrap();
        let b = g.input("b", Layout::Col).unwrap();
        let y = x.matmul(w) + b;
        // x [2, 3], w [2, 3] (N = 2), b [2].
        let inputs = frame(&[
            ("x", vec![1.0, 2.0, 3.0, -1.0, 0.5, 4.0]),
            ("w", vec![1.0, 0.0, 2.0, 3.0, -1.0, 1.0]),
            ("b", vec![10.0, 20.0]),
        ]);
        let got = g.eval(y.id, &inputs, 2, 2, DType::F32).unwrap();
        assert_eq!(
            got,
            vec![
                1.0 + 6.0 + 10.0,
                3.0 - 2.0 + 3.0 + 20.0,
                7.0 + 10.0,
                -3.0 - 0.5 + 4.0 + 20.0
            ]
        );
        let text = g.to_string();
        assert!(text.lines().next().unwrap().ends_with("rows×K"), "{text}");
        assert!(text.contains("matmul %0, %1"), "{text}");
        // A K that does not divide, and w of another K, are refused.
        let mut bad = inputs.clone();
        bad.insert("w".into(), vec![1.0; 4]);
        let e = g
            .eval(y.id, &bad, 2, 2, DType::F32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("for one K"), "{e}");
        let mut bad = inputs.clone();
        bad.insert("x".into(), vec![1.0; 5]);
        let e = g
            .eval(y.id, &bad, 2, 2, DType::F32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a has 5 values"), "{e}");
        // The input in both roles is the one named; operands are full matrices.
        let v = g.input("v", Layout::Full).unwrap();
        let e = g
            .check((x.matmul(w) + w.matmul(v)).id)
            .unwrap_err()
            .to_string();
        assert!(e.contains("input 'w' is a matmul's a"), "{e}");
        let s = g.input("s", Layout::Scalar).unwrap();
        let e = g.check(x.matmul(s).id).unwrap_err().to_string();
        assert!(e.contains("'s' is declared 1×1"), "{e}");
        // Its operands are read by the matmul only.
        let e = g
            .eval((y + x).id, &inputs, 2, 2, DType::F32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("matmul operand"), "{e}");
    }

    #[test]
    fn layouts_broadcast_and_reduce() {
        use Layout::*;
        assert_eq!(Row.broadcast(Col), Full);
        assert_eq!(Row.broadcast(Scalar), Row);
        assert_eq!(Scalar.broadcast(Col), Col);
        assert_eq!(Full.reduced(), Row);
        assert_eq!(Col.reduced(), Scalar);
        let g = Graph::new();
        let x = g.input("x", Full).unwrap();
        let w = g.input("w", Col).unwrap();
        assert_eq!((x.mean() * w).layout(), Full);
        assert_eq!(w.sum().layout(), Scalar);
        assert_eq!((x.sum() + 1.0).layout(), Row);
    }

    #[test]
    fn the_same_expression_is_one_node_and_constants_fold() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let a = x * x + 1.0;
        let n = g.len();
        let b = x * x + 1.0;
        assert_eq!(a.id, b.id);
        assert_eq!(g.len(), n, "nothing new for the second copy");
        // (2 · 3) + 1 is one constant; 0.5 · (x + 0) keeps x + 0 (no algebraic rewriting).
        let c = (g.constant(2.0) * 3.0) + 1.0;
        assert_eq!(g.node(c.id), Node::Const(7.0));
        assert_eq!(g.node(g.constant(4.0).rsqrt().id), Node::Const(0.5));
        // Declaring an input again: the same node, or an error for another layout.
        assert_eq!(g.input("x", Layout::Full).unwrap().id, x.id);
        let e = g.input("x", Layout::Row).unwrap_err().to_string();
        assert!(
            e.contains("'x'") && e.contains("rows×cols") && e.contains("rows×1"),
            "{e}"
        );
        assert_eq!(g.inputs(), vec![("x".to_string(), Layout::Full)]);
    }

    #[test]
    fn eval_broadcasts_reduces_and_rounds_inputs_to_the_dtype() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Col).unwrap();
        // Each row minus its max, times the column vector; then the row sums.
        let y = (x - x.row_max()) * w;
        let s = y.sum();
        let inputs = frame(&[("x", vec![1.0, 3.0, -2.0, 0.0]), ("w", vec![10.0, 100.0])]);
        let out = g.eval(y.id, &inputs, 2, 2, DType::F32).unwrap();
        assert_eq!(out, vec![-20.0, 0.0, -20.0, 0.0]);
        assert_eq!(
            g.eval(s.id, &inputs, 2, 2, DType::F32).unwrap(),
            vec![-20.0, -20.0]
        );
        // bf16 inputs: 1 + 2^-9 is 1 once stored.
        let one = frame(&[("x", vec![1.0 + 2f64.powi(-9)]), ("w", vec![1.0])]);
        assert_eq!(g.eval(x.id, &one, 1, 1, DType::BF16).unwrap(), vec![1.0]);
        // A max over a row with a NaN is NaN; select and comparisons.
        let nan = frame(&[("x", vec![f64::NAN, 1.0]), ("w", vec![1.0, 1.0])]);
        assert!(g.eval(x.row_max().id, &nan, 1, 2, DType::F32).unwrap()[0].is_nan());
        let relu = g.select(x.gt(g.constant(0.0)), x, g.constant(0.0));
        let v = frame(&[("x", vec![-1.5, 2.5]), ("w", vec![1.0, 1.0])]);
        assert_eq!(
            g.eval(relu.id, &v, 1, 2, DType::F32).unwrap(),
            vec![0.0, 2.5]
        );
        // Clear errors for a missing input or a wrong length.
        let e = g.eval(y.id, &frame(&[("x", vec![0.0; 4])]), 2, 2, DType::F32);
        assert!(e.unwrap_err().to_string().contains("'w' was not given"));
        let e = g.eval(
            y.id,
            &frame(&[("x", vec![0.0; 3]), ("w", vec![0.0; 2])]),
            2,
            2,
            DType::F32,
        );
        assert!(e.unwrap_err().to_string().contains("needs 4 values"));
    }

    #[test]
    fn the_graph_prints_one_line_a_node() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let _ = (x * 2.0).exp().sum();
        let text = g.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[0].starts_with("%0   = input x") && lines[0].ends_with("rows×cols"));
        assert!(lines[2].contains("mul %0, %1"), "{text}");
        assert!(
            lines[4].contains("row_sum %3") && lines[4].ends_with("rows×1"),
            "{text}"
        );
    }
}
