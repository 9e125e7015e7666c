/* hostbench: shared helpers for the host microbenchmarks (bw, chase, gups).
 *
 * Everything a measurement needs besides its inner loop: a clock, thread pinning, size parsing,
 * a page-aligned region with a chosen page size (madvise) whose huge-page share is read back from
 * /proc/self/smaps, the THP settings, the load average, and a keyed pseudo-random bijection used
 * to lay out chase cycles without a permutation array.
 */
#ifndef HOSTBENCH_COMMON_H
#define HOSTBENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LINE_BYTES 64u
#define PAGE_4K ((size_t)4096)
#define PAGE_2M ((size_t)2 << 20)

/* Which page size the region asks the kernel for. */
enum page_mode {
    PAGES_DEFAULT, /* no madvise: whatever /sys/kernel/mm/transparent_hugepage/enabled gives */
    PAGES_4K,      /* MADV_NOHUGEPAGE */
    PAGES_2M,      /* MADV_HUGEPAGE (transparent huge pages) */
};

struct region {
    char *base;              /* 2 MiB aligned, so every 2 MiB of it can be one huge page */
    size_t bytes;            /* a multiple of 2 MiB (rounded up by region_alloc) */
    enum page_mode mode;
    double touch_seconds;    /* time to fault every page in (first touch) */
    /* Filled by region_smaps() from /proc/self/smaps, for the VMA(s) covering the region. */
    size_t rss_kb;
    size_t anon_huge_kb;
    int vmflag_hg;           /* VmFlags has "hg": the kernel recorded MADV_HUGEPAGE */
    int vmflag_nh;           /* VmFlags has "nh": the kernel recorded MADV_NOHUGEPAGE */
    int smaps_ok;            /* smaps was readable and a VMA covered the region */
};

double now_seconds(void);

/* Pin the calling thread to `cpu`; returns 0 on success. Prints a '#' line saying so. */
int pin_self(int cpu, const char *who);
int online_cpus(void);

/* "64M", "1GiB", "4096", "2g" -> bytes; exits with a message on a malformed size. */
size_t parse_size(const char *s);
enum page_mode parse_pages(const char *s);
const char *pages_name(enum page_mode m);

/* mmap + madvise + touch; exits on failure. */
void region_alloc(struct region *r, size_t bytes, enum page_mode mode);
void region_free(struct region *r);
/* Re-read smaps for the region (call after touching: huge pages exist only once faulted). */
void region_smaps(struct region *r);
/* The share of the region held in huge pages (AnonHugePages / region size), 0..1. */
double region_huge_share(const struct region *r);
/* Print the '#' line about the region's pages (what was asked, what was obtained). */
void region_report(const struct region *r, const char *name);

/* The bracketed word of a THP sysfs file ("madvise" from "always [madvise] never"), or "?". */
void thp_setting(const char *file, char *out, size_t outlen);
/* 1-minute load average, or -1 if /proc/loadavg is unreadable. */
double loadavg1(void);

/* What else the clock saw: a snapshot of wall time, the calling thread's CPU time, the host's
 * steal time on one CPU (/proc/stat, 10 ms ticks; cpu < 0: all CPUs) and the calling thread's
 * involuntary context switches. On a busy machine a pinned thread shares its CPU with other
 * jobs; wall time then includes their time slices, the thread's CPU time does not (though it
 * still includes the cache and TLB state they left behind). Steal is time the hypervisor ran
 * something else while this vCPU wanted to run: it is in both. */
struct snap {
    double wall, thread_cpu, steal;
    long nivcsw;
};
void snap_take(struct snap *s, int cpu);
/* b - a, field by field. */
struct snap snap_diff(const struct snap *a, const struct snap *b);
/* ", \"wall_seconds\": .., \"thread_cpu_seconds\": .., \"steal_seconds\": .., \"nivcsw\": .." */
void json_snap_fields(FILE *f, const struct snap *d);

/* The common JSON fields every measurement line carries (no braces, leading comma-free):
 * loadavg, THP settings, pinning. */
void json_host_fields(FILE *f);

/* A keyed bijection of [0, n): three rounds of (add key, odd multiply, xor-shift) on the
 * smallest power-of-two domain >= n, cycle-walked back into [0, n). Same idea as xlat's
 * implicit permutations (docs/workloads.md), so a chase over 8 GiB needs no 1 GiB index array. */
struct bijection {
    uint64_t n, mask;
    unsigned shift;
    uint64_t key[3], mul[3];
};
void bijection_init(struct bijection *b, uint64_t n, uint64_t seed);
uint64_t bijection_apply(const struct bijection *b, uint64_t x);

/* splitmix64: seeds and per-node offsets. */
uint64_t splitmix64(uint64_t *state);

/* A chase cycle over [base, base + bytes) cut into slots of `slot` bytes: one node (a pointer)
 * per slot, at a line of the slot fixed by (seed, slot number), node P(i) pointing to node
 * P(i+1) for the keyed bijection P of the slot numbers. Returns the number of nodes. */
uint64_t build_cycle(char *base, size_t bytes, size_t slot, uint64_t seed);
/* The address of slot i's node (as build_cycle placed it). */
char *node_addr(char *base, size_t slot, uint64_t i, uint64_t seed);

/* The options every measurement takes: --size, --pages, --seconds, --seed, --cpu (and --help).
 * Put RUN_LONG_OPTIONS in a program's `struct option` table (getopt.h) and pass each getopt_long
 * result to run_opt, which applies it and returns 1 if it was one of these (0 for --help: the
 * program's usage). */
struct run_opts {
    size_t bytes;
    enum page_mode mode;
    double seconds;
    uint64_t seed;
    int cpu;
};
#define RUN_LONG_OPTIONS                                                                       \
    {"size", required_argument, 0, 's'}, {"pages", required_argument, 0, 'p'},                 \
        {"seconds", required_argument, 0, 't'}, {"seed", required_argument, 0, 'r'},           \
        {"cpu", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}
int run_opt(struct run_opts *o, int c, const char *arg);

/* Call step(ctx) until `seconds` of wall time have passed (at least once), between two
 * snapshots of `cpu`; returns how many calls ran and sets *d to the snapshots' difference. */
uint64_t timed_calls(void (*step)(void *ctx), void *ctx, double seconds, int cpu, struct snap *d);

#endif
