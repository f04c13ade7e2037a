/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc: public C API of the CPU allocator.
 *
 * Every entry point exists twice: with the `mm_` prefix declared here, and
 * under the standard C/POSIX names (malloc, free, ...) exported by
 * libmanymalloc.so / libmanymalloc.a, so that the library works both when
 * linked and when loaded with LD_PRELOAD. */
#ifndef MANYMALLOC_H
#define MANYMALLOC_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MANYMALLOC_VERSION_MAJOR 0
#define MANYMALLOC_VERSION_MINOR 1

/* ---- allocation (same contracts as the C/POSIX functions) ---- */
void  *mm_malloc(size_t size);
void   mm_free(void *ptr);
void  *mm_calloc(size_t count, size_t size);
void  *mm_realloc(void *ptr, size_t size);
void  *mm_reallocarray(void *ptr, size_t count, size_t size);
int    mm_posix_memalign(void **out, size_t alignment, size_t size);
void  *mm_aligned_alloc(size_t alignment, size_t size);
void  *mm_memalign(size_t alignment, size_t size);
void  *mm_valloc(size_t size);
void  *mm_pvalloc(size_t size);
size_t mm_malloc_usable_size(const void *ptr);

/* ---- introspection ---- */

/* Process-wide counters, summed over all threads at the time of the call. */
typedef struct mm_stats_s {
  size_t bytes_in_use;     /* usable bytes of live blocks (small and large) */
  size_t bytes_in_use_peak;/* high-water mark of bytes_in_use */
  size_t bytes_mapped;     /* bytes currently mapped from the OS */
  size_t bytes_mapped_peak;/* high-water mark of bytes_mapped */
  size_t segments;         /* segments currently mapped */
  size_t large_blocks;     /* live allocations served directly by the OS */
  size_t large_bytes;      /* their usable bytes (counted in bytes_in_use) */
} mm_stats_t;

void mm_stats_get(mm_stats_t *out);
/* Human-readable report (totals and per size class) to `out` (stderr if NULL). */
void mm_stats_print(FILE *out);

/* Returns free cached memory of the calling thread and the process to the
 * OS: empty segments and mappings, the calling thread's empty pages, and
 * the memory of its free page slots and free span runs of 64 KiB or more.
 * The result is the size of the address ranges this call unmapped or
 * purged (some of it may not have been resident); 0 when nothing went. */
size_t mm_collect(void);

#ifdef __cplusplus
}
#endif
#endif /* MANYMALLOC_H */
