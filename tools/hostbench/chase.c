/* chase: dependent pointer chase (load-to-use latency, with and without streaming load).
 *
 * The region is divided into slots of --slot bytes (64: every cache line of the region, as
 * xlat's pointer_chase; 4096: one line per 4 KiB page). Each slot holds one node, a pointer, at a
 * random cache line inside the slot (so one-per-page nodes do not all land in the same cache
 * sets). The nodes form one random cycle: the i-th node visited is slot P(i) for a keyed
 * pseudo-random bijection P, so the next address is known only once the load returns. Each load
 * then costs one full load-to-use latency, translation included: ns per access is the figure.
 *
 * Loaded latency: --load 1 runs one streaming-read thread (on another CPU) over its own buffer
 * beside the chase; it measures the latency a memory-bound neighbour adds.
 *
 * Memory-level parallelism: --chains K follows K independent chases of the same cycle at once
 * (started n/K nodes apart, one load of each per round): ns per access is then the time per
 * load at K loads in flight, which falls as 1/K until something the loads share (miss buffers,
 * page walkers, DRAM) is full. The K at which it stops falling says how many misses, and how
 * many page walks, the core keeps in flight.
 *
 * Output: one JSON line per measurement (prefix "{"), '#' lines for people.
 */
#define _GNU_SOURCE
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr,
            "usage: chase --size BYTES [--pages 4k|2m|default] [--slot 64|4096[,..]]\n"
            "             [--load 0|1[,..]] [--chains K[,..]] [--seconds S] [--load-size BYTES]\n"
            "             [--seed N] [--cpu N]\n"
            "  --slot 64: a random cycle through every cache line of the region\n"
            "  --slot 4096: one line (random within its page) per 4 KiB page\n"
            "  --load: streaming-read threads beside the chase (loaded latency)\n"
            "  --chains K: K independent chases at once (1..64; memory-level parallelism)\n"
            "  lists (comma-separated) run each combination on the same region\n");
    exit(2);
}

/* Parse "a,b,c" into at most `max` sizes. */
static int parse_list(const char *s, size_t *out, int max)
{
    int n = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
        out[n++] = parse_size(tok);
    free(dup);
    return n;
}

/* ---- the load threads: stream-read their own buffer until told to stop ---- */

struct loader {
    pthread_t thread;
    int cpu;
    struct region buf;
    atomic_int *stop;
    atomic_int *started;
    double seconds;      /* how long it streamed */
    uint64_t bytes;      /* how much it read */
    uint64_t sink;
};

static void *loader_main(void *arg)
{
    struct loader *l = arg;
    pin_self(l->cpu, "load thread");
    const uint64_t *w = (const uint64_t *)l->buf.base;
    size_t words = l->buf.bytes / 8;
    /* Read in 1 MiB chunks so the stop flag is checked often enough that the measured
     * interval matches the chase's. Four accumulators: the sum is not a dependency chain. */
    const size_t chunk = (1u << 20) / 8;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, bytes = 0;
    atomic_fetch_add(l->started, 1);
    double t0 = now_seconds();
    size_t i = 0;
    while (!atomic_load_explicit(l->stop, memory_order_relaxed)) {
        size_t end = i + chunk;
        for (; i < end; i += 4) {
            s0 += w[i];
            s1 += w[i + 1];
            s2 += w[i + 2];
            s3 += w[i + 3];
        }
        bytes += chunk * 8;
        if (i >= words)
            i = 0;
    }
    l->seconds = now_seconds() - t0;
    l->bytes = bytes;
    l->sink = s0 + s1 + s2 + s3;
    return NULL;
}

/* ---- the chase ---- */

/* Follow `count` links from *p (count a multiple of 16). noinline: one clean loop to read in
 * the disassembly, one load per iteration on the critical path. */
__attribute__((noinline)) static char *chase(char *p, uint64_t count)
{
    for (uint64_t i = 0; i < count; i += 16) {
#define STEP p = *(char **)p;
        STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP
#undef STEP
    }
    return p;
}

#define MAX_CHAINS 64

/* Follow `rounds` links of each of the `k` chases in `ps` (k <= MAX_CHAINS), one of each per
 * round: the k loads of a round are independent, so the core overlaps them as far as its miss
 * buffers and page walkers let it. */
__attribute__((noinline)) static void chase_k(char **ps, int k, uint64_t rounds)
{
    char *q[MAX_CHAINS];
    memcpy(q, ps, (size_t)k * sizeof *q);
    for (uint64_t r = 0; r < rounds; r++)
        for (int j = 0; j < k; j++)
            q[j] = *(char **)q[j];
    memcpy(ps, q, (size_t)k * sizeof *q);
}

/* One timed call of the chains: `rounds` rounds of all `k` chases. */
struct chains_run {
    char **ps;
    int k;
    uint64_t rounds;
};

static void chains_step(void *ctx)
{
    struct chains_run *r = ctx;
    chase_k(r->ps, r->k, r->rounds);
}

int main(int argc, char **argv)
{
    struct run_opts o = {0, PAGES_4K, 2.0, 1, 0};
    size_t load_size = (size_t)512 << 20;
    size_t slots[8] = {64}, loads[8] = {0}, chains[16] = {1};
    int nslots = 1, nloads = 1, nchains = 1;
    static const struct option opts[] = {
        {"slot", required_argument, 0, 'l'},      {"load", required_argument, 0, 'L'},
        {"load-size", required_argument, 0, 'S'}, {"chains", required_argument, 0, 'k'},
        RUN_LONG_OPTIONS,                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (run_opt(&o, c, optarg))
            continue;
        switch (c) {
        case 'l': nslots = parse_list(optarg, slots, 8); break;
        case 'L': nloads = parse_list(optarg, loads, 8); break;
        case 'S': load_size = parse_size(optarg); break;
        case 'k': nchains = parse_list(optarg, chains, 16); break;
        default: usage();
        }
    }
    size_t bytes = o.bytes;
    enum page_mode mode = o.mode;
    double seconds = o.seconds;
    uint64_t seed = o.seed;
    int cpu = o.cpu;
    if (bytes == 0)
        usage();
    for (int i = 0; i < nslots; i++)
        if (slots[i] < LINE_BYTES || (slots[i] & (slots[i] - 1)) || slots[i] > bytes) {
            fprintf(stderr, "--slot must be a power of two >= 64 and <= --size\n");
            return 2;
        }
    for (int i = 0; i < nchains; i++)
        if (chains[i] < 1 || chains[i] > MAX_CHAINS) {
            fprintf(stderr, "--chains must be in 1..%d\n", MAX_CHAINS);
            return 2;
        }
    if (nchains > 1 || chains[0] > 1)
        for (int i = 0; i < nloads; i++)
            if (loads[i]) {
                fprintf(stderr, "--chains above 1 runs without --load\n");
                return 2;
            }
    int ncpu = online_cpus();
    size_t maxload = 0;
    for (int i = 0; i < nloads; i++)
        maxload = loads[i] > maxload ? loads[i] : maxload;
    if (maxload >= (size_t)ncpu)
        printf("# warning: %zu load threads on %d CPUs: they will share the chase's CPU\n",
               maxload, ncpu);

    pin_self(cpu, "chase thread");
    struct region r;
    region_alloc(&r, bytes, mode);
    region_report(&r, "chase region");

    /* Load buffers are allocated (and touched) once, before any timing. 4 KiB pages: they
     * only generate traffic; their own translation is not what is measured. */
    struct loader *ld = calloc(maxload ? maxload : 1, sizeof *ld);
    for (size_t k = 0; k < maxload; k++) {
        region_alloc(&ld[k].buf, load_size, PAGES_4K);
        ld[k].cpu = (int)((size_t)cpu + 1 + k) % ncpu;
    }

    for (int si = 0; si < nslots; si++) {
        uint64_t n;
        double tb = now_seconds();
        /* The cycle covers the size asked for, not the 2 MiB-rounded allocation: a 16 KiB
         * region measures the L1. */
        n = build_cycle(r.base, bytes, slots[si], seed);
        double build_s = now_seconds() - tb;
        printf("# cycle of %llu nodes (slot %zu B) built in %.2f s\n", (unsigned long long)n,
               slots[si], build_s);
        /* Start at node 0 (it is on the single cycle, as every node is). */
        char *start = node_addr(r.base, slots[si], 0, seed);

        for (int ci = 0; ci < nchains; ci++) {
            int k = (int)chains[ci];
            if (k == 1)
                continue;
            /* Chase j starts at cycle position j*n/k: the chases never meet. */
            struct bijection pb;
            bijection_init(&pb, n, seed);
            char *ps[MAX_CHAINS];
            for (int j = 0; j < k; j++)
                ps[j] = node_addr(r.base, slots[si], bijection_apply(&pb, (uint64_t)j * (n / (uint64_t)k)), seed);
            uint64_t warm = n < ((uint64_t)1 << 21) ? n : ((uint64_t)1 << 21);
            chase_k(ps, k, warm / (uint64_t)k + 1);
            struct chains_run run = {ps, k, ((uint64_t)1 << 20) / (uint64_t)k};
            struct snap d;
            uint64_t steps = timed_calls(chains_step, &run, seconds, cpu, &d) * run.rounds * (uint64_t)k;
            double ns = d.wall * 1e9 / (double)steps;
            double ns_cpu = d.thread_cpu * 1e9 / (double)steps;
            printf("{\"bench\": \"chase\", \"region_bytes\": %zu, \"mapped_bytes\": %zu, \"pages\": \"%s\", "
                   "\"huge_share\": %.4f, \"anon_huge_kb\": %zu, \"slot_bytes\": %zu, \"chains\": %d, "
                   "\"nodes\": %llu, \"steps\": %llu, \"ns_per_access\": %.2f, \"ns_per_access_cpu\": %.2f, "
                   "\"load_threads\": 0, \"cpu\": %d, \"touch_seconds\": %.2f, \"build_seconds\": %.2f, "
                   "\"seed\": %llu, ",
                   bytes, r.bytes, pages_name(mode), region_huge_share(&r), r.anon_huge_kb, slots[si], k,
                   (unsigned long long)n, (unsigned long long)steps, ns, ns_cpu, cpu, r.touch_seconds,
                   build_s, (unsigned long long)seed);
            json_host_fields(stdout);
            json_snap_fields(stdout, &d);
            printf(", \"end\": \"%p\"}\n", (void *)ps[0]);
            printf("# chase %zu KiB, %s pages (%.1f %% huge), slot %zu B, %d chains: %.2f ns per access "
                   "(%.2f by thread CPU time; steal %.2f s, %ld switches)\n",
                   bytes >> 10, pages_name(mode), 100 * region_huge_share(&r), slots[si], k, ns, ns_cpu,
                   d.steal, d.nivcsw);
            fflush(stdout);
        }
        int chains_one = 0;
        for (int ci = 0; ci < nchains; ci++)
            chains_one |= chains[ci] == 1;
        for (int li = 0; chains_one && li < nloads; li++) {
            size_t nl = loads[li];
            atomic_int stop = 0, started = 0;
            for (size_t k = 0; k < nl; k++) {
                ld[k].stop = &stop;
                ld[k].started = &started;
                pthread_create(&ld[k].thread, NULL, loader_main, &ld[k]);
            }
            while ((size_t)atomic_load(&started) < nl)
                ;
            /* Warm-up: fills caches and TLBs to their steady state (all of a small region, or
             * a few million steps of a large one) before the clock starts. */
            uint64_t warm = n < ((uint64_t)1 << 21) ? n : ((uint64_t)1 << 21);
            char *p = chase(start, (warm + 15) & ~(uint64_t)15);
            /* Timed: batches of 2^20 steps (about a millisecond even from L1, so the clock reads
             * cost nothing) until --seconds elapse. */
            uint64_t batch = (uint64_t)1 << 20, steps = 0;
            struct snap s0, s1;
            snap_take(&s0, cpu);
            do {
                p = chase(p, batch);
                steps += batch;
            } while (now_seconds() - s0.wall < seconds);
            snap_take(&s1, cpu);
            struct snap d = snap_diff(&s0, &s1);
            atomic_store(&stop, 1);
            double load_bytes = 0, load_s = 0;
            for (size_t k = 0; k < nl; k++) {
                pthread_join(ld[k].thread, NULL);
                load_bytes += (double)ld[k].bytes;
                load_s = ld[k].seconds > load_s ? ld[k].seconds : load_s;
            }
            double ns = d.wall * 1e9 / (double)steps;
            double ns_cpu = d.thread_cpu * 1e9 / (double)steps;
            double load_gbs = load_s > 0 ? load_bytes / load_s / 1e9 : 0;
            printf("{\"bench\": \"chase\", \"region_bytes\": %zu, \"mapped_bytes\": %zu, \"pages\": \"%s\", "
                   "\"huge_share\": %.4f, \"anon_huge_kb\": %zu, \"slot_bytes\": %zu, "
                   "\"nodes\": %llu, \"steps\": %llu, \"ns_per_access\": %.2f, \"ns_per_access_cpu\": %.2f, "
                   "\"load_threads\": %zu, \"load_gbs\": %.2f, \"load_buffer_bytes\": %zu, "
                   "\"cpu\": %d, \"touch_seconds\": %.2f, \"build_seconds\": %.2f, \"seed\": %llu, ",
                   bytes, r.bytes, pages_name(mode), region_huge_share(&r), r.anon_huge_kb, slots[si],
                   (unsigned long long)n, (unsigned long long)steps, ns, ns_cpu, nl, load_gbs,
                   nl ? ld[0].buf.bytes : 0, cpu, r.touch_seconds, build_s,
                   (unsigned long long)seed);
            json_host_fields(stdout);
            json_snap_fields(stdout, &d);
            printf(", \"end\": \"%p\"}\n", (void *)p); /* p keeps the chase observable */
            printf("# chase %zu KiB, %s pages (%.1f %% huge), slot %zu B, %zu load thread(s): "
                   "%.2f ns per access (%.2f by thread CPU time; steal %.2f s, %ld switches)%s",
                   bytes >> 10, pages_name(mode), 100 * region_huge_share(&r), slots[si], nl, ns,
                   ns_cpu, d.steal, d.nivcsw, nl ? "" : "\n");
            if (nl)
                printf("; load streamed %.2f GB/s\n", load_gbs);
            fflush(stdout);
        }
    }
    for (size_t k = 0; k < maxload; k++)
        region_free(&ld[k].buf);
    free(ld);
    region_free(&r);
    return 0;
}
