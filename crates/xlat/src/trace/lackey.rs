//! Decoder of valgrind's lackey text output (`--tool=lackey --trace-mem=yes` with the core's
//! `--trace-syscalls=yes`), the fallback recorder when xlat's own tool cannot be built.
//!
//! Lines: `I  ADDR,LEN` (an instruction), ` L ADDR,SIZE` (load), ` S ADDR,SIZE` (store),
//! ` M ADDR,SIZE` (modify: a load then a store), and `SYSCALL[pid,tid](NR) sys_NAME ( ARGS )
//! ... Success(0xRESULT)` for completed system calls; mmap (9), mprotect (10), munmap (11),
//! brk (12), mremap (25, as munmap + mmap) and madvise (28) become events, everything else
//! (valgrind's `==pid==` messages, other calls) is skipped.
//!
//! Lackey does not report the address space valgrind set up before the program's first
//! instruction (executable, loader, stack), so the decoder **infers** it: an access outside every
//! area known so far maps its 4 KiB page read-write-execute first (adjacent pages merge into one
//! VMA). [`LackeyDecoder::inferred_pages`] counts them; the recorder stores the count in the
//! trace's metadata.
//!
//! Contract: input may arrive in arbitrary pieces (a line may straddle two pushes); memory held
//! is one partial line plus the known areas.

use super::{AccessKind, Event};
use crate::addr::Vaddr;
use crate::os::vma::VmaSet;

/// Incremental lackey decoder.
#[derive(Default)]
pub struct LackeyDecoder {
    partial: Vec<u8>,
    areas: VmaSet,
    heap_start: Option<u64>,
    heap_end: u64,
    instrs: u64,
    accesses: u64,
    syscalls: u64,
    inferred: u64,
    line: u64,
    /// The first half of each thread's pending asynchronous system call (`PID,TID](NR) sys_x (
    /// ARGS ) --> [async] ...`), keyed by `PID,TID`: its completion line elides the arguments.
    /// At most one entry per thread.
    async_calls: std::collections::HashMap<String, String>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s
            .split('(')
            .next()
            .and_then(|d| d.trim().parse::<u64>().ok()),
    }
}

impl LackeyDecoder {
    /// A decoder at the start of the output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accesses emitted so far.
    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    /// System-call events emitted so far.
    pub fn syscalls(&self) -> u64 {
        self.syscalls
    }

    /// Pages mapped by inference (accesses outside every known area).
    pub fn inferred_pages(&self) -> u64 {
        self.inferred
    }

    /// Decode the next bytes of lackey's output, handing each event to `emit`.
    pub fn push(
        &mut self,
        data: &[u8],
        mut emit: impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let mut buf = std::mem::take(&mut self.partial);
        buf.extend_from_slice(data);
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&buf[start..start + nl]).into_owned();
            start += nl + 1;
            self.line += 1;
            self.decode_line(&line, &mut emit)
                .map_err(|e| format!("lackey output line {}: {e}: '{line}'", self.line))?;
        }
        buf.drain(..start);
        self.partial = buf;
        Ok(())
    }

    fn map(
        &mut self,
        ev: Event,
        emit: &mut impl FnMut(Event) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let page = |a: u64| a & !4095;
        let up = |a: u64| a.saturating_add(4095) & !4095;
        match ev {
            Event::Mmap {
                addr, len, prot, ..
            } if len > 0 => self
                .areas
                .insert(page(addr.0), up(addr.0.saturating_add(len)), prot),
            Event::Munmap { addr, len } => {
                self.areas
                    .remove_range(page(addr.0), up(addr.0.saturating_add(len)));
            }
            Event::Brk { new_brk } => {
                let start = up(*self.heap_start.get_or_insert(new_brk.0));
                let end = up(new_brk.0).max(start);
                let old = self.heap_end.max(start);
                if end > old {
                    self.areas.insert(old, end, 3);
                } else if end < old {
                    self.areas.remove_range(end, old);
                }
                self.heap_end = end;
            }
            _ => {}
        }
        self.syscalls += 1;
        emit(ev)
    }

    fn access(
        &mut self,
        kind: AccessKind,
        va: u64,
        size: u64,
        emit: &mut impl FnMut(Event) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        for a in [va, va.saturating_add(size.max(1) - 1)] {
            if self.areas.find(a).is_none() {
                let p = a & !4095;
                self.areas.insert(p, p + 4096, 7);
                self.inferred += 1;
                emit(Event::Mmap {
                    addr: Vaddr(p),
                    len: 4096,
                    prot: 7,
                    flags: 0x22,
                })?;
            }
        }
        let instrs = u32::try_from(std::mem::take(&mut self.instrs)).unwrap_or(u32::MAX);
        self.accesses += 1;
        emit(Event::Access {
            kind,
            va: Vaddr(va),
            size: size.clamp(1, 64) as u8,
            instrs,
            dep: 0,
        })
    }

    fn decode_line(
        &mut self,
        line: &str,
        emit: &mut impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let io = |e: std::io::Error| format!("cannot write the trace: {e}");
        let b = line.as_bytes();
        if b.len() > 3 && b[0] == b'I' && b[1] == b' ' {
            self.instrs += 1;
            return Ok(());
        }
        if b.len() > 3 && b[0] == b' ' && b[2] == b' ' {
            let (addr, size) = line[3..].split_once(',').ok_or("expected ADDR,SIZE")?;
            let va = hex(addr).ok_or("bad address")?;
            let size = size.trim().parse::<u64>().map_err(|_| "bad size")?;
            match b[1] {
                b'L' => self.access(AccessKind::Load, va, size, emit).map_err(io)?,
                b'S' => self.access(AccessKind::Store, va, size, emit).map_err(io)?,
                b'M' => {
                    self.access(AccessKind::Load, va, size, emit).map_err(io)?;
                    self.access(AccessKind::Store, va, size, emit).map_err(io)?;
                }
                _ => return Err("unknown access kind".into()),
            }
            return Ok(());
        }
        let Some(rest) = line.strip_prefix("SYSCALL[") else {
            return Ok(()); // valgrind's own messages
        };
        let Some(res) = rest.split("Success(").nth(1) else {
            // Failed, or the first half of an asynchronous call: keep its arguments for the
            // completion line.
            if rest.contains("--> [async]") {
                if let Some((thread, _)) = rest.split_once(']') {
                    self.async_calls
                        .insert(thread.to_string(), rest.to_string());
                }
            }
            return Ok(());
        };
        // Another thread's output can continue on the same line right after the result (seen
        // after `clone`: the new thread runs before valgrind ends the line). The result ends at
        // its ')'; what follows is decoded as a line of its own, after the system call.
        let (res, tail) = res.split_once(')').unwrap_or((res.trim_end(), ""));
        let result = num(res).ok_or("bad result")?;
        self.syscall(rest, result, emit)?;
        let tail = tail.strip_prefix(' ').unwrap_or(tail);
        if tail.trim().is_empty() {
            Ok(())
        } else {
            self.decode_line(tail, emit)
        }
    }

    /// A completed system call (`rest`: the line after `SYSCALL[`) that returned `result`.
    fn syscall(
        &mut self,
        rest: &str,
        result: u64,
        emit: &mut impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let io = |e: std::io::Error| format!("cannot write the trace: {e}");
        let nr = rest
            .split_once("](")
            .and_then(|(_, r)| r.split(')').next())
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or("bad syscall number")?;
        if !matches!(nr, 9..=12 | 25 | 28) {
            return Ok(());
        }
        // The completion of an asynchronous call elides its arguments (`(NR) ... [async] -->
        // Success(..)`): they are on the thread's first half.
        let first_half;
        let rest = if !rest.contains(" ( ") && rest.contains("[async] -->") {
            let thread = rest.split_once(']').map_or("", |(t, _)| t);
            first_half = self
                .async_calls
                .remove(thread)
                .ok_or("the completion of an asynchronous call whose start was not seen")?;
            first_half.as_str()
        } else {
            rest
        };
        let open = rest.find(" ( ");
        let close = open.and_then(|a| rest[a..].find(" )").map(|z| a + z));
        let args: Vec<u64> = match (open, close) {
            (Some(a), Some(z)) if a + 3 <= z => rest[a + 3..z]
                .split(", ")
                .map(|x| num(x).ok_or("bad argument"))
                .collect::<Result<_, _>>()?,
            _ => return Err("no argument list".into()),
        };
        let arg = |i: usize| args.get(i).copied().ok_or("too few arguments");
        let ev = match nr {
            9 => Event::Mmap {
                addr: Vaddr(result),
                len: arg(1)?,
                prot: arg(2)? as u32,
                flags: arg(3)? as u32,
            },
            10 => Event::Mprotect {
                addr: Vaddr(arg(0)?),
                len: arg(1)?,
                prot: arg(2)? as u32,
            },
            11 => Event::Munmap {
                addr: Vaddr(arg(0)?),
                len: arg(1)?,
            },
            12 => Event::Brk {
                new_brk: Vaddr(result),
            },
            25 => {
                self.map(
                    Event::Munmap {
                        addr: Vaddr(arg(0)?),
                        len: arg(1)?,
                    },
                    emit,
                )
                .map_err(io)?;
                Event::Mmap {
                    addr: Vaddr(result),
                    len: arg(2)?,
                    prot: 3,
                    flags: 0x22,
                }
            }
            _ => Event::Madvise {
                addr: Vaddr(arg(0)?),
                len: arg(1)?,
                advice: arg(2)? as u32,
            },
        };
        self.map(ev, emit).map_err(io)
    }

    /// End of the output: a final `Exit { pid: 0 }`.
    pub fn finish(
        &mut self,
        mut emit: impl FnMut(Event) -> std::io::Result<()>,
    ) -> Result<(), String> {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            let line = String::from_utf8_lossy(&rest).into_owned();
            self.decode_line(&line, &mut emit)?;
        }
        emit(Event::Exit { pid: 0 }).map_err(|e| format!("cannot write the trace: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_threads_record_on_the_line_of_a_clone_result_is_decoded_not_an_error() {
        let text = "SYSCALL[29807,1](56) sys_clone ( 3d0f00, 0x5229f70, 0x522a990, 0x522a990, \
                    0x522a6c0 ) --> [pre-success] Success(0x7472) I  0494db42,3\n\
                    SYSCALL[1,1](12) sys_brk ( 0x0 ) --> [pre-success] Success(0x4035000)  L 04035000,8\n";
        let mut d = LackeyDecoder::new();
        let mut ev = Vec::new();
        d.push(text.as_bytes(), |e| {
            ev.push(e);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        d.finish(|e| {
            ev.push(e);
            Ok(())
        })
        .unwrap();
        assert_eq!(d.accesses(), 1);
        let kinds: Vec<String> = ev.iter().map(|e| format!("{e:?}")).collect();
        assert!(kinds[0].starts_with("Brk"), "{kinds:?}");
        assert!(kinds.iter().any(|k| k.starts_with("Access")), "{kinds:?}");
    }

    #[test]
    fn an_asynchronous_madvise_takes_its_arguments_from_its_first_half() {
        let text = "SYSCALL[9849,2](28) sys_madvise ( 0x4835000, 8192, 4 ) --> [async] ... \n\
                    SYSCALL[9849,1](0) sys_read ( 4, 0x1, 832 ) --> [async] ... \n\
                    SYSCALL[9849,2](28) ... [async] --> Success(0x0) \n";
        let mut d = LackeyDecoder::new();
        let mut ev = Vec::new();
        d.push(text.as_bytes(), |e| {
            ev.push(e);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ev,
            vec![Event::Madvise {
                addr: Vaddr(0x4835000),
                len: 8192,
                advice: 4
            }]
        );
    }

    #[test]
    fn lackey_lines_become_events_with_inferred_pages_for_the_startup_areas() {
        let text = "==1== Lackey\n\
            SYSCALL[1,1](12) sys_brk ( 0x0 ) --> [pre-success] Success(0x4035000) \n\
            I  04001000,3\nI  04001003,4\n S 1ffefff000,8\n M 1ffefff000,8\n\
            SYSCALL[1,1](9) sys_mmap ( 0x0, 8192, 3, 34, 4294967295, 0 ) --> [pre-success] Success(0x4835000) \n\
            SYSCALL[1,1](0) sys_read ( 4, 0x1, 832 ) --> [async] ... \n\
            SYSCALL[1,1](10) sys_mprotect ( 0x4835000, 4096, 1 )[sync] --> Success(0x0) \n\
            I  04001007,2\n L 04835008,4\n";
        let mut d = LackeyDecoder::new();
        let mut ev = Vec::new();
        for piece in text.as_bytes().chunks(7) {
            d.push(piece, |e| {
                ev.push(e);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
        }
        d.finish(|e| {
            ev.push(e);
            Ok(())
        })
        .unwrap();
        assert_eq!(d.inferred_pages(), 1);
        assert_eq!(d.accesses(), 4);
        let kinds: Vec<String> = ev.iter().map(|e| format!("{e:?}")).collect();
        assert!(kinds[0].starts_with("Brk"), "{kinds:?}");
        assert!(
            kinds[1].starts_with("Mmap") && kinds[1].contains("1ffefff000"),
            "{kinds:?}"
        );
        assert!(matches!(
            ev[2],
            Event::Access {
                kind: AccessKind::Store,
                instrs: 2,
                ..
            }
        ));
        assert!(matches!(
            ev[3],
            Event::Access {
                kind: AccessKind::Load,
                instrs: 0,
                ..
            }
        ));
        assert!(matches!(
            ev[5],
            Event::Mmap {
                addr: Vaddr(0x4835000),
                len: 8192,
                ..
            }
        ));
        assert!(matches!(ev[6], Event::Mprotect { prot: 1, .. }));
        assert!(matches!(
            ev[7],
            Event::Access {
                kind: AccessKind::Load,
                instrs: 1,
                ..
            }
        ));
        assert!(matches!(ev[8], Event::Exit { pid: 0 }));
    }
}
