/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: internal declarations and the inline fast paths.
 *
 * malloc and free are two short inline functions here, shared by the mm_*
 * entry points (alloc.c, free.c) and the standard names (alloc-override.c).
 * Anything that is not the common case is a named out-of-line function. */
#ifndef MM_CPU_INTERNAL_H
#define MM_CPU_INTERNAL_H

#include <stdio.h>
#include <string.h>

#include "types.h"
#include "common/atomic.h"
#include "manymalloc/manymalloc.h"

#define MM_EXPORT   __attribute__((visibility("default")))
#define MM_NOINLINE __attribute__((noinline))
#define mm_likely(x)   __builtin_expect(!!(x), 1)
#define mm_unlikely(x) __builtin_expect(!!(x), 0)

/* Invariants checked at run time where MM_ASSERTS is defined: in the
 * sanitizer and debug builds (src/cpu/CMakeLists.txt), never in Release. */
#if defined(MM_ASSERTS)
#define MM_ASSERT(cond) (mm_likely(cond) ? (void)0 : _mm_assert_fail(#cond, __FILE__, __LINE__))
#else
#define MM_ASSERT(cond) ((void)0)
#endif

/* ---- options.c ---- */
typedef struct mm_options_s {
  bool verbose;          /* MANYMALLOC_VERBOSE: print statistics at exit */
  bool checked;          /* MANYMALLOC_CHECKED: validate every free */
  bool purge;            /* MANYMALLOC_PURGE: give unused memory back to the OS (madvise) */
  bool shrink;           /* MANYMALLOC_SHRINK: also from inside pages, to match growth near the peak, and from pages as they empty (shrink.c) */
  size_t shrink_threads; /* MANYMALLOC_SHRINK_THREADS: ... while at most this many threads have heaps */
  size_t shrink_rate;    /* MANYMALLOC_SHRINK_RATE: ... at most this many MiB a second per heap (0: no limit) */
  size_t purge_delay;    /* MANYMALLOC_PURGE_DELAY: ms an emptied segment stays as it is before that */
  size_t segment_cache;  /* MANYMALLOC_SEGMENT_CACHE: empty segments kept mapped */
  bool large_hugepages;  /* MANYMALLOC_LARGE_HUGEPAGES (default 1): advise large blocks' mappings for transparent huge pages */
} mm_options_t;
extern mm_options_t _mm_options;
void _mm_options_init(void);

/* ---- os.c: the only calls to mmap/munmap/madvise/mremap ---- */
void *_mm_os_alloc(size_t size);
void *_mm_os_alloc_aligned(size_t size, size_t alignment, size_t offset);
void *_mm_os_reserve(size_t size);
void  _mm_os_free(void *p, size_t size);
void  _mm_os_purge(void *p, size_t size);
void  _mm_os_advise_hugepages(void *p, size_t size);
extern __thread size_t _mm_os_released_by_thread; /* bytes this thread unmapped or purged (mm_collect) */
bool  _mm_os_resize(void *p, size_t old_size, size_t new_size);
uint64_t _mm_os_clock_ms(void);
void *_mm_os_move_aligned(void *p, size_t old_size, size_t new_size, size_t alignment);

/* ---- init.c ---- */
extern __thread mm_heap_t *_mm_heap_tls __attribute__((tls_model("initial-exec")));
extern mm_heap_t _mm_heap_empty;
extern const mm_page_t _mm_page_empty;
mm_heap_t *_mm_thread_init(void);
mm_heap_t *_mm_thread_init_on_free(void);
bool _mm_few_threads(void);

/* ---- heap.c ---- */
mm_heap_t *_mm_heap_acquire(void);
void _mm_heap_release(mm_heap_t *heap);
void _mm_heap_collect(mm_heap_t *heap, bool release_all);
void _mm_heap_delayed_drain(mm_heap_t *heap);
void _mm_heap_delayed_push(mm_heap_t *heap, mm_block_t *block);
mm_page_t *_mm_heap_find_page(mm_heap_t *heap, unsigned size_class);
void _mm_heap_queue_remove(mm_heap_t *heap, mm_page_t *page);
void _mm_heap_queue_push_front(mm_heap_t *heap, mm_page_t *page);
void _mm_heap_page_unfull(mm_heap_t *heap, mm_page_t *page);
void _mm_heap_direct_follow(mm_heap_t *heap, unsigned size_class, mm_page_t *page);
void _mm_heaps_init(void);
extern mm_heap_t *_mm_heaps_all;

/* ---- page.c ---- */
void _mm_page_init(mm_page_t *page, mm_segment_t *seg, unsigned size_class);
void _mm_page_collect(mm_page_t *page);
bool _mm_page_extend(mm_page_t *page);
bool _mm_page_try_mark_full(mm_page_t *page);
bool _mm_page_try_clear_delayed(mm_page_t *page);
void _mm_page_retire(mm_page_t *page);
void _mm_heap_release_spares(mm_heap_t *heap);
void _mm_page_free_remote(mm_segment_t *seg, mm_page_remote_t *remote, mm_block_t *block);
void _mm_page_free_local_slow(mm_segment_t *seg, mm_page_t *page, mm_block_t *block);

/* ---- purge.c: what goes back to the OS, and when ---- */
#define MM_GROWN_BATCH 8      /* 4 KiB units of growth per give-back */
#define MM_NEAR_HIGH   4      /* faulting in again counts as growth within 1/4 of the most bytes in use */
#define MM_RISING_CALLS 8     /* ... while that most rose within the last 8 give-backs */
#define MM_SHRINK_EMPTY_MIN 3 /* OS pages an empty page must hold to give them back */
void _mm_purge_grown(mm_heap_t *heap, size_t units);
void _mm_purge_refaulted(mm_heap_t *heap, size_t units);
void _mm_purge_growth(mm_heap_t *heap);
void _mm_purge_page_emptied(mm_page_t *page);
void _mm_purge_schedule(mm_heap_t *heap, uint64_t at);
void _mm_purge_warm_schedule(uint64_t at);
void _mm_purge_expired(mm_heap_t *heap, uint64_t now);
void _mm_purge_collect(mm_heap_t *heap, bool release_all);
void _mm_purge_caches(void);
extern uintptr_t _mm_purge_warm_due; /* ms: exited threads' segments or cached large mappings next due to go back; 0: none */

/* Whether a batch of growth (or faults) waits to be matched. */
static inline bool mm_purge_growth_due(const mm_heap_t *heap) {
  return heap->purge.grown + heap->purge.refaulted >= MM_GROWN_BATCH;
}

/* Whether some memory, the heap's or the process's, waits for its delay. */
static inline bool mm_purge_any_due(const mm_heap_t *heap) {
  return heap->purge.due != 0 || mm_atomic_load_relaxed(&_mm_purge_warm_due) != 0;
}

/* When memory left unused at `now` may go back (MANYMALLOC_PURGE_DELAY). */
static inline uint64_t mm_purge_delay_end(uint64_t now) {
  return now + _mm_options.purge_delay;
}

/* ---- shrink.c ---- */
size_t _mm_heap_shrink_pages(mm_heap_t *heap, size_t units);
bool _mm_page_unshrink(mm_page_t *page);
size_t _mm_page_resident_units(const mm_page_t *page);
void _mm_page_shrink_all(mm_page_t *page);
void _mm_page_shrunk_reset(mm_page_t *page);

/* ---- segment.c ---- */
unsigned _mm_segment_kind_for(unsigned size_class);
mm_segment_t *_mm_segment_alloc(mm_heap_t *heap, unsigned kind);
size_t _mm_segment_purge_free_slots(mm_heap_t *heap, size_t units);
size_t _mm_segment_purge_slot(mm_segment_t *seg, unsigned index);
void _mm_segment_free(mm_heap_t *heap, mm_segment_t *seg);
mm_page_t *_mm_segment_page_alloc(mm_heap_t *heap, unsigned size_class);
void _mm_segment_page_free(mm_heap_t *heap, mm_page_t *page);
void _mm_segment_cache_init(void);
void _mm_segment_cache_purge(void);
void _mm_segment_purge_expired(mm_heap_t *heap, uint64_t now);
void _mm_segment_retired_release(mm_heap_t *heap);
bool _mm_segment_retired_resident(const mm_heap_t *heap, unsigned kind);
void _mm_segment_retired_hand_over(mm_heap_t *heap);
void _mm_segment_warm_expire(uint64_t now, bool all);
uint8_t *_mm_segment_page_area(const mm_segment_t *seg, size_t index, size_t *size);

/* ---- span.c ---- */
void *_mm_span_alloc(mm_heap_t *heap, size_t size, size_t alignment);
void _mm_span_free(mm_heap_t *heap, mm_segment_t *seg, void *p);
void _mm_span_free_remote(mm_segment_t *seg, void *p);
unsigned _mm_span_block_class(mm_segment_t *seg, const void *p);
bool _mm_span_resize(mm_segment_t *seg, void *p, size_t size);
size_t _mm_span_usable_size(mm_segment_t *seg, const void *p);
void _mm_span_collect(mm_heap_t *heap);
size_t _mm_span_purge(mm_heap_t *heap, size_t units, bool whole_runs);
void _mm_span_purge_expired(mm_heap_t *heap, uint64_t now);

/* ---- large.c ---- */
void *_mm_large_alloc(size_t size, size_t alignment, bool zero);
size_t _mm_large_cache_purge(void);
void _mm_large_free(mm_segment_t *seg);
void _mm_large_cache_expire(uint64_t now);
void *_mm_large_realloc(mm_segment_t *seg, void *p, size_t size);

/* ---- alloc.c / free.c slow paths ---- */
void *_mm_malloc_generic(mm_heap_t *heap, size_t size) MM_NOINLINE;
void _mm_free_generic(mm_segment_t *seg, mm_page_t *page, void *p) MM_NOINLINE;
void *_mm_malloc_aligned(size_t size, size_t alignment);
size_t _mm_usable_size(const void *p);

/* ---- checked.c ---- */
void _mm_checked_init(void);
void _mm_checked_on_map(mm_segment_t *seg);
void _mm_checked_on_unmap(mm_segment_t *seg, bool large_block);
void _mm_checked_on_malloc(mm_segment_t *seg, void *p);
void _mm_checked_on_aligned(mm_segment_t *seg, void *block, void *p);
void _mm_checked_free(void *p);
void _mm_checked_realloc(const void *p);
void _mm_fatal_pointer(const char *what, const void *p) __attribute__((noreturn));
void _mm_assert_fail(const char *cond, const char *file, int line) __attribute__((noreturn));

/* ---- stats.c ---- */
void _mm_stats_mapped(intptr_t bytes);
void _mm_stats_segments(intptr_t count);
void _mm_stats_large(intptr_t count, intptr_t bytes);
size_t _mm_stats_large_bytes(void);
void _mm_stats_orphan_free(unsigned size_class);
void _mm_stats_update_peak(void);
void _mm_stats_count_heap(mm_heap_t *heap);

/* Adds the change of a page's live blocks since it was last counted to its
 * heap's statistics: the fast paths change only page->used. */
static inline void mm_stats_count_page(mm_heap_t *heap, mm_page_t *page) {
  heap->stats.blocks[page->size_class] += (int32_t)page->used - page->used_counted;
  page->used_counted = (int32_t)page->used;
}

/* ---- inline helpers ---- */
static inline mm_segment_t *mm_segment_of(const void *p) {
  /* p - 1: a large block aligned to the segment size sits one segment past its header */
  return (mm_segment_t *)(((uintptr_t)p - 1) & ~MM_SEGMENT_MASK);
}

static inline mm_page_t *mm_segment_page_of(mm_segment_t *seg, const void *p) {
  return &seg->pages[((uintptr_t)p - (uintptr_t)seg) >> seg->page_shift];
}

/* The remote side of the page that holds p, found without reading the
 * page's descriptor (the owner's line). */
static inline mm_page_remote_t *mm_segment_remote_of(mm_segment_t *seg, const void *p) {
  return &seg->remote[((uintptr_t)p - (uintptr_t)seg) >> seg->page_shift];
}

/* Distance between the blocks of a class.  malloc and free work on a block's
 * first cache line, and a line's L1 set is fixed by address bits 6-11, so
 * blocks of a size that is a multiple of 1-4 KiB put all their heads on a
 * few sets and evict one another.  One line of padding spreads the heads of
 * classes from 2 KiB over every set, for a few percent more memory, up to
 * 32 KiB; beyond, a page holds few blocks and the pad would cost one of
 * them (decision 0021: cache-line padding of 2-32 KiB classes).
 * (Blocks of padded classes are only 64-aligned; alloc-aligned.c carves
 * larger alignments inside them.) */
static inline size_t mm_class_stride(unsigned size_class) {
  size_t size = mm_size_class_size(size_class);
  return size >= MM_COLOR_MIN && size <= MM_COLOR_MAX ? size + MM_COLOR_PAD : size;
}

/* The block of a page that holds p (p may be an inner aligned address). */
static inline mm_block_t *mm_page_block_of(const mm_page_t *page, const void *p) {
  size_t offset = (size_t)((uintptr_t)p - (uintptr_t)page->start);
  return (mm_block_t *)(page->start + offset / page->stride * page->stride);
}

/* Whether `block` is the start of a block the page carved. */
static inline bool mm_page_holds_block(const mm_page_t *page, const void *block) {
  size_t offset = (size_t)((uintptr_t)block - (uintptr_t)page->start);
  return (uintptr_t)block >= (uintptr_t)page->start && offset % page->stride == 0 && offset / page->stride < page->capacity;
}

/* `bytes` rounded up to whole OS pages (0 when that wraps around). */
static inline size_t mm_os_page_round(size_t bytes) {
  return (bytes + MM_OS_PAGE_SIZE - 1) & ~(MM_OS_PAGE_SIZE - 1);
}

/* Whether the page gave back OS pages holding free blocks (shrink.c). */
static inline bool mm_page_holds_out(const mm_page_t *page) {
  return mm_segment_of(page->start)->page_shrunk[page->index].held_out != 0;
}

/* Whether carving more of the page touches memory its slot never held
 * (rather than memory a page before it carved and left resident). */
static inline bool mm_page_carve_grows(const mm_page_t *page) {
  const mm_segment_t *seg = mm_segment_of(page->start);
  if (mm_page_holds_out(page)) return false; /* it links those first */
  return mm_os_page_round((size_t)page->capacity * page->stride) >= seg->slot_memory[page->index].touched;
}

/* The bit of heap->borrowing for a class whose heap->direct_wide entries
 * may name a lender's page (0 for any other class). */
static inline uint32_t mm_heap_borrow_bit(unsigned size_class) {
  unsigned i = size_class - MM_DIRECT_CLASS_FIRST;
  return i < MM_DIRECT_CLASS_LENDING ? (uint32_t)1 << i : 0;
}

static inline mm_block_t *mm_xthread_list(uintptr_t x) { return (mm_block_t *)(x & MM_XTHREAD_LIST_MASK); }
static inline uint32_t mm_xthread_count(uintptr_t x) { return (uint32_t)(x >> MM_XTHREAD_COUNT_SHIFT); }
static inline mm_delayed_t mm_xthread_tag(uintptr_t x) { return (mm_delayed_t)(x & MM_DELAYED_MASK); }

/* ---- the fast paths ---- */
static inline void *mm_malloc_inline(size_t size) {
  mm_heap_t *heap = _mm_heap_tls;
  if (mm_likely(size <= MM_MEDIUM_BLOCK_MAX)) {
    mm_page_t *page = size <= MM_DIRECT_MAX ? heap->direct[(size + MM_ALIGNMENT - 1) / MM_ALIGNMENT]
                                            : heap->direct_wide[(size + (1u << MM_DIRECT_WIDE_SHIFT) - 1) >> MM_DIRECT_WIDE_SHIFT];
    mm_block_t *block = page->free;
    if (mm_likely(block != NULL)) {
      mm_block_t *next = block->next;
      page->free = next;
      page->used++;
      __builtin_prefetch(next, 1); /* the next malloc's block: a remote free may have left it in another core */
      return block;
    }
  }
  return _mm_malloc_generic(heap, size);
}

static inline void mm_free_inline(void *p) {
  if (mm_unlikely(_mm_options.checked)) {
    _mm_checked_free(p); /* validates before anything reads the pointer's header */
    return;
  }
  if (mm_unlikely(p == NULL)) return;
  mm_segment_t *seg = mm_segment_of(p);
  mm_page_t *page = mm_segment_page_of(seg, p);
  mm_heap_t *heap = _mm_heap_tls;
  if (mm_likely(seg->heap == heap && page->flags == 0)) {
    mm_block_t *block = (mm_block_t *)p;
    MM_ASSERT(page->used > 0 && mm_page_holds_block(page, block));
    block->next = page->free;
    page->free = block;
    if (mm_unlikely(--page->used == 0)) _mm_page_retire(page);
    return;
  }
  _mm_free_generic(seg, page, p);
}

#endif /* MM_CPU_INTERNAL_H */
