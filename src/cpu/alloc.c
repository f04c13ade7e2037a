/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: malloc, calloc, realloc and their slow path.
 *
 * The fast path (mm_malloc_inline in internal.h) pops the first block of the
 * page that heap->direct (or heap->direct_wide) names for the size.
 * Everything else arrives in _mm_malloc_generic: the first malloc of a
 * thread, sizes above the direct range, an exhausted page, spans, large
 * blocks and checked mode. */
#include <errno.h>

#include "internal.h"

static void *mm_malloc_from_class(mm_heap_t *heap, unsigned size_class) {
  mm_page_t *page = heap->queues[size_class].first;
  if (page == NULL || page->free == NULL) {
    page = _mm_heap_find_page(heap, size_class);
    if (page == NULL) return NULL;
  }
  if (page->size_class != size_class || (heap->borrowing & mm_heap_borrow_bit(size_class)) != 0)
    _mm_heap_direct_follow(heap, size_class, page); /* a lender's page, or back to its own */
  mm_block_t *block = page->free;
  MM_ASSERT(mm_page_holds_block(page, block) && page->used < page->capacity);
  page->free = block->next;
  page->used++;
  mm_stats_count_page(heap, page); /* a slow path already: keep the counters current */
  if (mm_unlikely(_mm_options.checked)) _mm_checked_on_malloc(mm_segment_of(block), block);
  return block;
}

/* The slow path of malloc, for a block from the size classes or, with
 * `in_span` or above MM_MEDIUM_BLOCK_MAX, from a span. */
static void *mm_malloc_slow(mm_heap_t *heap, size_t size, bool in_span) {
  if (mm_unlikely(heap == &_mm_heap_empty)) {
    heap = _mm_thread_init();
    if (heap == NULL) return NULL;
  }
  if (mm_unlikely(mm_atomic_load_relaxed(&heap->delayed_free) != 0)) _mm_heap_delayed_drain(heap);
  if (mm_unlikely(mm_purge_any_due(heap))) _mm_purge_expired(heap, _mm_os_clock_ms()); /* one clock read for both */
  if (mm_unlikely(mm_purge_growth_due(heap))) _mm_purge_growth(heap);
  void *p = in_span || size > MM_MEDIUM_BLOCK_MAX ? _mm_span_alloc(heap, size, MM_ALIGNMENT)
                                                  : mm_malloc_from_class(heap, mm_size_class_of(size));
  /* growth (or faults) this malloc caused, and those of reallocs in place
     and aligned mallocs before it, matched while no page or span is in hand */
  if (mm_unlikely(mm_purge_growth_due(heap))) _mm_purge_growth(heap);
  return p;
}

void *_mm_malloc_generic(mm_heap_t *heap, size_t size) {
  if (size > MM_SIZE_CLASS_MAX) return _mm_large_alloc(size, MM_ALIGNMENT, false);
  return mm_malloc_slow(heap, size, false);
}

MM_EXPORT void *mm_malloc(size_t size) {
  return mm_malloc_inline(size);
}

/* ---------------------------------------------------------------------------
 * calloc, realloc
 * ------------------------------------------------------------------------- */

MM_EXPORT void *mm_calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  if (total > MM_SIZE_CLASS_MAX) return _mm_large_alloc(total, MM_ALIGNMENT, true); /* fresh: zero */
  void *p = mm_malloc_inline(total);
  if (p != NULL) memset(p, 0, total);
  return p;
}

size_t _mm_usable_size(const void *p) {
  if (p == NULL) return 0;
  mm_segment_t *seg = mm_segment_of(p);
  if (seg->kind == MM_SEGMENT_LARGE) return seg->block_size;
  if (seg->kind == MM_SEGMENT_SPAN) return _mm_span_usable_size(seg, p);
  mm_page_t *page = mm_segment_page_of(seg, p);
  if (!page->has_aligned) return page->block_size;
  return page->block_size - (size_t)((uintptr_t)p - (uintptr_t)mm_page_block_of(page, p));
}

MM_EXPORT size_t mm_malloc_usable_size(const void *p) {
  return _mm_usable_size(p);
}

/* Like glibc: realloc(p, 0) frees p and returns NULL. */
MM_EXPORT void *mm_realloc(void *p, size_t size) {
  if (p == NULL) return mm_malloc_inline(size);
  if (size == 0) {
    mm_free_inline(p);
    return NULL;
  }
  if (mm_unlikely(_mm_options.checked)) _mm_checked_realloc(p);
  mm_segment_t *seg = mm_segment_of(p);
  if (seg->kind == MM_SEGMENT_LARGE && size > MM_SIZE_CLASS_MAX) {
    void *resized = _mm_large_realloc(seg, p, size);
    if (resized != NULL) return resized; /* else a new block and a copy, below */
  }
  bool spans_serve = size >= MM_REALLOC_SPAN_MIN && size <= MM_SIZE_CLASS_MAX;
  if (seg->kind == MM_SEGMENT_SPAN && spans_serve && _mm_span_resize(seg, p, size)) return p;
  size_t usable = _mm_usable_size(p);
  if (size <= usable && size >= usable / 2) return p; /* fits, and not wastefully */
  /* a block that grows this big may grow again: a span, which grows in place */
  void *q = spans_serve && size > usable ? mm_malloc_slow(_mm_heap_tls, size, true) : mm_malloc_inline(size);
  if (q == NULL) return NULL;
  memcpy(q, p, size < usable ? size : usable);
  mm_free_inline(p);
  return q;
}

MM_EXPORT void *mm_reallocarray(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return mm_realloc(p, total);
}
