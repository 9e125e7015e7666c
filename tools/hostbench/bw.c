/* bw: memory bandwidth, streaming read and STREAM triad, 1..N threads.
 *
 * read:  sum of 64-bit words over one array (each thread its contiguous share); bytes = array.
 * triad: a[i] = b[i] + s * c[i] over three double arrays; bytes = 3 x array, STREAM's count
 *        (the write-allocate read of a is real traffic but not counted, as in STREAM).
 * Arrays are --size bytes each (default 2 GiB, 64 x this machine's 32 MiB L3), so every
 * repetition streams from DRAM. Each figure is the best of --reps repetitions (STREAM's
 * convention: the least-disturbed run), timed from a barrier release to the last thread's end.
 *
 * Output: one JSON line per measurement (prefix "{"), '#' lines for people.
 */
#define _GNU_SOURCE
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum kernel { K_READ, K_TRIAD };

struct shared {
    enum kernel k;
    int threads, reps;
    size_t words;            /* elements per array */
    uint64_t *arr;           /* read */
    double *a, *b, *c;       /* triad */
    pthread_barrier_t go, done;
};

struct worker {
    pthread_t thread;
    int id;
    struct shared *sh;
    volatile uint64_t sink; /* per thread: keeps the read sum observable without a data race */
};

static void run_share(struct shared *sh, int id, volatile uint64_t *sink)
{
    size_t per = sh->words / (size_t)sh->threads;
    size_t lo = per * (size_t)id, hi = id == sh->threads - 1 ? sh->words : lo + per;
    if (sh->k == K_READ) {
        /* Four accumulators: the adds are off the critical path, the loads are the limit. */
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        const uint64_t *w = sh->arr;
        size_t i = lo;
        for (; i + 4 <= hi; i += 4) {
            s0 += w[i];
            s1 += w[i + 1];
            s2 += w[i + 2];
            s3 += w[i + 3];
        }
        for (; i < hi; i++)
            s0 += w[i];
        *sink += s0 + s1 + s2 + s3;
    } else {
        const double s = 3.0;
        double *restrict a = sh->a;
        const double *restrict b = sh->b, *restrict c = sh->c;
        for (size_t i = lo; i < hi; i++)
            a[i] = b[i] + s * c[i];
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    char who[32];
    snprintf(who, sizeof who, "bw thread %d", w->id);
    pin_self(w->id % online_cpus(), who);
    for (int r = 0; r < sh->reps; r++) {
        pthread_barrier_wait(&sh->go);
        run_share(sh, w->id, &w->sink);
        pthread_barrier_wait(&sh->done);
    }
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: bw [--kernel read|triad|all] [--threads 1,2] [--size BYTES] "
                    "[--reps N] [--pages 4k|2m|default]\n");
    exit(2);
}

static void init_arrays(struct shared *sh)
{
    /* Values matter only to avoid denormals and to make the data real (not the zero page;
     * region_alloc already wrote every page). */
    if (sh->k == K_READ) {
        for (size_t i = 0; i < sh->words; i++)
            sh->arr[i] = i;
    } else {
        for (size_t i = 0; i < sh->words; i++) {
            sh->a[i] = 0.0;
            sh->b[i] = 1.0;
            sh->c[i] = 2.0;
        }
    }
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)2 << 30;
    int reps = 5;
    int tlist[8] = {1, 2}, ntl = 2;
    int do_read = 1, do_triad = 1;
    enum page_mode mode = PAGES_DEFAULT;
    static const struct option opts[] = {
        {"kernel", required_argument, 0, 'k'}, {"threads", required_argument, 0, 'T'},
        {"size", required_argument, 0, 's'},   {"reps", required_argument, 0, 'n'},
        {"pages", required_argument, 0, 'p'},  {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            do_read = strcmp(optarg, "read") == 0 || strcmp(optarg, "all") == 0;
            do_triad = strcmp(optarg, "triad") == 0 || strcmp(optarg, "all") == 0;
            if (!do_read && !do_triad)
                usage();
            break;
        case 'T': {
            ntl = 0;
            char *dup = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(dup, ",", &save); t && ntl < 8; t = strtok_r(NULL, ",", &save))
                tlist[ntl++] = atoi(t);
            free(dup);
            break;
        }
        case 's': bytes = parse_size(optarg); break;
        case 'n': reps = atoi(optarg); break;
        case 'p': mode = parse_pages(optarg); break;
        default: usage();
        }
    }
    if (reps < 1 || ntl < 1)
        usage();
    for (int i = 0; i < ntl; i++)
        if (tlist[i] < 1) {
            fprintf(stderr, "--threads must be >= 1\n");
            return 2;
        }

    for (int kk = 0; kk < 2; kk++) {
        enum kernel k = kk == 0 ? K_READ : K_TRIAD;
        if ((k == K_READ && !do_read) || (k == K_TRIAD && !do_triad))
            continue;
        struct shared sh;
        memset(&sh, 0, sizeof sh);
        sh.k = k;
        sh.reps = reps;
        struct region ra, rb, rc;
        region_alloc(&ra, bytes, mode);
        region_report(&ra, k == K_READ ? "read array" : "triad a");
        sh.words = ra.bytes / 8;
        if (k == K_READ) {
            sh.arr = (uint64_t *)ra.base;
        } else {
            region_alloc(&rb, bytes, mode);
            region_alloc(&rc, bytes, mode);
            region_report(&rb, "triad b");
            region_report(&rc, "triad c");
            sh.a = (double *)ra.base;
            sh.b = (double *)rb.base;
            sh.c = (double *)rc.base;
        }
        init_arrays(&sh);
        const char *kname = k == K_READ ? "read" : "triad";
        double bytes_per_rep = (double)sh.words * 8.0 * (k == K_READ ? 1.0 : 3.0);

        for (int ti = 0; ti < ntl; ti++) {
            int nt = tlist[ti];
            sh.threads = nt;
            pthread_barrier_init(&sh.go, NULL, (unsigned)nt + 1);
            pthread_barrier_init(&sh.done, NULL, (unsigned)nt + 1);
            struct worker *w = calloc((size_t)nt, sizeof *w);
            for (int t = 0; t < nt; t++) {
                w[t].id = t;
                w[t].sh = &sh;
                pthread_create(&w[t].thread, NULL, worker_main, &w[t]);
            }
            double best = 1e30, worst = 0, total = 0;
            for (int r = 0; r < reps; r++) {
                /* The main thread only times; it is not pinned and sleeps in the barrier. */
                double t0 = now_seconds();
                pthread_barrier_wait(&sh.go);
                pthread_barrier_wait(&sh.done);
                double dt = now_seconds() - t0;
                best = dt < best ? dt : best;
                worst = dt > worst ? dt : worst;
                total += dt;
            }
            for (int t = 0; t < nt; t++)
                pthread_join(w[t].thread, NULL);
            free(w);
            pthread_barrier_destroy(&sh.go);
            pthread_barrier_destroy(&sh.done);
            double gbs = bytes_per_rep / best / 1e9;
            printf("{\"bench\": \"bw\", \"kernel\": \"%s\", \"threads\": %d, \"array_bytes\": %zu, "
                   "\"arrays\": %d, \"pages\": \"%s\", \"huge_share\": %.4f, \"reps\": %d, "
                   "\"best_seconds\": %.4f, \"mean_seconds\": %.4f, \"worst_seconds\": %.4f, "
                   "\"gbs\": %.2f, \"gbs_mean\": %.2f, \"bytes_per_rep\": %.0f, ",
                   kname, nt, ra.bytes, k == K_READ ? 1 : 3, pages_name(mode),
                   region_huge_share(&ra), reps, best, total / reps, worst, gbs,
                   bytes_per_rep / (total / reps) / 1e9, bytes_per_rep);
            json_host_fields(stdout);
            printf("}\n");
            printf("# bw %s, %d thread(s), %zu MiB per array: best %.2f GB/s (mean %.2f) over "
                   "%d reps\n",
                   kname, nt, ra.bytes >> 20, gbs, bytes_per_rep / (total / reps) / 1e9, reps);
            fflush(stdout);
        }
        region_free(&ra);
        if (k == K_TRIAD) {
            region_free(&rb);
            region_free(&rc);
        }
    }
    return 0;
}
