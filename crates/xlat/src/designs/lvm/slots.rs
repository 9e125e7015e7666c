//! The slots of a gapped page table as the search for a free slot sees them: a GPT's keys, or
//! a fresh table being filled by the training's placement, kept as counts per line.
//!
//! Contract: [`SlotTable::first_free`] of either form gives the same slot for the same taken
//! slots, so the training judges a candidate table without allocating it.

/// Translation entries per 64-byte line of a GPT.
pub const SLOTS_PER_LINE: u64 = 8;
/// An empty slot of a GPT.
pub(super) const EMPTY: u64 = u64::MAX;
/// A freed entry: the slot stays reserved for the index (frees keep the slot, §5.2).
pub(super) const FREED: u64 = u64::MAX - 1;

/// The slots of a table as the index's free-slot search searches them.
///
/// Contract: `first_free(start, end)` is the lowest slot in `start..end` (one line at most)
/// that a new entry may take, or `None` when the line has none.
pub(super) trait SlotTable {
    fn first_free(&self, start: u64, end: u64) -> Option<u64>;
}

/// A GPT's keys: `EMPTY` and `FREED` slots may be taken.
impl SlotTable for [u64] {
    fn first_free(&self, start: u64, end: u64) -> Option<u64> {
        (start..end).find(|&s| self[s as usize] == EMPTY || self[s as usize] == FREED)
    }
}

/// A fresh table being filled by the training's placement, kept as the count of taken slots
/// per line.
///
/// What must stay true: slots are only taken (never freed) and always the line's first free
/// one, so a line's taken slots are a prefix and its count gives its first free slot: the same
/// slots a table of `cap` entries would give. It costs a byte per line, or one map entry per
/// taken line when the table is far larger than its keys: a model over a sparse span (LVM's
/// memcached at 75 GiB fits a 12 G-slot least-squares table before the build rejects it) must
/// not allocate its table to be judged.
pub(super) enum LineFill {
    Dense(Vec<u8>),
    Sparse(std::collections::HashMap<u64, u8>),
}

impl LineFill {
    /// A fill for `cap` slots that will take `keys` of them.
    pub(super) fn new(cap: u64, keys: usize) -> Self {
        let lines = cap.div_ceil(SLOTS_PER_LINE);
        if lines <= 16 * keys as u64 + 4096 {
            LineFill::Dense(vec![0; lines as usize])
        } else {
            LineFill::Sparse(std::collections::HashMap::with_capacity(keys))
        }
    }

    fn taken(&self, line: u64) -> u64 {
        match self {
            LineFill::Dense(v) => v[line as usize] as u64,
            LineFill::Sparse(h) => h.get(&line).copied().unwrap_or(0) as u64,
        }
    }

    /// Take `slot`, which must be its line's first free slot.
    pub(super) fn take(&mut self, slot: u64) {
        let line = slot / SLOTS_PER_LINE;
        debug_assert_eq!(slot % SLOTS_PER_LINE, self.taken(line));
        match self {
            LineFill::Dense(v) => v[line as usize] += 1,
            LineFill::Sparse(h) => *h.entry(line).or_insert(0) += 1,
        }
    }
}

impl SlotTable for LineFill {
    fn first_free(&self, start: u64, end: u64) -> Option<u64> {
        let s = start + self.taken(start / SLOTS_PER_LINE);
        (s < end).then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn counts_per_line_give_the_slots_a_full_table_gives(
            lines in proptest::collection::vec(0u64..64, 1..400),
            sparse in any::<bool>(),
        ) {
            let cap = 64 * SLOTS_PER_LINE - 3; // a partial last line
            let mut table = vec![EMPTY; cap as usize];
            let mut fill = if sparse {
                LineFill::Sparse(Default::default())
            } else {
                LineFill::new(cap, lines.len())
            };
            for line in lines {
                let (start, end) = (line * SLOTS_PER_LINE, ((line + 1) * SLOTS_PER_LINE).min(cap));
                let want = table.as_slice().first_free(start, end);
                prop_assert_eq!(fill.first_free(start, end), want);
                if let Some(s) = want {
                    table[s as usize] = s;
                    fill.take(s);
                }
            }
        }
    }

    #[test]
    fn a_table_far_larger_than_its_keys_is_kept_sparse() {
        assert!(matches!(LineFill::new(1 << 36, 4100), LineFill::Sparse(_)));
        assert!(matches!(LineFill::new(1 << 16, 4100), LineFill::Dense(_)));
    }
}
