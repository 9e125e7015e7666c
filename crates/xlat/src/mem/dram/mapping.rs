//! DRAM address mapping: which channel, bank and row a 64-byte line lives in.
//!
//! Owns [`DramMapping`] (`mem.dram.address_mapping`) and [`AddressMap`], shared by the idle model
//! (`dram/mod.rs`) and the queued one (`dram/controller.rs`); calls nothing else of the crate.
//!
//! Contract: [`AddressMap::locate`] returns `(channel * banks_per_channel + bank, row)`, the bank
//! index inside a channel counting bank groups fastest, then banks of a group, then ranks
//! (`bank = (rank * banks_per_group + bank_in_group) * bank_groups + bank_group`, see
//! [`AddressMap::split_bank`]). `row_hashed`, `row_contiguous` and `line_interleaved` do not
//! depend on ranks or bank groups (so the idle model's figures do not either); `champsim` and
//! `ro_ba_ra_co_ch` do.

use serde::{Deserialize, Serialize};

/// `mem.dram.address_mapping`: which address bits pick the channel, the bank and the row.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DramMapping {
    /// The default (model version 9): the fields of `row_contiguous` (a row's consecutive
    /// lines, then channel, then bank, then row), with every bit of the row folded into the
    /// channel and the bank: XOR of the row's chunks of the field's width when the count is a
    /// power of two (ChampSim's `swizzle_bits` fold at commit 2ff25011, and the XOR bank and
    /// channel functions reverse-engineered on Intel controllers, Pessl et al., DRAMA, USENIX
    /// Security 2016), `(field + row folded to 16 bits) mod count` otherwise. A sequential
    /// stream stays in one open row for `row_bytes`, as under `row_contiguous`, and arrays that
    /// sit at a distance of a large power of two in physical memory (contiguous placement, huge
    /// pages) land in different banks instead of the same one (docs/timing.md, "Contiguous
    /// placement and streams").
    #[default]
    RowHashed,
    /// The consecutive lines of a row first, then channel, then bank (XORed with the row's
    /// low bits only), then row: the default before model version 9. Streams over arrays whose
    /// physical distance is a multiple of 16 rows x channels x banks meet in one bank and
    /// conflict in its row buffer.
    RowContiguous,
    /// Channel, then bank, then the row's columns, then row, from the line address up, with no
    /// XOR: consecutive lines go to different channels and banks, so streams over several
    /// arrays meet in every bank and conflict in its row buffer. ChampSim's field order (its
    /// `DRAM_ADDRESS_MAPPING`: offset, channel, bank group, bank, column, rank, row) without
    /// ChampSim's XOR of the row into channel, bank group and bank (that is `champsim`), and with
    /// ranks counted in the bank field; for the ChampSim validation (docs/timing.md).
    LineInterleaved,
    /// ChampSim's mapping as built at commit 2ff25011 (`src/dram_controller.cc`): offset,
    /// channel, bank group, bank, column, rank, row from the low bits up, then `swizzle_bits`:
    /// the channel is XORed with the parity of the row, and the (bank, bank group) field with
    /// the row folded by XOR into chunks of that field's width. Every count must be a power of
    /// two.
    Champsim,
    /// Ramulator 2's `RoBaRaCoCh` (`src/ramulator/controller/addr_mapper/impl/ro_ba_ra_co_ch.cpp`
    /// with the `CacheLineInterleave` channel mapper at `interleave_bits: 0`, at commit
    /// c5b1c3a4): from the line address up, channel, column (the row's `row_bytes / 64` lines),
    /// rank, bank group, bank, row, with no XOR. Under one channel consecutive lines fill a row
    /// (128 lines of an 8 KiB row) and then move to the next bank group. For the Ramulator 2
    /// validation (docs/timing.md); every count must be a power of two.
    RoBaRaCoCh,
}

/// Geometry and mapping of one DRAM system, precomputed for [`AddressMap::locate`].
#[derive(Clone, Debug)]
pub struct AddressMap {
    mapping: DramMapping,
    lines_per_row: u64,
    channels: u64,
    banks: u64,
    bank_groups: u64,
    banks_per_group: u64,
    /// log2 of (lines_per_row, channels, banks) when all are powers of two: the address split
    /// then costs shifts instead of five divisions per access.
    shifts: Option<(u32, u32, u32)>,
    /// `row_hashed`'s folds of the row into the channel and into the bank, decided once (the
    /// per-access test of the counts cost a division by the field width on every DRAM access).
    channel_fold: Fold,
    bank_fold: Fold,
}

impl AddressMap {
    /// The map of `channels` channels of `banks_per_channel` banks (`ranks` x `bank_groups` x
    /// banks per group) with rows of `row_bytes`. `row_bytes` below 64 counts as one line.
    pub fn new(
        mapping: DramMapping,
        channels: u32,
        banks_per_channel: u32,
        row_bytes: u64,
        ranks: u32,
        bank_groups: u32,
    ) -> AddressMap {
        let lines_per_row = (row_bytes / 64).max(1);
        let (ch, bk) = (channels as u64, banks_per_channel as u64);
        let pow2 = lines_per_row.is_power_of_two() && ch.is_power_of_two() && bk.is_power_of_two();
        let bank_groups = (bank_groups as u64).max(1);
        AddressMap {
            mapping,
            lines_per_row,
            channels: ch,
            banks: bk,
            bank_groups,
            banks_per_group: (bk / bank_groups / (ranks as u64).max(1)).max(1),
            shifts: pow2.then(|| {
                (
                    lines_per_row.trailing_zeros(),
                    ch.trailing_zeros(),
                    bk.trailing_zeros(),
                )
            }),
            channel_fold: Fold::new(ch),
            bank_fold: Fold::new(bk),
        }
    }

    /// Banks per channel.
    pub fn banks_per_channel(&self) -> u64 {
        self.banks
    }

    /// `(channel * banks_per_channel + bank, row)` of `line` (a physical address >> 6).
    #[inline]
    pub fn locate(&self, line: u64) -> (usize, u64) {
        match self.mapping {
            DramMapping::RowContiguous => {}
            DramMapping::RowHashed => return self.locate_row_hashed(line),
            DramMapping::LineInterleaved => return self.locate_line_interleaved(line),
            DramMapping::Champsim => return self.locate_champsim(line),
            DramMapping::RoBaRaCoCh => return self.locate_ro_ba_ra_co_ch(line),
        }
        if let Some((lpr, ch, bk)) = self.shifts {
            let rest = line >> lpr;
            let channel = rest & ((1 << ch) - 1);
            let rest = rest >> ch;
            let row = rest >> bk;
            let bank = (rest ^ row) & ((1 << bk) - 1);
            return (((channel << bk) | bank) as usize, row);
        }
        let rest = line / self.lines_per_row;
        let channel = rest % self.channels;
        let rest = rest / self.channels;
        let row = rest / self.banks;
        let bank = (rest % self.banks) ^ (row % self.banks);
        ((channel * self.banks + bank) as usize, row)
    }

    /// (bank, row) under `row_hashed`: `row_contiguous`'s fields, the row folded into channel
    /// and bank. For a fixed row each fold adds (XOR or modulo) a constant to its field, so the
    /// map stays one-to-one.
    #[inline]
    fn locate_row_hashed(&self, line: u64) -> (usize, u64) {
        let (channel, bank, row) = match self.shifts {
            Some((lpr, ch, bk)) => {
                let rest = line >> lpr;
                let channel = rest & ((1 << ch) - 1);
                let rest = rest >> ch;
                (channel, rest & ((1 << bk) - 1), rest >> bk)
            }
            None => {
                let rest = line / self.lines_per_row;
                let (channel, rest) = (rest % self.channels, rest / self.channels);
                (channel, rest % self.banks, rest / self.banks)
            }
        };
        let channel = self.channel_fold.apply(channel, row);
        let bank = self.bank_fold.apply(bank, row);
        ((channel * self.banks + bank) as usize, row)
    }

    /// (bank, row) under `line_interleaved`: channel from the lowest line bits, then bank, then
    /// the row's `lines_per_row` columns, then row.
    #[cold]
    fn locate_line_interleaved(&self, line: u64) -> (usize, u64) {
        let channel = line % self.channels;
        let rest = line / self.channels;
        let bank = rest % self.banks;
        let row = rest / self.banks / self.lines_per_row;
        ((channel * self.banks + bank) as usize, row)
    }

    /// (bank, row) under `champsim` (powers of two checked by `DramConfig::validate`).
    #[cold]
    fn locate_champsim(&self, line: u64) -> (usize, u64) {
        let bits = |n: u64| n.trailing_zeros();
        let (c_bits, g_bits, b_bits) = (
            bits(self.channels),
            bits(self.bank_groups),
            bits(self.banks_per_group),
        );
        let col_bits = bits(self.lines_per_row);
        let r_bits = bits(self.banks) - g_bits - b_bits;
        let field = |v: u64, w: u32| v & ((1u64 << w) - 1);
        let mut rest = line;
        let mut channel = field(rest, c_bits);
        rest >>= c_bits;
        // Bank group in the low bits of the (bank, bank group) field, as ChampSim slices them.
        let mut group_bank = field(rest, g_bits + b_bits);
        rest >>= g_bits + b_bits;
        rest >>= col_bits;
        let rank = field(rest, r_bits);
        let row = rest >> r_bits;
        if c_bits > 0 {
            channel ^= (row.count_ones() & 1) as u64;
        }
        let w = g_bits + b_bits;
        if w > 0 {
            let mut r = row;
            while r != 0 {
                group_bank ^= field(r, w);
                r >>= w;
            }
        }
        let bank_in_channel = (rank << (g_bits + b_bits)) | group_bank;
        ((channel * self.banks + bank_in_channel) as usize, row)
    }

    /// (bank, row) under `ro_ba_ra_co_ch` (powers of two checked by `DramConfig::validate`):
    /// channel, column, rank, bank group, bank, row from the low bits up.
    #[cold]
    fn locate_ro_ba_ra_co_ch(&self, line: u64) -> (usize, u64) {
        let bits = |n: u64| n.trailing_zeros();
        let (c_bits, g_bits, b_bits) = (
            bits(self.channels),
            bits(self.bank_groups),
            bits(self.banks_per_group),
        );
        let r_bits = bits(self.banks) - g_bits - b_bits;
        let field = |v: u64, w: u32| v & ((1u64 << w) - 1);
        let channel = field(line, c_bits);
        let rest = line >> c_bits >> bits(self.lines_per_row);
        let rank = field(rest, r_bits);
        let rest = rest >> r_bits;
        let group = field(rest, g_bits);
        let rest = rest >> g_bits;
        let bank = field(rest, b_bits);
        let row = rest >> b_bits;
        // The flat index of `split_bank`: bank groups fastest, then banks of a group, then ranks.
        let flat = (((rank << b_bits) | bank) << g_bits) | group;
        ((channel * self.banks + flat) as usize, row)
    }

    /// `(channel, rank, bank_group, bank_in_group)` of a flat bank index from [`Self::locate`].
    #[inline]
    pub fn split_bank(&self, flat: usize) -> (usize, usize, usize, usize) {
        let flat = flat as u64;
        let (channel, bank) = (flat / self.banks, flat % self.banks);
        let group = bank % self.bank_groups;
        let in_group = (bank / self.bank_groups) % self.banks_per_group;
        let rank = bank / (self.bank_groups * self.banks_per_group);
        (
            channel as usize,
            rank as usize,
            group as usize,
            in_group as usize,
        )
    }
}

/// How `row_hashed` folds a row into a field of `count` values (the `fold_into` of the tests), decided
/// from `count` once per map.
#[derive(Clone, Copy, Debug)]
enum Fold {
    /// `count <= 1`: the field is always 0.
    Zero,
    /// `count == 2`: the field XOR the row's parity.
    Parity,
    /// A power-of-two `count` whose width divides 64: XOR-halving folds of shifts 32, 16, ...
    /// down to `width`, then the low `mask` bits.
    Halving { width: u32, mask: u64 },
    /// Another power-of-two `count`: chunk by chunk ([`fold_chunks`]).
    Chunks { width: u32 },
    /// Any other `count`: `(field + the row XOR-folded to 16 bits) mod count`.
    Modulo { count: u64 },
}

impl Fold {
    fn new(count: u64) -> Fold {
        if count <= 1 {
            return Fold::Zero;
        }
        if !count.is_power_of_two() {
            return Fold::Modulo { count };
        }
        let width = count.trailing_zeros();
        match width {
            1 => Fold::Parity,
            w if 64 % w == 0 => Fold::Halving {
                width: w,
                mask: count - 1,
            },
            width => Fold::Chunks { width },
        }
    }

    /// `field` (below the count) with `row` folded in: a bijection of `field` for a fixed row.
    #[inline(always)]
    fn apply(self, field: u64, row: u64) -> u64 {
        match self {
            Fold::Zero => 0,
            Fold::Parity => field ^ (row.count_ones() & 1) as u64,
            Fold::Halving { width, mask } => {
                // Every shift is a multiple of the width, so chunk boundaries stay aligned and
                // the low bits end as the XOR of all chunks, as `fold_chunks` computes (without
                // its row-dependent trip count). Written out, not looped: the tests of the
                // map's constant width predict perfectly, a loop's counter cost more than the
                // folds (callgrind: 25 of the 64 instructions of a `locate`).
                let mut r = row ^ (row >> 32);
                if width <= 16 {
                    r ^= r >> 16;
                }
                if width <= 8 {
                    r ^= r >> 8;
                }
                if width <= 4 {
                    r ^= r >> 4;
                }
                if width <= 2 {
                    r ^= r >> 2;
                }
                field ^ (r & mask)
            }
            Fold::Chunks { width } => fold_chunks(field, row, width),
            Fold::Modulo { count } => {
                let mut r = row ^ (row >> 32);
                r ^= r >> 16;
                (field + (r & 0xffff)) % count
            }
        }
    }
}

/// `field` (below `count`) with `row` folded in: for a power-of-two `count`, `field` XOR the
/// row's chunks of `log2(count)` bits; otherwise `(field + the row XOR-folded to 16 bits) mod
/// count`. Either way a bijection of `field` for a fixed row. (The map decides the [`Fold`]
/// once; this is the same fold for one call.)
#[cfg(test)]
pub(super) fn fold_into(field: u64, row: u64, count: u64) -> u64 {
    Fold::new(count).apply(field, row)
}

/// `field` XOR every `width`-bit chunk of `row`, one chunk at a time (widths that do not
/// divide 64).
pub(super) fn fold_chunks(field: u64, row: u64, width: u32) -> u64 {
    let mask = (1u64 << width) - 1;
    let (mut folded, mut r) = (field, row);
    while r != 0 {
        folded ^= r & mask;
        r >>= width;
    }
    folded
}
