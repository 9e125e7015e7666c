/* Two worker threads, the second created after the first has been joined: Valgrind gives the
 * second the first's thread id (a reused slot); the recording must number them apart. */
#include <pthread.h>
#include <stdlib.h>

static void *work(void *arg) {
    volatile int *p = malloc(1 << 16);
    for (int i = 0; i < (1 << 14); i++) p[i] = i;
    return arg;
}

int main(void) {
    for (int k = 0; k < 2; k++) {
        pthread_t t;
        pthread_create(&t, 0, work, 0);
        pthread_join(t, 0);
    }
    return 0;
}
