/* robprobe: how many instructions the core keeps in flight behind a cache-missing load.
 *
 * The method of Henry Wong ("Measuring Reorder Buffer Capacity", 2013): two independent pointer
 * chases over a region far larger than the caches, one load of each per iteration, separated by
 * N filler instructions (NOPs). While N plus the loads fit in the reorder buffer, the second
 * chase's miss issues while the first's is outstanding and an iteration costs about one miss
 * latency; once they do not, the second waits for the first to retire and an iteration costs
 * two. The N at which the time per iteration steps up is the window the core keeps in flight
 * (the reorder buffer, or whatever smaller structure fills first: with SMT, a thread's share).
 *
 * Output: one JSON line per N (prefix "{"), '#' lines for people.
 */
#define _GNU_SOURCE
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr, "usage: robprobe [--size BYTES] [--pages 4k|2m|default] [--seconds S] "
                    "[--seed N] [--cpu N]\n");
    exit(2);
}

/* One iteration: a load of chase a, N NOPs, a load of chase b, N NOPs. */
#define ROB_BODY(N)                                                                            \
    static void __attribute__((noinline)) run_##N(char **pa, char **pb, uint64_t iters)        \
    {                                                                                          \
        char *a = *pa, *b = *pb;                                                               \
        for (uint64_t i = 0; i < iters; i++) {                                                 \
            a = *(char **)a;                                                                   \
            __asm__ volatile(".rept " #N "\n\tnop\n\t.endr" ::: "memory");                     \
            b = *(char **)b;                                                                   \
            __asm__ volatile(".rept " #N "\n\tnop\n\t.endr" ::: "memory");                     \
        }                                                                                      \
        *pa = a;                                                                               \
        *pb = b;                                                                               \
    }

#define ROB_SIZES(X)                                                                           \
    X(16) X(32) X(64) X(96) X(128) X(160) X(192) X(208) X(224) X(240) X(256) X(288) X(320)      \
    X(352) X(384) X(416) X(432) X(448) X(464) X(480) X(512) X(576) X(640) X(768)

ROB_SIZES(ROB_BODY)

struct variant {
    int nops;
    void (*run)(char **, char **, uint64_t);
};

#define ROB_ENTRY(N) {N, run_##N},
static const struct variant variants[] = {ROB_SIZES(ROB_ENTRY)};

/* A random cycle through every line of [base, base + bytes): node P(i) -> node P(i+1). */
static char *build_cycle(char *base, size_t bytes, uint64_t seed)
{
    uint64_t n = bytes / LINE_BYTES;
    struct bijection p;
    bijection_init(&p, n, seed);
    uint64_t first = bijection_apply(&p, 0), cur = first;
    for (uint64_t i = 1; i < n; i++) {
        uint64_t next = bijection_apply(&p, i);
        *(char **)(base + cur * LINE_BYTES) = base + next * LINE_BYTES;
        cur = next;
    }
    *(char **)(base + cur * LINE_BYTES) = base + first * LINE_BYTES;
    return base + first * LINE_BYTES;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)1 << 30;
    enum page_mode mode = PAGES_2M;
    double seconds = 0.5;
    uint64_t seed = 1;
    int cpu = 0;
    static const struct option opts[] = {
        {"size", required_argument, 0, 's'},    {"pages", required_argument, 0, 'p'},
        {"seconds", required_argument, 0, 't'}, {"seed", required_argument, 0, 'r'},
        {"cpu", required_argument, 0, 'c'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': bytes = parse_size(optarg); break;
        case 'p': mode = parse_pages(optarg); break;
        case 't': seconds = atof(optarg); break;
        case 'r': seed = strtoull(optarg, NULL, 0); break;
        case 'c': cpu = atoi(optarg); break;
        default: usage();
        }
    }
    pin_self(cpu, "robprobe");
    /* Two halves of one region, one chase in each: their misses never share a line. */
    struct region r;
    region_alloc(&r, bytes, mode);
    region_report(&r, "robprobe region");
    size_t half = (bytes / 2) & ~(size_t)(LINE_BYTES - 1);
    char *a = build_cycle(r.base, half, seed);
    char *b = build_cycle(r.base + half, half, seed + 1);
    /* Warm-up: the chases' lines are cold anyway (the region is far beyond the caches); this
     * settles the TLB and page-walk caches. */
    variants[0].run(&a, &b, (uint64_t)1 << 18);
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        uint64_t iters = 0, batch = (uint64_t)1 << 14;
        struct snap s0, s1;
        snap_take(&s0, cpu);
        do {
            variants[v].run(&a, &b, batch);
            iters += batch;
        } while (now_seconds() - s0.wall < seconds);
        snap_take(&s1, cpu);
        struct snap d = snap_diff(&s0, &s1);
        double ns = d.wall * 1e9 / (double)iters;
        printf("{\"bench\": \"robprobe\", \"nops\": %d, \"window_instructions\": %d, "
               "\"ns_per_iteration\": %.2f, \"iterations\": %llu, \"region_bytes\": %zu, "
               "\"pages\": \"%s\", \"huge_share\": %.4f, \"cpu\": %d, \"seed\": %llu, ",
               variants[v].nops, variants[v].nops + 1, ns, (unsigned long long)iters, bytes,
               pages_name(mode), region_huge_share(&r), cpu, (unsigned long long)seed);
        json_host_fields(stdout);
        json_snap_fields(stdout, &d);
        printf(", \"end\": \"%p%p\"}\n", (void *)a, (void *)b);
        printf("# %4d NOPs between the loads: %.2f ns per iteration\n", variants[v].nops, ns);
        fflush(stdout);
    }
    region_free(&r);
    return 0;
}
