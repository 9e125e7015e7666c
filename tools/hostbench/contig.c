// contig: does physical contiguity help or hurt a stream on this machine? (docs/timing.md,
// "Known artifact: contiguous placement and streams"; issue 41.)
//
//   ./contig MIB MODE PASSES [triad]
//
// MODE 1: 2 MiB pages (MADV_HUGEPAGE), physically contiguous within each page; MODE 0: 4 KiB
// pages as the kernel hands them out (often consecutive frames); MODE 2: 4 KiB pages on
// scattered frames (a scratch region twice the size is touched and every other page of it
// freed in random order first, so the free lists hold isolated frames). It reports the share
// of consecutive virtual pages on consecutive frames (/proc/self/pagemap, needs root) and the
// best pass's bandwidth: a read sum over the buffer, or with `triad` STREAM's a = b + 3c over
// three thirds of it. Time is the thread's CPU time, so that a loaded machine's time slicing
// does not count; stalls on memory do.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void scatter_free_lists(size_t bytes) {
    size_t scratch = 2 * bytes;
    char *sc = mmap(NULL, scratch, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sc == MAP_FAILED) { perror("mmap"); exit(1); }
    madvise(sc, scratch, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < scratch; i += 4096) sc[i] = 1;
    size_t pairs = scratch >> 13;
    size_t *perm = malloc(pairs * sizeof *perm);
    for (size_t i = 0; i < pairs; i++) perm[i] = i;
    uint64_t x = 88172645463325252ULL;  // xorshift64: a fixed shuffle
    for (size_t i = pairs - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        size_t j = x % (i + 1), t = perm[i];
        perm[i] = perm[j]; perm[j] = t;
    }
    // Every other page: a freed frame's buddy stays allocated, so nothing merges back.
    for (size_t i = 0; i < pairs; i++) madvise(sc + perm[i] * 8192, 4096, MADV_DONTNEED);
    free(perm);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s MIB MODE(0|1|2) PASSES [triad]\n", argv[0]); return 2; }
    size_t bytes = (size_t)atol(argv[1]) << 20;
    int mode = atoi(argv[2]), passes = atoi(argv[3]), triad = argc > 4;
    if (mode == 2) scatter_free_lists(bytes);
    size_t align = 2u << 20;
    char *raw = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { perror("mmap"); return 1; }
    uint64_t *a = (uint64_t *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    madvise(a, bytes, mode == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    size_t n = bytes / 8;
    for (size_t i = 0; i < n; i += 512) a[i] = i;  // first touch, in order
    int fd = open("/proc/self/pagemap", O_RDONLY);
    size_t pages = bytes >> 12, contig = 0, present = 0;
    uint64_t prev = 0;
    for (size_t p = 0; fd >= 0 && p < pages; p++) {
        uint64_t e = 0;
        if (pread(fd, &e, 8, (off_t)((((uintptr_t)a >> 12) + p) * 8)) != 8) break;
        uint64_t pfn = e & ((1ULL << 55) - 1);
        if (e >> 63) { present++; if (p && pfn == prev + 1) contig++; }
        prev = pfn;
    }
    const char *name = mode == 1 ? "2MiB" : mode == 2 ? "4KiB-scattered" : "4KiB";
    double share = present ? (double)contig / present : 0.0, best = 1e9;
    if (triad) {
        size_t m = n / 3;
        double *A = (double *)a, *B = A + m, *C = B + m;
        for (size_t i = 0; i < 3 * m; i++) A[i] = 1.0;
        for (int r = 0; r < passes; r++) {
            double t = cpu_now();
            for (size_t i = 0; i < m; i++) A[i] = B[i] + 3.0 * C[i];
            t = cpu_now() - t;
            if (t < best) best = t;
        }
        printf("triad %s %zu MiB: consecutive frames %.3f, best pass %.3f s, %.2f GB/s\n", name,
               bytes >> 20, share, best, m * 24 / best / 1e9);
        return A[7] == 4.0 ? 0 : 1;
    }
    volatile uint64_t sink = 0;
    for (int r = 0; r < passes; r++) {
        double t = cpu_now();
        uint64_t s = 0;
        for (size_t i = 0; i < n; i++) s += a[i];
        sink += s;
        t = cpu_now() - t;
        if (t < best) best = t;
    }
    printf("read %s %zu MiB: consecutive frames %.3f, best pass %.3f s, %.2f GB/s\n", name,
           bytes >> 20, share, best, bytes / best / 1e9);
    return (int)(sink & 0);
}
