/* retain: whether a line stays in this guest's caches depends on how long ago it was used.
 *
 * A chase of one cycle through every line of a region small enough for the L3 (default 2 MiB,
 * 2 MiB pages), one load at a time, with a spin of D ns after each load. The spin issues no
 * memory access: it only stretches the time between two uses of a line (the region's lines x
 * the time per step) while the order of the accesses, and so what a capacity-managed cache
 * would keep, stays the same. Each load is timed with rdtscp and counted as served by a cache
 * when it takes less than the midpoint between a line just loaded (a hit) and a flushed line
 * (a DRAM access), calibrated each run. If the cache kept lines by capacity alone, the share
 * would not depend on D; on a host whose other tenants evict this guest's lines at a rate it
 * falls once the reuse time passes the lines' retention (docs/host.md, "The share is a
 * retention time").
 *
 * Output: one JSON line per D, prefix "{": spin_ns, ns_per_step (wall, spin included),
 * reuse_ms (lines x ns_per_step), hit_share, load_ns_median; '#' lines for people.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include <getopt.h>

#include "common.h"

static inline uint64_t ticks(void)
{
    unsigned aux;
    return __rdtscp(&aux);
}

/* One load of the pointer at `p`, timed: fences keep it between the two clock reads. */
static inline uint64_t timed_next(char **p)
{
    _mm_mfence();
    _mm_lfence();
    uint64_t t0 = ticks();
    *p = *(char *volatile *)*p;
    uint64_t t1 = ticks();
    _mm_lfence();
    return t1 - t0;
}

static void spin_ticks(uint64_t n)
{
    uint64_t end = ticks() + n;
    while (ticks() < end) {
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof v[0], cmp_u64);
    return v[n / 2];
}

/* A comma-separated list of counts (at most `max`). */
static int parse_list(const char *s, size_t *out, int max)
{
    int n = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
        out[n++] = (size_t)strtoull(tok, NULL, 10);
    free(dup);
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: retain [--size BYTES] [--pages 4k|2m|default] [--spin-ns D[,D..]] "
                    "[--seconds S] [--seed N] [--cpu N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct run_opts o = {(size_t)2 << 20, PAGES_2M, 2.0, 1, 0};
    size_t spins[16] = {0, 50, 100, 200, 400, 800};
    int nspins = 6;
    static const struct option opts[] = {
        {"spin-ns", required_argument, 0, 'd'}, RUN_LONG_OPTIONS, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (run_opt(&o, c, optarg))
            continue;
        if (c != 'd')
            usage();
        nspins = parse_list(optarg, spins, 16);
    }
    pin_self(o.cpu, "retain");
    struct region r;
    region_alloc(&r, o.bytes, o.mode);
    region_report(&r, "retain region");
    uint64_t n = build_cycle(r.base, r.bytes, LINE_BYTES, o.seed);

    /* TSC ticks per ns, over 50 ms of wall time. */
    double w0 = now_seconds();
    uint64_t k0 = ticks();
    while (now_seconds() - w0 < 0.05) {
    }
    double ticks_per_ns = (double)(ticks() - k0) / ((now_seconds() - w0) * 1e9);

    /* Calibration: a line just loaded (hit) and a flushed line (a DRAM access). */
    enum { CAL = 2000 };
    uint64_t *hit = malloc(CAL * sizeof *hit), *miss = malloc(CAL * sizeof *miss);
    for (unsigned t = 0; t < CAL; t++) {
        /* A node of the cycle: loading it yields the next node (discarded here). */
        char *node = node_addr(r.base, LINE_BYTES, t % n, o.seed);
        _mm_clflush(node);
        _mm_mfence();
        spin_ticks((uint64_t)(2000 * ticks_per_ns));
        char *q = node;
        miss[t] = timed_next(&q);
        q = node;
        hit[t] = timed_next(&q);
    }
    uint64_t hit_med = median(hit, CAL), miss_med = median(miss, CAL);
    const double threshold = ((double)hit_med + (double)miss_med) / 2;
    printf("# retain: %llu lines; hit %llu ticks, miss %llu ticks (medians), threshold %.0f; "
           "%.3f ticks per ns\n",
           (unsigned long long)n, (unsigned long long)hit_med, (unsigned long long)miss_med,
           threshold, ticks_per_ns);
    free(hit);
    free(miss);

    size_t cap = (size_t)n;
    uint64_t *lat = malloc(cap * sizeof *lat);
    char *p = node_addr(r.base, LINE_BYTES, 0, o.seed);
    for (int si = 0; si < nspins; si++) {
        uint64_t spin = (uint64_t)((double)spins[si] * ticks_per_ns);
        /* Two cycles at this spin first, so that what the caches hold is this spin's. */
        for (uint64_t s = 0; s < 2 * n; s++) {
            p = *(char **)p;
            spin_ticks(spin);
        }
        uint64_t steps = 0, fast = 0;
        double t0 = now_seconds(), el = 0;
        /* Whole cycles until `seconds` have passed (at least one). */
        do {
            for (uint64_t s = 0; s < n; s++) {
                lat[s] = timed_next(&p);
                fast += (double)lat[s] < threshold;
                spin_ticks(spin);
            }
            steps += n;
            el = now_seconds() - t0;
        } while (el < o.seconds);
        double ns_step = el * 1e9 / (double)steps;
        double med_ns = (double)median(lat, cap) / ticks_per_ns;
        printf("{\"bench\": \"retain\", \"region_bytes\": %zu, \"pages\": \"%s\", "
               "\"huge_share\": %.4f, \"lines\": %llu, \"spin_ns\": %zu, \"ns_per_step\": %.2f, "
               "\"reuse_ms\": %.3f, \"hit_share\": %.4f, \"load_ns_median\": %.1f, "
               "\"threshold_ticks\": %.0f, \"steps\": %llu, \"cpu\": %d, \"seed\": %llu, ",
               o.bytes, pages_name(o.mode), region_huge_share(&r), (unsigned long long)n,
               spins[si], ns_step, ns_step * (double)n / 1e6, (double)fast / (double)steps,
               med_ns, threshold, (unsigned long long)steps, o.cpu, (unsigned long long)o.seed);
        json_host_fields(stdout);
        printf(", \"end\": \"%p\"}\n", (void *)p);
        printf("# spin %4zu ns: %.1f ns per step, a line reused every %.2f ms, %.1f %% of loads "
               "from a cache (median load %.1f ns)\n",
               spins[si], ns_step, ns_step * (double)n / 1e6, 100.0 * (double)fast / (double)steps,
               med_ns);
        fflush(stdout);
    }
    free(lat);
    region_free(&r);
    return 0;
}
