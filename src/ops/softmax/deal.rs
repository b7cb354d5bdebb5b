//! v11 (`cuda/v11_deal`): rows cut into chunks that a persistent grid deals out on demand, an
//! SM taking a chunk whenever it has room for one, so an SM that streams faster takes more;
//! each chunk read once into shared memory by a TMA bulk copy and written once its row is
//! done. sm_90 and later.

use super::*;

/// v11's CTAs: a producer warp, four stats warps and eight write warps, each warp a chunk at a time (kernels/softmax.cu's
/// KL_V11_THREADS).
pub const V11_THREADS: usize = 32 * (1 + 4 + 8);
/// The chunk sizes built, in 16-byte packs (8, 16 and 32 KB).
pub const V11_CHUNKS: [usize; 3] = [512, 1024, 2048];
/// At most this many slots a CTA (the kernel's barrier arrays).
const V11_MAX_SLOTS: usize = 24;
/// Shared memory a CTA keeps for its static part (barriers, scratch) and the driver's
/// reserve, out of the opt-in maximum.
const V11_STATIC_SMEM: usize = 2048;
/// v11's header (kernels/softmax.cu's DealHeader).
const V11_HEADER: usize = 16;

/// v11's tuning (its named configurations: [`V11_CONFIGS`]): the chunk a claim takes, in
/// 16-byte packs (one of [`V11_CHUNKS`]; default 1024, 16 KB), and at most `max_slots` chunk
/// slots a CTA (2 to 24; default: as many as shared memory holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V11Tuning {
    /// 16-byte packs a chunk.
    pub chunk: usize,
    pub max_slots: usize,
}

impl Default for V11Tuning {
    fn default() -> Self {
        V11Tuning::DEFAULT
    }
}

impl V11Tuning {
    /// 16 KB chunks, as many slots as shared memory holds.
    pub const DEFAULT: V11Tuning = V11Tuning {
        chunk: 1024,
        max_slots: V11_MAX_SLOTS,
    };
}

/// v11's shape: `grid` CTAs (one an SM), `cpr` chunks a row, `slots` chunk slots a CTA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V11Config {
    pub grid: usize,
    pub cpr: usize,
    pub slots: usize,
    pub chunk: usize,
}

/// v11's shape for `rows` rows of at most `packs` 16-byte packs, chunks of `chunk` packs,
/// `sms` CTAs and room for `slots` chunks in each. The reason it cannot run otherwise: the
/// grid must hold every chunk of a row at once (chunks a row ≤ grid · slots), or the oldest
/// row could wait on a chunk no CTA has room to claim; the chunk numbers (and the claims
/// past the last, at most a batch of 8 a CTA) must stay within i32.
pub fn v11_config(
    packs: usize,
    rows: usize,
    chunk: usize,
    sms: usize,
    slots: usize,
) -> std::result::Result<V11Config, String> {
    if slots < 2 || sms == 0 || chunk == 0 {
        return Err(format!(
            "a CTA needs room for two chunks of {} KB ({slots} fit)",
            chunk * 16 / 1024
        ));
    }
    let cpr = packs.div_ceil(chunk).max(1);
    if cpr > sms * slots {
        return Err(format!(
            "a row of {cpr} chunks of {} KB is more than all {sms} CTAs hold at once ({} chunks): use v9_gridsync or auto",
            chunk * 16 / 1024,
            sms * slots
        ));
    }
    let grid = sms;
    if rows
        .checked_mul(cpr)
        .and_then(|t| t.checked_add(8 * grid))
        .is_none_or(|t| t > i32::MAX as usize)
    {
        return Err(format!(
            "{rows} rows of {cpr} chunks: at most 2^31 − {} chunks in a launch",
            8 * grid + 1
        ));
    }
    Ok(V11Config {
        grid,
        cpr,
        slots,
        chunk,
    })
}

/// v11's shape on `dev` for `rows` rows of at most `packs` 16-byte packs, with kernel `name`
/// (its chunk size the tuning's): as many slots as shared memory holds (at most the tuning's
/// cap, itself at most 24) with one CTA on every SM, then [`v11_config`]'s rule; its refusal
/// as an error.
pub fn v11_plan(
    dev: &crate::runtime::device::CudaDevice,
    name: &str,
    packs: usize,
    rows: usize,
    tuning: V11Tuning,
) -> Result<V11Config> {
    let f = dev.function(&SOURCE, name)?;
    let chunk_bytes = tuning.chunk * 16;
    let room = dev
        .props
        .max_smem_per_block_optin
        .saturating_sub(V11_STATIC_SMEM)
        / chunk_bytes;
    let mut slots = room.min(tuning.max_slots.min(V11_MAX_SLOTS));
    // The cooperative launch needs a CTA on every SM: take fewer slots if the driver says
    // this many do not fit.
    while slots >= 2 && smem_blocks_per_sm(dev, &f, name, V11_THREADS, slots * chunk_bytes)? < 1 {
        slots -= 1;
    }
    v11_config(
        packs,
        rows,
        tuning.chunk,
        dev.props.sm_count as usize,
        slots,
    )
    .map_err(|why| unsupported("v11_deal", why))
}

/// v11: chunks of rows dealt on demand to one CTA an SM (cooperative launch), each read once
/// by a bulk copy into shared memory, reduced and published, and written once its row's
/// chunks have all been published. The default run: the configuration `kernlab autotune`
/// cached for this input's bucket, else [`V11Tuning::DEFAULT`].
pub fn run_v11_deal(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match cached_tuning("v11_deal", x) {
        Some(Tuning::V11(t)) => run_v11_tuned(p, x, y, t),
        _ => run_v11_tuned(p, x, y, V11Tuning::DEFAULT),
    }
}

/// v11 in the tuning given; a chunk size it was not built for is refused.
pub fn run_v11_tuned(
    p: &SoftmaxParams,
    x: &Tensor,
    y: &mut Tensor,
    tuning: V11Tuning,
) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    require_bulk_copies("v11_deal", &io)?;
    require_peelable("v11_deal", &r, &io)?;
    if !V11_CHUNKS.contains(&tuning.chunk) {
        return Err(Error::Invalid(format!(
            "v11_deal has no kernel for chunks of {} packs (built: {V11_CHUNKS:?})",
            tuning.chunk
        )));
    }
    let name = v11_kernel(tuning.chunk, x.dtype());
    let c = v11_plan(&io.dev, &name, r.cols / r.pack, r.rows, tuning)?;
    let chunk_bytes = c.chunk * 16;
    let cfg = LaunchConfig {
        grid_dim: (c.grid as u32, 1, 1),
        block_dim: (V11_THREADS as u32, 1, 1),
        shared_mem_bytes: (c.slots * chunk_bytes) as u32,
    };
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    let (cpr, ns) = (c.cpr as i32, c.slots as i32);
    let dev = io.dev.clone();
    // Four workspaces: the header (claim counter, done count, launch tag), always at the same
    // place; a count a row; a tagged 16-byte state a chunk; a tagged 16-byte state a row.
    dev.with_workspaces(
        [
            ("softmax v11 header", V11_HEADER),
            ("softmax v11 row counts", r.rows.max(1) * 4),
            ("softmax v11 states", (r.rows * c.cpr).max(1) * 16),
            ("softmax v11 row states", r.rows.max(1) * 16),
        ],
        |[hdr, cnt, states, rowst]| {
            let (hdr, cnt, states, rowst) = (&*hdr, &*cnt, &*states, &*rowst);
            crate::runtime::launch::launch_cooperative!(
                io.dev,
                &SOURCE,
                name,
                cfg,
                [
                    io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &cpr, &ns, hdr, cnt, states,
                    rowst
                ]
            );
            Ok(())
        },
    )
}

/// v11's kernel for chunks of `chunk` 16-byte packs (one of [`V11_CHUNKS`]) and `dt`.
pub fn v11_kernel(chunk: usize, dt: DType) -> String {
    format!("softmax_v11_deal_c{chunk}_{dt}")
}

pub fn symbols_v11(dt: DType) -> Vec<String> {
    V11_CHUNKS.iter().map(|&c| v11_kernel(c, dt)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v11_holds_a_row_in_the_grid_or_refuses_it() {
        // 1 Mi f32 in 16 KB chunks: 256 a row, 132 CTAs of 13 slots hold 1716.
        let c = v11_config(1 << 18, 256, 1024, 132, 13).unwrap();
        assert_eq!((c.grid, c.cpr, c.slots), (132, 256, 13));
        // A row narrower than a chunk is one chunk; an empty one too.
        assert_eq!(v11_config(3, 5, 1024, 132, 13).unwrap().cpr, 1);
        assert_eq!(v11_config(0, 5, 1024, 132, 13).unwrap().cpr, 1);
        // Exactly what the grid holds runs; one chunk more is refused, saying why.
        assert!(v11_config(132 * 13 * 1024, 1, 1024, 132, 13).is_ok());
        let e = v11_config(132 * 13 * 1024 + 1, 1, 1024, 132, 13).unwrap_err();
        assert!(e.contains("more than all 132 CTAs hold"), "{e}");
        // Chunk numbers past i32 are refused.
        assert!(v11_config(1024, (1 << 31) - 1000, 1024, 132, 13)
            .unwrap_err()
            .contains("2^31"));
        // No room for two chunks.
        assert!(v11_config(1024, 1, 1024, 132, 1).is_err());
    }

    #[test]
    fn v11_configs_name_built_chunks_and_slot_caps_it_holds() {
        assert_eq!(V11Tuning::default(), V11Tuning::DEFAULT);
        assert!(V11_CHUNKS.contains(&V11Tuning::DEFAULT.chunk));
        for c in V11_CONFIGS {
            let Tuning::V11(t) = c.tuning else {
                panic!("{}: not a v11 tuning", c.name)
            };
            assert!(V11_CHUNKS.contains(&t.chunk), "{}", c.name);
            assert!((2..=V11_MAX_SLOTS).contains(&t.max_slots), "{}", c.name);
        }
    }
}
