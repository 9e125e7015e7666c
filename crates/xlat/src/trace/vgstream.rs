//! Decoder of the binary record stream written by the xlat Valgrind tool
//! (`tools/xlat-vgtool`), turning it into [`Event`]s for the native writer.
//!
//! Stream: little-endian 64-bit words. A header word's low byte is the record type; an access's
//! header holds the size in bits 8..15, the instructions since the previous access in bits
//! 16..47 and the dependence (accesses back to the load its address derives from, 0 = none) in
//! bits 48..63, followed by the address word. Other records are followed by a fixed number of
//! argument words (table in `tools/xlat-vgtool/README.md`).
//!
//! Mapping: accesses larger than 64 bytes (`fxsave` and the like) become several accesses of at
//! most 64 bytes (the tool numbers accesses by these pieces, so dependences count events; piece
//! `k` of an access with dependence `d` depends `d + k` back, 0 beyond 65535); `START` of a
//! second program image (after `execve`) becomes `Exit { pid: 0 }` (the old address space is torn down, the new image starts empty); `END` becomes
//! `Exit { pid: 0 }`. Everything is recorded as process 0.
//!
//! Contract: [`VgDecoder::push`] accepts the stream in arbitrary pieces (a record may straddle
//! two reads); memory held is one partial record.

use super::{AccessKind, Event};
use crate::addr::Vaddr;

/// What the decoder has seen so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VgCounts {
    /// Bytes decoded.
    pub bytes: u64,
    /// Memory accesses emitted.
    pub accesses: u64,
    /// Program images started (1 + successful execs).
    pub images: u64,
    /// System-call records.
    pub syscalls: u64,
    /// Exit code reported by the tool at the end of the last image, if it ended normally.
    pub exit_code: Option<i64>,
}

/// Incremental decoder of the tool's stream.
#[derive(Default)]
pub struct VgDecoder {
    partial: Vec<u8>,
    counts: VgCounts,
    exited: bool,
}

fn args_of(ty: u8) -> Option<usize> {
    Some(match ty {
        0x00..=0x02 => 1,
        0x10 => 4,
        0x11 => 2,
        0x12 => 1,
        0x13 | 0x14 => 3,
        0x21 | 0x30 | 0x31 => 1,
        _ => return None,
    })
}

impl VgDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts so far.
    pub fn counts(&self) -> VgCounts {
        self.counts
    }

    /// Decode `data` (the next bytes of the stream), handing each event to `emit`. An unknown
    /// record type is an error naming its byte offset in the stream.
    pub fn push(
        &mut self,
        mut data: &[u8],
        mut emit: impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<(), String> {
        if !self.partial.is_empty() {
            // Complete the record that straddled the previous piece (records are <= 40 bytes).
            let had = self.partial.len();
            let take = data.len().min(64);
            let mut buf = std::mem::take(&mut self.partial);
            buf.extend_from_slice(&data[..take]);
            let used = self.decode(&buf, &mut emit)?;
            if used < had {
                self.partial = buf;
                return Ok(());
            }
            data = &data[used - had..];
        }
        let used = self.decode(data, &mut emit)?;
        self.partial.extend_from_slice(&data[used..]);
        Ok(())
    }

    /// Decode the whole records at the start of `buf`; returns the bytes they take.
    fn decode(
        &mut self,
        buf: &[u8],
        emit: &mut impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<usize, String> {
        let mut pos = 0usize;
        let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
        let io = |e: std::io::Error| format!("cannot write the trace: {e}");
        while buf.len() - pos >= 8 {
            let h = word(buf, pos);
            let ty = (h & 0xff) as u8;
            let size = ((h >> 8) & 0xff).max(1);
            // The common record first: an access of at most 64 bytes (16 bytes of stream).
            if ty <= 0x02 && size <= 64 && buf.len() - pos >= 16 {
                let kind = match ty {
                    0 => AccessKind::Load,
                    1 => AccessKind::Store,
                    _ => AccessKind::IFetch,
                };
                emit(Event::Access {
                    kind,
                    va: Vaddr(word(buf, pos + 8)),
                    size: size as u8,
                    instrs: (h >> 16) as u32,
                    dep: (h >> 48) as u16,
                })
                .map_err(io)?;
                self.counts.accesses += 1;
                pos += 16;
                continue;
            }
            let Some(n) = args_of(ty) else {
                return Err(format!(
                    "recorder stream: unknown record type {ty:#04x} at stream byte {}",
                    self.counts.bytes + pos as u64
                ));
            };
            if buf.len() - pos < 8 * (n + 1) {
                break;
            }
            let a = |i: usize| word(buf, pos + 8 * (i + 1));
            match ty {
                0x00..=0x02 => {
                    // Larger than 64 bytes (fxsave and the like): pieces of at most 64 bytes.
                    let kind = match ty {
                        0 => AccessKind::Load,
                        1 => AccessKind::Store,
                        _ => AccessKind::IFetch,
                    };
                    let instrs = (h >> 16) as u32;
                    let dep = (h >> 48) as u16;
                    let va = a(0);
                    let mut off = 0u64;
                    while off < size {
                        let piece = (size - off).min(64) as u8;
                        let k = (off / 64) as u16;
                        emit(Event::Access {
                            kind,
                            va: Vaddr(va.wrapping_add(off)),
                            size: piece,
                            instrs: if off == 0 { instrs } else { 0 },
                            dep: if dep == 0 {
                                0
                            } else {
                                dep.checked_add(k).unwrap_or(0)
                            },
                        })
                        .map_err(io)?;
                        self.counts.accesses += 1;
                        off += 64;
                    }
                }
                0x10 => {
                    self.counts.syscalls += 1;
                    emit(Event::Mmap {
                        addr: Vaddr(a(0)),
                        len: a(1),
                        prot: a(2) as u32,
                        flags: a(3) as u32,
                    })
                    .map_err(io)?
                }
                0x11 => {
                    self.counts.syscalls += 1;
                    emit(Event::Munmap {
                        addr: Vaddr(a(0)),
                        len: a(1),
                    })
                    .map_err(io)?
                }
                0x12 => {
                    self.counts.syscalls += 1;
                    emit(Event::Brk {
                        new_brk: Vaddr(a(0)),
                    })
                    .map_err(io)?
                }
                0x13 => {
                    self.counts.syscalls += 1;
                    emit(Event::Mprotect {
                        addr: Vaddr(a(0)),
                        len: a(1),
                        prot: a(2) as u32,
                    })
                    .map_err(io)?
                }
                0x14 => {
                    self.counts.syscalls += 1;
                    emit(Event::Madvise {
                        addr: Vaddr(a(0)),
                        len: a(1),
                        advice: a(2) as u32,
                    })
                    .map_err(io)?
                }
                0x21 => emit(Event::Thread { tid: a(0) as u32 }).map_err(io)?,
                0x30 => {
                    if self.counts.images > 0 && !self.exited {
                        emit(Event::Exit { pid: 0 }).map_err(io)?;
                    }
                    self.exited = false;
                    self.counts.images += 1;
                }
                _ => {
                    self.counts.exit_code = Some(a(0) as i64);
                    if !self.exited {
                        emit(Event::Exit { pid: 0 }).map_err(io)?;
                        self.exited = true;
                    }
                }
            }
            pos += 8 * (n + 1);
        }
        self.counts.bytes += pos as u64;
        Ok(pos)
    }

    /// End of the stream: emits the final `Exit` if the tool did not report one (the program
    /// was killed). A partial record left over is an error.
    pub fn finish(
        &mut self,
        mut emit: impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<VgCounts, String> {
        if !self.partial.is_empty() {
            return Err(format!(
                "recorder stream ends inside a record ({} bytes left over at stream byte {})",
                self.partial.len(),
                self.counts.bytes
            ));
        }
        if self.counts.images > 0 && !self.exited {
            emit(Event::Exit { pid: 0 }).map_err(|e| format!("cannot write the trace: {e}"))?;
            self.exited = true;
        }
        Ok(self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn records_split_across_reads_decode_the_same() {
        let s = words(&[
            0x30,
            42, // start
            0x10,
            0x1000,
            0x2000,
            3,
            0x22, // mmap
            0x01 | (8 << 8) | (5 << 16),
            0x1008,   // store 8 bytes, 5 instrs
            200 << 8, // load (type 0x00) of 200 bytes
            0x1100,   // load 200 bytes -> 4 pieces
            0x31,
            0, // end
        ]);
        let mut whole = Vec::new();
        let mut d = VgDecoder::new();
        d.push(&s, |e| {
            whole.push(e);
            Ok(())
        })
        .unwrap();
        d.finish(|e| {
            whole.push(e);
            Ok(())
        })
        .unwrap();
        assert_eq!(whole.len(), 1 + 1 + 4 + 1);
        assert_eq!(d.counts().exit_code, Some(0));
        for cut in 1..s.len() {
            let mut got = Vec::new();
            let mut d = VgDecoder::new();
            d.push(&s[..cut], |e| {
                got.push(e);
                Ok(())
            })
            .unwrap();
            d.push(&s[cut..], |e| {
                got.push(e);
                Ok(())
            })
            .unwrap();
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn an_unknown_record_type_is_an_error_with_its_offset() {
        let s = words(&[0x30, 1, 0x77, 0]);
        let e = VgDecoder::new().push(&s, |_| Ok(())).unwrap_err();
        assert!(e.contains("0x77") && e.contains("byte 16"), "{e}");
    }

    #[test]
    fn dependences_come_from_the_header_and_count_the_pieces_of_large_accesses() {
        let hdr =
            |ty: u64, size: u64, instrs: u64, dep: u64| ty | size << 8 | instrs << 16 | dep << 48;
        let s = words(&[
            0x30,
            1,
            hdr(0, 8, 3, 0),
            0x1000,
            hdr(0, 8, 0xffff_ffff, 1), // the largest instruction count beside a dependence
            0x2000,
            hdr(0, 130, 1, 2), // 3 pieces: 2, 3, 4 back
            0x3000,
            hdr(1, 200, 1, 0xfffe), // 4 pieces: 0xfffe, 0xffff, then beyond the window
            0x4000,
        ]);
        let mut got = Vec::new();
        VgDecoder::new()
            .push(&s, |e| {
                if let Event::Access { instrs, dep, .. } = e {
                    got.push((instrs, dep));
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(
            got,
            vec![
                (3, 0),
                (u32::MAX, 1),
                (1, 2),
                (0, 3),
                (0, 4),
                (1, 0xfffe),
                (0, 0xffff),
                (0, 0),
                (0, 0)
            ]
        );
    }
}
