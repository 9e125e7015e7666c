/* The test program of tests/test_record.py: N stores then N loads of 8 bytes, nothing else. */
#include <stdio.h>
#include <stdlib.h>
#define N 1000
int main(void) {
    volatile long *a = malloc(N * sizeof(long));
    printf("%p\n", (void *)a);
    fflush(stdout);
    for (int i = 0; i < N; i++) a[i] = i;
    long s = 0;
    for (int i = 0; i < N; i++) s += a[i];
    return s == (long)N * (N - 1) / 2 ? 0 : 1;
}
