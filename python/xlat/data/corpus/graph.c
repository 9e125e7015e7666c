/* Graph kernels over CSR, as GAP / GraphBIG run them: read an edge list, build a symmetric
 * CSR (degree count, prefix sum, scatter), then run one kernel.
 *   graph bfs EDGES [SOURCES]    top-down BFS (parent array, queue) from SOURCES roots
 *   graph pr  EDGES [ITERS]      pull PageRank (GAP pr: contrib = score / degree, f32)
 *   graph cc  EDGES              Shiloach-Vishkin connected components (GAP cc_sv)
 * EDGES: u32 n, u32 pad, u64 m, then m pairs of u32 (src, dst), as `xlat corpus` writes them
 * (an RMAT graph, python/xlat/corpus.py). Roots: the first SOURCES vertices of non-zero degree
 * in a fixed stride order. Prints a checksum of the result. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { perror("malloc"); exit(1); }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: graph bfs|pr|cc EDGES [N]\n"); return 2; }
    const char *kernel = argv[1];
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    uint32_t hdr[2]; uint64_t m;
    if (fread(hdr, 4, 2, f) != 2 || fread(&m, 8, 1, f) != 1) { fprintf(stderr, "bad header\n"); return 1; }
    uint32_t n = hdr[0];
    uint32_t *el = xmalloc(m * 2 * sizeof *el);
    if (fread(el, 8, m, f) != m) { fprintf(stderr, "short edge list\n"); return 1; }
    fclose(f);
    /* symmetric CSR */
    uint64_t *off = xmalloc((n + 1) * sizeof *off);
    memset(off, 0, (n + 1) * sizeof *off);
    for (uint64_t e = 0; e < m; e++) { off[el[2 * e] + 1]++; off[el[2 * e + 1] + 1]++; }
    for (uint32_t v = 0; v < n; v++) off[v + 1] += off[v];
    uint32_t *nbr = xmalloc(2 * m * sizeof *nbr);
    uint64_t *pos = xmalloc(n * sizeof *pos);
    memcpy(pos, off, n * sizeof *pos);
    for (uint64_t e = 0; e < m; e++) {
        uint32_t s = el[2 * e], d = el[2 * e + 1];
        nbr[pos[s]++] = d;
        nbr[pos[d]++] = s;
    }
    free(pos);
    free(el);
    double check = 0;
    if (!strcmp(kernel, "bfs")) {
        int sources = argc > 3 ? atoi(argv[3]) : 4;
        int32_t *parent = xmalloc(n * sizeof *parent);
        uint32_t *queue = xmalloc(n * sizeof *queue);
        uint32_t cand = 0;
        for (int s = 0; s < sources; s++) {
            uint32_t root = 0;
            for (uint32_t tries = 0; tries < n; tries++) {
                cand = (uint32_t)((cand + 2654435761u) % n);
                if (off[cand + 1] > off[cand]) { root = cand; break; }
            }
            for (uint32_t v = 0; v < n; v++) parent[v] = -1;
            uint64_t head = 0, tail = 0;
            parent[root] = (int32_t)root;
            queue[tail++] = root;
            while (head < tail) {
                uint32_t u = queue[head++];
                for (uint64_t i = off[u]; i < off[u + 1]; i++) {
                    uint32_t w = nbr[i];
                    if (parent[w] < 0) { parent[w] = (int32_t)u; queue[tail++] = w; }
                }
            }
            check += (double)tail;
        }
    } else if (!strcmp(kernel, "pr")) {
        int iters = argc > 3 ? atoi(argv[3]) : 10;
        float *score = xmalloc(n * sizeof *score), *contrib = xmalloc(n * sizeof *contrib);
        const float damp = 0.85f, base = (1.0f - damp) / n;
        for (uint32_t v = 0; v < n; v++) score[v] = 1.0f / n;
        for (int it = 0; it < iters; it++) {
            for (uint32_t v = 0; v < n; v++) {
                uint64_t deg = off[v + 1] - off[v];
                contrib[v] = deg ? score[v] / deg : 0.0f;
            }
            for (uint32_t v = 0; v < n; v++) {
                float sum = 0;
                for (uint64_t i = off[v]; i < off[v + 1]; i++) sum += contrib[nbr[i]];
                score[v] = base + damp * sum;
            }
        }
        for (uint32_t v = 0; v < n; v++) check += score[v];
    } else if (!strcmp(kernel, "cc")) {
        uint32_t *comp = xmalloc(n * sizeof *comp);
        for (uint32_t v = 0; v < n; v++) comp[v] = v;
        int change = 1;
        while (change) {
            change = 0;
            for (uint32_t u = 0; u < n; u++)
                for (uint64_t i = off[u]; i < off[u + 1]; i++) {
                    uint32_t v = nbr[i], cu = comp[u], cv = comp[v];
                    if (cu == cv) continue;
                    uint32_t hi = cu > cv ? cu : cv, lo = cu + cv - hi;
                    if (hi == comp[hi]) { change = 1; comp[hi] = lo; }
                }
            for (uint32_t v = 0; v < n; v++)
                while (comp[v] != comp[comp[v]]) comp[v] = comp[comp[v]];
        }
        for (uint32_t v = 0; v < n; v++) check += comp[v] == v;
    } else {
        fprintf(stderr, "unknown kernel %s\n", kernel);
        return 2;
    }
    printf("%s n=%u m=%llu check=%.6g\n", kernel, n, (unsigned long long)m, check);
    return 0;
}
