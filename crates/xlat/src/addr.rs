//! Address and page-size newtypes.
//!
//! Virtual and physical addresses, page numbers and frame numbers are distinct types so that a
//! VPN can never be handed where a PFN is expected. Page numbers are always in units of the 4 KiB
//! base page, whatever the size of the page that contains them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// log2 of the base page size (4 KiB).
pub const BASE_PAGE_SHIFT: u32 = 12;
/// Size of the base page in bytes.
pub const BASE_PAGE_BYTES: u64 = 1 << BASE_PAGE_SHIFT;
/// Size of a cache line in bytes (all caches and page-table lines use it).
pub const LINE_BYTES: u64 = 64;
/// log2 of [`LINE_BYTES`].
pub const LINE_SHIFT: u32 = 6;
/// Size of one page-table entry in bytes.
pub const PTE_BYTES: u64 = 8;

/// Address-space identifier of a simulated process.
pub type Asid = u16;

/// A virtual address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Vaddr(pub u64);

/// A physical address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Paddr(pub u64);

/// A virtual page number in 4 KiB units (`Vaddr >> 12`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Vpn(pub u64);

/// A physical frame number in 4 KiB units (`Paddr >> 12`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Pfn(pub u64);

macro_rules! hex_debug {
    ($($t:ident),*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($t), "({:#x})"), self.0)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }
    )*};
}
hex_debug!(Vaddr, Paddr, Vpn, Pfn);

impl Vaddr {
    /// The 4 KiB virtual page containing this address.
    #[inline]
    pub fn vpn(self) -> Vpn {
        Vpn(self.0 >> BASE_PAGE_SHIFT)
    }
}

impl Paddr {
    /// The 4 KiB frame containing this address.
    #[inline]
    pub fn pfn(self) -> Pfn {
        Pfn(self.0 >> BASE_PAGE_SHIFT)
    }
    /// The cache-line number of this address.
    #[inline]
    pub fn line(self) -> u64 {
        self.0 >> LINE_SHIFT
    }
}

impl Vpn {
    /// First byte of the page.
    #[inline]
    pub fn addr(self) -> Vaddr {
        Vaddr(self.0 << BASE_PAGE_SHIFT)
    }
    /// This VPN rounded down to the first 4 KiB VPN of the enclosing page of `size`.
    #[inline]
    pub fn align_down(self, size: PageSize) -> Vpn {
        Vpn(self.0 & !(size.base_pages() - 1))
    }
}

impl Pfn {
    /// First byte of the frame.
    #[inline]
    pub fn addr(self) -> Paddr {
        Paddr(self.0 << BASE_PAGE_SHIFT)
    }
}

/// A page (translation) size: any power of two from 4 KiB to 1 GiB.
///
/// Contract: a size is `4 KiB << order` with `order` in `0..=18`; sizes order from smallest to
/// largest; pages of a size are naturally aligned, virtually and physically. x86-64 translates
/// three of them ([`PageSize::X86`]); other designs (TPS, Arm contiguous entries, ...) declare
/// theirs through [`PageSizeSet`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageSize(u8);

#[allow(non_upper_case_globals)]
impl PageSize {
    /// 4 KiB base page.
    pub const Size4K: PageSize = PageSize(0);
    /// 2 MiB huge page (x86-64 PD leaf).
    pub const Size2M: PageSize = PageSize(9);
    /// 1 GiB huge page (x86-64 PDPT leaf).
    pub const Size1G: PageSize = PageSize(18);
    /// Largest order (1 GiB).
    pub const MAX_ORDER: u8 = 18;
    /// The three sizes x86-64 page tables translate, smallest first.
    pub const X86: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    /// The size of `2^order` base pages; `None` above 1 GiB.
    #[inline]
    pub const fn from_order(order: u8) -> Option<PageSize> {
        if order <= Self::MAX_ORDER {
            Some(PageSize(order))
        } else {
            None
        }
    }

    /// The size of `bytes` bytes, if it is a power of two from 4 KiB to 1 GiB.
    pub fn from_bytes(bytes: u64) -> Option<PageSize> {
        (bytes.is_power_of_two() && (BASE_PAGE_BYTES..=1 << 30).contains(&bytes))
            .then(|| PageSize((bytes.trailing_zeros() - BASE_PAGE_SHIFT) as u8))
    }

    /// log2 of the size in bytes.
    #[inline]
    pub const fn shift(self) -> u32 {
        self.0 as u32 + BASE_PAGE_SHIFT
    }
    /// Size in bytes.
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }
    /// Number of 4 KiB base pages in one page of this size.
    #[inline]
    pub const fn base_pages(self) -> u64 {
        1 << self.0
    }
    /// Buddy-allocator order of one page of this size (log2 of its base pages).
    #[inline]
    pub const fn order(self) -> u8 {
        self.0
    }
    /// Dense index of an x86 size (0 = 4 KiB, 1 = 2 MiB, 2 = 1 GiB), for per-size arrays of
    /// structures that only hold x86 sizes; `None` for any other size.
    #[inline]
    pub const fn x86_index(self) -> Option<usize> {
        match self.0 {
            0 => Some(0),
            9 => Some(1),
            18 => Some(2),
            _ => None,
        }
    }
    /// [`PageSize::x86_index`] for code that only ever sees x86 sizes (a design that declares
    /// only those): another size is a bug of the caller (debug assertion; 0 in release).
    #[inline]
    pub const fn index(self) -> usize {
        match self.x86_index() {
            Some(i) => i,
            None => {
                debug_assert!(false, "not an x86 page size");
                0
            }
        }
    }
    /// Short label used in stats keys: `4k`, `64k`, `2m`, `32m`, `1g`.
    pub fn label(self) -> String {
        let b = self.bytes();
        if b >= 1 << 30 {
            format!("{}g", b >> 30)
        } else if b >= 1 << 20 {
            format!("{}m", b >> 20)
        } else {
            format!("{}k", b >> 10)
        }
    }
}

impl fmt::Debug for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.bytes()))
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.bytes()))
    }
}

impl Serialize for PageSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.bytes()))
    }
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PageSize, D::Error> {
        let text = String::deserialize(d)?;
        PageSize::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl PageSize {
    /// Parse `4KiB`, `64KiB`, `2MiB`, ... (a power of two from 4 KiB to 1 GiB).
    pub fn parse(text: &str) -> Result<PageSize, String> {
        let bytes = parse_bytes(text)?;
        PageSize::from_bytes(bytes).ok_or_else(|| {
            format!(
                "'{text}' is not a page size: a page is a power of two from 4KiB to 1GiB \
                 (4KiB, 8KiB, ..., 2MiB, ..., 1GiB)"
            )
        })
    }
}

/// A set of page sizes (one bit per order 0..=18).
///
/// Contract: iteration is smallest first; the empty set is valid (nothing allowed).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PageSizeSet(u32);

impl PageSizeSet {
    /// No size.
    pub const EMPTY: PageSizeSet = PageSizeSet(0);
    /// 4 KiB only.
    pub const BASE: PageSizeSet = PageSizeSet(1);
    /// 4 KiB, 2 MiB and 1 GiB (x86-64 radix).
    pub const X86: PageSizeSet = PageSizeSet(1 | 1 << 9 | 1 << 18);
    /// Every size from 4 KiB to 1 GiB.
    pub const ALL: PageSizeSet = PageSizeSet((1 << 19) - 1);

    /// The set of the given sizes.
    pub fn of(sizes: &[PageSize]) -> PageSizeSet {
        sizes.iter().fold(PageSizeSet::EMPTY, |s, z| s.with(*z))
    }
    /// This set plus `size`.
    #[inline]
    pub const fn with(self, size: PageSize) -> PageSizeSet {
        PageSizeSet(self.0 | 1 << size.0)
    }
    /// Whether `size` is in the set.
    #[inline]
    pub const fn contains(self, size: PageSize) -> bool {
        self.0 & (1 << size.0) != 0
    }
    /// Sizes in both sets.
    #[inline]
    pub const fn intersect(self, other: PageSizeSet) -> PageSizeSet {
        PageSizeSet(self.0 & other.0)
    }
    /// Whether the set is empty.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The largest size in the set that is at most `limit`.
    #[inline]
    pub fn largest_at_most(self, limit: PageSize) -> Option<PageSize> {
        let below = self.0 & ((2u32 << limit.0) - 1);
        (below != 0).then(|| PageSize((31 - below.leading_zeros()) as u8))
    }
    /// The sizes, smallest first.
    pub fn iter(self) -> impl Iterator<Item = PageSize> {
        (0..=PageSize::MAX_ORDER)
            .filter(move |o| self.0 & (1 << o) != 0)
            .map(PageSize)
    }
    /// Raw bit mask (bit `order` set for each size).
    #[inline]
    pub const fn bits(self) -> u32 {
        self.0
    }
}

impl fmt::Debug for PageSizeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One translation: the page of `size` starting at `vpn` maps to the frames starting at `pfn`.
///
/// Contract: `vpn` and `pfn` are aligned to `size` (their low `size.order()` bits are zero).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct Mapping {
    /// First 4 KiB VPN of the page.
    pub vpn: Vpn,
    /// First 4 KiB PFN of the frame block.
    pub pfn: Pfn,
    /// Page size.
    pub size: PageSize,
    /// Whether stores are allowed.
    pub writable: bool,
}

impl Mapping {
    /// A writable mapping of `size` from 4 KiB VPN `vpn` to 4 KiB PFN `pfn` (both aligned to
    /// `size`).
    pub fn writable(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
        Mapping {
            vpn: Vpn(vpn),
            pfn: Pfn(pfn),
            size,
            writable: true,
        }
    }

    /// Whether `vpn` falls inside this page.
    #[inline]
    pub fn contains(&self, vpn: Vpn) -> bool {
        vpn.0 >= self.vpn.0 && vpn.0 < self.vpn.0 + self.size.base_pages()
    }
    /// Physical address for virtual address `va`, which must lie inside this page.
    #[inline]
    pub fn translate(&self, va: Vaddr) -> Paddr {
        let offset = va.0 & (self.size.bytes() - 1);
        Paddr((self.pfn.0 << BASE_PAGE_SHIFT) | offset)
    }
}

/// Parse a byte size such as `4096`, `64KiB`, `1GiB`, `2MB`, `512M` (binary units throughout).
///
/// Returns an error string naming the problem.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_scaled(
        text,
        1024,
        &["b", "kib", "mib", "gib", "tib", "pib"],
        &["", "k", "m", "g", "t", "p"],
    )
    .or_else(|_| {
        parse_scaled(
            text,
            1024,
            &["", "kb", "mb", "gb", "tb", "pb"],
            &["b", "kb", "mb", "gb", "tb", "pb"],
        )
    })
    .map_err(|_| {
        format!(
            "cannot read '{text}' as a size in bytes (a whole number of B, KiB, MiB, GiB, TiB \
             or PiB, such as 4096, 64KiB, 512MiB, 1GiB)"
        )
    })
}

/// Read `"auto"` (`None`) or a count of references (`Some`): an integer, or text that is one
/// (`"20M"`, `"1e6"`, `"-5"` refused as negative). The shape of `sim.warmup_refs` and
/// `sim.sampling.interval`; `expects` says what the key takes, in its error messages.
pub(crate) fn auto_or_refs<'de, D: serde::Deserializer<'de>>(
    d: D,
    expects: &'static str,
) -> Result<Option<u64>, D::Error> {
    struct Visitor(&'static str);
    impl serde::de::Visitor<'_> for Visitor {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0)
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Option<u64>, E> {
            Ok(Some(n))
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Option<u64>, E> {
            u64::try_from(n)
                .map(Some)
                .map_err(|_| E::custom(format!("must not be negative, got {n}")))
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Option<u64>, E> {
            if text.trim() == "auto" {
                return Ok(None);
            }
            // A command-line value arrives as text.
            if let Ok(n) = text.trim().parse::<i64>() {
                return self.visit_i64(n);
            }
            parse_count(text)
                .map(Some)
                .map_err(|e| E::custom(format!("expects {}: {e}", self.0)))
        }
    }
    d.deserialize_any(Visitor(expects))
}

/// Parse a count such as `1000`, `10M`, `5k`, `2G` (decimal units: k = 1e3, M = 1e6, G = 1e9).
pub fn parse_count(text: &str) -> Result<u64, String> {
    parse_scaled(
        text,
        1000,
        &["", "k", "m", "g", "t"],
        &["", "k", "m", "g", "t"],
    )
    .map_err(|_| format!("cannot read '{text}' as a count (examples: 1000, 5k, 10M, 1G)"))
}

fn parse_scaled(text: &str, base: u64, a: &[&str], b: &[&str]) -> Result<u64, ()> {
    let t = text.trim().replace('_', "");
    let lower = t.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    if num.is_empty() {
        return Err(());
    }
    let unit = unit.trim();
    let power = a
        .iter()
        .position(|u| *u == unit)
        .or_else(|| b.iter().position(|u| *u == unit))
        .ok_or(())?;
    let scale = base.checked_pow(power as u32).ok_or(())?;
    if let Some((whole, frac)) = num.split_once('.') {
        // In integers: "33.2M" is 332 x 10^6 / 10, exact or refused (in floating point
        // 33.2 x 10^6 is not a whole number).
        if frac.contains('.') || (whole.is_empty() && frac.is_empty()) || frac.len() > 30 {
            return Err(());
        }
        let digits: u128 = format!("{whole}{frac}").parse().map_err(|_| ())?;
        let div = 10u128.pow(frac.len() as u32);
        let scaled = digits.checked_mul(scale as u128).ok_or(())?;
        if scaled % div != 0 {
            return Err(());
        }
        u64::try_from(scaled / div).map_err(|_| ())
    } else {
        let v: u64 = num.parse().map_err(|_| ())?;
        v.checked_mul(scale).ok_or(())
    }
}

/// Format a byte count with a binary unit (`1GiB`, `64KiB`, `1536B`), exact when possible.
pub fn format_bytes(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= (1 << shift) && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("2MB").unwrap(), 2 << 20);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("").is_err());
    }

    #[test]
    fn counts_parse_with_decimal_units() {
        assert_eq!(parse_count("10M").unwrap(), 10_000_000);
        assert_eq!(parse_count("5k").unwrap(), 5_000);
        assert_eq!(parse_count("1_000").unwrap(), 1_000);
        assert!(parse_count("ten").is_err());
    }

    #[test]
    fn decimal_counts_and_sizes_are_exact_in_integers_or_refused() {
        // 33.2 x 10^6 is not a whole number in floating point; in integers it is 33,200,000.
        assert_eq!(parse_count("33.2M").unwrap(), 33_200_000);
        assert_eq!(parse_count("0.1M").unwrap(), 100_000);
        assert_eq!(parse_count(".5k").unwrap(), 500);
        assert_eq!(parse_count("2.5").ok(), None);
        assert_eq!(parse_count("1.0001k").ok(), None);
        assert_eq!(parse_count("1.2.3M").ok(), None);
        assert_eq!(parse_count(".M").ok(), None);
        assert_eq!(parse_bytes("0.5KiB").unwrap(), 512);
        assert_eq!(parse_bytes("0.1KiB").ok(), None);
        assert_eq!(parse_count("18446744073709551616").ok(), None);
        assert_eq!(parse_count("18446744073.709551616G").ok(), None);
    }

    #[test]
    fn a_mapping_translates_offsets_inside_its_page() {
        let m = Mapping {
            vpn: Vpn(0x200),
            pfn: Pfn(0x400),
            size: PageSize::Size2M,
            writable: true,
        };
        assert!(m.contains(Vpn(0x3ff)));
        assert!(!m.contains(Vpn(0x400)));
        assert_eq!(m.translate(Vaddr(0x20_1234)), Paddr(0x40_1234));
    }

    #[test]
    fn page_sizes_know_their_order() {
        assert_eq!(PageSize::Size4K.order(), 0);
        assert_eq!(PageSize::Size2M.order(), 9);
        assert_eq!(PageSize::Size1G.order(), 18);
        assert_eq!(format_bytes(1 << 30), "1GiB");
    }

    #[test]
    fn any_power_of_two_from_4k_to_1g_is_a_page_size() {
        assert_eq!(PageSize::parse("64KiB").unwrap().order(), 4);
        assert_eq!(PageSize::parse("32MiB").unwrap().bytes(), 32 << 20);
        assert_eq!(PageSize::parse("2MiB").unwrap(), PageSize::Size2M);
        for bad in ["2KiB", "12KiB", "2GiB", "x"] {
            assert!(PageSize::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(PageSize::from_order(4).unwrap().label(), "64k");
        assert_eq!(PageSize::Size1G.label(), "1g");
        assert_eq!(PageSize::from_order(13).unwrap().label(), "32m");
        assert_eq!(PageSize::from_order(4).unwrap().x86_index(), None);
    }

    #[test]
    fn a_size_set_finds_the_largest_member_below_a_limit() {
        let s = PageSizeSet::X86;
        let k64 = PageSize::from_order(4).unwrap();
        assert_eq!(s.largest_at_most(k64), Some(PageSize::Size4K));
        assert_eq!(s.largest_at_most(PageSize::Size2M), Some(PageSize::Size2M));
        assert_eq!(
            s.largest_at_most(PageSize::from_order(17).unwrap()),
            Some(PageSize::Size2M)
        );
        assert_eq!(PageSizeSet::EMPTY.largest_at_most(PageSize::Size1G), None);
        assert_eq!(s.iter().collect::<Vec<_>>(), PageSize::X86.to_vec());
        assert!(!s.contains(k64) && s.with(k64).contains(k64));
    }
}
