//! v8 (`cuda/v8_onchip`: a row per CTA, or per cluster, held in registers and shared memory)
//! and v9 (`cuda/v9_gridsync`: v8's on-chip parts split across a co-resident grid): their
//! shapes, tunings and launchers.

use super::*;

/// v8's CTAs: 1024 threads holding [`V8_K`] 16-byte packs each in registers (128 KB), the
/// rest of their part in shared memory; one CTA an SM at this size (smaller shares take fewer
/// threads, and [`v8_fill_cta`] sizes CTAs for two or more an SM).
pub const V8_THREADS: usize = 1024;
pub const V8_K: usize = 8;
/// Cluster sizes v8 tries, smallest first (past 8 they are non-portable: the launcher asks the
/// driver whether the GPU places them).
const V8_CLUSTERS: [usize; 5] = [1, 2, 4, 8, 16];

/// The 16-byte packs one v8 CTA holds: its registers' and what fits in `smem_optin` bytes of
/// shared memory (the device's opt-in maximum a block, less 1 KB for the kernel's own).
pub fn v8_cta_packs(smem_optin: usize) -> usize {
    V8_THREADS * V8_K + smem_optin.saturating_sub(1024) / 16
}

/// v8's shape for rows of at most `packs` 16-byte packs: (cluster size C, threads a CTA,
/// dynamic shared memory bytes a CTA) — the smallest C whose CTAs hold their share, at most
/// `max_c`; a share that fits in registers takes only the threads it needs (a warp's multiple),
/// so narrower rows run several CTAs an SM. `None` when the row is wider than `max_c` CTAs hold.
pub fn v8_config(packs: usize, smem_optin: usize, max_c: usize) -> Option<(usize, usize, usize)> {
    let cap = v8_cta_packs(smem_optin);
    let c = V8_CLUSTERS
        .iter()
        .copied()
        .filter(|&c| c <= max_c)
        .find(|&c| packs.div_ceil(c) <= cap)?;
    let share = packs.div_ceil(c);
    let threads = (share.div_ceil(V8_K).div_ceil(32) * 32).clamp(32, V8_THREADS);
    Some((c, threads, share.saturating_sub(V8_THREADS * V8_K) * 16))
}

/// What bounds the CTAs an SM holds at once, as [`v8_fill_cta`] counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmLimits {
    /// 32-bit registers an SM.
    pub regs: usize,
    /// Threads an SM.
    pub threads: usize,
    /// CTAs an SM.
    pub ctas: usize,
    /// Shared memory a CTA may opt in to, bytes (an SM has 1 KB more).
    pub smem_optin: usize,
}

impl SmLimits {
    /// The H200's (and every sm_90 GPU's): 64 K registers, 2048 threads, 32 CTAs, 227 KB.
    pub const H200: SmLimits = SmLimits {
        regs: 65_536,
        threads: 2048,
        ctas: 32,
        smem_optin: 232_448,
    };

    pub fn of(props: &crate::runtime::device::cuda::DeviceProps) -> SmLimits {
        SmLimits {
            regs: props.regs_per_sm as usize,
            threads: props.max_threads_per_sm as usize,
            ctas: props.max_blocks_per_sm as usize,
            smem_optin: props.max_smem_per_block_optin,
        }
    }

    /// v8's CTAs of `threads` threads (64 registers each) and `smem` bytes of dynamic shared
    /// memory that fit an SM at once: bounded by its registers, its shared memory (1 KB more
    /// than the opt-in, 1.5 KB counted a CTA for the system's reserve and the kernel's own),
    /// its threads and its CTA limit.
    pub fn v8_ctas(&self, threads: usize, smem: usize) -> usize {
        (self.regs / (threads * 64))
            .min((self.smem_optin + 1024) / (smem + 1024 + 512))
            .min(self.threads / threads)
            .min(self.ctas)
    }
}

/// v8's CTA for a row one CTA holds, chosen to put the most rows on an SM at once (more rows'
/// loads in flight, and one row's reduction overlapping others' traffic): (threads, dynamic
/// shared memory bytes). Threads are a warp's multiple with [`V8_K`] packs each in registers
/// (64 registers a thread), the rest of the row in shared memory but at most as much as the
/// registers hold; CTAs an SM counted by [`SmLimits::v8_ctas`]. Ties go to more threads.
/// `None` when no such CTA holds the row.
pub fn v8_fill_cta(packs: usize, sm: SmLimits) -> Option<(usize, usize)> {
    let optin = sm.smem_optin;
    let mut best: Option<(usize, usize, usize)> = None;
    for t in (32..=V8_THREADS).step_by(32) {
        let in_regs = t * V8_K;
        if packs > 2 * in_regs {
            continue;
        }
        let smem = packs.saturating_sub(in_regs) * 16;
        if smem + 1024 > optin {
            continue;
        }
        let ctas = sm.v8_ctas(t, smem);
        if ctas == 0 {
            continue;
        }
        if best.is_none_or(|(c, _, _)| ctas >= c) {
            best = Some((ctas, t, smem));
        }
    }
    best.map(|(_, t, smem)| (t, smem))
}

/// The shares (16-byte packs a CTA) at which [`v8_wide16_cluster`] sizes 16-bit clusters for
/// two CTAs an SM: from three quarters of, up to, what two 512-thread CTAs an SM hold (eight
/// packs a thread in registers and as much again in shared memory).
pub const V8_WIDE16_SHARES: std::ops::RangeInclusive<usize> = 6144..=8192;

/// v8's cluster for 16-bit rows that need two or more CTAs (`needed`, the smallest cluster
/// that holds the row): 4 or 8 CTAs, the first whose share is in [`V8_WIDE16_SHARES`], sized
/// by [`v8_fill_cta`] for two CTAs an SM; `None` (the default shape) elsewhere. Those shares
/// led the default shape and v9; smaller shares, and shares of one CTA an SM, lost, and f32
/// gained too little to take the rule (docs/perf-notes.md, "softmax v8").
pub fn v8_wide16_cluster(packs: usize, needed: usize) -> Option<usize> {
    if needed < 2 {
        return None;
    }
    [4, 8]
        .into_iter()
        .find(|&c| c >= needed && V8_WIDE16_SHARES.contains(&packs.div_ceil(c)))
}

/// v8's CTAs under its f32 rule ([`v8_f32_cluster`]): 256 threads, four an SM.
pub const V8_F32_THREADS: usize = 256;
/// The smallest share (16-byte packs a CTA of eight) [`v8_f32_cluster`] takes: rows from
/// 8 × 3840 = 30720 packs (122880 f32 columns, up to 122883 with a peeled head and tail).
/// Below it the rule measured behind the default shape (docs/perf-notes.md, "softmax v8").
pub const V8_F32_MIN_SHARE: usize = 3840;

/// v8's shape for f32 rows of `packs` 16-byte packs that need two CTAs (`needed`, the smallest
/// cluster that holds the row: 22657–45312 packs, about 90630–181250 columns, on the H200)
/// from 8 × [`V8_F32_MIN_SHARE`] packs: a cluster of eight CTAs of [`V8_F32_THREADS`] threads, four an
/// SM, so a row still spans two SMs (as two 1024-thread CTAs do) but each SM holds four of its
/// CTAs, each with eight packs a thread in registers and the rest of its share in shared
/// memory: (8, threads, dynamic shared memory bytes). `None` (the default shape) elsewhere,
/// and where four such CTAs do not fit an SM (past 44800 packs, 179200 f32 columns, on the
/// H200). It led the default shape across that band; sized by [`v8_fill_cta`] instead (a
/// cluster then spans three SMs) it fell behind (docs/perf-notes.md, "softmax v8").
pub fn v8_f32_cluster(packs: usize, needed: usize, sm: SmLimits) -> Option<(usize, usize, usize)> {
    if needed != 2 || packs < 8 * V8_F32_MIN_SHARE {
        return None;
    }
    let share = packs.div_ceil(8);
    let t = V8_F32_THREADS;
    let smem = share.saturating_sub(t * V8_K) * 16;
    (sm.v8_ctas(t, smem) >= 4 && smem + 1024 <= sm.smem_optin).then_some((8, t, smem))
}

/// v8's tuning (its named configurations: [`V8_CONFIGS`]): `fill`, whether a CTA's threads are
/// chosen by [`v8_fill_cta`] (the most CTAs an SM) instead of the fewest that hold its share in
/// registers — forced off or on, and when on for clusters too (by default only for one-CTA
/// rows past 512 threads, [`V8Tuning::fill_for`]); `cluster`, the cluster size forced up to N
/// (a power of two, 2–16) where the row's smallest is below it; `wide16: Some(false)` turns off
/// the 16-bit cluster rule ([`v8_wide16_cluster`]) and `f32c8: Some(false)` the f32 one
/// ([`v8_f32_cluster`]), which a forced `fill` or `cluster` also overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct V8Tuning {
    pub fill: Option<bool>,
    pub cluster: Option<usize>,
    pub wide16: Option<bool>,
    pub f32c8: Option<bool>,
    /// With `cluster`: the threads a CTA (a warp's multiple up to 1024), the rest of each
    /// share in shared memory.
    pub threads: Option<usize>,
}

impl V8Tuning {
    /// No setting forced: v8's default shapes.
    pub const DEFAULT: V8Tuning = V8Tuning {
        fill: None,
        cluster: None,
        wide16: None,
        f32c8: None,
        threads: None,
    };
    /// The tuning with the settings v8 cannot launch dropped: a cluster size other than 2, 4,
    /// 8 or 16, threads that are not a warp's multiple from 32 to 1024.
    pub fn checked(self) -> V8Tuning {
        V8Tuning {
            cluster: self.cluster.filter(|n| V8_CLUSTERS[1..].contains(n)),
            threads: self
                .threads
                .filter(|t| t % 32 == 0 && (32..=V8_THREADS).contains(t)),
            ..self
        }
    }
    /// Whether v8 sizes the CTAs of a `c`-CTA row by [`v8_fill_cta`], where the fewest threads
    /// that hold a share in registers are `threads`: by default for one-CTA rows past 512 threads
    /// (one CTA an SM), where it ran faster; where two or more CTAs an SM already fit it was
    /// mostly slower (docs/perf-notes.md, "softmax v8").
    pub fn fill_for(&self, c: usize, threads: usize) -> bool {
        match self.fill {
            Some(f) => f,
            None => c == 1 && threads > 512,
        }
    }
    /// Whether the 16-bit cluster rule ([`v8_wide16_cluster`]) applies: unless `wide16` is
    /// `Some(false)`, or `fill` or `cluster` is set.
    pub fn wide16_rule(&self) -> bool {
        self.wide16 != Some(false) && self.fill.is_none() && self.cluster.is_none()
    }
    /// Whether the f32 cluster rule ([`v8_f32_cluster`]) applies: unless `f32c8` is
    /// `Some(false)`, or `fill` or `cluster` is set.
    pub fn f32_rule(&self) -> bool {
        self.f32c8 != Some(false) && self.fill.is_none() && self.cluster.is_none()
    }
}

/// v8's launch shape for rows of `packs` 16-byte packs (of 16-bit elements where `sixteen`) on
/// an SM of `sm`'s limits, clusters (up to 16) only where `hopper`: (cluster size C, threads a
/// CTA, dynamic shared memory bytes a CTA). [`v8_config`]'s, with the 16-bit cluster rule
/// ([`v8_wide16_cluster`]) or the f32 one ([`v8_f32_cluster`]) where `tuning` leaves them on,
/// else `tuning`'s forced cluster size (where larger than the row needs), its fill rule
/// ([`V8Tuning::fill_for`]) and, with a forced size, its threads ([`V8Tuning::checked`]'s
/// settings only). `None` when the row is wider than the largest cluster holds.
pub fn v8_shape(
    packs: usize,
    sm: SmLimits,
    hopper: bool,
    sixteen: bool,
    tuning: V8Tuning,
) -> Option<(usize, usize, usize)> {
    let tuning = tuning.checked();
    let (c, threads, smem) = v8_config(packs, sm.smem_optin, if hopper { 16 } else { 1 })?;
    if hopper && sixteen && tuning.wide16_rule() {
        if let Some(c) = v8_wide16_cluster(packs, c) {
            if let Some((t, m)) = v8_fill_cta(packs.div_ceil(c), sm) {
                return Some((c, t, m));
            }
        }
    }
    if hopper && !sixteen && tuning.f32_rule() {
        if let Some(shape) = v8_f32_cluster(packs, c, sm) {
            return Some(shape);
        }
    }
    let (c, threads, smem) = match tuning.cluster {
        Some(n) if hopper && n > c => v8_config(packs.div_ceil(n), sm.smem_optin, 1)
            .map_or((c, threads, smem), |(_, t, m)| (n, t, m)),
        _ => (c, threads, smem),
    };
    let (threads, smem) = if tuning.fill_for(c, threads) {
        v8_fill_cta(packs.div_ceil(c), sm).unwrap_or((threads, smem))
    } else {
        (threads, smem)
    };
    // Forced threads with a forced cluster that took effect: that many threads a CTA, where the
    // rest of the share fits in shared memory (threads past the share hold nothing).
    if let (Some(t), true) = (tuning.threads, tuning.cluster == Some(c)) {
        let m = packs.div_ceil(c).saturating_sub(t * V8_K) * 16;
        if hopper && m + 1024 <= sm.smem_optin {
            return Some((c, t, m));
        }
    }
    Some((c, threads, smem))
}

/// The widest row v8 holds on a device (elements): 16 CTAs' worth on sm_90 (clusters), one
/// CTA's elsewhere.
pub fn v8_max_cols(dt: DType, props: &crate::runtime::device::cuda::DeviceProps) -> usize {
    let c = if props.compute_capability.0 >= 9 {
        16
    } else {
        1
    };
    c * v8_cta_packs(props.max_smem_per_block_optin) * (16 / dt.size())
}

/// v8: a row per CTA (or per cluster of C CTAs on sm_90), held in registers and shared
/// memory; clusters merge (max, sum) through DSMEM. The default run: the configuration
/// `kernlab autotune` cached for this input's bucket, else [`V8Tuning::DEFAULT`].
pub fn run_v8_onchip(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match cached_tuning("v8_onchip", x) {
        Some(Tuning::V8(t)) => run_v8_tuned(p, x, y, t),
        _ => run_v8_tuned(p, x, y, V8Tuning::DEFAULT),
    }
}

/// v8 in the tuning given.
pub fn run_v8_tuned(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor, tuning: V8Tuning) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let refuse = |why: String| unsupported("v8_onchip", why);
    require_peelable("v8_onchip", &r, &io)?;
    let props = &io.dev.props;
    let hopper = props.compute_capability.0 >= 9;
    let packs = r.cols / r.pack;
    let sm = SmLimits::of(props);
    let sixteen = x.dtype().size() == 2;
    let (c, threads, smem) = v8_shape(packs, sm, hopper, sixteen, tuning).ok_or_else(|| {
        refuse(format!(
            "rows of {} columns are wider than the {} it holds on chip{}",
            r.cols,
            v8_max_cols(x.dtype(), props),
            if hopper {
                " (16 CTAs' registers and shared memory; use v6_split or auto)"
            } else {
                " (one CTA's registers and shared memory: clusters need sm_90; use v6_split or auto)"
            }
        ))
    })?;
    let grid = r.rows as u64 * c as u64;
    if grid > i32::MAX as u64 {
        return Err(refuse(format!(
            "{} rows × {c} CTAs a row: over the grid limit",
            r.rows
        )));
    }
    // Rows with no scalar head or tail run the kernel built without that code (PEEL = false),
    // which ran faster on them (docs/perf-notes.md, "softmax v8").
    let name = if r.vec {
        format!("softmax_v8_packed_{}", x.dtype())
    } else {
        format!("softmax_v8_onchip_{}", x.dtype())
    };
    let f = io.dev.function(&SOURCE, &name)?;
    crate::runtime::launch::allow_dynamic_smem(&io.dev, &f, &name, smem)?;
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    if c == 1 {
        let (rows, cols, lg, cs) = (r.rows as i32, r.cols as i32, p.log_softmax as i32, 1i32);
        launch!(
            io.dev,
            &SOURCE,
            name,
            cfg,
            [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &cs]
        );
        return Ok(());
    }
    if crate::runtime::launch::max_active_clusters(&io.dev, &f, &name, cfg, c as u32)? == 0 {
        return Err(refuse(format!(
            "this GPU cannot place a cluster of {c} CTAs of {threads} threads and {} KB of shared memory each (use v6_split or auto)",
            smem >> 10
        )));
    }
    launch_rows_cluster(&io, &r, p, &f, &name, cfg, c)
}

pub fn symbols_v8(dt: DType) -> Vec<String> {
    vec![
        format!("softmax_v8_onchip_{dt}"),
        format!("softmax_v8_packed_{dt}"),
    ]
}

/// v9's CTAs: [`V9_THREADS`] / `per_sm` threads holding [`V9_K`] 16-byte packs each in
/// registers, the rest of their part in shared memory; one or two CTAs an SM.
pub const V9_THREADS: usize = 1024;
pub const V9_K: usize = 8;
/// v9 runs its ping-pong form (sm_90 and later) from this many CTAs a row: it gains where few
/// groups of many CTAs walk the rows, and loses a little at small G (docs/perf-notes.md,
/// "softmax v9").
pub const V9_PINGPONG_MIN_G: usize = 16;
/// The fewest packs a v9 CTA is given when rows are split finer to fill the GPU (4 KB).
const V9_MIN_PART: usize = 256;

/// v9's shape: G CTAs a row, `groups` groups of G in the persistent grid, threads and
/// dynamic shared memory bytes a CTA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V9Config {
    pub g: usize,
    pub groups: usize,
    pub threads: usize,
    pub smem: usize,
}

/// v9's shape for `rows` rows of `packs` 16-byte packs, CTAs of at most `threads` threads and
/// `smem` bytes of dynamic shared memory, `resident` of them on the GPU at once. A part keeps
/// at most `pref` bytes in shared memory while the row fits that way (parts at most half in
/// shared memory measured faster; docs/perf-notes.md, "softmax v9"), else up to `smem`. G starts
/// as the fewest CTAs that hold a row; the groups of G that fit are then given the whole GPU
/// (G raised to `resident / groups`, parts of at least `V9_MIN_PART` packs), so no SM
/// idles for want of a whole row's worth of CTAs. A part that fits in registers takes only the
/// threads it needs (a warp's multiple). `None` when a row is wider than every resident CTA
/// together holds.
pub fn v9_config(
    packs: usize,
    rows: usize,
    threads: usize,
    smem: usize,
    pref: usize,
    resident: usize,
) -> Option<V9Config> {
    let packs = packs.max(1);
    let regs = threads * V9_K;
    let pref = pref.min(smem);
    let smem = if packs.div_ceil(regs + pref / 16) <= resident {
        pref
    } else {
        smem
    };
    let g_min = packs.div_ceil(regs + smem / 16);
    if g_min > resident || resident == 0 {
        return None;
    }
    let groups = (resident / g_min).min(rows.max(1));
    let g = (resident / groups)
        .min(packs.div_ceil(V9_MIN_PART))
        .max(g_min);
    let share = packs.div_ceil(g);
    let t = (share.div_ceil(V9_K).div_ceil(32) * 32).clamp(32, threads);
    Some(V9Config {
        g,
        groups,
        threads: t,
        smem: share.saturating_sub(t * V9_K) * 16,
    })
}

/// v9's tuning (its named configurations: [`V9_CONFIGS`]): `per_sm` CTAs an SM (1 or 2, each
/// with its share of the SM's shared memory; default 2: one 1024-thread CTA an SM measured
/// slower); `smem_kb`, the shared memory a part prefers (KiB; 0: all it can have; default: as
/// much as its registers hold, 64 KiB at two an SM); `pingpong`, the ping-pong form forced on
/// or off (default: by G); `smpair`, the ping-pong form with SM-paired places forced on
/// wherever it can run, or off (default: by the groups, [`V9Tuning::smpair_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V9Tuning {
    pub per_sm: usize,
    pub smem_kb: Option<usize>,
    /// Ping-pong (half the groups read while the other half exchange and write): forced on
    /// or off; `None` lets [`V9Tuning::pingpong_for`] decide by G.
    pub pingpong: Option<bool>,
    /// The smpair form where the ping-pong form runs and the grid allows it (exactly two CTAs
    /// on every SM, an even number of groups): each CTA takes its group and rank from its SM
    /// so that an SM's two CTAs are ping-pong partners. Forced on or off; `None` lets
    /// [`V9Tuning::smpair_for`] decide by the groups.
    pub smpair: Option<bool>,
}

impl V9Tuning {
    /// Two CTAs an SM, parts at most half in shared memory, the forms chosen by the shape.
    pub const DEFAULT: V9Tuning = V9Tuning {
        per_sm: 2,
        smem_kb: None,
        pingpong: None,
        smpair: None,
    };
    /// CTAs an SM: 1 or 2.
    fn ctas_per_sm(&self) -> usize {
        self.per_sm.clamp(1, 2)
    }
    /// Whether groups of `g` CTAs, `groups` of them, run v9's ping-pong form: only where
    /// there is a pair of groups to alternate and rows are split; by default from
    /// [`V9_PINGPONG_MIN_G`] CTAs a row.
    pub fn pingpong_for(&self, g: usize, groups: usize) -> bool {
        g > 1 && groups >= 2 && self.pingpong.unwrap_or(g >= V9_PINGPONG_MIN_G)
    }
    /// Whether the ping-pong form of `groups` groups asks for the smpair form (which the
    /// launcher then runs where the grid allows): by default with two groups only, where it
    /// led plain ping-pong; with more groups it ran level or slower (docs/perf-notes.md,
    /// "softmax v9").
    pub fn smpair_for(&self, groups: usize) -> bool {
        self.smpair.unwrap_or(groups == 2)
    }
    /// The shared memory a part of a CTA of `threads` threads prefers, in bytes.
    pub fn pref_bytes(&self, threads: usize) -> usize {
        match self.smem_kb {
            None => threads * V9_K * 16,
            Some(0) => usize::MAX,
            Some(kb) => kb << 10,
        }
    }
}

/// The dynamic shared memory a v9 CTA asks for with `per_sm` CTAs an SM, on a device whose
/// block opt-in maximum is `optin` bytes (a share, less 3 KB for what the kernel and the
/// driver keep, with one an SM 1 KB).
pub fn v9_smem(optin: usize, per_sm: usize) -> usize {
    if per_sm <= 1 {
        optin.saturating_sub(1024)
    } else {
        (optin / per_sm).saturating_sub(3072)
    }
}

/// v9's largest CTA (threads, dynamic shared memory) at `per_sm` CTAs an SM (1 or 2) and how
/// many of those the GPU holds at once (the driver's occupancy figure × SMs, for its plain
/// kernel), with the shared-memory opt-in set.
fn v9_resident(
    dev: &crate::runtime::device::CudaDevice,
    dt: DType,
    per_sm: usize,
) -> Result<(usize, usize, usize)> {
    let name = format!("softmax_v9_gridsync_{dt}");
    let f = dev.function(&SOURCE, &name)?;
    let (threads, smem) = (
        V9_THREADS / per_sm,
        v9_smem(dev.props.max_smem_per_block_optin, per_sm),
    );
    let n = smem_blocks_per_sm(dev, &f, &name, threads, smem)?.min(per_sm)
        * dev.props.sm_count as usize;
    Ok((threads, smem, n))
}

/// The widest row v9 holds on this device in its default tuning (elements): every resident
/// CTA's registers and shared memory. `None` when the kernel cannot be loaded or the occupancy
/// query fails.
pub fn v9_max_cols(dev: &crate::runtime::device::CudaDevice, dt: DType) -> Option<usize> {
    let (threads, smem, n) = v9_resident(dev, dt, V9Tuning::DEFAULT.ctas_per_sm()).ok()?;
    Some(v9_cols_held(n, threads, smem, 16 / dt.size()))
}

/// The columns `resident` v9 CTAs of `threads` threads and `smem` bytes of shared memory hold
/// together, at `pack` elements a 16-byte pack.
fn v9_cols_held(resident: usize, threads: usize, smem: usize, pack: usize) -> usize {
    resident * (threads * V9_K + smem / 16) * pack
}

/// v9: a row split across G co-resident CTAs (cooperative launch), each holding its part in
/// registers and shared memory as v8 does; (max, sum) exchanged through global memory as v6
/// does; a persistent grid of groups of G CTAs walks the rows. The default run: the
/// configuration `kernlab autotune` cached for this input's bucket, else
/// [`V9Tuning::DEFAULT`].
pub fn run_v9_gridsync(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match cached_tuning("v9_gridsync", x) {
        Some(Tuning::V9(t)) => run_v9_tuned(p, x, y, t),
        _ => run_v9_tuned(p, x, y, V9Tuning::DEFAULT),
    }
}

/// v9 in the tuning given (a forced form runs wherever it can, else the plain form).
pub fn run_v9_tuned(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor, tuning: V9Tuning) -> Result<()> {
    run_v9_form(p, x, y, tuning, false)
}

/// v9's smpair form (ping-pong with SM-paired places), refused where it cannot run: before
/// sm_90, rows with a scalar head or tail (odd widths), rows in one CTA, an odd number of
/// groups, or a grid that is not two CTAs on every SM.
pub fn run_v9_smpair(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let t = V9Tuning {
        pingpong: Some(true),
        smpair: Some(true),
        ..V9Tuning::DEFAULT
    };
    run_v9_form(p, x, y, t, true)
}

/// v9's launch plan: its shape and the form it runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V9Plan {
    pub config: V9Config,
    /// "gridsync" (the plain form), "pingpong" or "smpair".
    pub form: &'static str,
    /// The driver's count of the smpair kernel's CTAs an SM at this size, where the tuning
    /// and the rows ask for the smpair form (`None` elsewhere, or where it cannot be asked).
    pub smpair_per_sm: Option<usize>,
}

/// v9's plan on `dev` for `rows` rows of `cols` columns of `dt` in `tuning`; `whole_packs`:
/// rows of whole 16-byte packs on 16-byte boundaries (no scalar head or tail). Refused
/// (UnsupportedShape) where every resident CTA together cannot hold a row.
pub fn v9_plan(
    dev: &crate::runtime::device::CudaDevice,
    dt: DType,
    rows: usize,
    cols: usize,
    whole_packs: bool,
    tuning: V9Tuning,
) -> Result<V9Plan> {
    let pack = 16 / dt.size();
    let (threads, smem, resident) = v9_resident(dev, dt, tuning.ctas_per_sm())?;
    let pref = tuning.pref_bytes(threads);
    let c = v9_config(cols / pack, rows, threads, smem, pref, resident).ok_or_else(|| {
        unsupported(
            "v9_gridsync",
            format!(
                "rows of {cols} columns are wider than the {} all {resident} resident CTAs hold in registers and shared memory (use v4_online or auto)",
                v9_cols_held(resident, threads, smem, pack)
            ),
        )
    })?;
    let grid = c.groups * c.g;
    // The driver's count of kernel `sym`'s CTAs an SM holds at this size; `None` if it cannot
    // be loaded or asked.
    let per_sm = |sym: &str| -> Option<usize> {
        let f = dev.function(&SOURCE, sym).ok()?;
        smem_blocks_per_sm(dev, &f, sym, c.threads, c.smem).ok()
    };
    let sms = dev.props.sm_count as usize;
    // Whether the driver confirms the whole grid resident with kernel `sym` (the grid waits on
    // itself); false if it cannot be loaded or asked.
    let resident_with = |sym: &str| per_sm(sym).is_some_and(|n| n * sms >= grid);
    // The ping-pong form (built for sm_90 and later) has the same launch bounds. It runs only
    // where the driver confirms the same grid is resident with it; if it cannot be loaded or
    // set up, the plain form runs.
    let pp = dev.props.compute_capability.0 >= 9 && tuning.pingpong_for(c.g, c.groups);
    // The smpair form also needs rows with no scalar (it is built without the peel: aligned
    // rows of whole packs), exactly two CTAs on every SM (a grid of twice the SMs that the
    // driver holds at two an SM and no more, so the cooperative launch puts two on each) and an
    // even number of groups (each lower place's partner in the upper half).
    let wanted = pp && tuning.smpair_for(c.groups) && whole_packs;
    let occupancy = wanted
        .then(|| per_sm(&format!("softmax_v9_smpair_{dt}")))
        .flatten();
    let form = if wanted && v9_smpair_fits(grid, c.groups, sms, occupancy) {
        "smpair"
    } else if pp && resident_with(&format!("softmax_v9_pingpong_{dt}")) {
        "pingpong"
    } else {
        "gridsync"
    };
    Ok(V9Plan {
        config: c,
        form,
        smpair_per_sm: occupancy,
    })
}

/// v9 as `tuning` has it; with `only_smpair`, refused unless that is the smpair form.
fn run_v9_form(
    p: &SoftmaxParams,
    x: &Tensor,
    y: &mut Tensor,
    tuning: V9Tuning,
    only_smpair: bool,
) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    require_peelable("v9_gridsync", &r, &io)?;
    let dt = x.dtype();
    let plan = v9_plan(&io.dev, dt, r.rows, r.cols, r.vec, tuning)?;
    let (c, form) = (plan.config, plan.form);
    let cfg = LaunchConfig {
        grid_dim: ((c.groups * c.g) as u32, 1, 1),
        block_dim: (c.threads as u32, 1, 1),
        shared_mem_bytes: c.smem as u32,
    };
    if only_smpair && form != "smpair" {
        return Err(unsupported(
            "v9_gridsync",
            format!(
                "the smpair form needs sm_90 or later, aligned rows of whole 16-byte packs split \
                 across CTAs in an even number of groups, and two CTAs on every SM; here {} rows \
                 of {} columns ({}) in {} groups of {} CTAs on {} SMs, {} CTAs an SM at most \
                 (compute capability {}.{}), take the {form} form",
                r.rows,
                r.cols,
                if r.vec {
                    "whole packs"
                } else {
                    "scalars to peel"
                },
                c.groups,
                c.g,
                io.dev.props.sm_count,
                plan.smpair_per_sm
                    .map_or("unknown".into(), |n| n.to_string()),
                io.dev.props.compute_capability.0,
                io.dev.props.compute_capability.1
            ),
        ));
    }
    let name = format!("softmax_v9_{form}_{dt}");
    let extra = if form == "smpair" {
        V9_PAIRING_SLOTS
    } else {
        0
    };
    launch_split(io, &r, p, name, cfg, c.g, "softmax v9 workspace", extra)
}

/// Whether v9's smpair form can place a grid of `grid` CTAs in `groups` groups on `sms` SMs
/// that hold at most `per_sm` of its CTAs each (the driver's occupancy; `None` unknown): the
/// cooperative launch puts every CTA on an SM at once, so with two at most and a grid of
/// twice the SMs every SM holds exactly two; and every lower group needs its partner in the
/// upper half (an even count, more than one CTA a group so rows are exchanged).
pub fn v9_smpair_fits(grid: usize, groups: usize, sms: usize, per_sm: Option<usize>) -> bool {
    per_sm == Some(2)
        && grid == 2 * sms
        && groups >= 2
        && groups.is_multiple_of(2)
        && grid.is_multiple_of(groups)
        && grid / groups > 1
}

/// The 16-byte slots v9's smpair form keeps its places in, after the exchange's slots:
/// kernels/softmax.cu's V9_PAIRING_SLOTS (a ticket and two words for each of 1024 SMs).
pub const V9_PAIRING_SLOTS: usize = ((1 + 2 * 1024) * 4usize).div_ceil(16);

pub fn symbols_v9(dt: DType) -> Vec<String> {
    vec![
        format!("softmax_v9_gridsync_{dt}"),
        format!("softmax_v9_pingpong_{dt}"),
        format!("softmax_v9_smpair_{dt}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v8_takes_the_fewest_ctas_whose_registers_and_shared_memory_hold_the_row() {
        let h200 = 232_448; // the H200's opt-in shared memory a block: 14464 packs past 1 KB
        assert_eq!(v8_cta_packs(h200), 8192 + 14464);
        assert_eq!(v8_config(8192, h200, 16), Some((1, 1024, 0))); // 32768 f32: registers only
        assert_eq!(v8_config(4097, h200, 16), Some((1, 544, 0))); // 16388 f32: 17 warps
        assert_eq!(v8_config(16384, h200, 16), Some((1, 1024, 8192 * 16))); // 65536 f32
        assert_eq!(v8_config(22656, h200, 16), Some((1, 1024, 14464 * 16)));
        let past = Some((2, 1024, (11329 - 8192) * 16)); // one pack more: two CTAs
        assert_eq!(v8_config(22657, h200, 16), past);
        assert_eq!(v8_config(32768, h200, 16), Some((2, 1024, 8192 * 16))); // 131072 f32
        assert_eq!(v8_config(262144, h200, 16), Some((16, 1024, 8192 * 16))); // 1 Mi f32
        assert_eq!(v8_config(262144, h200, 8), None);
        assert_eq!(v8_config(32768, h200, 1), None); // no clusters before sm_90
        assert_eq!(v8_config(16 * 22656 + 1, h200, 16), None);
        // Fewer columns than a pack.
        assert_eq!(v8_config(0, h200, 16), Some((1, 32, 0)));
        // Sized for the most rows an SM: two CTAs of 512 threads where 768 would hold it in
        // registers (4096×24577 f32), three of 320 for 5000 packs (bf16 40001), never more in
        // shared memory than in registers, ties to more threads.
        let sm = SmLimits::H200;
        assert_eq!(sm.smem_optin, h200);
        assert_eq!(v8_fill_cta(6144, sm), Some((512, 2048 * 16)));
        assert_eq!(v8_fill_cta(8192, sm), Some((512, 4096 * 16)));
        assert_eq!(v8_fill_cta(5000, sm), Some((320, (5000 - 2560) * 16)));
        assert_eq!(v8_fill_cta(256, sm), Some((32, 0)));
        assert_eq!(v8_fill_cta(16384, sm), Some((1024, 8192 * 16)));
        // More in shared memory than in registers:
        assert_eq!(v8_fill_cta(16385, sm), None);

        // An SM of 1536 threads and 24 CTAs (sm_89): one-warp CTAs stop at the CTA limit, and
        // 6144 packs still take two CTAs of 512 (three would need 96 K registers).
        let ada = SmLimits {
            threads: 1536,
            ctas: 24,
            smem_optin: 101_376,
            ..sm
        };
        assert_eq!(v8_fill_cta(256, ada), Some((32, 0)));
        assert_eq!(v8_fill_cta(6144, ada), Some((512, 2048 * 16)));
        // Half the registers: 5000 packs fit one CTA an SM whatever its size, so the tie goes
        // to the most threads that fit (512) instead of three CTAs of 320.
        let half = SmLimits { regs: 32_768, ..sm };
        assert_eq!(v8_fill_cta(5000, half), Some((512, (5000 - 4096) * 16)));
        // Too few registers for even one CTA that holds the row: none.
        let tiny = SmLimits { regs: 8192, ..sm };
        assert_eq!(v8_fill_cta(6144, tiny), None);
    }

    /// v8's tunings with one or two settings forced.
    fn fill(on: bool) -> V8Tuning {
        V8Tuning {
            fill: Some(on),
            ..V8Tuning::DEFAULT
        }
    }
    fn cluster(n: usize) -> V8Tuning {
        V8Tuning {
            cluster: Some(n),
            ..V8Tuning::DEFAULT
        }
    }
    fn cluster_threads(n: usize, t: usize) -> V8Tuning {
        V8Tuning {
            threads: Some(t),
            ..cluster(n)
        }
    }
    const NO_WIDE16: V8Tuning = V8Tuning {
        wide16: Some(false),
        ..V8Tuning::DEFAULT
    };
    const NO_F32C8: V8Tuning = V8Tuning {
        f32c8: Some(false),
        ..V8Tuning::DEFAULT
    };

    #[test]
    fn v8_tuning_forces_clusters_and_fill_only_where_asked() {
        let d = V8Tuning::DEFAULT;
        assert_eq!(d, V8Tuning::default());
        // Cluster sizes are the powers of two v8 launches, 2–16; threads a warp's multiple up
        // to 1024; anything else is dropped before v8 sizes its CTAs.
        for bad in [1, 3, 32] {
            assert_eq!(cluster(bad).checked().cluster, None, "{bad}");
        }
        assert_eq!(cluster(8).checked(), cluster(8));
        for bad in [100, 2048, 0] {
            assert_eq!(cluster_threads(8, bad).checked(), cluster(8), "{bad}");
        }
        // By default only one-CTA rows past 512 threads are filled.
        assert!(d.fill_for(1, 544) && !d.fill_for(1, 512) && !d.fill_for(2, 1024));
        assert!(fill(true).fill_for(4, 64));
        assert!(!fill(false).fill_for(1, 1024));

        let sm = SmLimits::H200;
        let shape = |packs, t: V8Tuning| v8_shape(packs, sm, true, false, t);
        // f32 131072 columns: eight 256-thread CTAs, four an SM (the f32 rule), or without
        // the rule two 1024-thread CTAs, 128 KB of each in shared memory.
        assert_eq!(shape(32768, d), Some((8, 256, 2048 * 16)));
        assert_eq!(shape(32768, NO_F32C8), Some((2, 1024, 8192 * 16)));
        // Forced to four CTAs sized for two an SM: 512 threads, half in shared memory.
        let c4_fill = V8Tuning {
            fill: Some(true),
            ..cluster(4)
        };
        assert_eq!(shape(32768, c4_fill), Some((4, 512, 4096 * 16)));
        // Forced to four, not filled: the fewest threads that hold a quarter in registers.
        assert_eq!(shape(32768, cluster(4)), Some((4, 1024, 0)));
        // Threads forced with the cluster size: the rest of each share in shared memory; not
        // without a forced cluster, nor where the rest would not fit.
        assert_eq!(shape(32768, cluster_threads(16, 256)), Some((16, 256, 0)));
        assert_eq!(
            shape(32768, cluster_threads(8, 128)),
            Some((8, 128, 3072 * 16))
        );
        let threads_alone = V8Tuning {
            threads: Some(256),
            ..d
        };
        assert_eq!(shape(32768, threads_alone), shape(32768, d));
        assert_eq!(shape(32768, cluster_threads(2, 32)), shape(32768, NO_F32C8));
        // A forced size no larger than what the row needs changes nothing but the rule.
        assert_eq!(shape(32768, cluster(2)), shape(32768, NO_F32C8));
        assert_eq!(shape(8 * 32768, cluster(4)), shape(8 * 32768, d));
        // One-CTA rows past 512 threads are filled by default; fill off keeps the fewest threads.
        let (t, m) = v8_fill_cta(6144, sm).unwrap();
        assert_eq!(shape(6144, d), Some((1, t, m)));
        assert_eq!(shape(6144, fill(false)), Some((1, 768, 0)));
        assert_ne!((t, m), (768, 0));
        // Without clusters (before sm_90) the forced size is ignored, and wide rows refused.
        let pre = |packs, t: V8Tuning| v8_shape(packs, sm, false, false, t);
        assert_eq!(pre(4096, cluster(4)), pre(4096, d));
        assert_eq!(pre(32768, d), None);
        assert_eq!(shape(17 * v8_cta_packs(sm.smem_optin), d), None);
    }

    #[test]
    fn v8_sizes_16_bit_clusters_for_two_ctas_an_sm_where_measured_ahead() {
        let sm = SmLimits::H200;
        let d = V8Tuning::DEFAULT;
        let s16 = |packs, t: V8Tuning| v8_shape(packs, sm, true, true, t);
        // f32 rows without their own rule (v8_f32_cluster), to compare shapes with.
        let f32_default = |packs| v8_shape(packs, sm, true, false, NO_F32C8);
        let cols = |bf16_cols: usize| bf16_cols / 8;
        // bf16 262144: four CTAs of 512 threads, half of each share in shared memory.
        assert_eq!(s16(cols(262_144), d), Some((4, 512, 4096 * 16)));
        // bf16 393216 and 524288: eight such CTAs (shares of 6144 and 8192 packs).
        assert_eq!(s16(cols(393_216), d), Some((8, 512, 2048 * 16)));
        assert_eq!(s16(cols(524_288), d), Some((8, 512, 4096 * 16)));
        // Outside the shares measured ahead, the default shape: one CTA a row (131072), a
        // share of 9376 at C = 4 and 4688 at C = 8 (300007), more than eight CTAs' (786432).
        for c in [131_072, 300_008, 786_432] {
            assert_eq!(s16(cols(c), d), f32_default(cols(c)), "bf16 {c}");
        }
        assert_eq!(s16(cols(300_008), d).map(|s| s.0), Some(2));
        assert_eq!(f32_default(32_768), Some((2, 1024, 8192 * 16)));
        // The rule off, fill or cluster forced turn it off.
        assert_eq!(s16(32_768, NO_WIDE16), f32_default(32_768));
        assert_eq!(s16(32_768, fill(false)).map(|s| s.0), Some(2));
        let (t, m) = v8_fill_cta(4096, sm).unwrap();
        let c8_fill = V8Tuning {
            fill: Some(true),
            ..cluster(8)
        };
        assert_eq!(s16(32_768, c8_fill), Some((8, t, m)));
        assert!(d.wide16_rule());
        assert!(!NO_WIDE16.wide16_rule());
        // The rule itself: only where the row needs two or more CTAs, never fewer CTAs.
        assert_eq!(v8_wide16_cluster(32_768, 1), None);
        assert_eq!(v8_wide16_cluster(32_768, 2), Some(4));
        assert_eq!(v8_wide16_cluster(32_768, 8), None);
        assert_eq!(v8_wide16_cluster(65_536, 4), Some(8));
        assert_eq!(v8_wide16_cluster(65_537, 4), None);
    }

    #[test]
    fn v8_spreads_two_cta_f32_rows_over_eight_ctas() {
        let sm = SmLimits::H200;
        let d = V8Tuning::DEFAULT;
        let s32 = |packs, t: V8Tuning| v8_shape(packs, sm, true, false, t);
        let cap = v8_cta_packs(sm.smem_optin);
        // The band: rows of two CTAs' packs with shares from V8_F32_MIN_SHARE, up to where
        // four 256-thread CTAs an SM hold a two-SM row (f32 122880–179200 columns): 2048 packs
        // a CTA in registers, the rest of its eighth in shared memory.
        for packs in [8 * V8_F32_MIN_SHARE, 32_768, 33_024, 37_501, 40_960, 44_800] {
            let smem = (packs.div_ceil(8) - 2048) * 16;
            assert_eq!(s32(packs, d), Some((8, 256, smem)), "{packs} packs");
            assert!(
                4 * (smem + 1024 + 512) <= sm.smem_optin + 1024,
                "{packs}: {smem} B"
            );
            // The rule off, fill or cluster forced turn it off; 16-bit rows never take it.
            assert_eq!(s32(packs, NO_F32C8).map(|s| s.0), Some(2));
            assert_eq!(s32(packs, fill(false)).map(|s| s.0), Some(2));
            assert_eq!(s32(packs, cluster(4)).map(|s| s.0), Some(4));
            let s16 = v8_shape(packs, sm, true, true, NO_WIDE16);
            assert_eq!(s16, s32(packs, NO_F32C8));
        }
        // f32 131072 columns: 32 KB of each CTA's 64 KB in shared memory.
        assert_eq!(s32(32_768, d), Some((8, 256, 2048 * 16)));
        // Outside the band the default shape: one CTA (cap); two below the least share
        // (98304 and 100003 columns) and where four CTAs an SM no longer fit (past 44800
        // packs); four or more (2 cap + 1).
        let below = 8 * V8_F32_MIN_SHARE - 1;
        for packs in [
            cap,
            cap + 1,
            24_576,
            25_001,
            below,
            44_801,
            2 * cap,
            2 * cap + 1,
        ] {
            assert_eq!(s32(packs, d), s32(packs, NO_F32C8), "{packs} packs");
        }
        assert_eq!(s32(2 * cap, d).map(|s| s.0), Some(2));
        assert_eq!(s32(below, d).map(|s| s.0), Some(2));
        assert_eq!(s32(2 * cap + 1, d).map(|s| s.0), Some(4));
        // Before sm_90 (no clusters) nothing changes.
        assert_eq!(
            v8_shape(cap + 1, sm, false, false, d),
            v8_shape(cap + 1, sm, false, false, NO_F32C8)
        );
        assert!(d.f32_rule());
        assert!(!NO_F32C8.f32_rule() && !fill(true).f32_rule());
        assert_eq!(v8_f32_cluster(32_768, 1, sm), None);
        assert_eq!(v8_f32_cluster(32_768 * 2, 4, sm), None);
        // An SM with half the registers holds two such CTAs, not four: no rule.
        let small = SmLimits { regs: 32_768, ..sm };
        assert_eq!(v8_f32_cluster(32_768, 2, small), None);
    }

    #[test]
    fn v9_tuning_defaults_to_two_ctas_an_sm_and_half_parts() {
        let d = V9Tuning::DEFAULT;
        assert_eq!((d.ctas_per_sm(), d.smem_kb), (2, None));
        assert_eq!(d.pref_bytes(512), 64 << 10);
        let t = V9Tuning {
            per_sm: 1,
            smem_kb: Some(128),
            ..d
        };
        assert_eq!((t.ctas_per_sm(), t.pref_bytes(1024)), (1, 128 << 10));
        let all = V9Tuning {
            smem_kb: Some(0),
            ..d
        };
        assert_eq!(all.pref_bytes(512), usize::MAX);
        // CTAs an SM are one or two whatever is asked.
        for (asked, got) in [(0, 1), (7, 2)] {
            assert_eq!(V9Tuning { per_sm: asked, ..d }.ctas_per_sm(), got);
        }
        // Ping-pong from 16 CTAs a row by default, where there are two groups to alternate.
        assert!(!d.pingpong_for(15, 17) && d.pingpong_for(16, 16) && d.pingpong_for(132, 2));
        assert!(!d.pingpong_for(264, 1));
        let pp = |on: bool| V9Tuning {
            pingpong: Some(on),
            ..d
        };
        assert!(pp(true).pingpong_for(2, 132));
        assert!(!pp(true).pingpong_for(1, 264) && !pp(true).pingpong_for(8, 1));
        assert!(!pp(false).pingpong_for(132, 2));
        // The smpair form with two groups by default; forced on or off.
        assert!(d.smpair_for(2) && !d.smpair_for(4) && !d.smpair_for(8));
        let smpair = |on: bool| V9Tuning {
            smpair: Some(on),
            ..d
        };
        assert!(smpair(true).smpair_for(8) && smpair(true).smpair_for(4));
        assert!(!smpair(false).smpair_for(2));
    }

    #[test]
    fn v9_smpair_runs_only_with_two_ctas_on_every_sm_and_partnered_groups() {
        // The H200: 132 SMs, two v9 CTAs an SM.
        assert!(v9_smpair_fits(264, 8, 132, Some(2)));
        assert!(v9_smpair_fits(264, 2, 132, Some(2)));
        assert!(v9_smpair_fits(264, 6, 132, Some(2)));
        // An odd number of groups (3 rows of 1 Mi f32), a group with no partner.
        assert!(!v9_smpair_fits(264, 3, 132, Some(2)));
        // A grid short of the SMs' seats (5 groups of 52), or more seats than two an SM.
        assert!(!v9_smpair_fits(260, 5, 132, Some(2)));
        assert!(!v9_smpair_fits(264, 8, 132, Some(3)));
        assert!(!v9_smpair_fits(264, 8, 132, None));
        // One CTA a group (nothing to exchange), or groups that do not divide the grid.
        assert!(!v9_smpair_fits(264, 264, 132, Some(2)));
        assert!(!v9_smpair_fits(264, 10, 132, Some(2)));
        // Another GPU: 114 SMs.
        assert!(v9_smpair_fits(228, 6, 114, Some(2)) && !v9_smpair_fits(264, 8, 114, Some(2)));
    }

    #[test]
    fn v9_s_pairing_slots_match_the_kernel_s() {
        // kernels/softmax.cu: V9_PAIRING_SLOTS = (V9_PAIRING_WORDS · 4 + 15) / 16 with
        // V9_PAIRING_WORDS = 1 + 2 · V9_MAX_SMS.
        let src = super::SOURCE.src;
        let define = |name: &str| -> usize {
            let line = src
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("#define {name} in softmax.cu"));
            line.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        let sms = define("V9_MAX_SMS");
        assert_eq!(V9_PAIRING_SLOTS, ((1 + 2 * sms) * 4).div_ceil(16));
        assert!(src.contains("#define V9_PAIRING_WORDS (1 + 2 * V9_MAX_SMS)"));
        assert!(src.contains("#define V9_PAIRING_SLOTS ((V9_PAIRING_WORDS * 4 + 15) / 16)"));
    }

    #[test]
    fn v9_holds_rows_in_the_fewest_ctas_then_spreads_them_over_the_gpu() {
        let h200 = 232_448;
        const ALL: usize = usize::MAX; // no preference: parts take all the shared memory they can
        let cfg = |g, groups, threads, smem| {
            Some(V9Config {
                g,
                groups,
                threads,
                smem,
            })
        };
        // One 1024-thread CTA an SM: 8192 register packs and 14464 in shared memory.
        let one = v9_smem(h200, 1);
        assert_eq!(one, h200 - 1024);
        // 1 Mi f32: 12 CTAs a row hold it, 11 groups of 12 fill the 132 SMs.
        assert_eq!(
            v9_config(262_144, 4096, 1024, one, ALL, 132),
            cfg(12, 11, 1024, (21_846 - 8192) * 16)
        );
        // 4 Mi f32: 47 CTAs hold a row, so two groups; each spreads over 66 SMs.
        assert_eq!(
            v9_config(1 << 20, 4096, 1024, one, ALL, 132),
            cfg(66, 2, 1024, (15_888 - 8192) * 16)
        );
        // One row takes the whole GPU; its parts then fit in 256 threads' registers.
        assert_eq!(
            v9_config(262_144, 1, 1024, one, ALL, 132),
            cfg(132, 1, 256, 0)
        );
        // Narrow rows: one CTA a row, no finer than a warp, no shared memory.
        assert_eq!(v9_config(0, 4, 1024, one, ALL, 132), cfg(1, 4, 32, 0));
        assert_eq!(
            v9_config(1000, 4096, 1024, one, ALL, 132),
            cfg(1, 132, 128, 0)
        );
        // Wider than every resident CTA holds; nothing resident.
        assert_eq!(v9_config(132 * 22_656 + 1, 1, 1024, one, ALL, 132), None);
        assert_eq!(v9_config(1, 1, 1024, one, ALL, 0), None);
        // Two 512-thread CTAs an SM, each with a share of the SM's shared memory.
        let two = v9_smem(h200, 2);
        assert_eq!(two, h200 / 2 - 3072);
        assert_eq!(
            v9_config(262_144, 4096, 512, two, ALL, 264),
            cfg(24, 11, 512, (10_923 - 4096) * 16)
        );
        // The default preference, parts at most half in shared memory (64 KB beside the 64 KB of
        // registers): 1 Mi f32 then takes 32 CTAs a row, 8 groups of 33.
        let half = 512 * V9_K * 16;
        assert_eq!(
            v9_config(262_144, 4096, 512, two, half, 264),
            cfg(33, 8, 512, (7944 - 4096) * 16)
        );
        // A row wider than half-parts hold takes the whole shared memory instead.
        assert_eq!(
            v9_config(264 * 8192 + 1, 1, 512, two, half, 264),
            cfg(264, 1, 512, (8193 - 4096) * 16)
        );
        assert_eq!(v9_config(264 * 11_168 + 1, 1, 512, two, half, 264), None);
    }
}
