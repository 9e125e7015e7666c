/* pfprobe: how far ahead this machine's hardware prefetchers fetch within a 4 KiB page.
 *
 * Method (the usual way to reverse-engineer a stream prefetcher): pick a random 4 KiB page of a
 * large region, flush its 64 lines from every cache level (clflush), load its lines 0 .. k-1 in
 * ascending order (with --down: lines 63 .. 64-k, descending; d then counts downwards; with
 * --start S the stream begins S lines in), wait long enough for any prefetch to land (2 us),
 * then time one load of line k-1+d. If a prefetcher fetched that line it is a cache hit (tens of
 * TSC ticks); if not, a DRAM access (hundreds). Repeated over many random pages, the share of
 * fast probes for each (k, d) says after how many accesses a stream is followed and how far
 * ahead of the last access the fetched lines reach. Each trial probes one line only (a probe
 * is itself an access the prefetcher sees), and every trial starts from a flushed page.
 *
 * The threshold between "hit" and "miss" is calibrated each run: the median time of a load of a
 * line just loaded (a hit) and of a flushed line of an untouched page (a miss); a probe is a hit
 * when it is below their midpoint (so an L3 hit counts as fetched too).
 *
 * It sees every prefetcher at once (the L1-D's and the L2's, and the adjacent-line one that
 * completes a 128-byte pair): a line counts as fetched whatever level holds it.
 *
 * Output: a '#' header, then one JSON line per (k, d): {"bench": "pfprobe", "k": .., "d": ..,
 * "trials": .., "hit_share": ..}, plus the calibration line.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "common.h"

static inline uint64_t ticks(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

static inline uint64_t timed_load(const volatile uint64_t *p) {
    _mm_mfence();
    _mm_lfence();
    uint64_t t0 = ticks();
    uint64_t v = *p;
    uint64_t t1 = ticks();
    _mm_lfence();
    (void)v;
    return t1 - t0;
}

static void flush_page(char *page) {
    for (unsigned i = 0; i < PAGE_4K / LINE_BYTES; i++) {
        _mm_clflush(page + i * LINE_BYTES);
    }
    _mm_mfence();
}

static void spin_ticks(uint64_t n) {
    uint64_t end = ticks() + n;
    while (ticks() < end) {
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, size_t n) {
    qsort(v, n, sizeof v[0], cmp_u64);
    return v[n / 2];
}

int main(int argc, char **argv) {
    size_t bytes = (size_t)1 << 30;
    unsigned trials = 300, max_d = 24, cpu = 0;
    uint64_t seed = 1;
    int down = 0;
    unsigned start = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--down")) {
            down = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pfprobe: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--size")) {
            bytes = parse_size(argv[i + 1]);
        } else if (!strcmp(argv[i], "--trials")) {
            trials = (unsigned)strtoul(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--max-d")) {
            max_d = (unsigned)strtoul(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--seed")) {
            seed = strtoull(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--start")) {
            start = (unsigned)strtoul(argv[i + 1], NULL, 10);
        } else if (!strcmp(argv[i], "--cpu")) {
            cpu = (unsigned)strtoul(argv[i + 1], NULL, 10);
        } else {
            fprintf(stderr,
                    "pfprobe: unknown option %s (--size --trials --max-d --seed --cpu --down --start)\n",
                    argv[i]);
            return 2;
        }
        i++;
    }
    /* Line i of the stream: ascending from line 0, or with --down descending from line 63. */
#define LINE_AT(i) (down ? (PAGE_4K / LINE_BYTES - 1 - start - (i)) : (start + (i)))
    pin_self((int)cpu, "pfprobe");
    struct region r;
    region_alloc(&r, bytes, PAGES_4K);
    region_smaps(&r);
    region_report(&r, "pfprobe");
    const uint64_t pages = r.bytes / PAGE_4K;
    uint64_t state = seed;
    /* About 2 us at any clock this machine runs (the TSC ticks at a few GHz). */
    const uint64_t wait = 8000;

    /* Calibration: a hit (a line just loaded) and a miss (a flushed line of an untouched page). */
    enum { CAL = 2000 };
    uint64_t *hit = malloc(CAL * sizeof *hit), *miss = malloc(CAL * sizeof *miss);
    for (unsigned t = 0; t < CAL; t++) {
        char *page = r.base + (splitmix64(&state) % pages) * PAGE_4K;
        flush_page(page);
        spin_ticks(wait);
        miss[t] = timed_load((const volatile uint64_t *)(page + 37 * LINE_BYTES));
        hit[t] = timed_load((const volatile uint64_t *)(page + 37 * LINE_BYTES));
    }
    uint64_t hit_med = median(hit, CAL), miss_med = median(miss, CAL);
    const double threshold = ((double)hit_med + (double)miss_med) / 2;
    printf("# pfprobe: %llu pages of 4 KiB; hit %llu ticks, miss %llu ticks (medians), threshold "
           "%.0f\n",
           (unsigned long long)pages, (unsigned long long)hit_med, (unsigned long long)miss_med,
           threshold);
    printf("{\"bench\": \"pfprobe\", \"calibration\": true, \"hit_ticks\": %llu, \"miss_ticks\": "
           "%llu, \"threshold_ticks\": %.0f, \"region_bytes\": %zu, \"huge_share\": %.3f, ",
           (unsigned long long)hit_med, (unsigned long long)miss_med, threshold, r.bytes,
           region_huge_share(&r));
    json_host_fields(stdout);
    printf("}\n");

    const unsigned ks[] = {1, 2, 3, 4, 6, 8, 12, 16, 24};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        unsigned k = ks[ki];
        for (unsigned d = 1; d <= max_d && start + k - 1 + d < PAGE_4K / LINE_BYTES; d++) {
            unsigned fast = 0;
            for (unsigned t = 0; t < trials; t++) {
                char *page = r.base + (splitmix64(&state) % pages) * PAGE_4K;
                flush_page(page);
                spin_ticks(wait);
                uint64_t sink = 0;
                for (unsigned i = 0; i < k; i++) {
                    sink += *(const volatile uint64_t *)(page + LINE_AT(i) * LINE_BYTES);
                    _mm_lfence();
                }
                spin_ticks(wait);
                uint64_t dt = timed_load(
                    (const volatile uint64_t *)(page + LINE_AT(k - 1 + d) * LINE_BYTES));
                fast += (double)dt < threshold;
                (void)sink;
            }
            printf("{\"bench\": \"pfprobe\", \"direction\": \"%s\", \"start\": %u, \"k\": %u, "
                   "\"d\": %u, \"trials\": %u, \"hit_share\": %.3f}\n",
                   down ? "down" : "up", start, k, d, trials, (double)fast / trials);
            fflush(stdout);
        }
    }
    free(hit);
    free(miss);
    region_free(&r);
    return 0;
}
