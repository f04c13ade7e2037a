/* SPDX-License-Identifier: Apache-2.0 */
/* trace-workload: a small program for the tracer round-trip test
 * (tools.mmtrace_roundtrip). It exercises every function mmtrace.so records:
 * malloc, calloc, realloc (growing, shrinking, from NULL, to 0),
 * reallocarray, posix_memalign, aligned_alloc, memalign and free, from two
 * threads at once, then forks a child that allocates on its own and leaves
 * blocks live at exit. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKLOAD_SLOTS 64
#define WORKLOAD_ROUNDS 5000

static void *workload_thread(void *arg) {
  void *slot[WORKLOAD_SLOTS] = {0};
  unsigned x = (unsigned)(size_t)arg;
  for (int i = 0; i < WORKLOAD_ROUNDS; i++) {
    x = x * 1103515245u + 12345u;
    unsigned k = (x >> 8) % WORKLOAD_SLOTS, size = 1 + (x >> 16) % 2048;
    void *p = NULL;
    switch ((x >> 4) % 8) {
    case 0: p = malloc(size); break;
    case 1: p = calloc(size, 3); break;
    case 2: slot[k] = realloc(slot[k], size); continue;
    case 3: slot[k] = reallocarray(slot[k], size, 2); continue;
    case 4: if (posix_memalign(&p, 64, size) != 0) p = NULL; break;
    case 5: p = aligned_alloc(32, 32 * (size / 32 + 1)); break;
    case 6: p = memalign(128, size); break;
    default: slot[k] = realloc(slot[k], 0); continue;   /* frees */
    }
    if (p != NULL) memset(p, 1, size);
    free(slot[k]);
    slot[k] = p;
  }
  for (int k = 0; k < WORKLOAD_SLOTS / 2; k++) free(slot[k]);   /* the rest stays live */
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, workload_thread, (void *)1);
  workload_thread((void *)2);
  pthread_join(t, NULL);
  pid_t child = fork();
  if (child == 0) {
    workload_thread((void *)3);
    exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
