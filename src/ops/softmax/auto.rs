use super::*;

/// The register-resident version that holds a row of this width (and whether 16-byte packs
/// apply): v2, v3, else v4. [`heuristic_choice`] starts from it and moves rows to v6, v8 or v9
/// where they measured faster.
pub fn dispatch(dt: DType, cols: usize, vec: bool) -> &'static str {
    if cols <= v2_max_cols(dt, vec) {
        "v2_warp_row"
    } else if cols <= v3_max_cols(dt, vec) {
        "v3_block_regs"
    } else {
        "v4_online"
    }
}

/// The versions `auto` chooses among (and `kernlab autotune softmax` measures, each in its
/// named configurations: [`config_names`]).
pub const AUTO_CANDIDATES: [&str; 7] = [
    "v2_warp_row",
    "v3_block_regs",
    "v4_online",
    "v6_split",
    "v8_onchip",
    "v9_gridsync",
    "v11_deal",
];

/// Run one of [`AUTO_CANDIDATES`] by name, in its default run (a tunable version in its
/// cached configuration, else its default).
pub fn run_named(name: &str, p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match name {
        "v2_warp_row" => run_v2_warp_row(p, x, y),
        "v3_block_regs" => run_v3_block_regs(p, x, y),
        "v4_online" => run_v4_online(p, x, y),
        "v6_split" => run_v6_split(p, x, y),
        "v8_onchip" => run_v8_onchip(p, x, y),
        "v9_gridsync" => run_v9_gridsync(p, x, y),
        "v11_deal" => run_v11_deal(p, x, y),
        other => Err(Error::Invalid(format!(
            "softmax has no version '{other}' (versions: {})",
            AUTO_CANDIDATES.join(", ")
        ))),
    }
}

/// The numbered version `auto` tries first for this input: the choice `kernlab autotune
/// softmax` cached for this device, dtype and shape bucket when there is one, else the
/// heuristic.
pub fn auto_choice(x: &Tensor) -> &'static str {
    auto_decision(x).0
}

/// What `auto` runs first for this input: (version, configuration, whether the autotune cache
/// chose them). The cached winner where its version and configuration are known here, else
/// the heuristic's version in its default run (configuration "").
pub fn auto_decision(x: &Tensor) -> (&'static str, &'static str, bool) {
    if let Some(e) = OP.tuned("auto", x) {
        if let Some(v) = AUTO_CANDIDATES.iter().find(|v| **v == e.variant) {
            if let Some(c) = known_config(v, &e.config) {
                return (v, c, true);
            }
        }
    }
    (heuristic_choice(x), "", false)
}

/// The layout `run_auto` ran on: dtype, rows, columns, row stride (plain numbers: `run_auto`
/// records it on every timed call, so no allocation).
pub(super) type AutoKey = (DType, usize, usize, usize);

pub(super) fn auto_key(x: &Tensor) -> AutoKey {
    let (rows, cols, ld) = x.rows_cols();
    (x.dtype(), rows, cols, ld)
}

thread_local! {
    /// What [`run_auto`] last ran on this thread, and on what layout: [`auto_label`] names it,
    /// so a fallback past a choice that refused the shape is reported as what ran.
    pub(super) static AUTO_RAN: std::cell::Cell<Option<(AutoKey, &'static str)>> =
        const { std::cell::Cell::new(None) };
}

/// What bench shows as `auto`'s pick: the version `run_auto` last ran on this layout (on this
/// thread), else its first choice; marked where the autotune cache chose it or where the choice
/// refused the shape and a fallback ran.
pub fn auto_label(x: &Tensor) -> String {
    let (choice, config, tuned) = auto_decision(x);
    let key = auto_key(x);
    let ran = AUTO_RAN.get().filter(|(k, _)| *k == key).map(|(_, v)| v);
    pick_label(choice, config, tuned, ran)
}

/// `auto`'s label for its first `choice` in `config` (from the autotune cache where `tuned`)
/// and the version that `ran`, where known.
pub(super) fn pick_label(choice: &str, config: &str, tuned: bool, ran: Option<&str>) -> String {
    let by = if tuned { ", autotuned," } else { "" };
    let first = if config.is_empty() {
        choice.to_string()
    } else {
        format!("{choice} {config}")
    };
    match ran {
        Some(v) if v != choice => format!("{v} ({first}{by} refused the shape)"),
        _ if tuned => format!("{first} (autotuned)"),
        _ => first,
    }
}

/// The widest row (bytes) `auto` sends to v11 rather than v9 on sm_90: v11 led v9 from 2 to
/// 8 MB rows and fell far behind at 16 MB, where one row holds most of the grid's slots and
/// rows barely overlap (docs/perf-notes.md, "softmax v11").
pub const V11_ROW_BYTES: usize = 8 << 20;

/// The narrowest odd (unpackable) width `auto` sends to v8 on sm_90 rather than v3: the
/// narrowest where v8 led v3's scalar path (docs/perf-notes.md, "softmax auto"); 16-bit rows
/// go past [`V3_SHIFT_16_UPTO`].
pub const V8_ODD_FROM: usize = 641;

/// The widest 16-bit odd row `auto` keeps on v3's shifted form on sm_90 rather than v8: its
/// packs (one more than the row's own at most) fill one warp of four slots a thread.
pub const V3_SHIFT_16_UPTO: usize = 32 * 4 * 8 - 7;

/// 16-bit rows from this width that v3 shifts take its split kernels
/// (`softmax_v3_block_regs_shiftsplit_*`: every whole pack's load sent before the partial
/// packs' lanes are read): their shifted packs fill more than one warp at four a thread, where
/// the split kernels led the one-loop ones (narrower 16-bit rows, and f32 rows, which have no
/// split kernels, ran level or behind; docs/perf-notes.md, "softmax v3").
pub const V3_SPLIT_16_FROM: usize = V3_SHIFT_16_UPTO + 1;

/// Whether v3's shifted form takes its split kernel for a row of `cols` columns of `dt`.
pub fn v3_split_16(dt: DType, cols: usize) -> bool {
    dt != DType::F32 && cols >= V3_SPLIT_16_FROM
}

/// 16-bit odd widths past [`V3_SHIFT_16_UPTO`] that `auto` also keeps on v3's shifted form
/// (its split kernels) on sm_90 rather than v8. From 2057 columns v8's row no longer fits 32
/// threads of [`V8_K`] packs (256 packs), so it takes 64 threads holding 4–7 packs each: half
/// the CTAs an SM, and two waves of rows; v3 leads there until v8's threads fill toward eight
/// packs (docs/perf-notes.md, "softmax auto").
pub const V3_SPLIT_16_BAND: std::ops::RangeInclusive<usize> = 2057..=3457;

/// Whether a 16-bit row of `cols` columns (odd: not a pack multiple; one v8 takes, so its x and
/// y rows are misaligned alike and v3 shifts it) stays on v3: up to [`V3_SHIFT_16_UPTO`], and
/// in [`V3_SPLIT_16_BAND`].
pub(super) fn v3_shift_16(dt: DType, cols: usize) -> bool {
    dt != DType::F32 && (cols <= V3_SHIFT_16_UPTO || V3_SPLIT_16_BAND.contains(&cols))
}

/// Packed f32 rows from 16385 columns up to (not including) this many go to v8 on sm_90
/// rather than v3, which holds them eight slots a thread slowly there; level at 28672, v3
/// ahead past it (docs/perf-notes.md, "softmax auto").
pub const V8_F32_PACKED_BELOW: usize = 28_672;

/// The width heuristic (its measurements: docs/perf-notes.md, "softmax auto"): v2 for rows a
/// warp holds, v3 for rows a block holds; on sm_90, v8 (a row per CTA in registers and shared
/// memory, clusters of up to 8 past that for f32, up to 2 for 16-bit rows and up to 8 where
/// [`v8_wide16_cluster`] sizes them) for odd widths from
/// [`V8_ODD_FROM`] (16-bit ones past [`V3_SHIFT_16_UPTO`] and outside [`V3_SPLIT_16_BAND`]), for 16-bit rows of 16385–65536 and f32 rows of 16385 to
/// [`V8_F32_PACKED_BELOW`] − 1 (where v3 runs four or eight slots a thread slowly) and for
/// every wider row it holds;
/// then v11 (chunks dealt on demand) for rows of whole packs up to [`V11_ROW_BYTES`] that v9
/// and v11 hold; v9 (v8's parts across co-resident CTAs) for the rows all resident CTAs hold;
/// v6 (rows split across CTAs, in registers, where its resident CTAs hold the row) for odd
/// widths past 4096 that peel, and on sm_90 for the rows v9 does not take, before sm_90 for
/// rows of at most 2 MB or fewer rows than SMs; v4 beyond. Each version then runs in its
/// default configuration.
pub fn heuristic_choice(x: &Tensor) -> &'static str {
    let (rows, cols, ldx) = x.rows_cols();
    let dt = x.dtype();
    let pack = 16 / dt.size();
    // Alignment of cuMemAlloc'd bases is 256 bytes, so the pack test is cols and strides.
    let vec = cols % pack == 0 && ldx % pack == 0;
    // v6 and v8 also pack rows whose start is misaligned alike in x and y (contiguous y):
    // they peel.
    let peelable = packs_layout_ok(x);
    let cuda = x.device().cuda().cloned();
    let hopper = cuda
        .as_ref()
        .is_some_and(|d| d.props.compute_capability.0 >= 9);
    // v8 in clusters of at most 8 for f32 (at 16 it ran no better than v6), and of at most 2
    // for 16-bit rows (past that v9 led it), except where its 16-bit cluster rule
    // (`v8_wide16_cluster`) sizes four or eight CTAs for two an SM.
    let v8_max_c = if dt == DType::F32 { 8 } else { 2 };
    let v8_takes = hopper
        && peelable
        && cuda.as_ref().is_some_and(|d| {
            let (packs, optin) = (cols / pack, d.props.max_smem_per_block_optin);
            v8_config(packs, optin, v8_max_c).is_some()
                || (dt != DType::F32
                    && V8Tuning::DEFAULT.wide16_rule()
                    && v8_config(packs, optin, 16)
                        .and_then(|(c, _, _)| v8_wide16_cluster(packs, c))
                        .is_some())
        });
    // v9's capacity (an occupancy query) bounds v11's rule and v9's own: asked once, if at all.
    let v9_holds_cell = std::cell::OnceCell::new();
    let v9_holds = || {
        *v9_holds_cell.get_or_init(|| {
            hopper
                && peelable
                && cuda
                    .as_ref()
                    .and_then(|d| v9_max_cols(d, dt))
                    .is_some_and(|m| cols <= m)
        })
    };
    // v11's own capacity (its plan: the slots shared memory holds, one CTA an SM, every chunk
    // of a row in the grid at once), so that a row v11 would refuse goes on to v9's rule.
    let v11_holds = || {
        hopper
            && peelable
            && cuda.as_ref().is_some_and(|d| {
                let t = V11Tuning::DEFAULT;
                v11_plan(d, &v11_kernel(t.chunk, dt), cols / pack, rows, t).is_ok()
            })
    };
    // v6's capacity costs an occupancy query; two rules may ask for the same form.
    let fits = [std::cell::OnceCell::new(), std::cell::OnceCell::new()];
    let v6_fits = |packed: bool| {
        *fits[packed as usize].get_or_init(|| {
            cuda.as_ref()
                .and_then(|d| v6_max_cols(d, dt, packed))
                .is_some_and(|m| cols <= m)
        })
    };
    match dispatch(dt, cols, vec) {
        // Odd widths past v2's reach (from V8_ODD_FROM columns on sm_90): v8 and v6 peel a
        // scalar head and tail around 16-byte packs, and v8 led both v6 and v3's scalar path
        // there. 16-bit odd widths up to V3_SHIFT_16_UPTO (v3's shifted packs in one warp) and
        // in V3_SPLIT_16_BAND stay on v3, which led v8 there; f32 stays on v8.
        "v3_block_regs" if !vec && cols >= V8_ODD_FROM && v8_takes && !v3_shift_16(dt, cols) => {
            "v8_onchip"
        }
        "v3_block_regs" if !vec && cols > 4096 && peelable && v6_fits(true) => "v6_split",
        // 16-bit rows of 16385–65536 columns: v3 holds them four or eight slots a thread, and
        // v8 (512 threads of eight) and v6 both led it.
        "v3_block_regs" if vec && dt != DType::F32 && (16_385..=65_536).contains(&cols) => {
            if v8_takes {
                "v8_onchip"
            } else if hopper && v6_fits(true) {
                "v6_split"
            } else {
                "v3_block_regs"
            }
        }
        // Packed f32 rows of 16385 to V8_F32_PACKED_BELOW − 1 columns: v3 runs them eight
        // slots a thread in blocks of 544–896 threads, and v8 led it.
        "v3_block_regs"
            if vec
                && dt == DType::F32
                && (16_385..V8_F32_PACKED_BELOW).contains(&cols)
                && v8_takes =>
        {
            "v8_onchip"
        }
        // Past what a block's registers hold: v8 led v6 wherever it holds the row.
        "v4_online" if v8_takes => "v8_onchip",
        // Past that, on sm_90, rows of whole packs of at most V11_ROW_BYTES: v11 (chunks
        // dealt on demand), which led v9 there; odd widths stay on v9. It asks v11's own
        // capacity too (a row it cannot hold takes v9's rule next).
        "v4_online" if vec && cols * dt.size() <= V11_ROW_BYTES && v9_holds() && v11_holds() => {
            "v11_deal"
        }
        // Past that, on sm_90, v9 (v8's parts split across co-resident CTAs) wherever every
        // resident CTA together holds the row: it led v6 and v8's clusters of 16 there.
        "v4_online" if v9_holds() => "v9_gridsync",
        // Then v6 wherever its resident CTAs hold the row: with the tagged exchange it beats
        // v4 on sm_90 (docs/perf-notes.md, "softmax v6"). Elsewhere (not measured) the earlier
        // rule: rows up to 2 MB, or fewer rows than SMs.
        "v4_online"
            if v6_fits(peelable)
                && (hopper
                    || cols * dt.size() <= 2 << 20
                    || cuda
                        .as_ref()
                        .is_some_and(|d| rows < d.props.sm_count as usize)) =>
        {
            "v6_split"
        }
        other => other,
    }
}

/// auto: runs what [`auto_decision`] picks (a version, in its cached configuration where the
/// autotune cache chose it). A tuned choice that cannot take this exact shape (a bucket spans
/// widths) falls back to the heuristic's version in its default run, and anything refused to
/// v4, which takes every width.
pub fn run_auto(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    AUTO_RAN.set(None);
    let ran = run_auto_steps(p, x, y)?;
    AUTO_RAN.set(Some((auto_key(x), ran)));
    Ok(())
}

/// [`run_auto`]'s steps; the version that ran.
pub(super) fn run_auto_steps(
    p: &SoftmaxParams,
    x: &Tensor,
    y: &mut Tensor,
) -> Result<&'static str> {
    let (choice, config, _) = auto_decision(x);
    if choice != "v4_online" {
        match run_config(choice, config, p, x, y) {
            Err(Error::UnsupportedShape { .. }) => {}
            r => return r.map(|_| choice),
        }
        // Only now the heuristic (a call costs host time, and tiny problems are launch-bound).
        // A named configuration that refused the shape leaves its version's default run to try.
        let h = heuristic_choice(x);
        if h != "v4_online" && (h != choice || !config.is_empty()) {
            match run_named(h, p, x, y) {
                Err(Error::UnsupportedShape { .. }) => {}
                r => return r.map(|_| h),
            }
        }
    }
    run_v4_online(p, x, y).map(|_| "v4_online")
}

pub fn symbols_auto(dt: DType) -> Vec<String> {
    let mut v = symbols_v2(dt);
    v.extend(symbols_v3(dt));
    v.extend(symbols_v4(dt));
    v.extend(symbols_v6(dt));
    v.extend(symbols_v8(dt));
    v.extend(symbols_v9(dt));
    v.extend(symbols_v11(dt));
    v
}
