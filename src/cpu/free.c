/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: free and its slow path.
 *
 * The fast path (mm_free_inline in internal.h) pushes the block on its
 * page's free list when the calling thread owns the segment.  Here:
 * frees into full pages, frees from other threads (or from a thread whose
 * heap is gone), inner aligned addresses, spans and large blocks. */
#include "internal.h"

/* A block of `size_class` left the freeing thread's count. */
static void mm_free_count_remote(mm_heap_t *heap, unsigned size_class) {
  /* a thread that only frees gets a heap too, to count in without sharing */
  if (heap == &_mm_heap_empty) heap = _mm_thread_init_on_free();
  if (heap != NULL) heap->stats.blocks[size_class]--;
  else _mm_stats_orphan_free(size_class);
}

static void mm_free_remote(mm_heap_t *heap, mm_segment_t *seg, mm_page_remote_t *remote, mm_block_t *block) {
  unsigned size_class = remote->size_class; /* the page may be gone after the push */
  _mm_page_free_remote(seg, remote, block);
  mm_free_count_remote(heap, size_class);
}

static void mm_free_span(mm_heap_t *heap, mm_segment_t *seg, void *p) {
  if (seg->heap == heap) {
    _mm_span_free(heap, seg, p);
    return;
  }
  unsigned size_class = _mm_span_block_class(seg, p); /* the run may be gone after the push */
  _mm_span_free_remote(seg, p);
  mm_free_count_remote(heap, size_class);
}

void _mm_free_generic(mm_segment_t *seg, mm_page_t *page, void *p) {
  mm_heap_t *heap = _mm_heap_tls;
  if (seg->kind == MM_SEGMENT_LARGE) {
    _mm_large_free(seg);
    return;
  }
  if (seg->kind == MM_SEGMENT_SPAN) {
    mm_free_span(heap, seg, p);
    return;
  }
  if (seg->heap == heap) {
    if (page->has_aligned) p = mm_page_block_of(page, p);
    _mm_page_free_local_slow(seg, page, (mm_block_t *)p);
    return;
  }
  /* another thread's block: its page's remote side only, but for an inner
     aligned address, whose block needs the page's start and stride (set
     before any block went out) */
  mm_page_remote_t *remote = mm_segment_remote_of(seg, p);
  if (remote->has_aligned) p = mm_page_block_of(page, p);
  mm_free_remote(heap, seg, remote, (mm_block_t *)p);
}

MM_EXPORT void mm_free(void *p) {
  mm_free_inline(p);
}
