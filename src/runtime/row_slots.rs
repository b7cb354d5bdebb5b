//! The Rust side of `kernels/rows.cuh`'s `RowSlots`: how many slots (16-byte packs, or
//! elements) each thread of a block-a-row kernel holds. Softmax v3 and rmsnorm v2 launch by
//! the same rule and take the same tuning; the compiler's register-held row kernels launch by
//! the rule.

/// The slots a thread the kernels are built for.
pub const KS: [usize; 4] = [1, 2, 4, 8];

/// K (slots a thread) for a block a row of `slots` slots: 4 — four loads in flight — unless
/// the row is so short that a warp would then idle (1 or 2), or so long that 4 would need more
/// than 1024 threads (8); `None` when even 8 would.
pub fn slots_per_thread(slots: usize) -> Option<usize> {
    if slots.div_ceil(8) > 1024 {
        return None;
    }
    if slots.div_ceil(4) > 1024 {
        return Some(8);
    }
    Some(match slots {
        0..=32 => 1,
        33..=64 => 2,
        _ => 4,
    })
}

/// A block-a-row kernel's tuning: K forced, so fewer threads a row with more loads in flight
/// each, or the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlotsTuning {
    /// K forced to 1, 2, 4 or 8 wherever the row then needs at most 1024 threads; `None`, or
    /// where it does not fit: [`slots_per_thread`]'s rule.
    pub k: Option<usize>,
}

impl SlotsTuning {
    /// [`slots_per_thread`]'s rule.
    pub const DEFAULT: SlotsTuning = SlotsTuning { k: None };

    /// The forced K for a row of `slots` slots, where the kernels are built for it and it
    /// needs at most 1024 threads.
    pub fn slots_per_thread(&self, slots: usize) -> Option<usize> {
        self.k
            .filter(|k| KS.contains(k) && slots.div_ceil(*k) <= 1024)
    }
}
