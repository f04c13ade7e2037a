/* manymalloc cpu: large blocks, served straight by the OS.
 *
 * A block above MM_SIZE_CLASS_MAX gets a mapping of its own that starts with
 * a segment header of kind MM_SEGMENT_LARGE, so free and usable_size find it
 * like any block.  The block starts MM_LARGE_OFFSET bytes in, or at the
 * requested alignment; with an alignment of a segment or more the header is
 * one segment before the block (mm_segment_of rounds p - 1 down).
 *
 * Freed mappings of up to MM_LARGE_CACHE_MAX bytes wait in a small
 * lock-free FIFO; the next large block takes one and resizes it with
 * mremap, so the pages it keeps need not be faulted in again (a program
 * that grows and frees big arrays in a loop otherwise pays a fault per
 * 4 KiB every time).  calloc never takes one: fresh mappings are zero.
 * A mapping still cached MANYMALLOC_PURGE_DELAY ms after its free goes
 * back to the OS at the next slow path of any thread, like the segments of
 * exited threads (mm_segment_warm_expire): before, a freed block of 8 MiB
 * stayed resident until mm_collect or exit. */
#include <errno.h>

#include "internal.h"
#include "seq_fifo.h"

#define MM_LARGE_CACHE     4
#define MM_LARGE_CACHE_MAX ((size_t)8 << 20)
static mm_fifo_cell_t mm_large_cache_cells[MM_LARGE_CACHE];
static mm_seq_fifo_t mm_large_cache;

void mm_large_cache_init(void) {
  mm_seq_fifo_init(&mm_large_cache, mm_large_cache_cells, MM_LARGE_CACHE);
}

/* Returns every cached mapping to the OS. */
void mm_large_cache_purge(void) {
  uintptr_t cached;
  while (mm_seq_fifo_pop(&mm_large_cache, &cached)) mm_os_free((void *)cached, ((mm_segment_t *)cached)->mapped_size);
}

/* A cached mapping resized to `mapped` bytes, or NULL. */
static mm_segment_t *mm_large_reuse(size_t mapped) {
  uintptr_t cached;
  if (mapped > MM_LARGE_CACHE_MAX || !mm_seq_fifo_pop(&mm_large_cache, &cached)) return NULL;
  mm_segment_t *seg = (mm_segment_t *)cached;
  if (seg->mapped_size == mapped || mm_os_resize(seg, seg->mapped_size, mapped)) return seg;
  mm_segment_t *moved = mm_os_move_aligned(seg, seg->mapped_size, mapped, MM_SEGMENT_SIZE);
  if (moved == NULL) mm_os_free(seg, seg->mapped_size);
  return moved;
}

/* Bytes to map for a block of `size` after `offset` bytes of header; 0 when
 * no mapping could be that big. */
static size_t mm_large_mapping(size_t offset, size_t size) {
  if (size > PTRDIFF_MAX - 2 * MM_SEGMENT_SIZE) return 0;
  return mm_os_page_round(offset + size);
}

/* A block of `size` bytes at `alignment`; zeroed if `zero`. */
void *mm_large_alloc(size_t size, size_t alignment, bool zero) {
  uintptr_t offset = alignment <= MM_LARGE_OFFSET ? MM_LARGE_OFFSET
                   : alignment <= MM_SEGMENT_SIZE ? alignment : MM_SEGMENT_SIZE;
  /* a block of 0 bytes still gets an OS page, so that it lies inside its mapping */
  size_t mapped = mm_large_mapping(offset, size == 0 ? 1 : size);
  if (mapped == 0) {
    errno = ENOMEM;
    return NULL;
  }
  mm_segment_t *seg = NULL;
  if (offset == MM_LARGE_OFFSET && !zero) seg = mm_large_reuse(mapped);
  if (seg == NULL) {
    seg = alignment <= MM_SEGMENT_SIZE ? mm_os_alloc_aligned(mapped, MM_SEGMENT_SIZE, 0)
                                       : mm_os_alloc_aligned(mapped, alignment, MM_SEGMENT_SIZE);
    if (seg == NULL) return NULL;
  }
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
  if (seg->block_offset == MM_LARGE_OFFSET && seg->mapped_size <= MM_LARGE_CACHE_MAX) {
    if (mm_options.purge) seg->purge_at = mm_os_clock_ms() + mm_options.purge_delay; /* before another thread may pop it */
    if (mm_seq_fifo_push(&mm_large_cache, (uintptr_t)seg)) {
      if (mm_options.purge) mm_segment_warm_schedule(seg->purge_at);
      return;
    }
  }
  mm_os_free(seg, seg->mapped_size);
}

/* Returns the cached mappings whose delay is over at `now` to the OS;
 * called once mm_segment_warm_due has come (mm_segment_warm_expire). */
void mm_large_cache_expire(uint64_t now) {
  if (!mm_options.purge) return; /* MANYMALLOC_PURGE=0: keep everything committed */
  uintptr_t cached;
  for (size_t n = MM_LARGE_CACHE; n > 0 && mm_seq_fifo_pop(&mm_large_cache, &cached); n--) {
    mm_segment_t *seg = (mm_segment_t *)cached;
    if (seg->purge_at <= now || !mm_seq_fifo_push(&mm_large_cache, cached)) mm_os_free(seg, seg->mapped_size);
    else mm_segment_warm_schedule(seg->purge_at);
  }
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
