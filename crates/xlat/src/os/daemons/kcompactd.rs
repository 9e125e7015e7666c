//! kcompactd (`os.kcompactd.*`; Linux `mm/compaction.c`'s `kcompactd`): the background
//! compaction daemon's driver on simulated time. Every `interval_cycles` it asks the allocator
//! to compact towards a free block of `order`, moving at most `max_pages` pages; the
//! compaction itself (candidate choice, migration of owned blocks, costs) is the allocator's
//! (`os/compaction.rs`, `PhysMem::compact_background`).
//!
//! Contract: wake-ups are counted (`kcompactd_wakeups`) and the scan and copy work the
//! allocator reports is charged to `daemon_cycles`; the relocations it makes are applied by
//! [`Os::tick`] after every daemon ran.
//!
//! Calls: `PhysMem::compact_background` only.

use crate::os::Os;

impl Os {
    /// Run kcompactd's wake-ups due at `now_cycles` (none unless `os.kcompactd.enabled`).
    pub(in crate::os) fn kcompactd_tick(&mut self, now_cycles: u64) {
        while self.cfg.kcompactd.enabled && now_cycles >= self.kcompactd_next {
            self.kcompactd_next += self.cfg.kcompactd.interval_cycles;
            self.c.kcompactd_wakeups += 1;
            let k = &self.cfg.kcompactd;
            self.c.daemon_cycles += self.phys.compact_background(k.order, k.max_pages);
        }
    }
}
