/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: the standard names (malloc, free, ...) and glibc's
 * __libc_* aliases of them, exported so that the library replaces the C
 * library's allocator when preloaded or linked.
 * Built only with MANYMALLOC_OVERRIDE.  malloc and free inline the fast
 * paths; the rest forward to the mm_* functions.  C++ operator new and
 * delete reach us through malloc and free (libstdc++ calls them). */
#include <stddef.h>

#include "internal.h"

/* The two hottest functions start on a cache line of their own, so that
 * their fast paths sit in the same fetch blocks whatever the code around
 * them: a change elsewhere must not move them across a fetch boundary. */
#define MM_HOT __attribute__((aligned(64)))
MM_EXPORT MM_HOT void *malloc(size_t size) { return mm_malloc_inline(size); }
MM_EXPORT MM_HOT void free(void *p) { mm_free_inline(p); }
MM_EXPORT void *calloc(size_t count, size_t size) { return mm_calloc(count, size); }
MM_EXPORT void *realloc(void *p, size_t size) { return mm_realloc(p, size); }
MM_EXPORT void *reallocarray(void *p, size_t count, size_t size) { return mm_reallocarray(p, count, size); }
MM_EXPORT int posix_memalign(void **out, size_t alignment, size_t size) {
  return mm_posix_memalign(out, alignment, size);
}
MM_EXPORT void *aligned_alloc(size_t alignment, size_t size) { return mm_aligned_alloc(alignment, size); }
MM_EXPORT void *memalign(size_t alignment, size_t size) { return mm_memalign(alignment, size); }
MM_EXPORT void *valloc(size_t size) { return mm_valloc(size); }
MM_EXPORT void *pvalloc(size_t size) { return mm_pvalloc(size); }
MM_EXPORT size_t malloc_usable_size(void *p) { return _mm_usable_size(p); }

/* glibc's own names for the same functions: code that calls them directly
 * (allocation hooks, tools) must get our blocks, since free() is ours. */
#define MM_ALIAS(name) __attribute__((alias(#name), visibility("default")))
void *__libc_malloc(size_t size) MM_ALIAS(malloc);
void __libc_free(void *p) MM_ALIAS(free);
void *__libc_calloc(size_t count, size_t size) MM_ALIAS(calloc);
void *__libc_realloc(void *p, size_t size) MM_ALIAS(realloc);
void *__libc_memalign(size_t alignment, size_t size) MM_ALIAS(memalign);
void *__libc_valloc(size_t size) MM_ALIAS(valloc);
void *__libc_pvalloc(size_t size) MM_ALIAS(pvalloc);
