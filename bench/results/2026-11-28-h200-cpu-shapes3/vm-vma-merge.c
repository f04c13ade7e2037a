/* SPDX-License-Identifier: Apache-2.0 */
/* vm-vma-merge.c: one thread faults in 1 GiB of a mapping while another maps 4 MiB
 * mappings right after it (gap 0: each merges into the faulter's kernel mapping)
 * or spaced by a hole (gap 4).  gcc -O2 -pthread vm-vma-merge.c; ./a.out 0; ./a.out 4 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <stdatomic.h>
#define BASE ((char *)(2ul << 40))
#define MB (1ul << 20)
static size_t gap; static atomic_int stop;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void *mapper(void *a) {  /* maps 4 MiB segments after the faulter's region, adjacent or spaced */
  char *next = BASE + 1024 * MB + gap; long n = 0;
  while (!atomic_load(&stop)) { char *p = mmap(next, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0); if (p == MAP_FAILED) break; p[0] = 1; next += 4 * MB + gap; n++; }
  return (void *)n;
}
int main(int argc, char **argv) {
  gap = argc > 1 ? strtoul(argv[1], 0, 10) * MB : 0;
  char *r = mmap(BASE, 1024 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  pthread_t t; pthread_create(&t, 0, mapper, 0);
  struct rusage u0, u1; getrusage(RUSAGE_THREAD, &u0); double t0 = now();
  for (size_t o = 0; o < 1024 * MB; o += 4096) r[o] = 1;
  double t1 = now(); getrusage(RUSAGE_THREAD, &u1); atomic_store(&stop, 1); void *n; pthread_join(t, &n);
  printf("gap %zu MiB: faults of 1 GiB %.1f ms, faulter vol switches %ld, mapper mmaps %ld\n", gap / MB, (t1 - t0) * 1e3, u1.ru_nvcsw - u0.ru_nvcsw, (long)n);
}
