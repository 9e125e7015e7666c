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
 * --filler lea puts `lea 1(%rcx), %rdx` instead of NOPs: independent instructions that each
 * write a register, so the step comes where the integer physical registers for in-flight
 * results run out, if that is before the reorder buffer does.
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
    fprintf(stderr, "usage: robprobe [--size BYTES] [--pages 4k|2m|default] [--filler nop|lea] "
                    "[--seconds S] [--seed N] [--cpu N]\n");
    exit(2);
}

/* One iteration: a load of chase a, N fillers, a load of chase b, N fillers. */
#define ROB_BODY(NAME, FILLER, CLOBBER, N)                                                     \
    static void __attribute__((noinline)) run_##NAME##_##N(char **pa, char **pb, uint64_t iters) \
    {                                                                                          \
        char *a = *pa, *b = *pb;                                                               \
        for (uint64_t i = 0; i < iters; i++) {                                                 \
            a = *(char **)a;                                                                   \
            __asm__ volatile(".rept " #N "\n\t" FILLER "\n\t.endr" ::: CLOBBER "memory");       \
            b = *(char **)b;                                                                   \
            __asm__ volatile(".rept " #N "\n\t" FILLER "\n\t.endr" ::: CLOBBER "memory");       \
        }                                                                                      \
        *pa = a;                                                                               \
        *pb = b;                                                                               \
    }
#define ROB_NOP(N) ROB_BODY(nop, "nop", , N)
#define RDX_CLOBBER "rdx",
#define ROB_LEA(N) ROB_BODY(lea, "lea 1(%%rcx), %%rdx", RDX_CLOBBER, N)

#define ROB_SIZES(X)                                                                           \
    X(16) X(32) X(64) X(96) X(128) X(160) X(192) X(208) X(224) X(240) X(256) X(288) X(320)      \
    X(352) X(384) X(416) X(432) X(448) X(464) X(480) X(512) X(576) X(640) X(768)

ROB_SIZES(ROB_NOP)
ROB_SIZES(ROB_LEA)

struct variant {
    int fillers;
    void (*run)(char **, char **, uint64_t);
};

#define ROB_ENTRY_NOP(N) {N, run_nop_##N},
#define ROB_ENTRY_LEA(N) {N, run_lea_##N},
static const struct variant nop_variants[] = {ROB_SIZES(ROB_ENTRY_NOP)};
static const struct variant lea_variants[] = {ROB_SIZES(ROB_ENTRY_LEA)};
#define N_VARIANTS (sizeof nop_variants / sizeof nop_variants[0])

/* One timed call: a batch of iterations of one variant. */
struct rob_run {
    const struct variant *v;
    char **a, **b;
    uint64_t batch;
};

static void rob_step(void *ctx)
{
    struct rob_run *r = ctx;
    r->v->run(r->a, r->b, r->batch);
}

int main(int argc, char **argv)
{
    struct run_opts o = {(size_t)1 << 30, PAGES_2M, 0.5, 1, 0};
    int lea = 0;
    static const struct option opts[] = {
        {"filler", required_argument, 0, 'f'}, RUN_LONG_OPTIONS, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (run_opt(&o, c, optarg))
            continue;
        if (c != 'f')
            usage();
        if (strcmp(optarg, "lea") == 0)
            lea = 1;
        else if (strcmp(optarg, "nop") != 0)
            usage();
    }
    pin_self(o.cpu, "robprobe");
    /* Two halves of one region, one chase in each: their misses never share a line. */
    struct region r;
    region_alloc(&r, o.bytes, o.mode);
    region_report(&r, "robprobe region");
    size_t half = (o.bytes / 2) & ~(size_t)(LINE_BYTES - 1);
    build_cycle(r.base, half, LINE_BYTES, o.seed);
    build_cycle(r.base + half, half, LINE_BYTES, o.seed + 1);
    char *a = node_addr(r.base, LINE_BYTES, 0, o.seed);
    char *b = node_addr(r.base + half, LINE_BYTES, 0, o.seed + 1);
    /* Warm-up: the chases' lines are cold anyway (the region is far beyond the caches); this
     * settles the TLB and page-walk caches. */
    const struct variant *variants = lea ? lea_variants : nop_variants;
    const char *filler = lea ? "lea" : "nop";
    variants[0].run(&a, &b, (uint64_t)1 << 18);
    for (size_t v = 0; v < N_VARIANTS; v++) {
        struct rob_run run = {&variants[v], &a, &b, (uint64_t)1 << 14};
        struct snap d;
        uint64_t iters = timed_calls(rob_step, &run, o.seconds, o.cpu, &d) * run.batch;
        double ns = d.wall * 1e9 / (double)iters;
        printf("{\"bench\": \"robprobe\", \"filler\": \"%s\", \"fillers\": %d, "
               "\"ns_per_iteration\": %.2f, \"iterations\": %llu, \"region_bytes\": %zu, "
               "\"pages\": \"%s\", \"huge_share\": %.4f, \"cpu\": %d, \"seed\": %llu, ",
               filler, variants[v].fillers, ns, (unsigned long long)iters, o.bytes,
               pages_name(o.mode), region_huge_share(&r), o.cpu, (unsigned long long)o.seed);
        json_host_fields(stdout);
        json_snap_fields(stdout, &d);
        printf(", \"end\": \"%p%p\"}\n", (void *)a, (void *)b);
        printf("# %4d %s between the loads: %.2f ns per iteration\n", variants[v].fillers,
               lea ? "LEAs" : "NOPs", ns);
        fflush(stdout);
    }
    region_free(&r);
    return 0;
}
