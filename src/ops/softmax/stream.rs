//! v10 (`cuda/v10_l2pass`: two passes, the second from L2) and v7 (`cuda/v7_stream`: tiles
//! streamed through shared memory by TMA): autotune candidates, slower than v8 and v9 where
//! measured and not in `auto`'s heuristic.

use super::*;

/// v10's CTAs: 512 threads, two an SM (its launch bounds).
pub const V10_THREADS: usize = 512;

/// v10's shape: `grid` co-resident CTAs, a row cut into `cpr` tiles of `tile` 16-byte packs,
/// the second pass `lag` iterations behind the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V10Config {
    pub grid: usize,
    pub cpr: usize,
    pub lag: usize,
    pub tile: usize,
}

impl V10Config {
    /// Bytes of input L2 must keep between a tile's two reads: the tiles read in the last
    /// lag + 1 iterations.
    pub fn l2_window(&self) -> usize {
        (self.lag + 1) * self.grid * self.tile * 16
    }
}

/// v10's shape for `rows` rows of at most `packs` 16-byte packs, tiles of `tile` packs and
/// `resident` co-resident CTAs: the grid is the resident CTAs (no more than the tiles), and
/// the lag the least that keeps every wait pointing back in time —
/// ⌈(cpr − 1) / grid⌉ + 1 — plus `extra`. `None` with no resident CTA.
pub fn v10_config(
    packs: usize,
    rows: usize,
    tile: usize,
    resident: usize,
    extra: usize,
) -> Option<V10Config> {
    if resident == 0 || tile == 0 {
        return None;
    }
    let cpr = packs.div_ceil(tile).max(1);
    let grid = resident.min(rows.max(1) * cpr);
    Some(V10Config {
        grid,
        cpr,
        lag: (cpr - 1).div_ceil(grid) + 1 + extra,
        tile,
    })
}

/// v10's tuning, from `KERNLAB_V10` ("u=2|4,lag=N,grid=G") for experiments: `u`, the 16-byte
/// packs a thread loads a pass (a tile is 512·u packs; default 4); `lag`, iterations added to
/// the least safe lag (default 0); `grid`, at most this many CTAs (default: all resident).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V10Tuning {
    pub u: usize,
    pub extra_lag: usize,
    pub max_grid: Option<usize>,
}

impl V10Tuning {
    pub fn parse(spec: &str) -> Self {
        let mut t = V10Tuning {
            u: 4,
            extra_lag: 0,
            max_grid: None,
        };
        for (k, _, n) in tuning_pairs(spec) {
            match (k, n) {
                ("u", Some(n)) => t.u = if n <= 2 { 2 } else { 4 },
                ("lag", Some(n)) => t.extra_lag = n.min(64),
                ("grid", Some(n)) if n > 0 => t.max_grid = Some(n),
                _ => {}
            }
        }
        t
    }
    /// v10's shape under these settings ([`v10_config`]) for `rows` rows of at most `packs`
    /// 16-byte packs, `resident` CTAs on the device: tiles of 512·u packs, the grid capped at
    /// `max_grid`, `extra_lag` added to the lag.
    pub fn shape(&self, packs: usize, rows: usize, resident: usize) -> Option<V10Config> {
        let resident = resident.min(self.max_grid.unwrap_or(usize::MAX));
        v10_config(packs, rows, V10_THREADS * self.u, resident, self.extra_lag)
    }
    /// `KERNLAB_V10`'s settings, read once per process.
    pub fn from_env() -> Self {
        static T: std::sync::OnceLock<V10Tuning> = std::sync::OnceLock::new();
        tuning_from_env(&T, "KERNLAB_V10", V10Tuning::parse)
    }
}

/// v10: rows cut into tiles dealt out to a persistent co-resident grid (cooperative launch);
/// each tile read twice, the second time from L2 `lag` iterations later, once its row's
/// (max, sum) is known. One HBM read and one write while L2 holds the window
/// ([`V10Config::l2_window`]).
pub fn run_v10_l2pass(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    run_v10_tuned(p, x, y, V10Tuning::from_env())
}

/// v10 with the tuning given rather than `KERNLAB_V10`'s (for tests and experiments).
pub fn run_v10_tuned(p: &Params, x: &Tensor, y: &mut Tensor, tuning: V10Tuning) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    require_peelable("v10_l2pass", &r, &io)?;
    let name = format!("softmax_v10_l2pass_u{}_{}", tuning.u, x.dtype());
    let f = io.dev.function(&SOFTMAX, &name)?;
    let resident = blocks_per_sm(&f, V10_THREADS, 0)? * io.dev.props.sm_count as usize;
    let c = tuning
        .shape(r.cols / r.pack, r.rows, resident)
        .ok_or_else(|| {
            unsupported(
            "v10_l2pass",
            "no CTA to run on (the device holds none of its kernel, or the grid is capped at 0)"
                .into(),
        )
        })?;
    let cfg = LaunchConfig {
        grid_dim: (c.grid as u32, 1, 1),
        block_dim: (V10_THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // Two workspaces: the header (done count, launch tag), always at the same place, and a
    // tagged 16-byte state slot a tile.
    let tile_bytes = r.rows * c.cpr * 16;
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    let (cpr, lag) = (c.cpr as i32, c.lag as i32);
    let dev = io.dev.clone();
    dev.with_workspaces(
        [
            ("softmax v10 header", V10_HEADER),
            ("softmax v10 tiles", tile_bytes.max(16)),
        ],
        |[hdr, tiles]| {
            let (hdr, tiles) = (&*hdr, &*tiles);
            crate::launch_cooperative!(
                io.dev,
                &SOFTMAX,
                name,
                cfg,
                [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &cpr, &lag, hdr, tiles]
            );
            Ok(())
        },
    )
}

/// v10's header (kernels/softmax.cu's L2PassHeader).
const V10_HEADER: usize = 32;

pub fn symbols_v10(dt: DType) -> Vec<String> {
    vec![
        format!("softmax_v10_l2pass_u2_{dt}"),
        format!("softmax_v10_l2pass_u4_{dt}"),
    ]
}

/// v7's CTAs: 512 threads, one or two an SM (`V7Tuning::per_sm`).
pub const V7_THREADS: usize = 512;
/// At most this many stages (the kernel's mbarrier array).
const V7_MAX_STAGES: usize = 8;
/// The fewest packs a v7 CTA is given of a row split to fill the GPU (1 KB).
const V7_MIN_PART: usize = 64;

/// v7's shape: G CTAs a row, R rows a tile, a row part's room in a stage (16-byte packs),
/// the stages in flight, and the units (groups of G CTAs) of the persistent grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V7Config {
    pub g: usize,
    pub r: usize,
    pub part_packs: usize,
    pub stages: usize,
    pub units: usize,
}

impl V7Config {
    pub fn stage_bytes(&self) -> usize {
        self.r * self.part_packs * 16
    }
    pub fn smem_bytes(&self) -> usize {
        self.stages * self.stage_bytes()
    }
    pub fn grid(&self) -> usize {
        self.units * self.g
    }
}

/// v7's tuning: a whole row (G = 1) while it is at most `whole` bytes; split rows in parts
/// of about `part` bytes; tiles of whole rows of up to `tile` bytes; `per_sm` CTAs an SM
/// sharing its shared memory; `lag` tiles between a split row's reduction and its write.
/// `KERNLAB_V7` may set them ("whole=64,part=64,tile=32,per_sm=2,lag=1", sizes in KiB) for
/// experiments; the defaults are the best measured on the H200 (docs/perf-notes.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V7Tuning {
    pub whole: usize,
    pub part: usize,
    pub tile: usize,
    /// CTAs an SM (each gets its share of the shared memory).
    pub per_sm: usize,
    /// Tiles a CTA reduces ahead of the one it writes, when rows are split (≤ 3).
    pub lag: usize,
}

impl Default for V7Tuning {
    fn default() -> Self {
        V7Tuning {
            whole: 64 << 10,
            part: 64 << 10,
            tile: 32 << 10,
            per_sm: 2,
            lag: 1,
        }
    }
}

impl V7Tuning {
    /// The defaults with `spec`'s settings over them (sizes in KiB; others ignored).
    pub fn parse(spec: &str) -> Self {
        let mut t = V7Tuning::default();
        for (k, _, n) in tuning_pairs(spec) {
            match (k, n) {
                ("whole", Some(v)) => t.whole = v << 10,
                ("part", Some(v)) => t.part = v << 10,
                ("tile", Some(v)) => t.tile = v << 10,
                ("per_sm", Some(v)) => t.per_sm = v.clamp(1, 2),
                ("lag", Some(v)) => t.lag = v.min(3),
                _ => {}
            }
        }
        t
    }
    /// The defaults with `KERNLAB_V7`'s settings over them, read once per process (v7's
    /// launcher asks on every call).
    pub fn from_env() -> Self {
        static TUNING: std::sync::OnceLock<V7Tuning> = std::sync::OnceLock::new();
        tuning_from_env(&TUNING, "KERNLAB_V7", V7Tuning::parse)
    }
}

/// v7's shape for rows of at most `packs` 16-byte packs of body, `rows` rows, `ctas`
/// resident CTAs and `smem` bytes of shared memory a CTA. `None` when a row's part would not
/// fit one stage even split across every CTA.
pub fn v7_config(
    packs: usize,
    rows: usize,
    ctas: usize,
    smem: usize,
    t: V7Tuning,
) -> Option<V7Config> {
    let packs = packs.max(1);
    let rows = rows.max(1);
    let ctas = ctas.max(1);
    let (mut g, mut r) = if packs * 16 <= t.whole {
        let fit = (t.tile / (packs * 16)).clamp(1, 16);
        (1, 1 << fit.ilog2())
    } else {
        (packs.div_ceil((t.part / 16).max(1)).min(ctas), 1)
    };
    // Too few tiles to fill the GPU: one row a tile, each split across more CTAs.
    if rows.div_ceil(r) * g < ctas {
        r = 1;
        let fill = ctas / rows;
        g = g.max(fill.min(packs.div_ceil(V7_MIN_PART))).min(ctas);
    }
    let units = (ctas / g).min(rows.div_ceil(r)).max(1);
    if g > 1 {
        // Spread the parts over every CTA the units leave (a few idle SMs cost more than a
        // few smaller parts).
        g = (ctas / units).min(packs.div_ceil(V7_MIN_PART)).max(g);
    }
    let part_packs = packs.div_ceil(g);
    let stage = r * part_packs * 16;
    let stages = (smem / stage).min(V7_MAX_STAGES);
    (stages >= 1).then_some(V7Config {
        g,
        r,
        part_packs,
        stages,
        units,
    })
}

/// v7: a persistent grid streams tiles of rows (or parts of split rows) through shared
/// memory, filled by TMA bulk copies `stages` tiles ahead; rows split across CTAs exchange
/// (max, sum) as v6 does. sm_90 and later.
pub fn run_v7_stream(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let refuse = |why: String| unsupported("v7_stream", why);
    require_bulk_copies("v7_stream", &io)?;
    require_peelable("v7_stream", &r, &io)?;
    // Tiles of 16 rows: keep tile indices (and rows + 15) within i32.
    if r.rows > i32::MAX as usize - 16 {
        return Err(refuse(format!("{} rows: at most 2^31 − 17", r.rows)));
    }
    let name = format!("softmax_v7_stream_{}", x.dtype());
    let f = io.dev.function(&SOFTMAX, &name)?;
    let tune = V7Tuning::from_env();
    let packs = r.cols / r.pack;
    // per_sm CTAs an SM share its shared memory; each also needs its static shared memory
    // (barriers, scratch: ~1.2 KB) and the 1 KB the driver reserves per block. The driver's
    // occupancy figure confirms they fit (a cooperative launch needs every CTA resident);
    // if not, fewer CTAs an SM take more each.
    let mut chosen = None;
    for per_sm in (1..=tune.per_sm).rev() {
        let budget = (io.dev.props.max_smem_per_block_optin / per_sm).saturating_sub(3072);
        let ctas = per_sm * io.dev.props.sm_count as usize;
        let Some(c) = v7_config(packs, r.rows, ctas, budget, tune) else {
            continue;
        };
        if smem_blocks_per_sm(&io.dev, &f, &name, V7_THREADS, c.smem_bytes())? >= per_sm {
            chosen = Some(c);
            break;
        }
    }
    let c = chosen.ok_or_else(|| {
        refuse(format!(
            "rows of {} columns need more shared memory than all {} SMs hold at once (use v6_split or auto)",
            r.cols, io.dev.props.sm_count
        ))
    })?;
    let grid = c.grid();
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (V7_THREADS as u32, 1, 1),
        shared_mem_bytes: c.smem_bytes() as u32,
    };
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    let (gi, ri, chunk, stages) = (
        c.g as i32,
        c.r as i32,
        (c.part_packs * r.pack) as i32,
        c.stages as i32,
    );
    // A tile stays in its stage from its reduction until `lag` tiles later it is written;
    // keep a stage free for the next load beyond that.
    let lag = tune.lag.min(c.stages.saturating_sub(2)) as i32;
    let dev = io.dev.clone();
    // A slot per CTA for each of the last 8 tiles (KL_V7_SLOT_TILES).
    with_split_workspace(&dev, "softmax v7 workspace", 8 * grid, |hdr, slots| {
        crate::launch_cooperative!(
            io.dev,
            &SOFTMAX,
            name,
            cfg,
            [
                io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &gi, &ri, &chunk, &stages, &lag,
                hdr, slots
            ]
        );
        Ok(())
    })
}

pub fn symbols_v7(dt: DType) -> Vec<String> {
    vec![format!("softmax_v7_stream_{dt}")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v10_lags_far_enough_that_every_wait_looks_back_in_time() {
        // A row of one tile: the second pass one iteration behind the first.
        let c = v10_config(2048, 4096, 2048, 264, 0).unwrap();
        assert_eq!((c.grid, c.cpr, c.lag), (264, 1, 1));
        // 4 Mi f32 (1 Mi packs) in tiles of 2048 packs: 512 a row over 264 CTAs, so a row's
        // last tile comes two iterations after its first: lag 3.
        let c = v10_config(1 << 20, 64, 2048, 264, 0).unwrap();
        assert_eq!((c.grid, c.cpr, c.lag), (264, 512, 3));
        assert_eq!(c.l2_window(), 4 * 264 * 2048 * 16);
        // A partial last tile counts; the extra lag adds on.
        let c = v10_config(2049, 1, 2048, 264, 2).unwrap();
        assert_eq!((c.grid, c.cpr, c.lag), (2, 2, 4));
        // Fewer tiles than resident CTAs: one CTA a tile. An empty row still has a tile.
        assert_eq!(v10_config(100, 3, 2048, 264, 0).unwrap().grid, 3);
        assert_eq!(v10_config(0, 0, 2048, 264, 0).unwrap().cpr, 1);
        assert_eq!(v10_config(1, 1, 2048, 0, 0), None);
        // Whatever the shape: every tile of a row lies at most lag − 1 iterations after the
        // row's first tile, from any tile's iteration (tile t's is t / grid).
        for (packs, rows, resident) in [(5000, 7, 264), (1 << 20, 3, 132), (9000, 40, 17)] {
            let c = v10_config(packs, rows, 2048, resident, 0).unwrap();
            for t in 0..rows * c.cpr {
                let last = (t / c.cpr) * c.cpr + c.cpr - 1;
                assert!(
                    last / c.grid < t / c.grid + c.lag,
                    "{packs} {rows} {resident}: {t}"
                );
            }
        }
    }

    #[test]
    fn v10_tuning_reads_its_settings() {
        let t = |u, extra_lag, max_grid| V10Tuning {
            u,
            extra_lag,
            max_grid,
        };
        assert_eq!(V10Tuning::parse(""), t(4, 0, None));
        assert_eq!(V10Tuning::parse("u=2, lag=3"), t(2, 3, None));
        assert_eq!(V10Tuning::parse("u=8,lag=x,grid=0"), t(4, 0, None));
        assert_eq!(V10Tuning::parse("grid=132"), t(4, 0, Some(132)));
        // The settings reach the shape: f32 256×1 Mi (262144 packs) on 264 resident CTAs.
        let d = t(4, 0, None).shape(262_144, 256, 264).unwrap();
        assert_eq!((d.grid, d.tile, d.cpr, d.lag), (264, 2048, 128, 2));
        let c = t(2, 3, Some(132)).shape(262_144, 256, 264).unwrap();
        assert_eq!((c.grid, c.tile, c.cpr), (132, 1024, 256));
        assert_eq!(c.lag, 255usize.div_ceil(132) + 1 + 3);
        // A cap above the resident CTAs changes nothing, nor one at the tiles' count (the grid
        // is never more than the tiles); a cap of 0 leaves no CTA to run on.
        assert_eq!(t(4, 0, Some(1000)).shape(262_144, 256, 264), Some(d));
        assert_eq!(t(4, 0, None).shape(100, 1, 264).unwrap().grid, 1);
        let one_row = t(4, 0, None).shape(262_144, 1, 264).unwrap();
        assert_eq!(one_row.grid, 128);
        assert_eq!(t(4, 0, Some(128)).shape(262_144, 1, 264), Some(one_row));
        assert_eq!(t(4, 0, Some(0)).shape(262_144, 1, 264), None);
    }

    #[test]
    fn v7_tuning_reads_its_settings_over_the_defaults() {
        let d = V7Tuning::default();
        assert_eq!(V7Tuning::parse(""), d);
        // Spaces around keys and values are allowed; sizes are KiB.
        let t = V7Tuning::parse(" whole = 32 , tile=16,lag= 2");
        assert_eq!((t.whole, t.tile, t.lag), (32 << 10, 16 << 10, 2));
        assert_eq!((t.part, t.per_sm), (d.part, d.per_sm));
        assert_eq!(
            V7Tuning::parse("per_sm=9,lag=9"),
            V7Tuning {
                per_sm: 2,
                lag: 3,
                ..d
            }
        );
        assert_eq!(V7Tuning::parse("part=x,whole,nothing=1"), d);
    }

    #[test]
    fn v7_tiles_whole_rows_splits_wide_ones_and_fills_the_gpu() {
        let t = V7Tuning {
            whole: 64 << 10,
            part: 32 << 10,
            tile: 32 << 10,
            per_sm: 1,
            lag: 1,
        };
        let smem = 225 << 10;
        let cfg = |packs, rows| {
            v7_config(packs, rows, 132, smem, t)
                .map(|c| (c.g, c.r, c.part_packs, c.stages, c.units))
        };
        // 4096 f32 columns: tiles of two whole rows, 7 stages of 32 KB, every SM.
        assert_eq!(cfg(1024, 4096), Some((1, 2, 1024, 7, 132)));
        // 12672 f32: one row a tile, as many 49.5 KB stages as fit.
        assert_eq!(cfg(3168, 4096), Some((1, 1, 3168, 4, 132)));
        // 131072 f32: 16 parts of 32 KB, 8 units of 16 CTAs.
        assert_eq!(cfg(32768, 2048), Some((16, 1, 2048, 7, 8)));
        // 1 Mi f32: one unit over all 132 SMs.
        assert_eq!(cfg(262144, 256), Some((132, 1, 1986, 7, 1)));
        // 4 Mi f32: parts of 127 KB, one stage; 8 Mi f32 does not fit.
        assert_eq!(cfg(1 << 20, 64), Some((132, 1, 7944, 1, 1)));
        assert_eq!(cfg(2 << 20, 64), None);
        // One 4096 f32 row: split, but no part under 1 KB.
        assert_eq!(cfg(1024, 1), Some((16, 1, 64, 8, 1)));
        // Three tiny rows: one each, whole.
        assert_eq!(cfg(4, 3), Some((1, 1, 4, 8, 3)));
        // Every configuration covers the row and fits the shared memory.
        for packs in [1, 7, 100, 1023, 4097, 33333, 262145, 999_999] {
            for rows in [1, 3, 131, 4096] {
                if let Some(c) = v7_config(packs, rows, 132, smem, t) {
                    assert!(
                        c.g * c.part_packs >= packs && c.smem_bytes() <= smem,
                        "{packs}×{rows}: {c:?}"
                    );
                    assert!(
                        c.grid() <= 132
                            && c.r.is_power_of_two()
                            && c.r <= 16
                            && (c.r == 1 || c.g == 1)
                    );
                    assert!((1..=V7_MAX_STAGES).contains(&c.stages));
                }
            }
        }
    }
}
