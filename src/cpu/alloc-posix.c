/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: the POSIX and glibc allocation functions on top of
 * _mm_malloc_aligned: argument checks and errno conventions only. */
#include <errno.h>

#include "internal.h"

static bool mm_is_power_of_two(size_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

MM_EXPORT int mm_posix_memalign(void **out, size_t alignment, size_t size) {
  if (!mm_is_power_of_two(alignment) || alignment % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = _mm_malloc_aligned(size, alignment);
  if (p == NULL) return ENOMEM;
  errno = saved;
  *out = p;
  return 0;
}

MM_EXPORT void *mm_aligned_alloc(size_t alignment, size_t size) {
  if (!mm_is_power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return _mm_malloc_aligned(size, alignment);
}

/* Like glibc, an alignment that is not a power of two is rounded up to one. */
MM_EXPORT void *mm_memalign(size_t alignment, size_t size) {
  if (alignment > ((size_t)1 << 62)) {
    errno = EINVAL;
    return NULL;
  }
  size_t a = MM_ALIGNMENT;
  while (a < alignment) a <<= 1;
  return _mm_malloc_aligned(size, a);
}

MM_EXPORT void *mm_valloc(size_t size) {
  return _mm_malloc_aligned(size, MM_OS_PAGE_SIZE);
}

MM_EXPORT void *mm_pvalloc(size_t size) {
  size_t rounded = mm_os_page_round(size);
  if (rounded < size) {
    errno = ENOMEM;
    return NULL;
  }
  return _mm_malloc_aligned(rounded == 0 ? MM_OS_PAGE_SIZE : rounded, MM_OS_PAGE_SIZE);
}
