/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: thread heaps.
 *
 * A heap is the thread cache: per size class a queue of pages whose first
 * page feeds the fast path (through heap->direct for small sizes), a queue
 * of full pages, and the list of blocks freed remotely into full pages.
 * When its thread exits the heap is orphaned whole onto a central seq_fifo;
 * the next new thread adopts it, pages, segments and pending frees included.
 * Heaps are never unmapped, so a remote thread may always touch one. */
#include "internal.h"
#include "common/seq_fifo.h"

mm_heap_t *_mm_heaps_all; /* every heap ever created, linked by all_next (push only) */

/* Heaps without an owner: those that own pages (adopted first, so their
 * memory is used again) and those that own none. */
#define MM_ORPHAN_CAPACITY 1024
static mm_fifo_cell_t mm_orphan_cells[MM_ORPHAN_CAPACITY];
static mm_fifo_cell_t mm_idle_cells[MM_ORPHAN_CAPACITY];
static mm_seq_fifo_t mm_orphans;
static mm_seq_fifo_t mm_idle;

void _mm_heaps_init(void) {
  mm_seq_fifo_init(&mm_orphans, mm_orphan_cells, MM_ORPHAN_CAPACITY);
  mm_seq_fifo_init(&mm_idle, mm_idle_cells, MM_ORPHAN_CAPACITY);
}

/* ---------------------------------------------------------------------------
 * Page queues
 * ------------------------------------------------------------------------- */

static mm_page_queue_t *mm_heap_queue_of(mm_heap_t *heap, mm_page_t *page) {
  return page->in_full ? &heap->full : &heap->queues[page->size_class];
}

/* The page the fast path takes class `size_class` (1-32 KiB) from: the
 * entry of its largest size; every entry of its sizes names the same. */
static mm_page_t *mm_heap_direct_wide_of(mm_heap_t *heap, unsigned size_class) {
  return heap->direct_wide[mm_size_class_size(size_class) >> MM_DIRECT_WIDE_SHIFT];
}

/* Points the entries of every size of `size_class` (1-32 KiB) at `page`. */
static void mm_heap_direct_wide_set(mm_heap_t *heap, unsigned size_class, mm_page_t *page) {
  size_t lo = mm_size_class_size(size_class - 1) >> MM_DIRECT_WIDE_SHIFT;
  size_t hi = mm_size_class_size(size_class) >> MM_DIRECT_WIDE_SHIFT;
  for (size_t i = lo + 1; i <= hi; i++) heap->direct_wide[i] = page;
}

/* Points the direct entries of a class (heap->direct by size up to 1 KiB,
 * heap->direct_wide by size/128 up to 32 KiB) at the first page of its
 * queue.  In checked mode they stay on the empty page so every malloc takes
 * the slow path, where the allocation is recorded. */
static inline void mm_heap_direct_update(mm_heap_t *heap, unsigned size_class) {
  size_t size = mm_size_class_size(size_class);
  if (size > MM_MEDIUM_BLOCK_MAX || _mm_options.checked) return;
  mm_page_t *page = heap->queues[size_class].first;
  if (page == NULL) page = (mm_page_t *)&_mm_page_empty;
  if (size > MM_DIRECT_MAX) {
    mm_heap_direct_wide_set(heap, size_class, page);
    heap->borrowing &= ~mm_heap_borrow_bit(size_class);
    return;
  }
  size_t lo = size_class == 0 ? 0 : mm_size_class_size(size_class - 1) / MM_ALIGNMENT + 1;
  for (size_t i = lo; i <= size / MM_ALIGNMENT; i++) heap->direct[i] = page;
}

/* Points the fast path of a class of 1-16 KiB at the page malloc just took
 * a block from: a page of a larger class that lends to it (mm_heap_borrow),
 * until that one runs dry or leaves its queue, then its own first page. */
void _mm_heap_direct_follow(mm_heap_t *heap, unsigned size_class, mm_page_t *page) {
  uint32_t bit = mm_heap_borrow_bit(size_class);
  if (bit == 0 || _mm_options.checked) return;
  mm_heap_direct_wide_set(heap, size_class, page);
  if (page->size_class != size_class) heap->borrowing |= bit;
  else heap->borrowing &= ~bit;
}

/* A page leaving its queue (for full, its segment or another class) may
 * no longer feed the fast path of a class that borrowed from it. */
static void mm_heap_direct_unborrow(mm_heap_t *heap, const mm_page_t *page) {
  for (uint32_t m = heap->borrowing; m != 0; m &= m - 1) {
    unsigned c = MM_DIRECT_CLASS_FIRST + (unsigned)__builtin_ctz(m);
    if (mm_heap_direct_wide_of(heap, c) != page) continue;
    mm_page_t *own = heap->queues[c].first;
    mm_heap_direct_wide_set(heap, c, own != NULL ? own : (mm_page_t *)&_mm_page_empty);
    heap->borrowing &= ~mm_heap_borrow_bit(c);
  }
}

void _mm_heap_queue_remove(mm_heap_t *heap, mm_page_t *page) {
  mm_page_queue_t *q = mm_heap_queue_of(heap, page);
  MM_ASSERT(page->prev != NULL ? page->prev->next == page : q->first == page); /* in this queue */
  MM_ASSERT(page->next != NULL ? page->next->prev == page : q->last == page);
  bool was_first = q->first == page;
  if (page->prev != NULL) page->prev->next = page->next;
  else q->first = page->next;
  if (page->next != NULL) page->next->prev = page->prev;
  else q->last = page->prev;
  page->next = page->prev = NULL;
  if (page->in_full) return;
  if (was_first) mm_heap_direct_update(heap, page->size_class);
  if (heap->borrowing != 0) mm_heap_direct_unborrow(heap, page);
}

void _mm_heap_queue_push_front(mm_heap_t *heap, mm_page_t *page) {
  mm_page_queue_t *q = mm_heap_queue_of(heap, page);
  MM_ASSERT(page->next == NULL && page->prev == NULL && q->first != page); /* in no queue */
  page->prev = NULL;
  page->next = q->first;
  if (q->first != NULL) q->first->prev = page;
  else q->last = page;
  q->first = page;
  if (!page->in_full) mm_heap_direct_update(heap, page->size_class);
}

static void mm_heap_queue_push_back(mm_heap_t *heap, mm_page_t *page) {
  mm_page_queue_t *q = mm_heap_queue_of(heap, page);
  if (q->last == NULL) {
    _mm_heap_queue_push_front(heap, page);
    return;
  }
  page->next = NULL;
  page->prev = q->last;
  q->last->next = page;
  q->last = page;
}

static void mm_heap_page_to_full(mm_heap_t *heap, mm_page_t *page) {
  mm_stats_count_page(heap, page);
  _mm_heap_queue_remove(heap, page);
  page->in_full = 1;
  _mm_heap_queue_push_front(heap, page);
}

/* Moves a page from heap->full back to the end of its class queue, unless
 * a remote thread is still notifying about it (the drain of delayed_free
 * retries).  At the end, not the front: a page with one free block would
 * otherwise become current, fill at once and go back to full, two CAS per
 * block. */
void _mm_heap_page_unfull(mm_heap_t *heap, mm_page_t *page) {
  MM_ASSERT(page->in_full);
  if (!_mm_page_try_clear_delayed(page)) return;
  _mm_heap_queue_remove(heap, page);
  page->in_full = 0;
  mm_heap_queue_push_back(heap, page);
}

/* ---------------------------------------------------------------------------
 * Finding a page with a free block
 * ------------------------------------------------------------------------- */

/* A fresh page for the class.  For blocks above 16 KiB, preferably an empty
 * page that another class keeps (_mm_page_retire) in a medium segment, whose
 * carved memory is still resident: a program whose sizes drift through
 * classes, as compilers' and interpreters' do, then reuses it instead of
 * touching new memory, and keeps no freed block resident in each class.
 * Small pages stay with their class, which comes back soon to carve a page
 * afresh (decision 0047: which empty pages other classes take over).  Checked
 * mode leaves kept pages alone, so that a second free of one of their
 * blocks is still told from a wild pointer. */
static mm_page_t *mm_heap_page_alloc(mm_heap_t *heap, unsigned size_class) {
  unsigned kind = _mm_segment_kind_for(size_class);
  if (kind == MM_SEGMENT_SMALL || _mm_options.checked) return _mm_segment_page_alloc(heap, size_class);
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) {
    mm_page_t *page = heap->queues[c].first;
    if (page == NULL || page->used != 0) continue;
    mm_segment_t *seg = mm_segment_of(page->start);
    if (seg->kind != kind) continue;
    mm_stats_count_page(heap, page);
    _mm_heap_queue_remove(heap, page);
    heap->stats.pages[c]--;
    heap->stats.pages[size_class]++;
    _mm_page_init(page, seg, size_class);
    return page;
  }
  return _mm_segment_page_alloc(heap, size_class);
}

/* Before a class of 2-32 KiB blocks grows the heap (carves memory its page
 * slot never held, or takes a fresh page), a free block of a larger class
 * of pages, up to MM_BORROW_CLASSES up, in the first page of its queue,
 * serves instead: it is resident already.  Pages serve one class, so a
 * free block of one size is otherwise of no use to the sizes below, where
 * glibc coalesces and splits.  The block goes back to its own page on free
 * (found by address) and malloc_usable_size reports its size.
 * Classes of 2-16 KiB borrow only from an empty page (a page kept for its
 * class, _mm_page_retire), and take its blocks by their fast path
 * (_mm_heap_direct_follow) until it runs dry or leaves its queue: kept empty
 * pages are the memory such programs hold free at their peak, and lending
 * only those keeps a class that churns at its high from borrowing at every
 * slow path (decision 0036: which pages lend to smaller classes).
 * Classes of 18-32 KiB borrow from any page with a free block, one block
 * at each slow path (their fast path stays on their own page).  Borrowers
 * and lenders are all padded classes (MM_COLOR_MIN up), so their blocks
 * are equally aligned. */
static mm_page_t *mm_heap_borrow(mm_heap_t *heap, unsigned size_class) {
  if (size_class < MM_BORROW_CLASS_FIRST) return NULL;
  unsigned last = size_class + MM_BORROW_CLASSES;
  if (last > MM_MEDIUM_CLASS_LAST) last = MM_MEDIUM_CLASS_LAST;
  for (unsigned c = size_class + 1; c <= last; c++) {
    mm_page_t *page = heap->queues[c].first;
    if (page != NULL && page->free != NULL && (page->used == 0 || size_class >= MM_MEDIUM_CLASS_FIRST)) return page;
  }
  return NULL;
}

/* The first page from `page` on in its queue with a quarter of its blocks
 * or more free, or NULL.  A class whose first page runs dry takes such a
 * page before it carves the first further: carving first grew the heap
 * while other pages of the class held free blocks.  A page with only a few
 * free blocks is left where it is: made current, it would fill again at
 * once (decision 0048: a quarter free before a page is taken again). */
static mm_page_t *mm_heap_queue_find_free(mm_page_t *page, bool any) {
  for (; page != NULL; page = page->next) {
    if (!any && page->used * 4 > page->capacity * 3) continue;
    if (page->free == NULL) _mm_page_collect(page);
    if (page->free != NULL) return page;
  }
  return NULL;
}

/* The first page of the class with a free block, at the front of its queue
 * (pages found full move to heap->full on the way), or before the heap grows
 * for it, a page of a larger class with a free block (mm_heap_borrow).
 * NULL only when the OS refuses memory. */
mm_page_t *_mm_heap_find_page(mm_heap_t *heap, unsigned size_class) {
  mm_page_queue_t *q = &heap->queues[size_class];
  mm_page_t *page = q->first, *lender;
  if (page != NULL) mm_stats_count_page(heap, page); /* the page the fast path used up */
  while (page != NULL) {
    mm_page_t *next = page->next;
    if (page->free == NULL) _mm_page_collect(page);
    bool held_out = page->free == NULL && mm_page_holds_out(page); /* linking those faults memory in again: any free block first */
    if (page->free == NULL && (page->capacity < page->reserved || held_out)) { /* before the page grows */
      mm_page_t *other = mm_heap_queue_find_free(next, held_out);
      if (other != NULL) page = other;
      else if (size_class >= MM_BORROW_CLASS_FIRST && mm_page_carve_grows(page) &&
               (lender = mm_heap_borrow(heap, size_class)) != NULL)
        return lender;
    }
    if (page->free != NULL || _mm_page_extend(page)) {
      if (q->first != page) {
        _mm_heap_queue_remove(heap, page);
        _mm_heap_queue_push_front(heap, page);
      }
      return page;
    }
    if (_mm_page_try_mark_full(page)) mm_heap_page_to_full(heap, page);
    else continue; /* a remote free arrived meanwhile: collect again */
    page = next;
  }
  if ((lender = mm_heap_borrow(heap, size_class)) != NULL) return lender; /* before a fresh page */
  page = mm_heap_page_alloc(heap, size_class);
  if (page == NULL) return NULL;
  _mm_page_extend(page);
  _mm_heap_queue_push_front(heap, page);
  return page;
}

/* Hands a block over to the heap that owns it (a push only: many push, the
 * owner takes the whole list at once, so there is no ABA). */
void _mm_heap_delayed_push(mm_heap_t *heap, mm_block_t *block) {
  uintptr_t head = mm_atomic_load_relaxed(&heap->delayed_free);
  do {
    block->next = (mm_block_t *)head;
  } while (!mm_atomic_cas(&heap->delayed_free, &head, (uintptr_t)block));
}

/* Frees the blocks that remote threads handed over for full pages and for
 * spans. */
void _mm_heap_delayed_drain(mm_heap_t *heap) {
  uintptr_t list = mm_atomic_exchange(&heap->delayed_free, 0);
  mm_block_t *block = (mm_block_t *)list;
  while (block != NULL) {
    mm_block_t *next = block->next;
    mm_segment_t *seg = mm_segment_of(block);
    mm_page_t *page = mm_segment_page_of(seg, block);
    if (seg->kind == MM_SEGMENT_SPAN) {
      heap->stats.blocks[_mm_span_block_class(seg, block)]++; /* already counted by its remote freer */
      _mm_span_free(heap, seg, block);
    } else if (mm_xthread_tag(mm_atomic_load_acquire(&page->remote->xthread_free)) == MM_DELAYED_BUSY) {
      _mm_heap_delayed_push(heap, block); /* its notifier still holds the page: next drain */
    } else {
      page->used_counted--; /* its remote freer took it out of the statistics */
      _mm_page_collect(page);
      _mm_page_free_local_slow(seg, page, block);
    }
    block = next;
  }
}

/* ---------------------------------------------------------------------------
 * Collection, orphaning and adoption
 * ------------------------------------------------------------------------- */

/* Merges all pending frees and returns every empty page to its segment
 * (and empty segments, retired ones too, to the cache), except the one page
 * per class that _mm_page_retire keeps, which goes too with release_all.
 * The kept empty span segment goes in any case: an orphaned heap must not
 * hold one.  With release_all (mm_collect) the resident memory of free page
 * slots and of free span runs (of MM_SPAN_PURGE_MIN units and more) goes
 * back to the OS as well; an exiting thread hands its retired segments
 * over instead. */
void _mm_heap_collect(mm_heap_t *heap, bool release_all) {
  _mm_heap_delayed_drain(heap);
  for (mm_page_t *page = heap->full.first, *next; page != NULL; page = next) {
    next = page->next;
    _mm_page_collect(page);
    if (page->free != NULL || page->capacity < page->reserved) _mm_heap_page_unfull(heap, page);
  }
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) {
    for (mm_page_t *page = heap->queues[c].first, *next; page != NULL; page = next) {
      next = page->next;
      _mm_page_collect(page);
      bool kept = page == heap->queues[c].first && next == NULL;
      if (page->used == 0 && (release_all || !kept)) {
        _mm_heap_queue_remove(heap, page);
        _mm_segment_page_free(heap, page);
      }
    }
  }
  _mm_span_collect(heap);
  _mm_purge_collect(heap, release_all);
  _mm_stats_count_heap(heap);
}

static mm_heap_t *mm_heap_create(void) {
  size_t size = mm_os_page_round(sizeof(mm_heap_t));
  mm_heap_t *heap = _mm_os_alloc(size);
  if (heap == NULL) return NULL;
  for (size_t i = 0; i < MM_DIRECT_COUNT; i++) heap->direct[i] = (mm_page_t *)&_mm_page_empty;
  for (size_t i = 0; i < MM_DIRECT_WIDE_COUNT; i++) heap->direct_wide[i] = (mm_page_t *)&_mm_page_empty;
  uintptr_t head = mm_atomic_load_relaxed((uintptr_t *)&_mm_heaps_all);
  do {
    heap->all_next = (mm_heap_t *)head;
  } while (!mm_atomic_cas((uintptr_t *)&_mm_heaps_all, &head, (uintptr_t)heap));
  return heap;
}

/* A heap for a new thread: an orphan that owns pages if there is one, else
 * an idle heap, else a fresh one. */
mm_heap_t *_mm_heap_acquire(void) {
  uintptr_t heap;
  if (mm_seq_fifo_pop(&mm_orphans, &heap)) return (mm_heap_t *)heap;
  if (mm_seq_fifo_pop(&mm_idle, &heap)) return (mm_heap_t *)heap;
  return mm_heap_create();
}

static bool mm_heap_owns_pages(const mm_heap_t *heap) {
  if (heap->span_segments != 0) return true;
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++)
    if (heap->stats.pages[c] != 0) return true;
  return false;
}

/* The owning thread is done with the heap (it no longer is _mm_heap_tls).
 * If its queue is full the heap stays unowned for good; frees into it
 * still work through the remote path. */
void _mm_heap_release(mm_heap_t *heap) {
  mm_seq_fifo_push(mm_heap_owns_pages(heap) ? &mm_orphans : &mm_idle, (uintptr_t)heap);
}
