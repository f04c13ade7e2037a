/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: pages, the core of the allocator.
 *
 * A page holds blocks of one size class and two free lists (mimalloc's
 * free-list sharding, less its local_free list): `free` feeds malloc and
 * takes the owner's frees, and the atomic `xthread_free` takes other
 * threads' frees.  Only the owner touches `free`, so the fast paths need no
 * atomic instruction; the owner merges `xthread_free` here, on its slow path.
 * `xthread_free` lies on a line of its own (mm_page_remote_t), with copies
 * of what a remote free reads, so that other threads' frees never touch
 * the owner's descriptor: with both on one line, each remote free took that
 * line from the owner's cache and the owner's next malloc missed on it.
 * The owner's frees go straight back on `free` (LIFO), so the next malloc of
 * the class gets the block just freed, still in cache (decision 0023: no
 * separate local_free list).
 *
 * A page the owner found full leaves its class queue for heap->full.  The
 * first remote free into such a page (tag MM_DELAYED_NOTIFY) also hands its
 * block to the heap's delayed_free list, so the owner finds the page again. */
#include "internal.h"

void _mm_page_init(mm_page_t *page, mm_segment_t *seg, unsigned size_class) {
  size_t area;
  page->start = _mm_segment_page_area(seg, page->index, &area);
  page->block_size = (uint32_t)mm_size_class_size(size_class);
  page->stride = (uint32_t)mm_class_stride(size_class);
  page->size_class = (uint8_t)size_class;
  page->reserved = (uint16_t)(area / page->stride);
  page->capacity = 0;
  page->used = 0;
  page->used_counted = 0;
  page->flags = 0;
  page->free = NULL;
  mm_page_remote_t *remote = page->remote;
  mm_atomic_store_relaxed(&remote->xthread_free, 0);
  remote->size_class = (uint8_t)size_class;
  remote->has_aligned = 0;
  page->next = page->prev = NULL;
  _mm_page_shrunk_reset(page);
}

/* How many blocks of a page's first OS page go to the back of its free
 * list, so that the blocks handed out first, which lazy carving and LIFO
 * reuse make the hottest of a class with few live blocks, start at a
 * "color" (Bonwick's slab coloring) instead of the slot start.  Slots start
 * at multiples of 128 KiB, so uncolored the first block of every page has
 * the same 4 KiB offset, hence the same L1 set and the same low address
 * bits that store-to-load forwarding compares first, as the first blocks of
 * every other page and the segment header's first line, which every free
 * reads, and the hot blocks of a few classes evict one another (decision
 * 0022: slab coloring of page starts).  The color lies past the header's hot lines (segment
 * fields and page descriptors) and differs by 7 lines between neighbouring
 * pages and segments.  Only the order changes: the blocks before the color
 * are carved too, so no memory or alignment is lost. */
#define MM_COLOR_FIRST ((offsetof(mm_segment_t, pages[MM_MAX_PAGES]) + MM_CACHE_LINE - 1) & ~(MM_CACHE_LINE - 1))
#define MM_COLOR_COUNT ((MM_OS_PAGE_SIZE - MM_COLOR_FIRST) / MM_CACHE_LINE)
#define MM_COLOR_STEP  7
_Static_assert(MM_COLOR_COUNT % MM_COLOR_STEP != 0, "neighbouring pages would repeat colors early");

static size_t mm_page_color_skip(const mm_page_t *page, size_t n) {
  uintptr_t seg = (uintptr_t)mm_segment_of(page->start);
  size_t k = page->index + (seg >> MM_SEGMENT_SHIFT) * MM_MAX_PAGES;
  size_t color = MM_COLOR_FIRST + k * MM_COLOR_STEP % MM_COLOR_COUNT * MM_CACHE_LINE;
  size_t skip = (color + page->stride - 1) / page->stride; /* slots start OS-page aligned */
  return skip < n ? skip : n > 0 ? n - 1 : 0;
}

/* Links `count` blocks from `from` in address order in front of `tail`. */
static mm_block_t *mm_page_link(uint8_t *from, size_t count, size_t stride, mm_block_t *tail) {
  if (count == 0) return tail;
  uint8_t *b = from;
  for (size_t i = 1; i < count; i++, b += stride) ((mm_block_t *)b)->next = (mm_block_t *)(b + stride);
  ((mm_block_t *)b)->next = tail;
  return (mm_block_t *)from;
}

/* Links the untouched blocks that start in the next OS page into `free`
 * (at least one). */
static bool mm_page_carve(mm_page_t *page) {
  size_t left = page->reserved - page->capacity;
  if (left == 0) return false;
  size_t stride = page->stride;
  uint8_t *first = page->start + page->capacity * stride;
  uintptr_t boundary = ((uintptr_t)first + MM_OS_PAGE_SIZE) & ~(uintptr_t)(MM_OS_PAGE_SIZE - 1);
  size_t n = (boundary - (uintptr_t)first + stride - 1) / stride;
  if (n > left) n = left;
  /* the first OS page starts at its color; a block that reaches into the
     next OS page comes last, so that it commits that page only when needed */
  size_t inside = (boundary - (uintptr_t)first) / stride;
  if (inside > n) inside = n;
  size_t skip = page->capacity == 0 ? mm_page_color_skip(page, inside) : 0;
  mm_block_t *tail = mm_page_link(first + inside * stride, n - inside, stride, page->free);
  tail = mm_page_link(first, skip, stride, tail);
  page->free = mm_page_link(first + skip * stride, inside - skip, stride, tail);
  page->capacity += (uint16_t)n;
  MM_ASSERT(page->capacity <= page->reserved);
  return true;
}

/* Links blocks the page held out when it shrank (shrink.c), or else carves
 * the page one OS page at a time, so that it commits its memory as it is
 * used.  Where the slot had never held that much, the heap grew (and gives
 * back as much elsewhere, _mm_purge_grown); where the slot gave its memory
 * back while free (_mm_segment_purge_free_slots), it faults in again
 * (_mm_purge_refaulted).
 * One OS page at a time, because a larger step leaves linked but unused
 * blocks resident in every class in use, which small programs with many
 * classes feel (decision 0046: carving one OS page at a time). */
bool _mm_page_extend(mm_page_t *page) {
  if (_mm_page_unshrink(page)) return true; /* memory it gave back first */
  if (!mm_page_carve(page)) return false;
  mm_segment_t *seg = mm_segment_of(page->start);
  mm_slot_memory_t *memory = &seg->slot_memory[page->index]; /* kept out of the page's one line */
  uint32_t carved = (uint32_t)mm_os_page_round((size_t)page->capacity * page->stride);
  if (carved > memory->purged_from && memory->purged_from < memory->purged_to) {
    uint32_t end = carved < memory->purged_to ? carved : memory->purged_to;
    _mm_purge_refaulted(seg->heap, (end - memory->purged_from) / MM_OS_PAGE_SIZE);
    memory->purged_from = end;
  }
  if (carved > memory->touched) {
    size_t grown = carved - mm_os_page_round(memory->touched);
    memory->touched = carved;
    if (grown > 0) _mm_purge_grown(seg->heap, grown / MM_OS_PAGE_SIZE);
  }
  return true;
}

/* Moves the remote frees into `free`, keeping the tag, and counts them out
 * of `used` (and out of `used_counted`: each freeing thread took its block
 * out of the statistics already).  The count comes with the list, so the
 * list is walked only when `free` is not empty: the blocks were last
 * written by other cores, and walking them costs a serial cache miss per
 * block. */
void _mm_page_collect(mm_page_t *page) {
  uintptr_t *xthread_free = &page->remote->xthread_free;
  uintptr_t x = mm_atomic_load_relaxed(xthread_free);
  if (mm_xthread_list(x) == NULL) return;
  while (!mm_atomic_cas(xthread_free, &x, x & MM_DELAYED_MASK)) {}
  mm_block_t *head = mm_xthread_list(x), *tail = head;
  if (page->free != NULL) {
    while (tail->next != NULL) tail = tail->next;
    tail->next = page->free;
  }
  page->free = head;
  uint32_t n = mm_xthread_count(x);
  MM_ASSERT(n <= page->used); /* each was handed out, and counted, before it was freed */
  page->used -= n;
  page->used_counted -= (int32_t)n;
}

/* Arms the notification for a page about to enter heap->full; fails when a
 * remote free slipped in since the last collect (the page is not full). */
bool _mm_page_try_mark_full(mm_page_t *page) {
  MM_ASSERT(!page->in_full);
  uintptr_t expected = MM_DELAYED_NONE;
  return mm_atomic_cas(&page->remote->xthread_free, &expected, MM_DELAYED_NOTIFY);
}

/* Disarms the notification so the page may leave heap->full; fails while
 * a remote thread is still notifying (it would re-arm a stale state). */
bool _mm_page_try_clear_delayed(mm_page_t *page) {
  uintptr_t *xthread_free = &page->remote->xthread_free;
  uintptr_t x = mm_atomic_load_relaxed(xthread_free);
  for (;;) {
    if (mm_xthread_tag(x) == MM_DELAYED_BUSY) return false;
    if (mm_xthread_tag(x) == MM_DELAYED_NONE) return true;
    if (mm_atomic_cas(xthread_free, &x, x & ~MM_DELAYED_MASK)) return true;
  }
}

/* A free by a thread that does not own the block's page (whose remote side
 * is `remote`).  The block stays counted in page->used until the owner
 * collects it, so the page cannot be retired while this runs; with
 * MM_DELAYED_BUSY set it cannot even be collected. */
void _mm_page_free_remote(mm_segment_t *seg, mm_page_remote_t *remote, mm_block_t *block) {
  uintptr_t *xthread_free = &remote->xthread_free;
  uintptr_t x = mm_atomic_load_relaxed(xthread_free), desired;
  bool notify;
  do {
    notify = mm_xthread_tag(x) == MM_DELAYED_NOTIFY;
    if (notify) {
      desired = (x & ~MM_DELAYED_MASK) | MM_DELAYED_BUSY;
    } else {
      block->next = mm_xthread_list(x);
      desired = (x & ~MM_XTHREAD_LIST_MASK) + MM_XTHREAD_COUNT_ONE + (uintptr_t)block;
    }
  } while (!mm_atomic_cas(xthread_free, &x, desired));
  if (!notify) return;

  _mm_heap_delayed_push(seg->heap, block);

  x = mm_atomic_load_relaxed(xthread_free);
  do {
    MM_ASSERT(mm_xthread_tag(x) == MM_DELAYED_BUSY); /* only the notifier leaves BUSY */
  } while (!mm_atomic_cas(xthread_free, &x, x & ~MM_DELAYED_MASK));
}

/* An owner's free into a page parked in heap->full: the page has room again. */
void _mm_page_free_local_slow(mm_segment_t *seg, mm_page_t *page, mm_block_t *block) {
  MM_ASSERT(page->used > 0 && mm_page_holds_block(page, block));
  block->next = page->free;
  page->free = block;
  page->used--;
  if (page->in_full) _mm_heap_page_unfull(seg->heap, page);
  if (page->used == 0) _mm_page_retire(page);
}

/* The page has no live block.  A class keeps up to two pages: a class
 * whose live blocks go back and forth across a page's worth then keeps its
 * second page as a spare, instead of giving it back to its segment and
 * setting it up again each time; a kept page gives back the memory it
 * carved, with few threads (_mm_purge_page_emptied).  Any other empty page
 * goes back to its segment.  At the heap's peak the spares go back too
 * (_mm_heap_release_spares). */
void _mm_page_retire(mm_page_t *page) {
  mm_segment_t *seg = mm_segment_of(page->start);
  mm_heap_t *heap = seg->heap;
  MM_ASSERT(page->used == 0);
  if (page->in_full) return; /* still parked: a notifying thread may hold it */
  mm_page_t *first = heap->queues[page->size_class].first;
  if (first->next == NULL || first->next->next == NULL) {
    mm_stats_count_page(heap, page);
    _mm_purge_page_emptied(page);
    return;
  }
  _mm_heap_queue_remove(heap, page);
  _mm_segment_page_free(heap, page);
}

/* Gives the empty second page that a class of two pages keeps
 * (_mm_page_retire) back to its segment, in every class. */
void _mm_heap_release_spares(mm_heap_t *heap) {
  for (unsigned c = 0; c <= MM_MEDIUM_CLASS_LAST; c++) {
    mm_page_t *first = heap->queues[c].first;
    if (first == NULL || first->next == NULL || first->next->next != NULL) continue;
    mm_page_t *spare = first->used == 0 ? first : first->next->used == 0 ? first->next : NULL;
    if (spare == NULL) continue;
    _mm_heap_queue_remove(heap, spare);
    _mm_segment_page_free(heap, spare);
  }
}
