use super::*;
use crate::runtime::device::cuda::CudaDevice;
use crate::runtime::device::triton::{row_block_warps, triton_type, TritonSpec};
use crate::runtime::launch::launch_triton;

// ---- Triton -----------------------------------------------------------------------------------
static TRITON: KernelSource = KernelSource {
    file: "softmax.py",
    src: include_str!("../../../kernels/triton/softmax.py"),
};

/// The widest row the Triton kernel takes: it holds a row in one block of the next power of
/// two, on chip; at 131072 columns that spills (docs/triton.md), and past it compiling takes
/// minutes for a kernel that only gets slower.
pub const TRITON_MAX_COLS: usize = 1 << 17;

/// The fused-softmax tutorial's launch facts for rows of `cols`: the block (the next power of
/// two ≥ cols) and its warps (4; 8 from 2048 columns; 16 from 4096). A program keeps the next
/// row's load in flight (two stages, staged in shared memory by Triton's pipeliner) while two
/// rows fit in 64 KiB; wider rows go one at a time (two would not fit a CTA's shared memory).
/// `hint(name)`: whether the argument is a multiple of 16 (a pointer: 16-byte aligned), as
/// Triton's own launcher specializes.
pub fn triton_spec(
    p: &SoftmaxParams,
    dt: DType,
    cols: usize,
    hint: &dyn Fn(&str) -> bool,
) -> Result<TritonSpec> {
    if cols > TRITON_MAX_COLS {
        return Err(unsupported(
            "triton",
            format!(
                "rows of {cols} columns are wider than the {TRITON_MAX_COLS} the tutorial's \
                 kernel holds on chip (use auto)"
            ),
        ));
    }
    let block = cols.max(1).next_power_of_two();
    let warps = row_block_warps(block);
    let ptr = triton_type(dt, true);
    let stages = if 2 * block * dt.size() <= 64 * 1024 {
        2
    } else {
        1
    };
    Ok(TritonSpec::new(&TRITON, "softmax_kernel")
        .arg_hinted("y_ptr", &ptr, hint("y_ptr"))
        .arg_hinted("x_ptr", &ptr, hint("x_ptr"))
        .arg_hinted("x_stride", "i64", hint("x_stride"))
        .arg_hinted("y_stride", "i64", hint("y_stride"))
        .arg_hinted("rows", "i32", hint("rows"))
        .arg_hinted("cols", "i32", hint("cols"))
        .constexpr("BLOCK", block as u64)
        .constexpr("NUM_STAGES", stages)
        .constexpr("LOG", p.log_softmax)
        .warps(warps)
        .stages(stages))
}

/// The tutorial's occupancy arithmetic: programs an SM holds by registers (and by shared
/// memory, where the kernel uses some; and by threads), times the SMs, at most one a row.
pub fn triton_programs(dev: &CudaDevice, regs: u32, shared: u32, warps: u32, rows: usize) -> u32 {
    let p = &dev.props;
    let threads = warps * 32;
    let by_regs = p.regs_per_sm / (regs.max(1) * threads);
    let by_smem = (p.max_smem_per_block_optin as u32)
        .checked_div(shared)
        .unwrap_or(u32::MAX);
    let by_threads = p.max_threads_per_sm / threads;
    let per_sm = by_regs.min(by_smem).min(by_threads).max(1);
    (p.sm_count * per_sm).min(rows.max(1) as u32)
}

/// triton: the fused-softmax tutorial's kernel in Triton, a row a block on chip, a persistent
/// grid sized by occupancy.
pub fn run_triton(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let d16 = |v: usize| v.is_multiple_of(16);
    let (ax, ay) = (aligned16(&io.dev, io.x), aligned16(&io.dev, io.y));
    let hint = |n: &str| match n {
        "x_ptr" => ax,
        "y_ptr" => ay,
        "x_stride" => d16(r.ldx as usize),
        "y_stride" => d16(r.ldy as usize),
        "rows" => d16(r.rows),
        _ => d16(r.cols),
    };
    let spec = triton_spec(p, x.dtype(), r.cols, &hint)?;
    let (rows, cols) = (
        i32::try_from(r.rows).map_err(|_| unsupported("triton", format!("{} rows", r.rows)))?,
        r.cols as i32,
    );
    let t = io.dev.triton(&spec)?;
    let res = CudaDevice::function_resources(&t.f)?;
    let programs = triton_programs(
        &io.dev,
        res.registers,
        t.kernel.meta.shared,
        t.kernel.meta.num_warps,
        r.rows,
    );
    launch_triton!(
        io.dev,
        t,
        (programs, 1, 1),
        [io.y, io.x, &r.ldx, &r.ldy, &rows, &cols]
    );
    Ok(())
}
