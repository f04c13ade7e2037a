/* manymalloc cpu: free and its slow path.
 *
 * The fast path (mm_free_inline in internal.h) pushes the block on its
 * page's free list when the calling thread owns the segment.  Here:
 * frees into full pages, frees from other threads (or from a thread whose
 * heap is gone), inner aligned addresses and large blocks. */
#include "internal.h"

static void mm_free_remote(mm_heap_t *heap, mm_page_t *page, mm_block_t *block) {
  unsigned size_class = page->size_class; /* the page may be gone after the push */
  mm_page_free_remote(page, block);
  /* a thread that only frees gets a heap too, to count in without sharing */
  if (heap == &mm_heap_empty) heap = mm_thread_init_on_free();
  if (heap != NULL) heap->stats.blocks[size_class]--;
  else mm_stats_orphan_free(size_class);
}

void mm_free_generic(mm_segment_t *seg, mm_page_t *page, void *p) {
  mm_heap_t *heap = mm_heap_tls;
  if (seg->kind == MM_SEGMENT_LARGE) {
    mm_large_free(seg);
    return;
  }
  if (page->has_aligned) p = mm_page_block_of(page, p);
  if (seg->heap == heap) {
    mm_page_free_local_slow(seg, page, (mm_block_t *)p);
  } else {
    mm_free_remote(heap, page, (mm_block_t *)p);
  }
}

MM_EXPORT void mm_free(void *p) {
  mm_free_inline(p);
}
