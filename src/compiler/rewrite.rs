//! The rewrites the fused kernel gets and the eager tier does not (its launches stay the
//! graph's own operations): forms that compute the same function with less arithmetic a
//! element, where a memory-bound kernel would otherwise run out of instructions (16-bit GeLU).
//!
//! - `1 + tanh(u)` → `2 · sigmoid(2u)`: tanh GeLU's form, without the cancellation of
//!   1 + tanh u for u ≪ 0 (as the hand kernels compute it);
//! - `n / (1 + exp(−z))` → `n · sigmoid(z)`: a spelled-out sigmoid (SiLU, sigmoid GeLU);
//! - `a / d` with `d` a value a row (or one value) and `a` a full or column value →
//!   `a · (1 / d)`: one reciprocal a row, hoisted out of the loop, instead of a divide an
//!   element (softmax's normalisation).

use super::codegen::needed;
use super::graph::{Binary, Graph, Layout, Node, NodeId, Unary};
use crate::runtime::error::Result;

/// Node `out` of `g` rebuilt into a new graph with the rewrites applied; its id there.
pub fn for_fusion(g: &Graph, out: NodeId) -> Result<(Graph, NodeId)> {
    let m = Graph::new();
    let mut map: Vec<Option<NodeId>> = vec![None; out + 1];
    for i in needed(g, out) {
        let node = g.node(i);
        let ops: Vec<NodeId> = node
            .operands()
            .iter()
            .map(|&o| map[o].expect("operands come first"))
            .collect();
        let id = match rewrite(&m, &node, &ops)? {
            Some(id) => id,
            None => m.apply(&node, &ops)?.id,
        };
        map[i] = Some(id);
    }
    Ok((m, map[out].expect("the output was rebuilt")))
}

fn is_const(m: &Graph, id: NodeId, v: f64) -> bool {
    matches!(m.node(id), Node::Const(c) if c == v)
}

/// `1 + e^(−z)` (either order): `Some(z)`.
fn one_plus_exp_neg(m: &Graph, d: NodeId) -> Option<NodeId> {
    let Node::Binary(Binary::Add, a, b) = m.node(d) else {
        return None;
    };
    let e = if is_const(m, a, 1.0) {
        b
    } else if is_const(m, b, 1.0) {
        a
    } else {
        return None;
    };
    match m.node(e) {
        Node::Unary(Unary::Exp, n) => match m.node(n) {
            Node::Unary(Unary::Neg, z) => Some(z),
            _ => None,
        },
        _ => None,
    }
}

/// The rewritten node for `node` over the new operands `ops`, if a rule applies.
fn rewrite(m: &Graph, node: &Node, ops: &[NodeId]) -> Result<Option<NodeId>> {
    Ok(match node {
        Node::Binary(Binary::Add, ..) => {
            let (a, b) = (ops[0], ops[1]);
            let tanh_of = |t: NodeId| match m.node(t) {
                Node::Unary(Unary::Tanh, u) => Some(u),
                _ => None,
            };
            let u = if is_const(m, a, 1.0) {
                tanh_of(b)
            } else if is_const(m, b, 1.0) {
                tanh_of(a)
            } else {
                None
            };
            match u {
                Some(u) => {
                    let two = m.constant(2.0);
                    let two_u = m.apply(&Node::Binary(Binary::Mul, 0, 0), &[two.id, u])?;
                    let s = m.apply(&Node::Unary(Unary::Sigmoid, 0), &[two_u.id])?;
                    Some(
                        m.apply(&Node::Binary(Binary::Mul, 0, 0), &[two.id, s.id])?
                            .id,
                    )
                }
                None => None,
            }
        }
        Node::Binary(Binary::Div, ..) => {
            let (n, d) = (ops[0], ops[1]);
            if let Some(z) = one_plus_exp_neg(m, d) {
                let s = m.apply(&Node::Unary(Unary::Sigmoid, 0), &[z])?;
                Some(if is_const(m, n, 1.0) {
                    s.id
                } else {
                    m.apply(&Node::Binary(Binary::Mul, 0, 0), &[n, s.id])?.id
                })
            } else if matches!(m.layout(d), Layout::Row | Layout::Scalar)
                && matches!(m.layout(n), Layout::Full | Layout::Col)
            {
                let r = m.apply(&Node::Unary(Unary::Recip, 0), &[d])?;
                Some(m.apply(&Node::Binary(Binary::Mul, 0, 0), &[n, r.id])?.id)
            } else {
                None
            }
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::dtype::DType;
    use std::collections::HashMap;

    fn ops(g: &Graph, out: NodeId) -> Vec<String> {
        needed(g, out)
            .into_iter()
            .filter(|&i| !matches!(g.node(i), Node::Input { .. } | Node::Const(_)))
            .map(|i| g.op_name(i))
            .collect()
    }

    #[test]
    fn tanh_gelu_softmax_and_silu_take_the_cheaper_forms_with_the_same_values() {
        let k = 0.797_884_560_802_865_4;
        let g = Graph::new();
        let x = g.input("x", Layout::Full).unwrap();
        let gelu = 0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh());
        let e = (x - x.row_max()).exp();
        let softmax = e / e.sum();
        let silu = x / (1.0 + (-x).exp());
        let xs: Vec<f64> = (0..24).map(|i| (i as f64 - 12.0) * 0.7).collect();
        let inputs = HashMap::from([("x".to_string(), xs)]);
        for (y, has, lacks) in [
            (gelu.id, "sigmoid", "tanh"),
            (softmax.id, "recip", "div"),
            (silu.id, "sigmoid", "exp"),
        ] {
            let (m, out) = for_fusion(&g, y).unwrap();
            let names = ops(&m, out);
            assert!(names.iter().any(|n| n == has), "{names:?}");
            assert!(!names.iter().any(|n| n == lacks), "{names:?}");
            let want = g.eval(y, &inputs, 2, 12, DType::F32).unwrap();
            let got = m.eval(out, &inputs, 2, 12, DType::F32).unwrap();
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} {b}");
            }
        }
        // A divide by a full value stays a divide.
        let (m, out) = for_fusion(&g, (x / (x + 1.0)).id).unwrap();
        assert!(ops(&m, out).contains(&"div".to_string()));
    }
}
