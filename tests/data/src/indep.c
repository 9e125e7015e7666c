/* Independent loads: STEPS reads of an 8 MiB array at pseudo-random indices computed from a
   register-only generator (no address depends on a loaded value). Prints the array's address
   range, then the sum (so the loop is not optimized away). */
#include <stdio.h>
#include <stdlib.h>

#define WORDS (1 << 20)
#define STEPS 300000

int main(void)
{
   long *a = malloc(WORDS * sizeof *a);
   for (long i = 0; i < WORDS; i++)
      a[i] = i;
   printf("%lx %lx\n", (unsigned long)a, (unsigned long)(a + WORDS));
   fflush(stdout);
   unsigned long x = 88172645463325252UL;
   long sum = 0;
   for (long s = 0; s < STEPS; s++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      sum += a[x % WORDS];
   }
   printf("%ld\n", sum);
   return 0;
}
