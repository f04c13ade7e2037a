/* manymalloc cpu: aligned allocation.
 *
 * Pages start at multiples of 128 KiB (the segment header size), so a block
 * whose size is a multiple of an alignment up to that is aligned: we pick
 * the smallest class that is (a power of two always is).  Larger
 * alignments, and sizes above the largest class, get a large block placed
 * at the alignment. */
#include "internal.h"

/* `alignment` is a power of two. */
void *mm_malloc_aligned(size_t size, size_t alignment) {
  if (alignment <= MM_ALIGNMENT) return mm_malloc_inline(size);
  if (size <= MM_SIZE_CLASS_MAX && alignment <= MM_SEGMENT_HEADER_SIZE) {
    unsigned c = mm_size_class_of(size < alignment ? alignment : size);
    while (mm_size_class_size(c) % alignment != 0) c++;
    return mm_malloc_inline(mm_size_class_size(c));
  }
  mm_heap_t *heap = mm_heap_tls;
  if (heap == &mm_heap_empty && mm_thread_init() == NULL) return NULL;
  return mm_large_alloc(size, alignment, false);
}
