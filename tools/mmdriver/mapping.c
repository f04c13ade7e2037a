/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: the driver's own memory, taken straight from the OS (see mapping.h). */
#define _GNU_SOURCE
#include "mapping.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

void *mapping_alloc(size_t size) {
  void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "mmdriver: out of memory mapping %zu bytes\n", size);
    exit(2);
  }
  return p;
}

void mapping_free(void *p, size_t size) {
  if (p != NULL) munmap(p, size ? size : 1);
}

void *mapping_resize(void *p, size_t old_size, size_t new_size) {
  if (p == NULL) return mapping_alloc(new_size);
  void *q = mremap(p, old_size ? old_size : 1, new_size, MREMAP_MAYMOVE);
  if (q == MAP_FAILED) {
    fprintf(stderr, "mmdriver: out of memory growing a mapping to %zu bytes\n", new_size);
    exit(2);
  }
  return q;
}

__attribute__((noinline)) void mapping_prefault_stack(size_t bytes) {
  volatile char *area = __builtin_alloca(bytes);
  for (size_t i = 0; i < bytes; i += 4096) area[i] = 0;
}
