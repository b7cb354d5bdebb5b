//! The ops kernlab implements, one module each. Each module describes its op once (an
//! [`OpDef`]: shapes, flags, inputs, reference, cost, sweep, PyTorch cases) and lists its
//! variants (the registry's rows) beside their launchers; [`OPS`] registers them. The tools
//! above iterate over these descriptors.

pub mod compiled;
pub mod cpu_prims;
pub mod gelu;
pub mod linear;
pub mod matmul;
pub mod mlp;
mod op;
mod params;
pub mod primitives;
pub mod rmsnorm;
/// The slots-a-thread rule of block-a-row kernels (the runtime's: the compiler's row kernels use it too).
pub use crate::runtime::row_slots;
pub mod softmax;

pub use op::*;
pub use params::*;

/// Every op, in the lecture's order: the one registration list.
pub static OPS: &[Op] = &[
    gelu::OP,
    softmax::OP,
    matmul::OP,
    linear::OP,
    rmsnorm::OP,
    mlp::OP,
];

/// Rows (or blocks) of an `m`-row output for a sampled f64 reference: min(`want`, `m`)
/// distinct rows, the first and the last among them where `want ≥ 2`, the rest spread over
/// [0, m) from `seed`; sorted.
pub fn sample_rows(m: usize, want: usize, seed: u64) -> Vec<usize> {
    let want = want.min(m);
    if want == m {
        return (0..m).collect();
    }
    let mut rows = std::collections::BTreeSet::new();
    if want >= 1 {
        rows.insert(0);
    }
    if want >= 2 {
        rows.insert(m - 1);
    }
    // xorshift64* from the seed (a zero state would stay zero): deterministic, spread over
    // [0, m).
    let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
    if s == 0 {
        s = 1;
    }
    while rows.len() < want {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        rows.insert((s.wrapping_mul(0x2545_f491_4f6c_dd1d) % m as u64) as usize);
    }
    rows.into_iter().collect()
}
