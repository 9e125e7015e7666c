//! A chunk payload's records: [`decode_record`] decodes and checks one (the reader's path),
//! `count_chunk` counts a whole payload's records by kind with the same checks (the path of
//! `--verify`, which checks accesses inline and sends anything else through `decode_record`).
//!
//! Contract: an error names the problem (and, for `count_chunk`, the record and payload
//! byte); no input panics. It calls the layout (`format.rs`, the record tags) and the varint
//! coding.

use super::format::tag;
use crate::addr::Vaddr;
use crate::trace::varint;
use crate::trace::{AccessKind, Event};

/// What decoding a record needs of the records before it in its chunk (all 0 at its start).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkState {
    /// The previous access's address.
    pub prev_va: u64,
    /// Access records so far.
    pub accesses: u64,
    /// The source of the previous access with a dependence: its index among the chunk's
    /// accesses minus its dependence (negative: before the chunk).
    pub prev_src: i64,
}

impl ChunkState {
    /// The dependence of the access with index `self.accesses` whose source is `prev_src +
    /// delta` (version 4's `v zigzag(src - prev_src)`); `Err` when it is outside 1..=65535.
    #[inline(always)]
    fn dep_of(&mut self, delta: i64) -> Result<u16, i64> {
        let src = self.prev_src.wrapping_add(delta);
        let dep = (self.accesses as i64).wrapping_sub(src);
        if (1..=0xffff).contains(&dep) {
            self.prev_src = src;
            Ok(dep as u16)
        } else {
            Err(dep)
        }
    }
}

/// Decode the record at `buf[*pos..]` (a chunk's uncompressed payload), advancing `pos`;
/// `st` holds what the chunk's earlier records left (the previous address, for the delta);
/// `deps`: the format version has access records with a dependence (version >= 4; in older
/// versions their tags are unknown). `Err` names the problem.
#[inline]
pub fn decode_record(
    buf: &[u8],
    pos: &mut usize,
    st: &mut ChunkState,
    deps: bool,
) -> Result<Event, String> {
    let p = pos;
    let Some(&t) = buf.get(*p) else {
        return Err("record runs past the end of its chunk".into());
    };
    *p += 1;
    let mut v = || varint::get(buf, p).map_err(str::to_string);
    let u32_of = |x: u64, what: &str| {
        u32::try_from(x).map_err(|_| format!("{what} {x} does not fit 32 bits"))
    };
    let with_dep = deps && matches!(t, 0x04..=0x06);
    let t = if with_dep { t & !tag::DEP } else { t };
    let ev = match t {
        tag::LOAD | tag::STORE | tag::IFETCH => {
            let size = *buf.get(*p).ok_or("record runs past the end of its chunk")?;
            *p += 1;
            if size == 0 || size > 64 {
                return Err(format!("access size {size} is outside 1..=64"));
            }
            let delta = varint::unzigzag(varint::get(buf, p)?);
            let instrs = varint::get(buf, p)?;
            let instrs = u32_of(instrs, "instruction count")?;
            let dep = if with_dep {
                let d = varint::unzigzag(varint::get(buf, p)?);
                st.dep_of(d)
                    .map_err(|d| format!("dependence {d} is outside 1..=65535"))?
            } else {
                0
            };
            st.accesses += 1;
            let va = st.prev_va.wrapping_add(delta as u64);
            st.prev_va = va;
            Event::Access {
                kind: match t {
                    tag::LOAD => AccessKind::Load,
                    tag::STORE => AccessKind::Store,
                    _ => AccessKind::IFetch,
                },
                va: Vaddr(va),
                size,
                instrs,
                dep,
            }
        }
        tag::MMAP => Event::Mmap {
            addr: Vaddr(v()?),
            len: v()?,
            prot: u32_of(v()?, "prot")?,
            flags: u32_of(v()?, "flags")?,
        },
        tag::MUNMAP => Event::Munmap {
            addr: Vaddr(v()?),
            len: v()?,
        },
        tag::BRK => Event::Brk {
            new_brk: Vaddr(v()?),
        },
        tag::MPROTECT => Event::Mprotect {
            addr: Vaddr(v()?),
            len: v()?,
            prot: u32_of(v()?, "prot")?,
        },
        tag::MADVISE => Event::Madvise {
            addr: Vaddr(v()?),
            len: v()?,
            advice: u32_of(v()?, "advice")?,
        },
        tag::SWITCH => Event::Switch {
            pid: u32_of(v()?, "pid")?,
        },
        tag::THREAD => Event::Thread {
            tid: u32_of(v()?, "tid")?,
        },
        tag::EXIT => Event::Exit {
            pid: u32_of(v()?, "pid")?,
        },
        other => return Err(format!("unknown record tag {other:#04x}")),
    };
    Ok(ev)
}

/// Counts of one chunk's records, by kind (what `--verify` checks against the totals and the
/// stored summary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkCounts {
    /// Records.
    pub records: u64,
    /// Loads, stores, instruction fetches.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Instruction fetches.
    pub ifetches: u64,
    /// Sum of the access records' `instrs`.
    pub instructions: u64,
    /// mmap, munmap, brk, mprotect, madvise, switch, exit records (in that order).
    pub syscalls: [u64; 7],
}

/// Names of [`ChunkCounts::syscalls`], as the summary's `syscalls` object has them.
pub const SYSCALL_NAMES: [&str; 7] = [
    "mmap", "munmap", "brk", "mprotect", "madvise", "switch", "exit",
];

impl ChunkCounts {
    pub(super) fn add(&mut self, o: &ChunkCounts) {
        self.records += o.records;
        self.loads += o.loads;
        self.stores += o.stores;
        self.ifetches += o.ifetches;
        self.instructions += o.instructions;
        for (a, b) in self.syscalls.iter_mut().zip(o.syscalls) {
            *a += b;
        }
    }
}

/// Decode every record of a chunk's uncompressed payload and count them (`deps` as for
/// [`decode_record`]); the error names the record and payload byte (as the streaming reader's
/// does).
pub(super) fn count_chunk(raw: &[u8], records: u32, deps: bool) -> Result<ChunkCounts, String> {
    let mut c = ChunkCounts {
        records: records as u64,
        ..Default::default()
    };
    let mut kinds = [0u64; 3];
    let mut pos = 0usize;
    let mut st = ChunkState::default();
    for rec in 0..records {
        // Accesses (nearly every record) are checked inline; anything else, or an access that
        // fails a check, goes through `decode_record`, which gives the error its message.
        if let Some(&t) = raw.get(pos) {
            let with_dep = deps && t & tag::DEP != 0;
            let k = if with_dep { t & !tag::DEP } else { t };
            if k <= tag::IFETCH {
                if let Some(next) = quick_access(raw, pos, with_dep, &mut st) {
                    kinds[k as usize] += 1;
                    c.instructions += next.1;
                    pos = next.0;
                    continue;
                }
            }
        }
        let at = pos;
        let ev = decode_record(raw, &mut pos, &mut st, deps)
            .map_err(|p| format!("record {rec} at payload byte {at}: {p}"))?;
        match ev {
            Event::Access { kind, instrs, .. } => {
                c.instructions += instrs as u64;
                match kind {
                    AccessKind::Load => kinds[0] += 1,
                    AccessKind::Store => kinds[1] += 1,
                    AccessKind::IFetch => kinds[2] += 1,
                }
            }
            Event::Mmap { .. } => c.syscalls[0] += 1,
            Event::Munmap { .. } => c.syscalls[1] += 1,
            Event::Brk { .. } => c.syscalls[2] += 1,
            Event::Mprotect { .. } => c.syscalls[3] += 1,
            Event::Madvise { .. } => c.syscalls[4] += 1,
            Event::Switch { .. } => c.syscalls[5] += 1,
            Event::Exit { .. } => c.syscalls[6] += 1,
            Event::Thread { .. } => {}
        }
    }
    [c.loads, c.stores, c.ifetches] = kinds;
    if pos != raw.len() {
        return Err(format!(
            "{} bytes left over after its {records} records",
            raw.len() - pos
        ));
    }
    Ok(c)
}

/// The access record at `raw[pos..]` (its tag already read; `with_dep`: the tag has the
/// dependence flag) when it passes every check `decode_record` makes: the position after it and
/// its instruction count, `st` advanced past it (the address is not decoded: `count_chunk` does
/// not need it). `None` when any check fails, `st` untouched (`decode_record` then names the
/// problem).
#[inline(always)]
fn quick_access(
    raw: &[u8],
    pos: usize,
    with_dep: bool,
    st: &mut ChunkState,
) -> Option<(usize, u64)> {
    let size = *raw.get(pos + 1)?;
    if size == 0 || size > 64 {
        return None;
    }
    let (_, p) = quick_varint(raw, pos + 2)?;
    let (instrs, mut p) = quick_varint(raw, p)?;
    if instrs > u32::MAX as u64 {
        return None;
    }
    if with_dep {
        let (d, q) = quick_varint(raw, p)?;
        st.dep_of(varint::unzigzag(d)).ok()?;
        p = q;
    }
    st.accesses += 1;
    Some((p, instrs))
}

/// A LEB128 integer at `buf[pos..]` as `varint::get` accepts it (at most 10 bytes, the tenth
/// 0 or 1), and the position after it.
#[inline(always)]
fn quick_varint(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(pos + i)?;
        if i == 9 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b < 0x80 {
            return Some((v, pos + i + 1));
        }
    }
    None
}
