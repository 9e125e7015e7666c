//! Address-space regularity (LVM §3.1): the pages a process touches, as runs of consecutive
//! 4 KiB VPNs, from which `xlat analyze gaps` computes the virtual-memory gap coverage (the
//! share of consecutive mapped VPN pairs whose gap is 1) and the distribution of the gaps.
//!
//! Contract: the runs are sorted, disjoint, not adjacent (a run ends before the next one's
//! VPN minus 1), and cover exactly the distinct 4 KiB pages that the source's accesses touch
//! (an access crossing a page boundary touches both pages). Under demand paging with 4 KiB
//! pages these are the pages the OS maps; memory grows with the footprint, not the trace length.

use crate::addr::{Vaddr, BASE_PAGE_BYTES};
use crate::trace::{Event, EventSource, SourceError};

/// Runs `(first VPN, pages)` of the pages touched by the first `max_refs` accesses of `source`
/// (every access when `max_refs` is `u64::MAX`).
pub fn touched_runs(
    source: &mut dyn EventSource,
    max_refs: u64,
) -> Result<Vec<(u64, u64)>, SourceError> {
    let mut seen = std::collections::HashSet::new();
    let mut buf = Vec::with_capacity(4096);
    let mut refs = 0u64;
    'outer: loop {
        buf.clear();
        if source.fill(&mut buf, 4096)? == 0 {
            break;
        }
        for ev in &buf {
            if let Event::Access { va, size, .. } = *ev {
                if refs == max_refs {
                    break 'outer;
                }
                refs += 1;
                seen.insert(va.vpn().0);
                let last = Vaddr(va.0.saturating_add(size.max(1) as u64 - 1));
                if last.vpn() != va.vpn() {
                    seen.insert(Vaddr(last.0 & !(BASE_PAGE_BYTES - 1)).vpn().0);
                }
            }
        }
    }
    let mut vpns: Vec<u64> = seen.into_iter().collect();
    vpns.sort_unstable();
    Ok(runs_of(&vpns))
}

/// Runs of consecutive values in sorted, distinct `vpns`.
pub fn runs_of(vpns: &[u64]) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &v in vpns {
        match runs.last_mut() {
            Some((start, n)) if *start + *n == v => *n += 1,
            _ => runs.push((v, 1)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::AccessKind;

    struct Events(std::vec::IntoIter<Event>);
    impl EventSource for Events {
        fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
            let before = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - before)
        }
        fn name(&self) -> String {
            "events".into()
        }
    }

    fn load(va: u64, size: u8) -> Event {
        Event::Access {
            kind: AccessKind::Load,
            va: Vaddr(va),
            size,
            instrs: 1,
            dep: 0,
        }
    }

    #[test]
    fn touched_pages_become_sorted_runs_and_a_page_crossing_access_touches_both_pages() {
        let ev = vec![
            load(0x5000, 8),
            load(0x3000, 8),
            load(0x4ffc, 8), // crosses into 0x5000
            load(0x3008, 8),
            load(0x9000, 1),
        ];
        let mut src = Events(ev.into_iter());
        assert_eq!(
            touched_runs(&mut src, u64::MAX).unwrap(),
            vec![(3, 3), (9, 1)]
        );
        let mut src = Events(vec![load(0x3000, 8), load(0x9000, 8)].into_iter());
        assert_eq!(touched_runs(&mut src, 1).unwrap(), vec![(3, 1)]);
    }

    #[test]
    fn runs_of_joins_consecutive_pages_only() {
        assert_eq!(runs_of(&[1, 2, 3, 5, 7, 8]), vec![(1, 3), (5, 1), (7, 2)]);
        assert!(runs_of(&[]).is_empty());
    }
}
