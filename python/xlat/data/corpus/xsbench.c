/* An XSBench-like kernel (Tramm et al., PHYSOR 2014; XSBench's event-based history loop with
 * the unionized energy grid): macroscopic cross-section lookups.
 *   xsbench NUCLIDES GRIDPOINTS LOOKUPS SEED
 * Data as XSBench's: per nuclide a sorted grid of GRIDPOINTS points (energy + 5 cross sections,
 * 48 B); the unionized grid of all NUCLIDES * GRIDPOINTS energies (sorted with qsort) and its
 * index grid (for each union energy, each nuclide's grid index: NUCLIDES^2 * GRIDPOINTS i32).
 * 12 materials with XSBench's nuclide counts (fuel: 34 of the "small" problem's 68 nuclides,
 * 321 of the "large" 355) and probabilities. A lookup: a random energy and material, a binary
 * search of the unionized grid, then per nuclide of the material the index-grid load and the
 * two bracketing grid points (interpolation). Random numbers: a 64-bit LCG from SEED. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { double energy, total, elastic, absorbtion, fission, nu_fission; } point_t;
typedef struct { double energy; int32_t nuclide; } uenergy_t;

static uint64_t rng;
static double rnd(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}
static int cmp_point(const void *a, const void *b) {
    double x = ((const point_t *)a)->energy, y = ((const point_t *)b)->energy;
    return (x > y) - (x < y);
}
static int cmp_u(const void *a, const void *b) {
    double x = ((const uenergy_t *)a)->energy, y = ((const uenergy_t *)b)->energy;
    return (x > y) - (x < y);
}
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { perror("malloc"); exit(1); }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: xsbench NUCLIDES GRIDPOINTS LOOKUPS SEED\n"); return 2; }
    long nn = atol(argv[1]), ng = atol(argv[2]), lookups = atol(argv[3]);
    rng = strtoull(argv[4], 0, 10) * 2 + 1;
    if (nn < 12) nn = 12;
    point_t *grid = xmalloc((size_t)nn * ng * sizeof *grid);
    for (long i = 0; i < nn; i++) {
        point_t *g = grid + i * ng;
        for (long j = 0; j < ng; j++) {
            g[j].energy = rnd(); g[j].total = rnd(); g[j].elastic = rnd();
            g[j].absorbtion = rnd(); g[j].fission = rnd(); g[j].nu_fission = rnd();
        }
        qsort(g, ng, sizeof *g, cmp_point);
    }
    long nu = nn * ng;
    uenergy_t *ue = xmalloc(nu * sizeof *ue);
    for (long i = 0; i < nn; i++)
        for (long j = 0; j < ng; j++) { ue[i * ng + j].energy = grid[i * ng + j].energy; ue[i * ng + j].nuclide = (int32_t)i; }
    qsort(ue, nu, sizeof *ue, cmp_u);
    int32_t *index = xmalloc((size_t)nu * nn * sizeof *index);
    int32_t *idx = xmalloc(nn * sizeof *idx);
    for (long i = 0; i < nn; i++) idx[i] = 0;
    for (long e = 0; e < nu; e++) {
        double en = ue[e].energy;
        for (long i = 0; i < nn; i++) {
            while (idx[i] < ng - 1 && grid[i * ng + idx[i] + 1].energy <= en) idx[i]++;
            index[e * nn + i] = idx[i];
        }
    }
    /* materials: XSBench's counts (scaled to NUCLIDES for the fuel) and probabilities */
    static const int counts[12] = {34, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9};
    static const double dist[12] = {0.140, 0.052, 0.275, 0.134, 0.154, 0.064,
                                    0.066, 0.055, 0.008, 0.015, 0.025, 0.013};
    int nmat[12];
    int32_t *mats[12];
    for (int m = 0; m < 12; m++) {
        nmat[m] = m == 0 ? (int)(nn * (nn >= 355 ? 321.0 / 355 : 0.5)) : counts[m];
        if (nmat[m] > nn) nmat[m] = (int)nn;
        mats[m] = xmalloc(nmat[m] * sizeof(int32_t));
        for (int k = 0; k < nmat[m]; k++) mats[m][k] = (int32_t)(rnd() * nn);
    }
    double check = 0;
    for (long l = 0; l < lookups; l++) {
        double p = rnd(), e = rnd(), acc = 0;
        int mat = 0;
        for (int m = 0; m < 12; m++) { acc += dist[m]; if (p < acc) { mat = m; break; } }
        long lo = 0, hi = nu - 1;
        while (hi - lo > 1) {
            long mid = lo + (hi - lo) / 2;
            if (ue[mid].energy > e) hi = mid; else lo = mid;
        }
        double macro[5] = {0, 0, 0, 0, 0};
        for (int k = 0; k < nmat[mat]; k++) {
            long nuc = mats[mat][k];
            int32_t i = index[lo * nn + nuc];
            if (i >= ng - 1) i = (int32_t)ng - 2;
            const point_t *a = grid + nuc * ng + i, *b = a + 1;
            double f = (b->energy - e) / (b->energy - a->energy + 1e-300);
            macro[0] += b->total - f * (b->total - a->total);
            macro[1] += b->elastic - f * (b->elastic - a->elastic);
            macro[2] += b->absorbtion - f * (b->absorbtion - a->absorbtion);
            macro[3] += b->fission - f * (b->fission - a->fission);
            macro[4] += b->nu_fission - f * (b->nu_fission - a->nu_fission);
        }
        check += macro[0] + macro[4];
    }
    printf("xsbench nuclides=%ld gridpoints=%ld lookups=%ld check=%.6g\n", nn, ng, lookups, check);
    return 0;
}
