/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: memory (and the time) from the OS.
 *
 * The only file that calls mmap, munmap, madvise and mremap.  Every failure
 * is reported as NULL/false with errno = ENOMEM, and leaves nothing mapped,
 * so callers keep a consistent state when memory runs out. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"

static void *mm_os_map(void *hint, size_t size, int prot, int flags) {
  void *p = mmap(hint, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (p == MAP_FAILED) {
    errno = ENOMEM;
    return NULL;
  }
  return p;
}

/* Read-write, zeroed memory. */
void *_mm_os_alloc(size_t size) {
  void *p = mm_os_map(NULL, size, PROT_READ | PROT_WRITE, 0);
  if (p != NULL) _mm_stats_mapped((intptr_t)size);
  return p;
}

/* Address space only: pages are committed when first touched, never counted
 * against overcommit (used for the checked-mode registry). */
void *_mm_os_reserve(size_t size) {
  return mm_os_map(NULL, size, PROT_READ | PROT_WRITE, MAP_NORESERVE);
}

/* Aligned mappings in one system call: we walk a hint through an address
 * area of our own, and the kernel places a mapping at its hint when that
 * range is free (mimalloc's trick).  Under AddressSanitizer the area is its
 * shadow memory, so hints are not used there. */
#define MM_OS_HINT_BASE ((uintptr_t)2 << 40) /* 2 TiB */
#define MM_OS_HINT_AREA ((uintptr_t)4 << 40) /* walked round robin */

static void *mm_os_alloc_hinted(size_t size, size_t alignment) {
#if defined(__SANITIZE_ADDRESS__)
  (void)size, (void)alignment;
  return NULL;
#else
  static uintptr_t mm_os_hint_next;
  uintptr_t span = (size + alignment - 1) & ~(uintptr_t)(alignment - 1);
  uintptr_t hint = MM_OS_HINT_BASE + mm_atomic_fetch_add(&mm_os_hint_next, span) % MM_OS_HINT_AREA;
  void *p = mm_os_map((void *)hint, size, PROT_READ | PROT_WRITE, 0);
  if (p == NULL || ((uintptr_t)p & (alignment - 1)) == 0) return p;
  munmap(p, size);
  return NULL;
#endif
}

/* `size` bytes at an address p with (p + offset) % alignment == 0
 * (alignment a power of two, a multiple of the OS page): at a hint, or
 * else over-map and trim. */
void *_mm_os_alloc_aligned(size_t size, size_t alignment, size_t offset) {
  if (offset == 0) {
    void *p = mm_os_alloc_hinted(size, alignment);
    if (p != NULL) {
      _mm_stats_mapped((intptr_t)size);
      return p;
    }
  }
  size_t over = size + alignment;
  if (over < size) {
    errno = ENOMEM;
    return NULL;
  }
  uint8_t *raw = mm_os_map(NULL, over, PROT_READ | PROT_WRITE, 0);
  if (raw == NULL) return NULL;
  uintptr_t target = ((uintptr_t)raw + offset + alignment - 1) & ~(uintptr_t)(alignment - 1);
  uint8_t *p = (uint8_t *)(target - offset);
  if (p < raw) p += alignment;
  size_t head = (size_t)(p - raw);
  size_t tail = over - head - size;
  if (head > 0) munmap(raw, head);
  if (tail > 0) munmap(p + size, tail);
  _mm_stats_mapped((intptr_t)size);
  return p;
}

__thread size_t _mm_os_released_by_thread __attribute__((tls_model("initial-exec")));

void _mm_os_free(void *p, size_t size) {
  if (munmap(p, size) != 0) return;
  _mm_stats_mapped(-(intptr_t)size);
  _mm_os_released_by_thread += size;
}

/* The pages read as zero afterwards and no longer count in the RSS. */
void _mm_os_purge(void *p, size_t size) {
  if (madvise(p, size, MADV_DONTNEED) == 0) _mm_os_released_by_thread += size;
}

/* Asks the kernel to back the mapping with transparent huge pages where it
 * can (its 2 MiB-aligned stretches), as it does for every mapping when
 * /sys/kernel/mm/transparent_hugepage/enabled says "always"; a kernel
 * without them ignores it. */
void _mm_os_advise_hugepages(void *p, size_t size) {
#ifdef MADV_HUGEPAGE
  (void)madvise(p, size, MADV_HUGEPAGE);
#else
  (void)p;
  (void)size;
#endif
}

/* Milliseconds of the monotonic clock, at the kernel tick's grain (1-4 ms;
 * delays are MANYMALLOC_PURGE_DELAY ms, 10 by default).  Slow paths read it
 * while some memory is due to go back; the coarse clock reads the vDSO's
 * last tick without the time-stamp counter, several times cheaper than the
 * precise one (decision 0037: the coarse clock for purge delays). */
uint64_t _mm_os_clock_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Grows or shrinks the mapping at p in place; false if it cannot. */
bool _mm_os_resize(void *p, size_t old_size, size_t new_size) {
  if (mremap(p, old_size, new_size, 0) == MAP_FAILED) return false;
  _mm_stats_mapped((intptr_t)new_size - (intptr_t)old_size);
  return true;
}

/* Moves the mapping at p (its pages, without copying) to a new place of
 * new_size bytes aligned to `alignment`; NULL (p untouched) on failure. */
void *_mm_os_move_aligned(void *p, size_t old_size, size_t new_size, size_t alignment) {
  size_t over = new_size + alignment;
  uint8_t *raw = mm_os_map(NULL, over, PROT_NONE, MAP_NORESERVE);
  if (raw == NULL) return NULL;
  uint8_t *dst = (uint8_t *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
  void *moved = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
  if (moved == MAP_FAILED) {
    munmap(raw, over);
    errno = ENOMEM;
    return NULL;
  }
  /* mremap replaced [dst, dst+new_size) of the reservation; drop the rest */
  if (dst > raw) munmap(raw, (size_t)(dst - raw));
  size_t tail = (size_t)(raw + over - (dst + new_size));
  if (tail > 0) munmap(dst + new_size, tail);
  _mm_stats_mapped((intptr_t)new_size - (intptr_t)old_size);
  return dst;
}
