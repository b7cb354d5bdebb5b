//! A graph run eagerly: one kernel launch a node, each writing its value to memory for the
//! next, as eager PyTorch runs the same composition (the `manual` tier). Temporaries are f32;
//! 16-bit inputs are first converted (one launch each, as `.float()`), and the result is
//! converted back at the end (one more). Each node's kernel is the compiler's own, generated
//! for a graph of that one operation over its operands' values.

use super::codegen::needed;
use super::graph::{Graph, Layout, Node, NodeId};
use super::kernel::{build_io, Kernel};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use std::collections::HashMap;

/// Where a step's operand comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// A graph input, by name.
    Input(String),
    /// The value a node's step wrote.
    Temp(NodeId),
}

/// Where a step writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    /// A temporary holding node `id`'s value, of `layout`.
    Temp(NodeId, Layout),
    /// The call's output.
    Output,
}

#[derive(Debug)]
struct Step {
    kernel: Kernel,
    /// The kernel's inputs by name, and where each comes from.
    operands: Vec<(String, Source)>,
    dest: Dest,
}

/// A graph's eager plan: its launches in order.
#[derive(Debug)]
pub struct Eager {
    steps: Vec<Step>,
    pub dtype: DType,
    /// The graph's inputs in the order it declared them.
    pub declared: Vec<String>,
}

/// The layout a value of layout `l` has in the frame of a kernel computing a value of layout
/// `frame` (a row value is the whole of a `rows × 1` frame).
fn in_frame(frame: Layout, l: Layout) -> Layout {
    match (frame, l) {
        (Layout::Full, l) => l,
        (f, l) if f == l => Layout::Full,
        _ => Layout::Scalar,
    }
}

/// A temporary's shape for a value of `layout` in a `rows × cols` frame.
fn temp_shape(layout: Layout, rows: usize, cols: usize) -> Vec<usize> {
    match layout {
        Layout::Full => vec![rows, cols],
        Layout::Row => vec![rows, 1],
        Layout::Col => vec![1, cols],
        Layout::Scalar => vec![1, 1],
    }
}

/// The kernel that converts its input `a`, stored as `from`, to `to`.
fn conversion(from: DType, to: DType, name: &str) -> Result<Kernel> {
    let m = Graph::new();
    let a = m.input("a", Layout::Full)?;
    build_io(&m, a.id, from, to, name)
}

/// The eager plan for node `out` of `g`, stored in `dtype` (a full `rows × cols` value),
/// kernel symbols named from `name`.
pub fn plan(g: &Graph, out: NodeId, dtype: DType, name: &str) -> Result<Eager> {
    if out >= g.len() {
        return Err(Error::Invalid(format!("node %{out} is not in the graph")));
    }
    if g.layout(out) != Layout::Full {
        return Err(Error::Invalid(format!(
            "%{out}: an eager plan writes a full rows × cols output"
        )));
    }
    let convert = dtype != DType::F32;
    let nodes = needed(g, out);
    let mut steps = Vec::new();
    // A 16-bit input converted to f32 first, as `.float()`.
    if convert {
        for &i in &nodes {
            if let Node::Input {
                name: input,
                layout,
            } = g.node(i)
            {
                steps.push(Step {
                    kernel: conversion(dtype, DType::F32, &format!("{name}_float"))?,
                    operands: vec![("a".into(), Source::Input(input))],
                    dest: Dest::Temp(i, layout),
                });
            }
        }
    }
    let is_op = |i: NodeId| !matches!(g.node(i), Node::Input { .. } | Node::Const(_));
    for &i in nodes.iter().filter(|&&i| is_op(i)) {
        let node = g.node(i);
        // The frame: the operand's for a reduction (it reads a row), else the value's own.
        let frame = match node {
            Node::Reduce(_, a) => g.layout(a),
            _ => g.layout(i),
        };
        let m = Graph::new();
        let mut operands = Vec::new();
        let mut ids = Vec::new();
        for o in node.operands() {
            ids.push(match g.node(o) {
                Node::Const(v) => m.constant(v).id,
                Node::Input { name: input, .. } if !convert => {
                    let e = m.input(&format!("t{o}"), in_frame(frame, g.layout(o)))?;
                    operands.push((format!("t{o}"), Source::Input(input)));
                    e.id
                }
                _ => {
                    let e = m.input(&format!("t{o}"), in_frame(frame, g.layout(o)))?;
                    operands.push((format!("t{o}"), Source::Temp(o)));
                    e.id
                }
            });
        }
        operands.dedup();
        let y = m.apply(&node, &ids)?;
        let last = i == out && !convert;
        steps.push(Step {
            kernel: build_io(
                &m,
                y.id,
                DType::F32,
                DType::F32,
                &format!("{name}_{}{i}", g.op_name(i)),
            )?,
            operands,
            dest: if last {
                Dest::Output
            } else {
                Dest::Temp(i, g.layout(i))
            },
        });
    }
    // The output is an input or a constant: one copy (or fill) makes it.
    if !is_op(out) && !convert {
        let m = Graph::new();
        let (y, operands) = match g.node(out) {
            Node::Const(v) => (m.constant(v), vec![]),
            Node::Input { name: input, .. } => (
                m.input("a", Layout::Full)?,
                vec![("a".to_string(), Source::Input(input))],
            ),
            _ => unreachable!("not an operation"),
        };
        let y = (y + 0.0 * m.constant(0.0)).id;
        steps.push(Step {
            kernel: build_io(&m, y, dtype, dtype, &format!("{name}_copy"))?,
            operands,
            dest: Dest::Output,
        });
    }
    // f32 back to the storage dtype.
    if convert {
        steps.push(Step {
            kernel: conversion(DType::F32, dtype, &format!("{name}_to_{dtype}"))?,
            operands: vec![("a".into(), Source::Temp(out))],
            dest: Dest::Output,
        });
    }
    Ok(Eager {
        steps,
        dtype,
        declared: g.inputs().into_iter().map(|(n, _)| n).collect(),
    })
}

impl Eager {
    /// Its launches: one a step.
    pub fn launches(&self) -> usize {
        self.steps.len()
    }

    /// Each step's kernel, in launch order.
    pub fn kernels(&self) -> impl Iterator<Item = &Kernel> {
        self.steps.iter().map(|s| &s.kernel)
    }

    /// Run every step on `inputs` (by the graph's input names), writing `y`: each step's
    /// value in a temporary of its own, freed after the last step that reads it.
    pub fn run(&self, inputs: &[(&str, &Tensor)], y: &mut Tensor) -> Result<()> {
        let dev = y.device();
        let (rows, cols, _) = y.rows_cols();
        let mut last_read: HashMap<NodeId, usize> = HashMap::new();
        for (k, s) in self.steps.iter().enumerate() {
            for (_, src) in &s.operands {
                if let Source::Temp(t) = src {
                    last_read.insert(*t, k);
                }
            }
        }
        let mut temps: HashMap<NodeId, Tensor> = HashMap::new();
        for (k, s) in self.steps.iter().enumerate() {
            let mut named: Vec<(&str, &Tensor)> = Vec::with_capacity(s.operands.len());
            for (n, src) in &s.operands {
                let t = match src {
                    Source::Input(i) => inputs
                        .iter()
                        .find(|(m, _)| m == i)
                        .map(|(_, t)| *t)
                        .ok_or_else(|| {
                            Error::Invalid(format!("no tensor for the graph's input '{i}'"))
                        })?,
                    Source::Temp(t) => temps.get(t).expect("a step's operands come first"),
                };
                named.push((n.as_str(), t));
            }
            match s.dest {
                Dest::Output => {
                    s.kernel.launch(&named, y)?;
                }
                Dest::Temp(id, layout) => {
                    let mut t = Tensor::empty(&temp_shape(layout, rows, cols), DType::F32, &dev)?;
                    s.kernel.launch(&named, &mut t)?;
                    drop(named);
                    temps.insert(id, t);
                }
            }
            temps.retain(|t, _| last_read.get(t).is_some_and(|&l| l > k));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_launch_a_node_with_conversions_around_16_bit_storage() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let k = 0.797_884_560_802_865_4;
        let y = 0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh());
        let e = plan(&g, y.id, DType::F32, "kl_eager_gelu").unwrap();
        // The lecture's count: 9 operations, 9 launches.
        assert_eq!(e.launches(), 9);
        let names: Vec<&str> = e.kernels().map(|k| k.generated.name.as_str()).collect();
        // Named by operation and node: the launches read as the graph's lines.
        assert_eq!(names[0], "kl_eager_gelu_mul2");
        assert!(names.contains(&"kl_eager_gelu_tanh10"), "{names:?}");
        // bf16: x to f32 first, the result back at the end.
        let e = plan(&g, y.id, DType::BF16, "kl_eager_gelu").unwrap();
        assert_eq!(e.launches(), 11);
        let names: Vec<&str> = e.kernels().map(|k| k.generated.name.as_str()).collect();
        assert_eq!(names[0], "kl_eager_gelu_float_scalar");
        assert_eq!(names[10], "kl_eager_gelu_to_bf16_scalar");
        assert!(e
            .kernels()
            .skip(1)
            .take(9)
            .all(|k| k.dtype == DType::F32 && k.in_dtype == DType::F32));
    }

    #[test]
    fn reductions_write_a_value_a_row_that_later_nodes_broadcast() {
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let w = g.input("w", Layout::Col).unwrap();
        let y = x * ((x * x).mean() + 1e-6).rsqrt() * w;
        let e = plan(&g, y.id, DType::F32, "kl_eager_rms").unwrap();
        // square, mean, + eps, rsqrt, × r, × w.
        assert_eq!(e.launches(), 6);
        let mean = &e.steps[1];
        assert_eq!(mean.kernel.generated.out_layout, Layout::Row);
        assert_eq!(mean.dest, Dest::Temp(3, Layout::Row));
        // `+ eps` runs in a rows × 1 frame: the mean is its whole input there.
        let add = &e.steps[2];
        assert_eq!(
            add.kernel.generated.inputs,
            vec![("t3".to_string(), Layout::Full)]
        );
        // x × r reads x and the per-row r as a value a row.
        let scale = &e.steps[4];
        assert_eq!(
            scale.kernel.generated.inputs,
            vec![
                ("t0".to_string(), Layout::Full),
                ("t6".to_string(), Layout::Row)
            ]
        );
        assert_eq!(scale.operands[0].1, Source::Input("x".into()));
        assert_eq!(e.steps[5].dest, Dest::Output);
        assert_eq!(e.declared, ["x", "w"]);
        assert_eq!(temp_shape(Layout::Row, 7, 9), [7, 1]);
        assert_eq!(in_frame(Layout::Row, Layout::Row), Layout::Full);
        assert_eq!(in_frame(Layout::Row, Layout::Scalar), Layout::Scalar);
        assert_eq!(in_frame(Layout::Full, Layout::Col), Layout::Col);
    }
}
