/* clock: the core clock the benchmarks actually ran at, from a chain of dependent adds.
 *
 * /proc/cpuinfo's "cpu MHz" in this guest is the TSC rate the hypervisor reports (nominal), not
 * the boosted clock the core runs at. An integer add whose input is the previous add's output
 * takes one cycle on every x86-64 core of the last decade, so adds per nanosecond of the
 * thread's own CPU time is the clock in GHz. It turns the chase's nanoseconds into cycles.
 *
 * Output: one JSON line (prefix "{"), '#' lines for people.
 */
#define _GNU_SOURCE
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1000 dependent adds per call. Inline asm: the compiler would fold a C chain into one add. */
static uint64_t adds_1000(uint64_t x)
{
#if defined(__x86_64__)
    __asm__ volatile(".rept 1000\n\taddq $1, %0\n\t.endr" : "+r"(x));
#else
#error "clock.c: the add chain is written for x86-64"
#endif
    return x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int cpu = 0, reps = 9;
    double seconds = 0.2;
    static const struct option opts[] = {{"cpu", required_argument, 0, 'c'},
                                         {"reps", required_argument, 0, 'n'},
                                         {"seconds", required_argument, 0, 't'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': cpu = atoi(optarg); break;
        case 'n': reps = atoi(optarg); break;
        case 't': seconds = atof(optarg); break;
        default:
            fprintf(stderr, "usage: clock [--cpu N] [--reps N] [--seconds S]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 99)
        reps = 9;
    pin_self(cpu, "clock thread");
    double ghz[99];
    uint64_t x = 0;
    for (int r = 0; r < reps; r++) {
        uint64_t adds = 0;
        double t0 = thread_cpu_seconds(), t1, w0 = now_seconds();
        do {
            for (int i = 0; i < 1000; i++)
                x = adds_1000(x);
            adds += 1000000;
            t1 = thread_cpu_seconds();
        } while (now_seconds() - w0 < seconds);
        ghz[r] = (double)adds / ((t1 - t0) * 1e9);
    }
    qsort(ghz, (size_t)reps, sizeof ghz[0], cmp_double);
    /* The median resists a repetition that was interrupted; the max is the clock undisturbed
     * (an interruption can only make a repetition look slower). */
    double med = ghz[reps / 2], max = ghz[reps - 1];
    printf("{\"bench\": \"clock\", \"cpu\": %d, \"reps\": %d, \"seconds_per_rep\": %.2f, "
           "\"ghz_median\": %.3f, \"ghz_max\": %.3f, \"ghz_min\": %.3f, \"sink\": %llu, ",
           cpu, reps, seconds, med, max, ghz[0], (unsigned long long)x);
    json_host_fields(stdout);
    printf("}\n");
    printf("# clock: dependent adds at %.3f GHz (median of %d), %.3f max, %.3f min\n", med, reps,
           max, ghz[0]);
    return 0;
}
