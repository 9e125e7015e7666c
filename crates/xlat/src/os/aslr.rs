//! Address-space layout randomization (`os.aslr`): where the OS places a process's executable
//! (with its brk heap), its mmap area and its stack, as Linux x86-64 does with
//! `randomize_va_space = 2`.
//!
//! Traces and the built-in workloads give addresses of the layout without randomization (what
//! `setarch -R` gives: PIE at `ELF_ET_DYN_BASE` = 0x5555_5555_4000, the mmap area top-down from
//! `TASK_SIZE - 128 MiB`, the stack below `TASK_SIZE`). With `os.aslr = true` every address of
//! the process's events is moved by its zone's shift before the OS model sees it:
//!
//! | zone (canonical addresses) | Linux | shift |
//! |---|---|---|
//! | `[0, 0x4000_0000_0000)` | non-PIE text, fixed mappings | none |
//! | `[0x4000_0000_0000, 0x5e00_0000_0000)` executable and brk heap | `load_bias = ELF_ET_DYN_BASE + arch_mmap_rnd()` | up by `rnd` pages, `rnd` < 2^28 (`mmap_rnd_bits` = 28) |
//! | `[0x6200_0000_0000, TASK_SIZE - 128 MiB)` mmap area | `mmap_base()`: `TASK_SIZE - gap - rnd`, `gap` = 8 MiB stack rlimit + 1 MiB guard + 16 GiB stack randomization (no ASLR: gap clamped to 128 MiB) | down by `gap - 128 MiB + rnd` pages, `rnd` < 2^28 |
//! | `[TASK_SIZE - 9 MiB, TASK_SIZE)` stack (8 MiB rlimit + guard) | `randomize_stack_top()` | down by `rnd` pages, `rnd` < 2^22 (`STACK_RND_MASK`) |
//!
//! Contract: within a zone the relocation is a shift by whole 4 KiB pages, so it preserves
//! distances and 4 KiB alignment (not 2 MiB alignment: Linux 5.15 randomizes at page
//! granularity, so THP eligibility of a region can change); the zones' images are disjoint, so
//! the relocation is a bijection; an address in no zone (the guard bands
//! `[0x5e00_0000_0000, 0x6200_0000_0000)`, `[TASK_SIZE - 128 MiB, TASK_SIZE - 9 MiB)` and beyond
//! `TASK_SIZE`) is refused with an error, as is a range that leaves its zone. The layout of a
//! process is a pure function of `sim.seed` and its ASID.
//!
//! Deviations: the brk heap moves with the executable (Linux adds a further random offset of up
//! to 32 MiB to the heap start, `arch_randomize_brk`); the stack's sub-page offset, the vDSO and
//! KASLR are not modeled.
//!
//! References: Linux `arch/x86/mm/mmap.c` (`mmap_base`, `arch_mmap_rnd`),
//! `fs/binfmt_elf.c` (`load_elf_binary`), `mm/util.c` (`randomize_stack_top`).

use crate::addr::{Asid, Vaddr, Vpn, BASE_PAGE_BYTES, BASE_PAGE_SHIFT};

/// Linux x86-64 `TASK_SIZE` (47-bit user space minus the guard page).
pub const TASK_SIZE: u64 = (1 << 47) - BASE_PAGE_BYTES;
/// The canonical (unrandomized) mmap base: `TASK_SIZE - 128 MiB`.
pub const MMAP_BASE_CANONICAL: u64 = TASK_SIZE - (128 << 20);
/// Lowest canonical address of the stack zone: 8 MiB stack rlimit + 1 MiB guard gap.
pub const STACK_ZONE_LO: u64 = TASK_SIZE - (9 << 20);
/// Canonical executable / brk-heap zone.
pub const EXEC_ZONE: (u64, u64) = (0x4000_0000_0000, 0x5e00_0000_0000);
/// Lowest canonical address of the mmap zone.
pub const MMAP_ZONE_LO: u64 = 0x6200_0000_0000;
/// Random bits of the mmap and PIE bases, in pages (`mmap_rnd_bits`).
pub const MMAP_RND_BITS: u32 = 28;
/// Random bits of the stack top, in pages (`STACK_RND_MASK` = 0x3fffff).
pub const STACK_RND_BITS: u32 = 22;
/// The mmap gap with randomization: stack rlimit + stack randomization + guard gap.
const MMAP_GAP_ASLR: u64 =
    (8 << 20) + (((1u64 << STACK_RND_BITS) - 1) << BASE_PAGE_SHIFT) + (1 << 20);

/// `os.aslr` is on: every process's layout derives from the run's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aslr {
    /// `sim.seed`.
    pub seed: u64,
}

impl Aslr {
    /// The layout of process `asid`.
    pub fn layout(&self, asid: Asid) -> AslrLayout {
        AslrLayout::for_process(self.seed, asid)
    }
}

/// A randomized zone: canonical `[lo, hi)` moved by `shift_pages` (signed, in 4 KiB pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Name for error messages.
    pub name: &'static str,
    /// First canonical address.
    pub lo: u64,
    /// End of the zone (exclusive), canonical.
    pub hi: u64,
    /// Placed = canonical + `shift_pages` * 4 KiB.
    pub shift_pages: i64,
}

impl Zone {
    fn shift_bytes(&self) -> i64 {
        self.shift_pages << BASE_PAGE_SHIFT
    }
    /// Whether canonical `va` lies in the zone.
    fn holds(&self, va: u64) -> bool {
        va >= self.lo && va < self.hi
    }
    /// Whether placed `va` lies in the zone's image.
    fn image_holds(&self, va: u64) -> bool {
        let va = va as i128;
        let s = self.shift_bytes() as i128;
        va >= self.lo as i128 + s && va < self.hi as i128 + s
    }
}

/// The randomized layout of one process: the shifts of its zones (the "base registers" the OS
/// exposes to LVM's hardware, §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AslrLayout {
    /// Fixed zone (no shift), executable, mmap area, stack.
    pub zones: [Zone; 4],
}

impl AslrLayout {
    /// The layout without randomization (every shift 0).
    pub fn identity() -> AslrLayout {
        AslrLayout::with_random(0, 0, 0)
    }

    /// The layout of process `asid` under `seed`.
    pub fn for_process(seed: u64, asid: Asid) -> AslrLayout {
        let mut s = seed ^ 0x4153_4c52_0000_0000 ^ ((asid as u64) << 16);
        let pie = crate::rng::splitmix64(&mut s) & ((1 << MMAP_RND_BITS) - 1);
        let mmap = crate::rng::splitmix64(&mut s) & ((1 << MMAP_RND_BITS) - 1);
        let stack = crate::rng::splitmix64(&mut s) & ((1 << STACK_RND_BITS) - 1);
        AslrLayout::with_random(pie, mmap, stack)
    }

    /// The layout with these random page counts (as Linux draws them).
    pub fn with_random(pie_rnd: u64, mmap_rnd: u64, stack_rnd: u64) -> AslrLayout {
        let gap_extra_pages = ((MMAP_GAP_ASLR - (128 << 20)) >> BASE_PAGE_SHIFT) as i64;
        let randomized = pie_rnd | mmap_rnd | stack_rnd != 0;
        AslrLayout {
            zones: [
                Zone {
                    name: "fixed",
                    lo: 0,
                    hi: EXEC_ZONE.0,
                    shift_pages: 0,
                },
                Zone {
                    name: "executable/heap",
                    lo: EXEC_ZONE.0,
                    hi: EXEC_ZONE.1,
                    shift_pages: pie_rnd as i64,
                },
                Zone {
                    name: "mmap",
                    lo: MMAP_ZONE_LO,
                    hi: MMAP_BASE_CANONICAL,
                    // The identity layout keeps the canonical gap (Linux without PF_RANDOMIZE).
                    shift_pages: if randomized {
                        -(gap_extra_pages + mmap_rnd as i64)
                    } else {
                        0
                    },
                },
                Zone {
                    name: "stack",
                    lo: STACK_ZONE_LO,
                    hi: TASK_SIZE,
                    shift_pages: -(stack_rnd as i64),
                },
            ],
        }
    }

    /// Where canonical `va` is placed; an error naming the address when it lies in no zone.
    #[inline]
    pub fn place(&self, va: Vaddr) -> Result<Vaddr, String> {
        match self.zones.iter().find(|z| z.holds(va.0)) {
            Some(z) => Ok(Vaddr(va.0.wrapping_add(z.shift_bytes() as u64))),
            None => Err(format!(
                "os.aslr: address {:#x} lies in no randomized zone (the guard bands \
                 [0x5e00_0000_0000, 0x6200_0000_0000) and [TASK_SIZE - 128 MiB, TASK_SIZE - \
                 9 MiB), or beyond TASK_SIZE {TASK_SIZE:#x}); run with os.aslr = false",
                va.0
            )),
        }
    }

    /// Where the canonical range `[va, va + len)` is placed; it must lie in one zone.
    pub fn place_range(&self, va: Vaddr, len: u64) -> Result<Vaddr, String> {
        let z = self.zones.iter().find(|z| z.holds(va.0));
        let last = va.0.saturating_add(len.max(1) - 1);
        match z {
            Some(z) if z.holds(last) => Ok(Vaddr(va.0.wrapping_add(z.shift_bytes() as u64))),
            Some(z) => Err(format!(
                "os.aslr: range {:#x}+{:#x} leaves the {} zone [{:#x}, {:#x})",
                va.0, len, z.name, z.lo, z.hi
            )),
            None => self.place(va),
        }
    }

    /// The shift in pages of the zone whose image holds the placed page `vpn` (0 when none
    /// does): LVM subtracts it to recover the canonical page ("ASLR base removal").
    #[inline]
    pub fn shift_of_placed(&self, vpn: Vpn) -> i64 {
        let va = vpn.0 << BASE_PAGE_SHIFT;
        // Zones 1..3 first: the fixed zone has no shift.
        for z in &self.zones[1..] {
            if z.image_holds(va) {
                return z.shift_pages;
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_layout_moves_nothing() {
        let l = AslrLayout::identity();
        for va in [
            0x40_0000u64,
            0x5555_5600_0000,
            0x7fff_f7a0_0000,
            TASK_SIZE - 4096,
        ] {
            assert_eq!(l.place(Vaddr(va)).unwrap(), Vaddr(va));
        }
    }

    #[test]
    fn zones_move_by_linux_ranges_and_their_images_are_disjoint() {
        // The extreme draws and a few random ones: images ordered, disjoint, inside user space.
        let max28 = (1 << MMAP_RND_BITS) - 1;
        let max22 = (1 << STACK_RND_BITS) - 1;
        let mut layouts = vec![
            AslrLayout::with_random(max28, 0, max22),
            AslrLayout::with_random(max28, max28, max22),
            AslrLayout::with_random(1, 0, max22),
            AslrLayout::with_random(max28, 0, 0),
        ];
        layouts.extend((0..50).map(|a| AslrLayout::for_process(7, a)));
        for l in layouts {
            let img: Vec<(i128, i128)> = l
                .zones
                .iter()
                .map(|z| {
                    let s = (z.shift_pages as i128) << 12;
                    (z.lo as i128 + s, z.hi as i128 + s)
                })
                .collect();
            for w in img.windows(2) {
                assert!(w[0].1 <= w[1].0, "zone images overlap: {img:x?}");
            }
            assert!(img[3].1 <= TASK_SIZE as i128);
            // Linux's mmap_base with randomization: TASK_SIZE - gap - rnd.
            let mmap_top = img[2].1 as u64;
            assert!(mmap_top <= TASK_SIZE - MMAP_GAP_ASLR);
            assert!(mmap_top > TASK_SIZE - MMAP_GAP_ASLR - (1 << 40));
            // The stack top moves down by less than 16 GiB.
            assert!(img[3].1 as u64 > TASK_SIZE - (16 << 30));
        }
    }

    #[test]
    fn base_removal_inverts_the_placement_in_every_zone() {
        let l = AslrLayout::for_process(42, 3);
        for va in [
            0x40_0000u64,
            EXEC_ZONE.0,
            0x5555_5600_0000,
            EXEC_ZONE.1 - 4096,
            MMAP_ZONE_LO,
            0x7fff_f7a0_0000,
            MMAP_BASE_CANONICAL - 4096,
            STACK_ZONE_LO,
            TASK_SIZE - 4096,
        ] {
            let placed = l.place(Vaddr(va)).unwrap().vpn();
            let shift = l.shift_of_placed(placed);
            assert_eq!((placed.0 as i64 - shift) as u64, va >> 12, "{va:#x}");
        }
    }

    #[test]
    fn layouts_depend_on_seed_and_process_and_are_reproducible() {
        let a = AslrLayout::for_process(1, 0);
        assert_eq!(a, AslrLayout::for_process(1, 0));
        assert_ne!(a, AslrLayout::for_process(1, 1));
        assert_ne!(a, AslrLayout::for_process(2, 0));
        assert_ne!(a, AslrLayout::identity());
    }

    #[test]
    fn addresses_in_a_guard_band_and_ranges_leaving_a_zone_are_refused() {
        let l = AslrLayout::for_process(1, 0);
        let e = l.place(Vaddr(0x6000_0000_0000)).unwrap_err();
        assert!(
            e.contains("0x600000000000") && e.contains("no randomized zone"),
            "{e}"
        );
        assert!(l.place(Vaddr(MMAP_BASE_CANONICAL)).is_err());
        assert!(l.place(Vaddr(TASK_SIZE)).is_err());
        let e = l.place_range(Vaddr(EXEC_ZONE.1 - 4096), 8192).unwrap_err();
        assert!(e.contains("leaves the executable/heap zone"), "{e}");
        assert!(l.place_range(Vaddr(EXEC_ZONE.1 - 4096), 4096).is_ok());
    }
}
