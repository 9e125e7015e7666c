/* HPCC RandomAccess (GUPS): random read-modify-write updates of a table of 2^logn u64.
 * usage: gups LOGN UPDATES    (HPCC's rule: UPDATES = 4 * 2^LOGN)
 * The update stream is HPCC's polynomial shift register (POLY 7), as in the script this
 * replaces (scripts/record-corpus.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int logn = argc > 1 ? atoi(argv[1]) : 22;
    long updates = argc > 2 ? atol(argv[2]) : 4L << logn;
    uint64_t n = 1ULL << logn, *t = malloc(n * sizeof *t), x = 1;
    if (!t) { perror("malloc"); return 1; }
    for (uint64_t i = 0; i < n; i++) t[i] = i;
    for (long i = 0; i < updates; i++) {
        x = (x << 1) ^ ((int64_t)x < 0 ? 7 : 0);
        t[x & (n - 1)] ^= x;
    }
    printf("%llu\n", (unsigned long long)t[1]);
    return 0;
}
