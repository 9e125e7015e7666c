/* DLRM's SparseLengthsSum (embedding-bag lookups with sum pooling, caffe2's
 * SparseLengthsSum / PyTorch's EmbeddingBag(mode="sum") on CPU): for each bag, the sum of the
 * rows its indices name, for each table.
 *   sls INDICES
 * INDICES: u32 tables, u32 rows per table, u32 dim (fp32 per row), u32 pooling, u32 bags, then
 * tables * bags * pooling u32 row indices (table-major), as `xlat corpus` writes them with
 * Zipf-skewed popularity (python/xlat/corpus.py). The tables are filled with deterministic
 * values first (every row written), as a model's initialization does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { perror("malloc"); exit(1); }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: sls INDICES\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    uint32_t h[5];
    if (fread(h, 4, 5, f) != 5) { fprintf(stderr, "bad header\n"); return 1; }
    uint32_t tables = h[0], rows = h[1], dim = h[2], pooling = h[3], bags = h[4];
    uint64_t nidx = (uint64_t)tables * bags * pooling;
    uint32_t *idx = xmalloc(nidx * sizeof *idx);
    if (fread(idx, 4, nidx, f) != nidx) { fprintf(stderr, "short index file\n"); return 1; }
    fclose(f);
    float **table = xmalloc(tables * sizeof *table);
    for (uint32_t t = 0; t < tables; t++) {
        table[t] = xmalloc((size_t)rows * dim * sizeof(float));
        for (uint64_t i = 0; i < (uint64_t)rows * dim; i++) table[t][i] = (float)((i * 2654435761u + t) & 1023) / 1024.0f;
    }
    float *out = xmalloc((size_t)bags * dim * sizeof *out);
    double check = 0;
    for (uint32_t t = 0; t < tables; t++) {
        const uint32_t *ix = idx + (uint64_t)t * bags * pooling;
        for (uint32_t b = 0; b < bags; b++) {
            float *o = out + (size_t)b * dim;
            for (uint32_t d = 0; d < dim; d++) o[d] = 0;
            for (uint32_t p = 0; p < pooling; p++) {
                const float *row = table[t] + (size_t)ix[(uint64_t)b * pooling + p] * dim;
                for (uint32_t d = 0; d < dim; d++) o[d] += row[d];
            }
        }
        for (uint32_t b = 0; b < bags; b++) check += out[(size_t)b * dim];
    }
    printf("sls tables=%u rows=%u bags=%u check=%.6g\n", tables, rows, bags, check);
    return 0;
}
