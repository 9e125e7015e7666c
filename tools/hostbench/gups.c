/* gups: random read-modify-write updates of 8-byte words (HPCC RandomAccess-like).
 *
 * Each update is table[idx] ^= r with idx drawn from r, an xorshift64 sequence. The index
 * depends only on the generator (a few ALU operations), never on a load, so updates are
 * independent: the out-of-order core overlaps as many of their misses (data and TLB) as it can.
 * How many are in flight is up to the CPU (load/store queues, miss buffers, page walkers), so
 * ns per update is a throughput figure, not a latency; compare chase for latency.
 *
 * --op load reads the same random words instead (sum += table[idx]: no store, no dirty line to
 * write back): the same loads and translations without the stores, to tell which of the two
 * bounds the update rate. --op gather reads random words whose indices were computed before
 * the clock started (a 32 MiB array read in order): 3 instructions per load instead of 13, so
 * the reorder buffer holds about four times as many loads; if it bounds the rate, gather is
 * faster by about that much. --slot 4096 (gather only) puts every index at one line of its 4 KiB
 * page (a line fixed per page, as chase --slot 4096 places its nodes): over a region past the
 * TLB's reach whose lines fit the caches, the rate is that of TLB misses alone, and the chase
 * of the same region and slot gives one miss's latency; their ratio is how many walks overlap.
 *
 * Output: one JSON line per measurement (prefix "{"), '#' lines for people.
 */
#define _GNU_SOURCE
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr, "usage: gups --size BYTES [--pages 4k|2m|default] [--op update|load|gather] "
                    "[--slot 8|4096] "
                    "[--seconds S] [--seed N] [--cpu N]\n");
    exit(2);
}

/* `count` updates (a multiple of 4); returns the generator state to continue from.
 * The multiply-high maps r onto [0, words) without a modulo and for any table size. */
__attribute__((noinline)) static uint64_t updates(uint64_t *table, uint64_t words, uint64_t r,
                                                  uint64_t count)
{
    for (uint64_t i = 0; i < count; i += 4) {
#define STEP                                                                                   \
    r ^= r << 13;                                                                              \
    r ^= r >> 7;                                                                               \
    r ^= r << 17;                                                                              \
    table[(uint64_t)(((unsigned __int128)r * words) >> 64)] ^= r;
        STEP STEP STEP STEP
#undef STEP
    }
    return r;
}

/* `count` random loads of the words `updates` would update (sum returned through *sum). */
__attribute__((noinline)) static uint64_t loads(const uint64_t *table, uint64_t words, uint64_t r,
                                                uint64_t count, uint64_t *sum)
{
    uint64_t s0 = 0, s1 = 0;
    for (uint64_t i = 0; i < count; i += 4) {
#define STEP(acc)                                                                              \
    r ^= r << 13;                                                                              \
    r ^= r >> 7;                                                                               \
    r ^= r << 17;                                                                              \
    acc += table[(uint64_t)(((unsigned __int128)r * words) >> 64)];
        STEP(s0) STEP(s1) STEP(s0) STEP(s1)
#undef STEP
    }
    *sum += s0 + s1;
    return r;
}

/* Indices for --op gather: 2^22 of them (32 MiB, read in order, so the prefetchers stream it). */
#define GATHER_INDICES ((uint64_t)1 << 22)

/* `count` loads of table[idx[i]] (i cycling through the precomputed indices from *pos). */
__attribute__((noinline)) static void gather(const uint64_t *table, const uint64_t *idx,
                                             uint64_t *pos, uint64_t count, uint64_t *sum)
{
    uint64_t s0 = 0, s1 = 0, p = *pos;
    for (uint64_t i = 0; i < count; i += 2) {
        s0 += table[idx[p]];
        s1 += table[idx[p + 1]];
        p = (p + 2) & (GATHER_INDICES - 1);
    }
    *pos = p;
    *sum += s0 + s1;
}

int main(int argc, char **argv)
{
    struct run_opts o = {0, PAGES_4K, 2.0, 1, 0};
    int load_only = 0, gather_op = 0;
    size_t slot = 8;
    static const struct option opts[] = {
        {"op", required_argument, 0, 'o'}, {"slot", required_argument, 0, 'l'}, RUN_LONG_OPTIONS,
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (run_opt(&o, c, optarg))
            continue;
        if (c == 'l') {
            slot = parse_size(optarg);
            continue;
        }
        if (c != 'o')
            usage();
        if (strcmp(optarg, "load") == 0)
            load_only = 1;
        else if (strcmp(optarg, "gather") == 0)
            gather_op = 1;
        else if (strcmp(optarg, "update") != 0)
            usage();
    }
    if (o.bytes == 0 || (slot != 8 && slot != 4096) || (slot == 4096 && !gather_op))
        usage();
    pin_self(o.cpu, "gups thread");
    struct region reg;
    region_alloc(&reg, o.bytes, o.mode);
    region_report(&reg, "gups table");
    uint64_t *table = (uint64_t *)reg.base;
    uint64_t words = reg.bytes / 8;

    uint64_t s = o.seed, r = splitmix64(&s) | 1; /* xorshift64 state must be non-zero */
    /* Warm-up: 2^20 updates bring TLBs, caches and the page-walk caches to steady state. */
    uint64_t sum = 0, pos = 0, *idx = NULL;
    if (gather_op) {
        idx = malloc(GATHER_INDICES * sizeof *idx);
        if (!idx) {
            fprintf(stderr, "gups: no memory for the gather indices\n");
            return 1;
        }
        for (uint64_t i = 0; i < GATHER_INDICES; i++) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            idx[i] = (uint64_t)(((unsigned __int128)r * words) >> 64);
            if (slot == 4096) {
                /* One line per page: the page's line fixed by the page (a hash of its number). */
                uint64_t page = idx[i] / 512, h = page * 0x9E3779B97F4A7C15ull;
                idx[i] = page * 512 + (h >> 58) * 8;
            }
        }
    }
#define GUPS_BATCH(count)                                                                      \
    do {                                                                                       \
        if (gather_op)                                                                         \
            gather(table, idx, &pos, (count), &sum);                                           \
        else if (load_only)                                                                    \
            r = loads(table, words, r, (count), &sum);                                         \
        else                                                                                   \
            r = updates(table, words, r, (count));                                             \
    } while (0)
    GUPS_BATCH((uint64_t)1 << 20);
    uint64_t batch = (uint64_t)1 << 20, n = 0;
    struct snap s0, s1;
    snap_take(&s0, o.cpu);
    do {
        GUPS_BATCH(batch);
        n += batch;
    } while (now_seconds() - s0.wall < o.seconds);
#undef GUPS_BATCH
    free(idx);
    snap_take(&s1, o.cpu);
    struct snap d = snap_diff(&s0, &s1);
    double ns = d.wall * 1e9 / (double)n;
    double ns_cpu = d.thread_cpu * 1e9 / (double)n;
    /* A checksum over a sample of the table keeps the updates observable. */
    uint64_t check = 0;
    for (uint64_t i = 0; i < words; i += 4096)
        check ^= table[i];
    check ^= sum;

    const char *op = gather_op ? "gather" : load_only ? "load" : "update";
    printf("{\"bench\": \"gups\", \"op\": \"%s\", \"slot_bytes\": %zu, \"table_bytes\": %zu, "
           "\"pages\": \"%s\", \"huge_share\": %.4f, \"anon_huge_kb\": %zu, \"updates\": %llu, "
           "\"ns_per_update\": %.3f, \"ns_per_update_cpu\": %.3f, \"mups\": %.2f, \"cpu\": %d, "
           "\"touch_seconds\": %.2f, \"seed\": %llu, \"check\": %llu, ",
           op, slot, reg.bytes, pages_name(o.mode), region_huge_share(&reg), reg.anon_huge_kb,
           (unsigned long long)n, ns, ns_cpu, 1e3 / ns, o.cpu, reg.touch_seconds,
           (unsigned long long)o.seed, (unsigned long long)check);
    json_host_fields(stdout);
    json_snap_fields(stdout, &d);
    printf("}\n");
    printf("# gups %s %zu MiB, %s pages (%.1f %% huge): %.2f ns per update, %.1f M updates/s "
           "(%.2f ns by thread CPU time; steal %.2f s, %ld switches)\n",
           gather_op ? "(gather)" : load_only ? "(loads only)" : "", reg.bytes >> 20,
           pages_name(o.mode), 100 * region_huge_share(&reg), ns, 1e3 / ns, ns_cpu, d.steal,
           d.nivcsw);
    region_free(&reg);
    return 0;
}
