/* No-partitioning hash join (NPO) of Balkesen et al., ICDE 2013: build a chained bucket hash
 * table on R, probe it with S (foreign keys into R), count matches.
 *   hashjoin TUPLES SEED
 * R: TUPLES 16-byte tuples (key, payload) with the keys 1..TUPLES in a random order (a seeded
 * Fisher-Yates shuffle, as their generator's); S: TUPLES tuples whose keys are uniform over R's.
 * Buckets of 48 B (latch + count, two tuples, an overflow pointer), TUPLES/2 of them, overflow
 * buckets from one pool. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { uint64_t key, payload; } tuple_t;
typedef struct bucket { uint32_t latch, count; tuple_t tuples[2]; struct bucket *next; } bucket_t;

static uint64_t rng;
static uint64_t next64(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}
static void *xcalloc(size_t n, size_t s) {
    void *p = calloc(n ? n : 1, s);
    if (!p) { perror("calloc"); exit(1); }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: hashjoin TUPLES SEED\n"); return 2; }
    uint64_t n = strtoull(argv[1], 0, 10);
    rng = strtoull(argv[2], 0, 10) * 0x9E3779B97F4A7C15ULL + 1;
    tuple_t *r = xcalloc(n, sizeof *r), *s = xcalloc(n, sizeof *s);
    for (uint64_t i = 0; i < n; i++) { r[i].key = i + 1; r[i].payload = i; }
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = next64() % (i + 1);
        tuple_t t = r[i]; r[i] = r[j]; r[j] = t;
    }
    for (uint64_t i = 0; i < n; i++) { s[i].key = 1 + next64() % n; s[i].payload = i; }
    uint64_t nb = 1; while (nb < n / 2) nb <<= 1;
    bucket_t *table = xcalloc(nb, sizeof *table);
    bucket_t *pool = xcalloc(n / 2 + 1, sizeof *pool);
    uint64_t used = 0, mask = nb - 1;
    for (uint64_t i = 0; i < n; i++) {            /* build */
        bucket_t *b = &table[r[i].key & mask];
        if (b->count == 2) {
            bucket_t *o = &pool[used++];
            *o = *b; b->next = o; b->count = 0;
        }
        b->tuples[b->count++] = r[i];
    }
    uint64_t matches = 0, sum = 0;
    for (uint64_t i = 0; i < n; i++) {            /* probe */
        uint64_t k = s[i].key;
        for (bucket_t *b = &table[k & mask]; b; b = b->next)
            for (uint32_t j = 0; j < b->count; j++)
                if (b->tuples[j].key == k) { matches++; sum += b->tuples[j].payload; }
    }
    printf("hashjoin tuples=%llu matches=%llu sum=%llu\n", (unsigned long long)n,
           (unsigned long long)matches, (unsigned long long)sum);
    return 0;
}
