/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: statistics.
 *
 * Live blocks are counted per class in each heap, without a shared write:
 * the fast paths change only page->used, and the owner adds each page's
 * change to its heap's counters (mm_stats_count_page) on its slow paths:
 * when the page runs dry, fills, leaves the heap, at the thread's exit, and
 * for the calling thread's whole heap at every query, so a thread sees its
 * own mallocs and frees exactly; another running thread's figures lag by
 * what its current pages did since they were last counted.  A free by a
 * thread that does not own the block counts it out at once, in its own
 * heap, so that the fast paths never count (decision 0041: statistics counted
 * on the slow paths).  mm_stats_get sums the heaps.  OS-level
 * figures (mapped bytes, segments, large blocks) change on slow paths only
 * and are shared atomics.  The peak of bytes in use is sampled (a sum that
 * reads every heap) whenever a segment or a large block is taken, and on
 * every query. */
#include "internal.h"

static uintptr_t mm_stat_mapped, mm_stat_mapped_peak;
static uintptr_t mm_stat_segments;
static uintptr_t mm_stat_large_count, mm_stat_large_bytes;
static uintptr_t mm_stat_in_use_peak;
static uintptr_t mm_stat_orphan_blocks[MM_SIZE_CLASS_COUNT]; /* frees by threads without a heap */

void _mm_stats_mapped(intptr_t bytes) {
  uintptr_t now = mm_atomic_fetch_add(&mm_stat_mapped, (uintptr_t)bytes) + (uintptr_t)bytes;
  if (bytes > 0) mm_atomic_raise(&mm_stat_mapped_peak, now);
}

void _mm_stats_segments(intptr_t count) {
  mm_atomic_fetch_add(&mm_stat_segments, (uintptr_t)count);
}

void _mm_stats_large(intptr_t count, intptr_t bytes) {
  mm_atomic_fetch_add(&mm_stat_large_count, (uintptr_t)count);
  mm_atomic_fetch_add(&mm_stat_large_bytes, (uintptr_t)bytes);
  if (bytes > 0) _mm_stats_update_peak();
}

/* Usable bytes of the large blocks in use. */
size_t _mm_stats_large_bytes(void) {
  return mm_atomic_load_relaxed(&mm_stat_large_bytes);
}

void _mm_stats_orphan_free(unsigned size_class) {
  mm_atomic_fetch_add(&mm_stat_orphan_blocks[size_class], (uintptr_t)-1);
}

/* Live blocks of a class over all heaps; reads of other threads' counters
 * are racy by design (word-sized, so never torn). */
static intptr_t mm_stats_class_blocks(unsigned c) {
  intptr_t n = (intptr_t)mm_atomic_load_relaxed(&mm_stat_orphan_blocks[c]);
  for (mm_heap_t *h = (mm_heap_t *)mm_atomic_load_acquire((uintptr_t *)&_mm_heaps_all); h != NULL; h = h->all_next)
    n += ((volatile intptr_t *)h->stats.blocks)[c];
  return n;
}

static intptr_t mm_stats_class_pages(unsigned c) {
  intptr_t n = 0;
  for (mm_heap_t *h = (mm_heap_t *)mm_atomic_load_acquire((uintptr_t *)&_mm_heaps_all); h != NULL; h = h->all_next)
    n += ((volatile intptr_t *)h->stats.pages)[c];
  return n;
}

/* Counts every page of the heap; only its owner may call this. */
void _mm_stats_count_heap(mm_heap_t *heap) {
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++)
    for (mm_page_t *page = heap->queues[c].first; page != NULL; page = page->next) mm_stats_count_page(heap, page);
  for (mm_page_t *page = heap->full.first; page != NULL; page = page->next) mm_stats_count_page(heap, page);
}

static size_t mm_stats_in_use(void) {
  if (_mm_heap_tls != &_mm_heap_empty) _mm_stats_count_heap(_mm_heap_tls);
  intptr_t bytes = (intptr_t)mm_atomic_load_relaxed(&mm_stat_large_bytes);
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++)
    bytes += mm_stats_class_blocks(c) * (intptr_t)mm_size_class_size(c);
  return bytes < 0 ? 0 : (size_t)bytes;
}

void _mm_stats_update_peak(void) {
  mm_atomic_raise(&mm_stat_in_use_peak, mm_stats_in_use());
}

MM_EXPORT void mm_stats_get(mm_stats_t *out) {
  if (out == NULL) return;
  out->bytes_in_use = mm_stats_in_use();
  mm_atomic_raise(&mm_stat_in_use_peak, out->bytes_in_use);
  out->bytes_in_use_peak = mm_atomic_load_relaxed(&mm_stat_in_use_peak);
  out->bytes_mapped = mm_atomic_load_relaxed(&mm_stat_mapped);
  out->bytes_mapped_peak = mm_atomic_load_relaxed(&mm_stat_mapped_peak);
  out->segments = mm_atomic_load_relaxed(&mm_stat_segments);
  out->large_blocks = mm_atomic_load_relaxed(&mm_stat_large_count);
  out->large_bytes = mm_atomic_load_relaxed(&mm_stat_large_bytes);
}

MM_EXPORT void mm_stats_print(FILE *out) {
  if (out == NULL) out = stderr;
  mm_stats_t s;
  mm_stats_get(&s);
  fprintf(out, "manymalloc statistics\n");
  fprintf(out, "  in use       %12zu bytes (peak %zu)\n", s.bytes_in_use, s.bytes_in_use_peak);
  fprintf(out, "  mapped       %12zu bytes (peak %zu)\n", s.bytes_mapped, s.bytes_mapped_peak);
  fprintf(out, "  segments     %12zu\n", s.segments);
  fprintf(out, "  large blocks %12zu\n", s.large_blocks);
  fprintf(out, "  %10s %12s %8s\n", "block size", "live blocks", "pages");
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) {
    intptr_t blocks = mm_stats_class_blocks(c), pages = mm_stats_class_pages(c); /* counted by mm_stats_get */
    if (blocks != 0 || pages != 0)
      fprintf(out, "  %10zu %12zd %8zd\n", mm_size_class_size(c), blocks, pages);
  }
}
