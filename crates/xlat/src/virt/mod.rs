//! # virt — nested (virtualized) translation: a guest OS and design on a host OS and design
//!
//! ## Model
//! With `virt.enabled`, the workload runs in a guest. The engine's OS model is the guest OS: its
//! physical memory is *guest-physical* memory, from which the guest's data pages and the guest
//! design's page tables come. A second OS model, the host ([`Host::os`], configured by
//! `virt.host_os`), maps all of guest-physical memory as one VMA of one host process (the VM),
//! at host virtual address = guest-physical address, demand-faulted (as stores) on the first
//! touch of any guest-physical page — data pages and guest page-table pages alike — under the
//! host's own policy, page sizes and fragmentation. A host design (`virt.host_design`, any
//! registered design that walks a table) holds those host mappings.
//!
//! A TLB miss makes a two-dimensional walk:
//! 1. the guest design walks its table; every guest page-table reference it issues through
//!    [`MemSystem::pt_access`] carries a guest-physical address, which the memory system's nested
//!    hook hands to [`HostTranslate::translate_pt`]: the nested TLB (`virt.ntlb_*`) is probed,
//!    and on a miss the host design walks its table (its references go to host-physical memory
//!    through the same caches; its own page-walk caches act as the nested PWCs); the guest entry
//!    is then read at its host-physical address;
//! 2. the data page's guest-physical address is translated through the host the same way
//!    ([`HostTranslate::translate_data`]);
//! 3. the TLB caches the combined gVA -> hPA translation at the smaller of the two page sizes
//!    ([`combine`]).
//!
//! For a 4-level guest on a 4-level host with every cache off, a walk makes
//! 4 x (4 + 1) + 4 = 24 page-table references; with 2 MiB host pages 4 x (3 + 1) + 3 = 19.
//! Latencies add up serially: each guest reference waits for its host translation.
//!
//! ## The oracle
//! Every combined translation (walk result or TLB entry) is checked against the composition of
//! both OS models' mappings ([`composed`]: the guest OS's translation of the gVA, then the host
//! OS's translation of the resulting gPA). The guest part of every walk is also checked against
//! the guest OS alone, and every host walk and nested-TLB hit against the host OS.
//!
//! ## Invalidation
//! A guest unmap invalidates the combined entries that may cache it: the guest page at its own
//! size and, inside it, every smaller size the host maps ([`invalidate_guest_page`]). A host
//! unmap (host migration, collapse, reclaim) flushes the nested TLB and every TLB entry of
//! every guest process (simplest correct choice; host unmaps are rare); moved frames leave the
//! data caches by their host-physical addresses.
//!
//! ## Configuration
//! `[virt]`: `enabled` (false), `host_design` ("radix"), `host_prefault` (false: demand-faulted;
//! true: the host faults in all of guest-physical memory at boot, in address order, as
//! QEMU's `-mem-prealloc`), `ntlb_entries` (16; 0 = off), `ntlb_latency_cycles` (1),
//! `ntlb_data` (true: the nested TLB also serves the data page's gPA), `host_os.*` (an
//! [`OsConfig`], the host's memory manager; its `phys_mem_bytes` must cover the guest's
//! `os.phys_mem_bytes`), `host.<design>.*` (the host design's section, same shape as the
//! top-level design sections, so the host's PWCs are configured apart from the guest's).
//!
//! ## Deviations and approximations
//! - Host page faults (EPT violations) cost `timing.page_fault_cycles` each, charged to OS time
//!   like guest faults; no VM-exit cost beyond that.
//! - The nested TLB is fully associative with LRU replacement; its default size and latency
//!   are assumptions, not taken from a public source.
//! - Accessed/dirty bits are not written by either walker (as natively).
//! - A reference that crosses into the next 4 KiB page inside one guest huge page backed by
//!   smaller host pages translates only its first page (as natively, inside one huge page).
//! - Guest OS moves of frames invalidate the data-cache lines of their current host frames.
//!
//! ## Stats (section `virt`, present only when enabled)
//! See [`HostTranslate::stats`] and `docs/results.md`.
//!
//! ## References
//! Bhargava et al., "Accelerating two-dimensional page walks for virtualized systems"
//! (ASPLOS 2008: the 24-reference 2-D walk, nested TLB, nested PWCs); Intel SDM Vol. 3C §29.3
//! (EPT) and §29.4 (caching of EPT translations: combined and guest-physical mappings);
//! AMD64 APM Vol. 2 §15.25 (nested paging).

use crate::addr::{Asid, Mapping, Paddr, PageSize, PageSizeSet, Pfn, Vaddr, Vpn, BASE_PAGE_BYTES};
use crate::designs::{build_and_visit, Design, DesignVisitor, DesignsConfig, WalkResult};
pub use crate::mem::{HostError, HostTranslate};
use crate::mem::{MemConfig, MemSystem};
use crate::mmu::{CoalesceRequest, CoalescedSpan, Mmu};
use crate::os::{MapChange, Os, OsConfig, OsError, PhysMem, PlaceRequest, Placer};
use crate::stats::{ratio, Stats, StatsExt};
use crate::trace::{prot, AccessKind};
use serde::{Deserialize, Serialize};

/// `[virt]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct VirtConfig {
    /// Run the workload in a guest on a host (nested translation).
    pub enabled: bool,
    /// Registered design that translates guest-physical to host-physical addresses.
    pub host_design: String,
    /// Fault in all of guest-physical memory at boot (QEMU `-mem-prealloc`) instead of on
    /// first touch.
    pub host_prefault: bool,
    /// Entries of the nested TLB, which caches gPA -> hPA translations used by 2-D walks
    /// (0 disables it).
    pub ntlb_entries: u32,
    /// Latency of a nested-TLB lookup in cycles.
    pub ntlb_latency_cycles: u32,
    /// Whether the nested TLB also serves the data page's gPA (else only guest page-table pages).
    pub ntlb_data: bool,
    /// The host's memory manager.
    pub host_os: OsConfig,
    /// The host design's configuration sections (`virt.host.radix.pwc_entries`, ...).
    pub host: DesignsConfig,
}

impl Default for VirtConfig {
    fn default() -> Self {
        VirtConfig {
            enabled: false,
            host_design: "radix".into(),
            host_prefault: false,
            ntlb_entries: 16,
            ntlb_latency_cycles: 1,
            ntlb_data: true,
            host_os: OsConfig::default(),
            host: DesignsConfig::default(),
        }
    }
}

/// Largest nested TLB accepted (it is searched linearly).
pub const MAX_NTLB_ENTRIES: u32 = 4096;

impl VirtConfig {
    /// Check ranges and the guest/host relation (`guest_phys_bytes` is `os.phys_mem_bytes`).
    pub fn validate(&self, guest_phys_bytes: u64) -> Result<(), String> {
        self.host_os
            .validate()
            .map_err(|e| format!("virt.host_os: {e}"))?;
        self.host.validate().map_err(|e| format!("virt.host.{e}"))?;
        if self.ntlb_entries > MAX_NTLB_ENTRIES {
            return Err(format!(
                "virt.ntlb_entries must be at most {MAX_NTLB_ENTRIES}, got {}",
                self.ntlb_entries
            ));
        }
        if !self.enabled {
            return Ok(());
        }
        if crate::designs::Registry::find(&self.host_design).is_none() {
            let names: Vec<&str> = crate::designs::REGISTRY.iter().map(|d| d.name).collect();
            return Err(format!(
                "virt.host_design: unknown design '{}'; registered designs: {}",
                self.host_design,
                names.join(", ")
            ));
        }
        if self.host_os.phys_mem_bytes < guest_phys_bytes {
            return Err(format!(
                "virt.host_os.phys_mem_bytes ({}) is smaller than the guest's os.phys_mem_bytes \
                 ({}): the host must be able to back all of guest-physical memory",
                self.host_os.phys_mem_bytes, guest_phys_bytes
            ));
        }
        Ok(())
    }
}

/// Which dimension of the 2-D walk a host translation serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dim {
    /// A guest page-table page.
    Pt = 0,
    /// The data page.
    Data = 1,
}

/// A fully associative, LRU cache of host mappings (the nested TLB).
struct Ntlb {
    entries: Vec<(Mapping, u64)>,
    capacity: usize,
    clock: u64,
    latency_cycles: u32,
}

impl Ntlb {
    fn new(capacity: u32, latency_cycles: u32) -> Ntlb {
        Ntlb {
            entries: Vec::with_capacity(capacity as usize),
            capacity: capacity as usize,
            clock: 0,
            latency_cycles,
        }
    }

    fn enabled(&self) -> bool {
        self.capacity > 0
    }

    fn lookup(&mut self, vpn: Vpn) -> Option<Mapping> {
        self.clock += 1;
        let clock = self.clock;
        self.entries
            .iter_mut()
            .find(|(m, _)| m.contains(vpn))
            .map(|(m, used)| {
                *used = clock;
                *m
            })
    }

    fn fill(&mut self, m: Mapping) {
        self.clock += 1;
        if self.entries.len() == self.capacity {
            let lru = (0..self.entries.len())
                .min_by_key(|&i| self.entries[i].1)
                .expect("a full cache has entries");
            self.entries.swap_remove(lru);
        }
        self.entries.push((m, self.clock));
    }

    fn flush(&mut self) {
        self.entries.clear();
    }
}

/// Counters of the host side.
#[derive(Clone, Debug, Default)]
struct VirtCounters {
    guest_pt_refs: u64,
    /// Host page-table references by dimension.
    host_refs: [u64; 2],
    /// Host walks by dimension (a walk repeated after a host fault counts again).
    host_walks: [u64; 2],
    host_walk_cycles: [u64; 2],
    ntlb_hits: [u64; 2],
    ntlb_misses: [u64; 2],
    host_faults: u64,
    host_flushes: u64,
    walks: u64,
    walk_cycles: u64,
    post_fault_walks: u64,
    post_fault_walk_cycles: u64,
}

/// The host: its OS model, its design, the nested TLB and the counters.
pub struct Host<H: Design> {
    /// The host OS model (its one process is the VM).
    pub os: Os,
    design: H,
    host_design: String,
    asid: Asid,
    ntlb: Ntlb,
    ntlb_data: bool,
    oracle: bool,
    guest_phys_bytes: u64,
    changes: Vec<MapChange>,
    batch: Vec<MapChange>,
    pending_refs: u32,
    error: Option<HostError>,
    flush: bool,
    c: VirtCounters,
}

/// The host design's placement hook, as the host OS model asks it at a fault.
struct HostPlacer<'a, H: Design>(&'a mut H);

impl<H: Design> Placer for HostPlacer<'_, H> {
    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        self.0.place(phys, req)
    }
}

impl<H: Design> Host<H> {
    /// Apply host mapping changes to the host design; a removed translation flushes the
    /// nested TLB and asks the engine to flush combined translations; moved host frames leave
    /// the data caches.
    fn apply_changes(&mut self, mem: &mut MemSystem) -> Result<(), OsError> {
        let mut batch = std::mem::take(&mut self.batch);
        while !self.changes.is_empty() {
            std::mem::swap(&mut batch, &mut self.changes);
            for ch in batch.drain(..) {
                match ch {
                    MapChange::Map(asid, m) => self.design.map(&mut self.os.phys, asid, m)?,
                    MapChange::Unmap(asid, m) => {
                        self.design.unmap(&mut self.os.phys, asid, m);
                        self.ntlb.flush();
                        if !self.flush {
                            self.c.host_flushes += 1;
                        }
                        self.flush = true;
                    }
                }
            }
            self.os.apply_relocations(&mut self.changes)?;
        }
        self.batch = batch;
        for (pfn, order) in self.os.take_moved_frames() {
            mem.invalidate_frames(pfn, 1 << order, &mut []);
        }
        Ok(())
    }

    /// Host page fault on guest frame `gpfn` (a store: guest memory is written).
    fn fault(&mut self, gpfn: Pfn, mem: &mut MemSystem) -> Result<(), OsError> {
        self.c.host_faults += 1;
        self.os.fault_with(
            self.asid,
            Vaddr(gpfn.0 * BASE_PAGE_BYTES),
            AccessKind::Store,
            &mut self.changes,
            &mut HostPlacer(&mut self.design),
        )?;
        self.apply_changes(mem)
    }

    fn fail(&mut self, e: HostError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// The host translation of `gpfn` for dimension `dim`: nested TLB, else host walk (and a
    /// host fault and a repeated walk when unmapped). `None` after a failure.
    fn translate(&mut self, gpfn: Pfn, mem: &mut MemSystem, dim: Dim) -> Option<(Mapping, u32)> {
        let vpn = Vpn(gpfn.0);
        let d = dim as usize;
        let use_ntlb = self.ntlb.enabled() && (dim == Dim::Pt || self.ntlb_data);
        let mut cycles = 0;
        if use_ntlb {
            cycles += self.ntlb.latency_cycles;
            if let Some(m) = self.ntlb.lookup(vpn) {
                self.c.ntlb_hits[d] += 1;
                if self.oracle && !self.os.maps(self.asid, vpn, &m) {
                    let want = self.os.translate(self.asid, vpn);
                    self.fail(HostError::Oracle(format!(
                        "nested TLB entry for guest frame {gpfn:?} is {m:?}, the host OS model \
                         maps {want:?}"
                    )));
                    return None;
                }
                return Some((m, cycles));
            }
            self.c.ntlb_misses[d] += 1;
        }
        for attempt in 0..2 {
            let w = if attempt == 0 {
                self.design.walk(self.asid, vpn, mem)
            } else {
                self.design.walk_after_fault(self.asid, vpn, mem)
            };
            self.c.host_walks[d] += 1;
            self.c.host_refs[d] += w.mem_accesses as u64;
            self.c.host_walk_cycles[d] += w.latency_cycles as u64;
            self.pending_refs += w.mem_accesses;
            cycles += w.latency_cycles;
            if self.oracle {
                let agrees = match &w.mapping {
                    Some(m) => self.os.maps(self.asid, vpn, m),
                    None => self.os.translate(self.asid, vpn).is_none(),
                };
                if !agrees {
                    let want = self.os.translate(self.asid, vpn);
                    self.fail(HostError::Oracle(format!(
                        "host design '{}' walk for guest frame {gpfn:?} gave {:?}, the host OS \
                         model maps {want:?}",
                        self.host_design, w.mapping
                    )));
                    return None;
                }
            }
            if let Some(m) = w.mapping {
                self.os.note_walk(self.asid, &m);
                if use_ntlb {
                    self.ntlb.fill(m);
                }
                return Some((m, cycles));
            }
            if attempt == 1 {
                break;
            }
            if let Err(e) = self.fault(gpfn, mem) {
                self.fail(HostError::Os(OsError(format!(
                    "host OS model (virt.host_os): {e}"
                ))));
                return None;
            }
        }
        self.fail(HostError::Oracle(format!(
            "host design '{}' cannot find guest frame {gpfn:?} the host OS just mapped",
            self.host_design
        )));
        None
    }
}

impl<H: Design> HostTranslate for Host<H> {
    fn translate_pt(&mut self, gpa: Paddr, mem: &mut MemSystem) -> (Paddr, u32) {
        match self.translate(gpa.pfn(), mem, Dim::Pt) {
            Some((m, cycles)) => (m.translate(Vaddr(gpa.0)), cycles),
            // The run stops at the end of this walk (take_error); the address is never used
            // for a result.
            None => (gpa, 0),
        }
    }

    fn translate_data(
        &mut self,
        gpfn: Pfn,
        mem: &mut MemSystem,
        charged: bool,
    ) -> Option<(Mapping, u32, u32)> {
        if charged {
            let before = self.pending_refs;
            let (m, cycles) = self.translate(gpfn, mem, Dim::Data)?;
            let refs = self.pending_refs - before;
            self.pending_refs = before;
            return Some((m, cycles, refs));
        }
        if self.os.translate(self.asid, Vpn(gpfn.0)).is_none() {
            if let Err(e) = self.fault(gpfn, mem) {
                self.fail(HostError::Os(OsError(format!(
                    "host OS model (virt.host_os): {e}"
                ))));
                return None;
            }
        }
        self.os.translate(self.asid, Vpn(gpfn.0)).map(|m| (m, 0, 0))
    }

    fn host_mapping(&self, gpfn: Pfn) -> Option<Mapping> {
        self.os.translate(self.asid, Vpn(gpfn.0))
    }

    fn host_span(&self, gpfn: Pfn) -> Option<CoalescedSpan> {
        let hm = self.host_mapping(gpfn)?;
        self.design
            .coalesced(self.asid, hm, CoalesceRequest::ContiguousBit)
    }

    fn page_sizes(&self) -> PageSizeSet {
        self.os.page_sizes()
    }

    fn count_guest_read(&mut self) {
        self.c.guest_pt_refs += 1;
    }

    fn take_pending_refs(&mut self) -> u32 {
        std::mem::take(&mut self.pending_refs)
    }

    fn count_walk(&mut self, cycles: u32, post_fault: bool) {
        if post_fault {
            self.c.post_fault_walks += 1;
            self.c.post_fault_walk_cycles += cycles as u64;
        } else {
            self.c.walks += 1;
            self.c.walk_cycles += cycles as u64;
        }
    }

    fn take_error(&mut self) -> Option<HostError> {
        self.error.take()
    }

    fn take_flush(&mut self) -> bool {
        std::mem::take(&mut self.flush)
    }

    fn has_daemons(&self) -> bool {
        self.os.has_daemons()
    }

    fn tick(&mut self, now_cycles: u64, mem: &mut MemSystem) {
        let r = self
            .os
            .tick(now_cycles, &mut self.changes)
            .and_then(|_| self.apply_changes(mem));
        if let Err(e) = r {
            self.fail(HostError::Os(OsError(format!(
                "host OS model (virt.host_os): {e}"
            ))));
        }
    }

    fn os_cycles(&self, page_fault_cycles: u64) -> u64 {
        // As the guest's (`engine::sim::Sim::fault_mark`): the host's zeroing and compaction
        // counted, a hashed host design's table allocations once.
        self.c.host_faults * page_fault_cycles + self.os.fault_cost_mark() + self.design.os_cycles()
            - self.design.phys_work_cycles()
    }

    fn stats(&self, out: &mut Stats) {
        let c = &self.c;
        let v = out.section("virt");
        v.insert("enabled".into(), true.into());
        v.put_str("host_design", &self.host_design);
        v.put_u64("guest_phys_bytes", self.guest_phys_bytes);
        v.put_u64("walks", c.walks);
        v.put_u64("walk_cycles", c.walk_cycles);
        v.put_f64("avg_walk_cycles", ratio(c.walk_cycles, c.walks));
        v.put_u64("post_fault_walks", c.post_fault_walks);
        v.put_u64("post_fault_walk_cycles", c.post_fault_walk_cycles);
        v.put_u64("guest_pt_refs", c.guest_pt_refs);
        v.put_u64("host_refs_for_guest_pt", c.host_refs[0]);
        v.put_u64("host_refs_for_data", c.host_refs[1]);
        v.put_u64(
            "refs_total",
            c.guest_pt_refs + c.host_refs[0] + c.host_refs[1],
        );
        v.put_u64("host_walks_for_guest_pt", c.host_walks[0]);
        v.put_u64("host_walks_for_data", c.host_walks[1]);
        v.put_u64("host_walk_cycles_for_guest_pt", c.host_walk_cycles[0]);
        v.put_u64("host_walk_cycles_for_data", c.host_walk_cycles[1]);
        v.put_u64("host_faults", c.host_faults);
        v.put_u64("host_flushes", c.host_flushes);
        v.put_u64("ntlb_entries", self.ntlb.capacity as u64);
        v.put_u64("ntlb_hits_guest_pt", c.ntlb_hits[0]);
        v.put_u64("ntlb_misses_guest_pt", c.ntlb_misses[0]);
        v.put_u64("ntlb_hits_data", c.ntlb_hits[1]);
        v.put_u64("ntlb_misses_data", c.ntlb_misses[1]);
        v.put_f64(
            "ntlb_hit_rate",
            ratio(
                c.ntlb_hits[0] + c.ntlb_hits[1],
                c.ntlb_hits[0] + c.ntlb_hits[1] + c.ntlb_misses[0] + c.ntlb_misses[1],
            ),
        );
        let fp = self.design.footprint();
        let p = v.section("host_page_table");
        p.put_u64("bytes", fp.bytes);
        p.put_u64("peak_bytes", fp.peak_bytes);
        p.put_u64("max_contiguous_bytes", fp.max_contiguous_bytes);
        let mut os = Stats::new();
        self.os.stats(&mut os);
        v.insert(
            "host_os".into(),
            os.remove("os").unwrap_or(serde_json::Value::Null),
        );
        let mut d = Stats::new();
        self.design.stats(&mut d);
        v.insert("host".into(), serde_json::Value::Object(d));
    }
}

/// Builds a [`Host`] once the host design exists (the design's constructor borrows the host
/// OS's physical memory, so the OS is handed over afterwards).
struct MakeHost {
    virt: VirtConfig,
    mem: MemConfig,
    oracle: bool,
    guest_phys_bytes: u64,
}

type HostFactory = Box<dyn FnOnce(Os) -> Result<Box<dyn HostTranslate>, String>>;

impl DesignVisitor for MakeHost {
    type Output = HostFactory;
    fn visit<H: Design + 'static>(self, design: H) -> HostFactory {
        let MakeHost {
            virt,
            mem,
            oracle,
            guest_phys_bytes,
        } = self;
        Box::new(
            move |mut os: Os| -> Result<Box<dyn HostTranslate>, String> {
                let v = &virt;
                if H::PERFECT_TLB {
                    return Err(format!(
                        "virt.host_design = '{}' cannot be a host: it has no table to walk for \
                     guest-physical addresses (choose a design with a page table, e.g. radix)",
                        v.host_design
                    ));
                }
                let oserr = |e: OsError| format!("virt.host_os: {e}");
                os.set_page_sizes(design.page_sizes()).map_err(oserr)?;
                let asid = os.process(0);
                let mut host = Host {
                    os,
                    design,
                    host_design: v.host_design.clone(),
                    asid,
                    ntlb: Ntlb::new(v.ntlb_entries, v.ntlb_latency_cycles),
                    ntlb_data: v.ntlb_data,
                    oracle,
                    guest_phys_bytes,
                    changes: Vec::new(),
                    batch: Vec::new(),
                    pending_refs: 0,
                    error: None,
                    flush: false,
                    c: VirtCounters::default(),
                };
                // Setting up the VM happens before the run: host faults and moves here touch no
                // simulated cache that a result depends on (the scratch hierarchy is dropped).
                let mut scratch = MemSystem::new(&mem);
                host.os
                    .mmap(
                        asid,
                        Vaddr(0),
                        guest_phys_bytes,
                        prot::READ | prot::WRITE,
                        0,
                        &mut host.changes,
                    )
                    .map_err(oserr)?;
                host.apply_changes(&mut scratch).map_err(oserr)?;
                if v.host_prefault {
                    let mut gpfn = 0;
                    while gpfn * BASE_PAGE_BYTES < guest_phys_bytes {
                        match host.os.translate(asid, Vpn(gpfn)) {
                            Some(m) => gpfn = m.vpn.0 + m.size.base_pages(),
                            None => host.fault(Pfn(gpfn), &mut scratch).map_err(oserr)?,
                        }
                    }
                }
                host.c = VirtCounters::default();
                host.flush = false;
                Ok(Box::new(host))
            },
        )
    }
}

/// Build the host of a nested run (`virt.enabled`) for a guest with `guest_phys_bytes` of
/// guest-physical memory: `v` is the run's `[virt]` section, `mem` its `[mem]` section (the
/// scratch hierarchy the VM is set up through), `seed` and `oracle` its `sim.seed` and
/// `sim.oracle`. Errors name the `virt.*` key at fault.
pub fn build_host(
    v: &VirtConfig,
    mem: &MemConfig,
    seed: u64,
    oracle: bool,
    guest_phys_bytes: u64,
) -> Result<Box<dyn HostTranslate>, String> {
    if v.host_os.phys_mem_bytes < guest_phys_bytes {
        return Err(format!(
            "virt.host_os.phys_mem_bytes ({}) is smaller than the guest-physical memory ({} \
             bytes, os.phys_mem_bytes)",
            v.host_os.phys_mem_bytes, guest_phys_bytes
        ));
    }
    // A seed of its own, so the host's fragmentation is not a copy of the guest's.
    let mut os = Os::new(&v.host_os, seed ^ 0x5649_5254_484f_5354)
        .map_err(|e| format!("virt.host_os: {e}"))?;
    let factory = build_and_visit(
        &v.host_design,
        &v.host,
        &mut os.phys,
        MakeHost {
            virt: v.clone(),
            mem: mem.clone(),
            oracle,
            guest_phys_bytes,
        },
    )
    .map_err(|e| format!("virt.host_design '{}': {e}", v.host_design))?;
    factory(os)
}

/// The combined gVA -> hPA translation of `vpn` from its guest mapping and the host mapping of
/// its guest frame, at the smaller of the two page sizes.
pub fn combine(vpn: Vpn, guest: Mapping, host: Mapping) -> Mapping {
    let size = combined_size(guest.size, host.size);
    let cvpn = vpn.align_down(size);
    let gpfn = guest.pfn.0 + (cvpn.0 - guest.vpn.0);
    Mapping {
        vpn: cvpn,
        pfn: Pfn(host.pfn.0 + (gpfn - host.vpn.0)),
        size,
        writable: guest.writable && host.writable,
    }
}

/// Nested Elastic Translations: the TLB entry for the combined translation of `vpn` when
/// both dimensions may be contiguous. The guest's contiguous region holding `vpn` is its
/// contiguous group (`gspan`) or else its page `gm`; the host's, for the guest frame, its
/// group (`hspan`) or else its page `hm`. The effective entry is the aligned block of the
/// smaller of the two region sizes around `vpn` (both regions are aligned to their size and
/// map linearly, so that block maps linearly gVA -> hPA), made of pages of the combined page
/// size; `None` when that block is a single page (cache the combined page alone).
pub fn effective_span(
    vpn: Vpn,
    gm: Mapping,
    gspan: Option<CoalescedSpan>,
    hm: Mapping,
    hspan: Option<CoalescedSpan>,
) -> Option<CoalescedSpan> {
    let region = |m: Mapping, s: Option<CoalescedSpan>| s.map_or(m.size, |s| s.size());
    let size = region(gm, gspan).min(region(hm, hspan));
    let cm = combine(vpn, gm, hm);
    let pages_log2 = size.order().checked_sub(cm.size.order())?;
    if pages_log2 == 0 {
        return None;
    }
    let first = vpn.align_down(size);
    Some(CoalescedSpan {
        vpn: first,
        pfn: Pfn(cm.pfn.0 - (cm.vpn.0 - first.0)),
        base: cm.size,
        pages_log2,
        writable: cm.writable,
    })
}

/// [`effective_span`] for the combined translation `m` of `vpn` that a nested walk just
/// returned: the guest side from the guest OS's mapping (what the guest walk read, as the
/// oracle checked) and the guest design's mark, the host side from the host.
pub fn nested_span<D: Design>(
    design: &D,
    guest: &Os,
    asid: Asid,
    vpn: Vpn,
    host: &dyn HostTranslate,
) -> Option<CoalescedSpan> {
    let gm = guest.translate(asid, vpn)?;
    let gpfn = Pfn(gm.pfn.0 + (vpn.0 - gm.vpn.0));
    let hm = host.host_mapping(gpfn)?;
    let gspan = design.coalesced(asid, gm, CoalesceRequest::ContiguousBit);
    effective_span(vpn, gm, gspan, hm, host.host_span(gpfn))
}

/// The oracle of nested translation: the composition of the guest OS's mapping of `vpn` and
/// the host OS's mapping of the resulting guest frame.
pub fn composed(guest: &Os, asid: Asid, vpn: Vpn, host: &dyn HostTranslate) -> Option<Mapping> {
    let g = guest.translate(asid, vpn)?;
    let h = host.host_mapping(Pfn(g.pfn.0 + (vpn.0 - g.vpn.0)))?;
    Some(combine(vpn, g, h))
}

/// Finish a guest walk `w` of `vpn` in a nested run (called by the engine right after the
/// guest design's walk): add the host references made for guest page-table pages, translate
/// the data page through the host, and turn the guest translation into the combined one.
/// `charged = false` for a guest design whose walks cost nothing (`perfect_tlb`).
#[allow(clippy::too_many_arguments)]
pub fn finish_walk(
    mem: &mut MemSystem,
    guest: &mut Os,
    asid: Asid,
    vpn: Vpn,
    w: &mut WalkResult,
    charged: bool,
    post_fault: bool,
    oracle: bool,
) -> Result<(), HostError> {
    let mut host = mem.nested.take().expect("called only in nested runs");
    let r = finish_walk_with(&mut *host, mem, guest, asid, vpn, w, charged, oracle);
    if r.is_ok() && charged {
        host.count_walk(w.latency_cycles, post_fault);
    }
    mem.nested = Some(host);
    r
}

#[allow(clippy::too_many_arguments)]
fn finish_walk_with(
    host: &mut dyn HostTranslate,
    mem: &mut MemSystem,
    guest: &mut Os,
    asid: Asid,
    vpn: Vpn,
    w: &mut WalkResult,
    charged: bool,
    oracle: bool,
) -> Result<(), HostError> {
    w.mem_accesses += host.take_pending_refs();
    if let Some(e) = host.take_error() {
        return Err(e);
    }
    let Some(gm) = w.mapping else {
        return Ok(());
    };
    if oracle && !guest.maps(asid, vpn, &gm) {
        return Err(HostError::Oracle(format!(
            "guest design walk for ASID {asid} VPN {vpn} gave {gm:?}, the guest OS model maps {:?}",
            guest.translate(asid, vpn)
        )));
    }
    let gpfn = Pfn(gm.pfn.0 + (vpn.0 - gm.vpn.0));
    let r = host.translate_data(gpfn, mem, charged);
    if let Some(e) = host.take_error() {
        return Err(e);
    }
    let (hm, cycles, refs) = r.ok_or_else(|| {
        HostError::Oracle(format!("no host translation for guest frame {gpfn:?}"))
    })?;
    w.latency_cycles += cycles;
    w.mem_accesses += refs;
    // The accessed bit belongs to the guest page (the engine's own note then sees the
    // combined translation, whose first page may lie inside it: a no-op).
    guest.note_walk(asid, &gm);
    w.mapping = Some(combine(vpn, gm, hm));
    Ok(())
}

/// Drop from the TLBs every combined translation that may cache guest page `m` of `asid`
/// (nested runs: the page itself and, inside it, each smaller size the host maps); natively,
/// exactly `m`. A huge guest page over many small host pages flushes the process instead.
pub fn invalidate_guest_page(mmu: &mut Mmu, mem: &MemSystem, asid: Asid, m: Mapping) {
    mmu.invalidate(asid, m);
    let Some(host) = mem.nested.as_deref() else {
        return;
    };
    for size in host.page_sizes().iter() {
        if size.order() >= m.size.order() {
            continue;
        }
        let pieces = m.size.base_pages() >> size.order();
        if pieces > 512 {
            mmu.invalidate_asid(asid);
            return;
        }
        for i in 0..pieces {
            mmu.invalidate(
                asid,
                Mapping {
                    vpn: Vpn(m.vpn.0 + (i << size.order())),
                    size,
                    ..m
                },
            );
        }
    }
}

/// Drop from the data caches the lines of `pages` guest frames from `pfn` whose contents the
/// guest OS moved: natively these are the frames; in a nested run, the host frames backing
/// them (unbacked guest frames hold no cached lines).
pub fn invalidate_moved_frames(
    mem: &mut MemSystem,
    pfn: Pfn,
    pages: u64,
    others: &mut [&mut crate::mem::PrivateCaches],
) {
    let Some(host) = mem.nested.take() else {
        mem.invalidate_frames(pfn, pages, others);
        return;
    };
    // Nested runs have one core (`virt.enabled` requires `sim.cores = 1`): no other caches.
    for gpfn in pfn.0..pfn.0 + pages {
        if let Some(h) = host.host_mapping(Pfn(gpfn)) {
            mem.invalidate_frames(Pfn(h.pfn.0 + (gpfn - h.vpn.0)), 1, &mut []);
        }
    }
    mem.nested = Some(host);
}

/// The size that combined entries of guest page size `guest` and host size `host` take.
pub fn combined_size(guest: PageSize, host: PageSize) -> PageSize {
    if guest.order() <= host.order() {
        guest
    } else {
        host
    }
}

#[cfg(test)]
mod tests;
