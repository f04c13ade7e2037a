/* manymalloc cpu: large blocks, served straight by the OS.
 *
 * A block above MM_SIZE_CLASS_MAX gets a mapping of its own that starts with
 * a segment header of kind MM_SEGMENT_LARGE, so free and usable_size find it
 * like any block.  The block starts MM_LARGE_OFFSET bytes in, or at the
 * requested alignment; with an alignment of a segment or more the header is
 * one segment before the block (mm_segment_of rounds p - 1 down). */
#include <errno.h>

#include "internal.h"

/* Bytes to map for a block of `size` after `offset` bytes of header; 0 when
 * no mapping could be that big. */
static size_t mm_large_mapping(size_t offset, size_t size) {
  if (size > PTRDIFF_MAX - 2 * MM_SEGMENT_SIZE) return 0;
  return (offset + size + MM_OS_PAGE_SIZE - 1) & ~(MM_OS_PAGE_SIZE - 1);
}

void *mm_large_alloc(size_t size, size_t alignment) {
  uintptr_t offset = alignment <= MM_LARGE_OFFSET ? MM_LARGE_OFFSET
                   : alignment <= MM_SEGMENT_SIZE ? alignment : MM_SEGMENT_SIZE;
  size_t mapped = mm_large_mapping(offset, size);
  if (mapped == 0) {
    errno = ENOMEM;
    return NULL;
  }
  mm_segment_t *seg = alignment <= MM_SEGMENT_SIZE
                    ? mm_os_alloc_aligned(mapped, MM_SEGMENT_SIZE, 0)
                    : mm_os_alloc_aligned(mapped, alignment, MM_SEGMENT_SIZE);
  if (seg == NULL) return NULL;
  seg->kind = MM_SEGMENT_LARGE;
  seg->page_shift = 63;
  seg->mapped_size = mapped;
  seg->block_offset = offset;
  seg->block_size = mapped - offset;
  mm_checked_on_map(seg);
  mm_stats_large(1, (intptr_t)seg->block_size);
  return (uint8_t *)seg + offset;
}

void mm_large_free(mm_segment_t *seg) {
  mm_stats_large(-1, -(intptr_t)seg->block_size);
  mm_checked_on_unmap(seg, true);
  mm_os_free(seg, seg->mapped_size);
}

/* Grows or shrinks in place when the mapping allows, else moves the pages
 * with mremap (no copy).  Called for sizes above MM_SIZE_CLASS_MAX. */
void *mm_large_realloc(mm_segment_t *seg, void *p, size_t size) {
  if (size <= seg->block_size && size >= seg->block_size / 2) return p;
  size_t mapped = mm_large_mapping(seg->block_offset, size);
  if (mapped == 0) {
    errno = ENOMEM;
    return NULL;
  }
  size_t old_block = seg->block_size;
  if (!mm_os_resize(seg, seg->mapped_size, mapped)) {
    mm_segment_t *moved = mm_os_move_aligned(seg, seg->mapped_size, mapped, MM_SEGMENT_SIZE);
    if (moved == NULL) return NULL;
    mm_checked_on_unmap(seg, false);
    seg = moved;
    mm_checked_on_map(seg);
  }
  seg->mapped_size = mapped;
  seg->block_size = mapped - seg->block_offset;
  mm_stats_large(0, (intptr_t)seg->block_size - (intptr_t)old_block);
  return (uint8_t *)seg + seg->block_offset;
}
