/* Two threads, each writing a heap buffer: recorded with --tool lackey, the clone result line
 * and asynchronous system calls of the second thread interleave with the first's output. */
#include <pthread.h>
#include <stdlib.h>

static void *work(void *arg) {
    volatile int *p = malloc(4096);
    for (int i = 0; i < 100; i++) p[i] = i;
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    work(0);
    pthread_join(t, 0);
    return 0;
}
