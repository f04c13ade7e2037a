/* SPDX-License-Identifier: Apache-2.0 */
/* The program that test_options runs: one misuse of the allocator per mode,
 * so that checked mode (MANYMALLOC_CHECKED=1, read when the allocator starts)
 * can be watched from outside. It prints the pointer it is about to misuse on
 * stdout, so the test can find it named in the allocator's message.
 * Usage: checked_child normal|large-threads|double-free|double-free-later|double-free-large|
 *                      double-free-remote|double-free-aligned|free-stack|free-interior|
 *                      free-never-allocated */
#include <manymalloc/manymalloc.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void announce(const void *p) {
  printf("%p\n", p);
  fflush(stdout);
}

/* A clean run of every entry point, also across a thread: checked mode must
 * not mistake it for misuse. */
static void *normal_worker(void *arg) {
  void **blocks = arg;
  for (int i = 0; i < 64; i++) mm_free(blocks[i]);
  return NULL;
}

static int run_normal(void) {
  void *blocks[64];
  for (int i = 0; i < 64; i++) blocks[i] = mm_malloc((size_t)(i * 97 + 1) << (i % 12));
  pthread_t t;
  if (pthread_create(&t, NULL, normal_worker, blocks) != 0) return 2;
  pthread_join(t, NULL);
  void *p = mm_calloc(10, 100);
  p = mm_realloc(p, 100000);
  p = mm_reallocarray(p, 10, 10);
  mm_free(p);
  void *a = NULL;
  if (mm_posix_memalign(&a, 4096, 5000) != 0) return 3;
  mm_free(a);
  mm_free(mm_aligned_alloc(64, 640));
  mm_free(mm_memalign(256, 3));
  mm_free(mm_valloc(10));
  mm_free(mm_pvalloc(10));
  mm_free(NULL);
  return 0;
}

/* Threads that grow, shrink and move large blocks at once: their mappings
 * come and go at the same addresses, which checked mode must follow. */
#define LARGE_THREADS 8
#define LARGE_SLOTS   8

static void *large_worker(void *arg) {
  uint64_t state = (uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
  unsigned char *slot[LARGE_SLOTS] = {0};
  for (int i = 0; i < 6000; i++) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    int k = (int)(state % LARGE_SLOTS);
    size_t size = ((size_t)1 << 20) + (size_t)(state >> 8) % ((size_t)24 << 20);
    unsigned op = (unsigned)((state >> 40) % 3);
    if (op != 1) mm_free(slot[k]);
    unsigned char *p = op == 0 ? NULL : op == 1 ? mm_realloc(slot[k], size) : mm_malloc(size);
    if (op != 0 && p == NULL) return arg; /* a failure: the thread's result is not NULL */
    if (p != NULL) p[0] = p[size - 1] = (unsigned char)i;
    slot[k] = p;
  }
  for (int k = 0; k < LARGE_SLOTS; k++) mm_free(slot[k]);
  return NULL;
}

static int run_large_threads(void) {
  pthread_t threads[LARGE_THREADS];
  for (uintptr_t i = 0; i < LARGE_THREADS; i++)
    if (pthread_create(&threads[i], NULL, large_worker, (void *)(i + 1)) != 0) return 2;
  int failed = 0;
  for (int i = 0; i < LARGE_THREADS; i++) {
    void *result;
    pthread_join(threads[i], &result);
    failed |= result != NULL;
  }
  return failed ? 3 : 0;
}

static char never_allocated[4096] __attribute__((aligned(64)));

static void *free_in_thread(void *p) {
  mm_free(p);
  return NULL;
}

static int run_misuse(const char *mode) {
  if (strcmp(mode, "double-free") == 0) {
    void *p = mm_malloc(64);
    announce(p);
    mm_free(p);
    mm_free(p);
  } else if (strcmp(mode, "double-free-later") == 0) {
    /* Blocks of another size in between: the first free is no longer the last. */
    void *p = mm_malloc(64), *others[100];
    announce(p);
    mm_free(p);
    for (int i = 0; i < 100; i++) others[i] = mm_malloc(1000);
    for (int i = 0; i < 100; i++) mm_free(others[i]);
    mm_free(p);
  } else if (strcmp(mode, "double-free-large") == 0) {
    void *p = mm_malloc(4 << 20);
    announce(p);
    mm_free(p);
    mm_free(p);
  } else if (strcmp(mode, "double-free-remote") == 0) {
    /* The first free is remote (another thread), the second local. */
    void *p = mm_malloc(64);
    pthread_t t;
    announce(p);
    if (pthread_create(&t, NULL, free_in_thread, p) != 0) return 2;
    pthread_join(t, NULL);
    mm_free(p);
  } else if (strcmp(mode, "double-free-aligned") == 0) {
    /* An aligned address inside a bigger block (classes of 2 KiB and more). */
    void *p = mm_aligned_alloc(4096, 4096);
    announce(p);
    mm_free(p);
    mm_free(p);
  } else if (strcmp(mode, "free-stack") == 0) {
    char on_stack[256] __attribute__((aligned(64)));
    memset(on_stack, 1, sizeof on_stack);
    announce(on_stack + 64);
    mm_free(on_stack + 64);
  } else if (strcmp(mode, "free-interior") == 0) {
    char *p = mm_malloc(256);
    announce(p + 16);
    mm_free(p + 16);
  } else if (strcmp(mode, "free-never-allocated") == 0) {
    announce(never_allocated + 64);
    mm_free(never_allocated + 64);
  } else {
    fprintf(stderr, "checked_child: unknown mode %s\n", mode);
    return 2;
  }
  return 1; /* the misuse went unnoticed */
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: checked_child MODE\n");
    return 2;
  }
  if (strcmp(argv[1], "normal") == 0) return run_normal();
  if (strcmp(argv[1], "large-threads") == 0) return run_large_threads();
  return run_misuse(argv[1]);
}
