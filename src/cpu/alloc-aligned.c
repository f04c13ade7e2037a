/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: aligned allocation.
 *
 * Pages start at multiples of 128 KiB (the segment header size), so the
 * blocks of an unpadded class whose size is a multiple of an alignment are
 * aligned: from the request's class on, we take the first that is before a
 * padded one.  Classes of 2-32 KiB are padded for cache coloring
 * (mm_class_stride) and their blocks are only 64-aligned, so there the
 * aligned address lies inside a block big enough to hold it (mimalloc's
 * way); the page is marked, and free and usable_size find the block's
 * start.  Where that block would be above 32 KiB, a span placed at the
 * alignment serves instead (spans start at multiples of 4 KiB).
 * Alignments above 128 KiB, and sizes beyond the classes, get a large
 * block placed at the alignment. */
#include "internal.h"

static void *mm_malloc_inner_aligned(size_t size, size_t alignment) {
  uint8_t *block = mm_malloc_inline(size + alignment - MM_ALIGNMENT);
  if (block == NULL) return NULL;
  uint8_t *p = (uint8_t *)(((uintptr_t)block + alignment - 1) & ~(uintptr_t)(alignment - 1));
  if (p != block) {
    mm_segment_t *seg = mm_segment_of(block);
    mm_segment_page_of(seg, block)->has_aligned = 1; /* the owner's page: only it writes */
    mm_segment_remote_of(seg, block)->has_aligned = 1; /* seen by a remote free of p, which comes after */
    if (mm_unlikely(_mm_options.checked)) _mm_checked_on_aligned(seg, block, p);
  }
  return p;
}

/* `alignment` is a power of two. */
void *_mm_malloc_aligned(size_t size, size_t alignment) {
  if (alignment <= MM_ALIGNMENT) return mm_malloc_inline(size);
  if (alignment <= MM_SEGMENT_HEADER_SIZE && size <= MM_MEDIUM_BLOCK_MAX) {
    for (unsigned c = mm_size_class_of(size < alignment ? alignment : size);
         c <= MM_MEDIUM_CLASS_LAST && mm_class_stride(c) == mm_size_class_size(c); c++)
      if (mm_size_class_size(c) % alignment == 0) return mm_malloc_inline(mm_size_class_size(c));
    if (size + alignment - MM_ALIGNMENT <= MM_MEDIUM_BLOCK_MAX) return mm_malloc_inner_aligned(size, alignment);
  }
  mm_heap_t *heap = _mm_heap_tls;
  if (heap == &_mm_heap_empty && (heap = _mm_thread_init()) == NULL) return NULL;
  if (alignment <= MM_SEGMENT_HEADER_SIZE && size <= MM_SIZE_CLASS_MAX) return _mm_span_alloc(heap, size, alignment);
  return _mm_large_alloc(size, alignment, false);
}
