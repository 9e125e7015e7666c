/* hostbench: shared helpers (see common.h). */
#define _GNU_SOURCE
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

double now_seconds(void)
{
    /* CLOCK_MONOTONIC: immune to wall-clock steps; in this KVM guest it reads kvm-clock. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int pin_self(int cpu, const char *who)
{
    /* sched_setaffinity(0, ...) applies to the calling thread only (Linux), which is what a
     * per-thread pin needs: the scheduler must not move the chase onto the load thread's CPU. */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "# warning: %s: could not pin to CPU %d: %s\n", who, cpu, strerror(errno));
        return -1;
    }
    printf("# %s pinned to CPU %d (sched_setaffinity)\n", who, cpu);
    fflush(stdout);
    return 0;
}

size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || v < 0) {
        fprintf(stderr, "bad size '%s'\n", s);
        exit(2);
    }
    double mult = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mult = 1024.0; end++; break;
    case 'm': mult = 1024.0 * 1024; end++; break;
    case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    case '\0': break;
    default:
        fprintf(stderr, "bad size '%s' (use e.g. 64M, 1G, 4096)\n", s);
        exit(2);
    }
    /* Accept the spellings "64MiB", "64MB", "64M": sizes are binary either way. */
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0') {
        fprintf(stderr, "bad size '%s'\n", s);
        exit(2);
    }
    return (size_t)(v * mult);
}

enum page_mode parse_pages(const char *s)
{
    if (strcmp(s, "4k") == 0 || strcmp(s, "4K") == 0)
        return PAGES_4K;
    if (strcmp(s, "2m") == 0 || strcmp(s, "2M") == 0)
        return PAGES_2M;
    if (strcmp(s, "default") == 0)
        return PAGES_DEFAULT;
    fprintf(stderr, "bad --pages '%s' (4k, 2m or default)\n", s);
    exit(2);
}

const char *pages_name(enum page_mode m)
{
    switch (m) {
    case PAGES_4K: return "4k";
    case PAGES_2M: return "2m";
    default: return "default";
    }
}

void thp_setting(const char *file, char *out, size_t outlen)
{
    snprintf(out, outlen, "?");
    FILE *f = fopen(file, "r");
    if (!f)
        return;
    char buf[256];
    if (fgets(buf, sizeof buf, f)) {
        char *a = strchr(buf, '[');
        char *b = a ? strchr(a, ']') : NULL;
        if (a && b) {
            *b = '\0';
            snprintf(out, outlen, "%s", a + 1);
        }
    }
    fclose(f);
}

double loadavg1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static double steal_seconds(int cpu)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    char want[16], line[512];
    if (cpu < 0)
        snprintf(want, sizeof want, "cpu ");
    else
        snprintf(want, sizeof want, "cpu%d ", cpu);
    double s = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, want, strlen(want)) != 0)
            continue;
        /* cpuN user nice system idle iowait irq softirq steal ... (USER_HZ ticks) */
        unsigned long long v[8];
        if (sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
            s = (double)v[7] / (double)sysconf(_SC_CLK_TCK);
        break;
    }
    fclose(f);
    return s;
}

void snap_take(struct snap *s, int cpu)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    s->thread_cpu = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    struct rusage ru;
    s->nivcsw = getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
    s->steal = steal_seconds(cpu);
    s->wall = now_seconds();
}

struct snap snap_diff(const struct snap *a, const struct snap *b)
{
    struct snap d = {b->wall - a->wall, b->thread_cpu - a->thread_cpu, b->steal - a->steal,
                     b->nivcsw - a->nivcsw};
    return d;
}

void json_snap_fields(FILE *f, const struct snap *d)
{
    fprintf(f, ", \"wall_seconds\": %.3f, \"thread_cpu_seconds\": %.3f, \"steal_seconds\": %.2f, "
               "\"nivcsw\": %ld",
            d->wall, d->thread_cpu, d->steal, d->nivcsw);
}

/* The first CPU's `cpu family`, `model` and `stepping` from /proc/cpuinfo (-1 where absent). */
static void cpu_ident(int *family, int *model, int *stepping)
{
    *family = *model = *stepping = -1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) && *stepping < 0) {
        int v;
        if (sscanf(line, "cpu family : %d", &v) == 1 && *family < 0)
            *family = v;
        else if (sscanf(line, "model : %d", &v) == 1 && *model < 0)
            *model = v;
        else if (sscanf(line, "stepping : %d", &v) == 1)
            *stepping = v;
    }
    fclose(f);
}

void json_host_fields(FILE *f)
{
    char en[32], df[32];
    int family, model, stepping;
    thp_setting("/sys/kernel/mm/transparent_hugepage/enabled", en, sizeof en);
    thp_setting("/sys/kernel/mm/transparent_hugepage/defrag", df, sizeof df);
    cpu_ident(&family, &model, &stepping);
    /* The CPU in every line: a guest can run on another host's CPU from one boot to the next
     * (the model name is hidden; family / model / stepping are not). */
    fprintf(f, "\"loadavg1\": %.2f, \"thp_enabled\": \"%s\", \"thp_defrag\": \"%s\", "
               "\"online_cpus\": %d, \"cpu_family\": %d, \"cpu_model\": %d, \"cpu_stepping\": %d",
            loadavg1(), en, df, online_cpus(), family, model, stepping);
}

void region_alloc(struct region *r, size_t bytes, enum page_mode mode)
{
    memset(r, 0, sizeof *r);
    /* Round up to whole 2 MiB so a huge-page region has no 4 KiB tail. */
    bytes = (bytes + PAGE_2M - 1) & ~(PAGE_2M - 1);
    /* Over-allocate by 2 MiB and trim both ends so the region starts on a 2 MiB boundary (a THP
     * needs a 2 MiB-aligned virtual range) and is a VMA of its own: smaps then reports exactly
     * this region. MAP_NORESERVE: the pages are faulted in by the touch below. */
    size_t span = bytes + PAGE_2M;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (raw == MAP_FAILED) {
        fprintf(stderr, "mmap of %zu bytes failed: %s\n", span, strerror(errno));
        exit(1);
    }
    char *base = (char *)(((uintptr_t)raw + PAGE_2M - 1) & ~(uintptr_t)(PAGE_2M - 1));
    if (base > raw)
        munmap(raw, (size_t)(base - raw));
    char *end = base + bytes;
    if (raw + span > end)
        munmap(end, (size_t)(raw + span - end));
    r->base = base;
    r->bytes = bytes;
    r->mode = mode;
    /* The advice must precede the first touch: THP is decided at fault time (and later by
     * khugepaged, which we do not wait for). */
    int adv = mode == PAGES_2M ? MADV_HUGEPAGE : mode == PAGES_4K ? MADV_NOHUGEPAGE : -1;
    if (adv >= 0 && madvise(base, bytes, adv) != 0)
        fprintf(stderr, "# warning: madvise(%s) failed: %s\n", pages_name(mode), strerror(errno));
    /* Touch: one write per 4 KiB page. A write (not a read, which would map the shared zero
     * page) makes the kernel allocate the page, a huge one where it can. */
    double t0 = now_seconds();
    for (size_t off = 0; off < bytes; off += PAGE_4K)
        ((volatile char *)base)[off] = 1;
    r->touch_seconds = now_seconds() - t0;
    region_smaps(r);
}

void region_free(struct region *r)
{
    if (r->base)
        munmap(r->base, r->bytes);
    r->base = NULL;
}

void region_smaps(struct region *r)
{
    r->rss_kb = r->anon_huge_kb = 0;
    r->vmflag_hg = r->vmflag_nh = r->smaps_ok = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return;
    uintptr_t lo = (uintptr_t)r->base, hi = lo + r->bytes;
    char line[512];
    int inside = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char c;
        /* A VMA header is "start-end perms ..."; field lines ("AnonHugePages:") also start with
         * hex letters, hence the check for both numbers and the following blank. */
        if (sscanf(line, "%lx-%lx%c", &a, &b, &c) == 3 && c == ' ') {
            inside = a < hi && b > lo;
            if (inside)
                r->smaps_ok = 1;
            continue;
        }
        if (!inside)
            continue;
        size_t kb;
        if (sscanf(line, "Rss: %zu kB", &kb) == 1)
            r->rss_kb += kb;
        else if (sscanf(line, "AnonHugePages: %zu kB", &kb) == 1)
            r->anon_huge_kb += kb;
        else if (strncmp(line, "VmFlags:", 8) == 0) {
            if (strstr(line, " hg"))
                r->vmflag_hg = 1;
            if (strstr(line, " nh"))
                r->vmflag_nh = 1;
        }
    }
    fclose(f);
}

double region_huge_share(const struct region *r)
{
    return r->bytes ? (double)r->anon_huge_kb * 1024.0 / (double)r->bytes : 0.0;
}

void region_report(const struct region *r, const char *name)
{
    printf("# %s: %zu MiB at %p, asked %s pages (VmFlags hg=%d nh=%d), touched in %.2f s; "
           "smaps: Rss %zu MiB, AnonHugePages %zu MiB = %.1f %% of the region in 2 MiB pages\n",
           name, r->bytes >> 20, (void *)r->base, pages_name(r->mode), r->vmflag_hg, r->vmflag_nh,
           r->touch_seconds, r->rss_kb >> 10, r->anon_huge_kb >> 10,
           100.0 * region_huge_share(r));
    if (!r->smaps_ok)
        printf("# warning: %s: /proc/self/smaps did not show the region\n", name);
    if (r->mode == PAGES_2M && region_huge_share(r) < 0.9)
        printf("# warning: %s: only %.1f %% of the region got 2 MiB pages (THP enabled/defrag "
               "settings, or fragmented free memory)\n",
               name, 100.0 * region_huge_share(r));
    if (r->mode == PAGES_4K && r->anon_huge_kb > 0)
        printf("# warning: %s: MADV_NOHUGEPAGE region holds %zu MiB of huge pages\n", name,
               r->anon_huge_kb >> 10);
    fflush(stdout);
}

uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void bijection_init(struct bijection *b, uint64_t n, uint64_t seed)
{
    unsigned bits = 1;
    while (bits < 64 && ((uint64_t)1 << bits) < n)
        bits++;
    b->n = n;
    b->mask = bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    /* Shift by about half the width: each xor-shift folds the high half (which the multiply
     * mixed well) into the low half (which it did not). */
    b->shift = bits / 2 > 0 ? bits / 2 : 1;
    uint64_t s = seed;
    for (int i = 0; i < 3; i++) {
        b->key[i] = splitmix64(&s);
        b->mul[i] = splitmix64(&s) | 1; /* odd: a bijection modulo 2^bits */
    }
}

static uint64_t bijection_round(const struct bijection *b, uint64_t x)
{
    for (int i = 0; i < 3; i++) {
        x = (x + b->key[i]) & b->mask;
        x = (x * b->mul[i]) & b->mask;
        x ^= x >> b->shift;
    }
    return x;
}

uint64_t bijection_apply(const struct bijection *b, uint64_t x)
{
    /* Cycle-walking: the rounds permute [0, 2^bits); re-applying them until the value falls in
     * [0, n) permutes [0, n). At most ~2 applications on average since 2^bits < 2n. */
    do
        x = bijection_round(b, x);
    while (x >= b->n);
    return x;
}

char *node_addr(char *base, size_t slot, uint64_t i, uint64_t seed)
{
    /* The node's line within its slot: a hash of (seed, i), so it is fixed per node. */
    size_t lines = slot / LINE_BYTES;
    uint64_t s = seed ^ (i * 0x9E3779B97F4A7C15ull);
    size_t line = lines > 1 ? (size_t)(splitmix64(&s) % lines) : 0;
    return base + i * slot + line * LINE_BYTES;
}

uint64_t build_cycle(char *base, size_t bytes, size_t slot, uint64_t seed)
{
    uint64_t n = bytes / slot;
    struct bijection p;
    bijection_init(&p, n, seed);
    /* node P(i) -> node P(i+1): the stores are independent, so the CPU overlaps their misses.
     * No permutation array: P is recomputed, which costs far less than a miss. */
    uint64_t first = bijection_apply(&p, 0), cur = first;
    for (uint64_t i = 1; i < n; i++) {
        uint64_t next = bijection_apply(&p, i);
        *(char **)node_addr(base, slot, cur, seed) = node_addr(base, slot, next, seed);
        cur = next;
    }
    *(char **)node_addr(base, slot, cur, seed) = node_addr(base, slot, first, seed);
    return n;
}

uint64_t timed_calls(void (*step)(void *ctx), void *ctx, double seconds, int cpu, struct snap *d)
{
    struct snap s0, s1;
    uint64_t calls = 0;
    snap_take(&s0, cpu);
    do {
        step(ctx);
        calls++;
    } while (now_seconds() - s0.wall < seconds);
    snap_take(&s1, cpu);
    *d = snap_diff(&s0, &s1);
    return calls;
}

int run_opt(struct run_opts *o, int c, const char *arg)
{
    switch (c) {
    case 's': o->bytes = parse_size(arg); return 1;
    case 'p': o->mode = parse_pages(arg); return 1;
    case 't': o->seconds = atof(arg); return 1;
    case 'r': o->seed = strtoull(arg, NULL, 0); return 1;
    case 'c': o->cpu = atoi(arg); return 1;
    default: return 0;
    }
}
