/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: size classes.
 *
 * Multiples of 16 up to 128 bytes, then 8 classes per power of two, so a
 * block wastes at most 12.5% of the 16-rounded request.  Plain inline
 * integer math (the GPU has classes of its own, src/gpu/size_class.cuh).
 *
 *   class  0..7  : 16, 32, ..., 128
 *   class  8..15 : 144, 160, ..., 256        (step 16)
 *   class 16..23 : 288, 320, ..., 512        (step 32)
 *   ...
 *   ...
 *   class 104..111 : 589824, ..., 1048576    (step 65536)
 */
#ifndef MM_CPU_SIZE_CLASS_H
#define MM_CPU_SIZE_CLASS_H

#include <stddef.h>

#define MM_ALIGNMENT        16
#define MM_SIZE_CLASS_COUNT 112
#define MM_SIZE_CLASS_MAX   ((size_t)1024 * 1024) /* block size of the last class */

static inline unsigned mm_size_class_log2(size_t x) {
  return 63u - (unsigned)__builtin_clzll((unsigned long long)x);
}

/* Class of a request of `size` bytes (size <= MM_SIZE_CLASS_MAX); 0 maps to class 0. */
static inline unsigned mm_size_class_of(size_t size) {
  if (size <= 128) return size == 0 ? 0u : (unsigned)((size - 1) >> 4);
  size_t s = size - 1;
  unsigned k = mm_size_class_log2(s); /* 2^k <= s < 2^(k+1), k >= 7 */
  return 8u + (k - 7u) * 8u + (unsigned)((s >> (k - 3u)) & 7u);
}

/* Block size of class `c`. */
static inline size_t mm_size_class_size(unsigned c) {
  if (c < 8) return (size_t)(c + 1) << 4;
  unsigned k = 7u + (c - 8u) / 8u;
  return ((size_t)1 << k) + (size_t)((c - 8u) % 8u + 1u) * ((size_t)1 << (k - 3u));
}

#endif /* MM_CPU_SIZE_CLASS_H */
