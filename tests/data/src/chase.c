/* A dependent pointer chase: a linked list of 131072 nodes of 64 bytes (8 MiB) in shuffled
   order, followed for STEPS steps (p = p->next: each load's address is the previous load's
   value). Prints the list's address range, then the sum (so the loop is not optimized away). */
#include <stdio.h>
#include <stdlib.h>

#define NODES (1 << 17)
#define STEPS 300000

struct node {
   struct node *next;
   long pad[7];
};

int main(void)
{
   struct node *n = malloc(NODES * sizeof *n);
   unsigned *order = malloc(NODES * sizeof *order);
   unsigned long x = 88172645463325252UL;
   for (unsigned i = 0; i < NODES; i++)
      order[i] = i;
   for (unsigned i = NODES - 1; i > 0; i--) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      unsigned j = x % (i + 1), t = order[i];
      order[i] = order[j], order[j] = t;
   }
   for (unsigned i = 0; i < NODES; i++)
      n[order[i]].next = &n[order[(i + 1) % NODES]];
   printf("%lx %lx\n", (unsigned long)n, (unsigned long)(n + NODES));
   fflush(stdout);
   struct node *p = &n[order[0]];
   for (long s = 0; s < STEPS; s++)
      p = p->next;
   printf("%lx\n", (unsigned long)p);
   return 0;
}
