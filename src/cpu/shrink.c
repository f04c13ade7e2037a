/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: giving back the free OS pages inside live pages.
 *
 * A page serves one size class, so its free blocks serve no other size:
 * where glibc hands a freed chunk to any request, a program whose sizes
 * change as it runs would leave every class at its own high-water mark.
 * This file offers the give-back of free blocks inside pages; purge.c
 * decides when: the pages with the most free bytes give back as the heap
 * grows at its peak (_mm_heap_shrink_pages), and a page that its class keeps
 * gives back all it carved as soon as it empties (_mm_page_shrink_all).
 *
 * A page shrinks by sorting its free list by address (a bitmap of its free
 * blocks): an OS page whose every overlapping block is free goes back with
 * MADV_DONTNEED, and the blocks that start in it leave the free list ("held
 * out").  The rest of the list is relinked in address order, so the next
 * mallocs fill the low addresses first.  Only the owner's lists change; a
 * block freed by another thread meanwhile waits in xthread_free as always.
 * When the free list runs dry the page links the blocks of its lowest
 * given-back OS page again (_mm_page_unshrink) before it carves further;
 * that memory faults in again (_mm_purge_refaulted).  A page that takes back
 * what it gave is passed by for a while (doubling each time), so that a
 * class in use does not give back and fault in the same pages in turn.
 *
 *   page slot, OS pages:  | 0 | 1 | 2 | 3 | 4 | 5 |  carved ->|
 *   blocks (live X):       XX.X XXXX .... ..X. .... ..
 *   given back:                      ^^^^      ^^^^^^^  (bits in os_pages)
 *   held out: the free blocks that start in 2, 4 and 5; the free blocks of
 *   0 and 3 stay on the list, as does a free block that starts in 1 and
 *   reaches into 2. */
#include "internal.h"

#define MM_SHRINK_VISIT_MAX 256 /* pages looked at per call */
#define MM_SHRINK_BEST      64  /* pages that may shrink per call */
#define MM_SHRINK_SORT_MAX  32768 /* blocks sorted per call, about */
#define MM_SHRINK_REST_MAX  64  /* give-backs a page that took back what it gave is passed by, at most */
#define MM_PAGE_BLOCKS_MAX  (((size_t)1 << MM_SMALL_PAGE_SHIFT) / MM_ALIGNMENT)

static inline void mm_bits_set(uint64_t *bits, size_t i) { bits[i / 64] |= (uint64_t)1 << (i % 64); }
static inline bool mm_bits_test(const uint64_t *bits, size_t i) { return (bits[i / 64] >> (i % 64)) & 1; }

static mm_page_shrunk_t *mm_page_shrunk_of(const mm_page_t *page) {
  return &mm_segment_of(page->start)->page_shrunk[page->index];
}

/* Blocks with their start in OS page `os_page`: [*first, *end). */
static void mm_page_os_page_blocks(const mm_page_t *page, size_t os_page, size_t *first, size_t *end) {
  size_t from = os_page * MM_OS_PAGE_SIZE, to = from + MM_OS_PAGE_SIZE;
  *first = (from + page->stride - 1) / page->stride;
  *end = (to + page->stride - 1) / page->stride;
  if (*end > page->capacity) *end = page->capacity;
  if (*first > *end) *first = *end;
}

/* Bytes of free blocks in the page, as far as its owner knows. */
static size_t mm_page_free_bytes(const mm_page_t *page) {
  return ((size_t)page->capacity - page->used - mm_page_shrunk_of(page)->held_out) * page->stride;
}

/* Marks the page's free blocks in `free_bits`: those on its free list and
 * those held out in OS pages it gave back. */
static void mm_page_mark_free(const mm_page_t *page, const mm_page_shrunk_t *shrunk, uint64_t *free_bits) {
  memset(free_bits, 0, ((size_t)page->capacity + 63) / 64 * sizeof(uint64_t));
  for (mm_block_t *b = page->free; b != NULL; b = b->next)
    mm_bits_set(free_bits, (size_t)((uint8_t *)b - page->start) / page->stride);
  for (size_t w = 0; w < MM_SLOT_OS_PAGES_MAX / 64; w++) {
    for (uint64_t m = shrunk->os_pages[w]; m != 0; m &= m - 1) {
      size_t first, end;
      mm_page_os_page_blocks(page, w * 64 + (size_t)__builtin_ctzll(m), &first, &end);
      for (size_t i = first; i < end; i++) mm_bits_set(free_bits, i);
    }
  }
}

/* Whether every carved block that overlaps OS page `os_page` is free. */
static bool mm_page_os_page_free(const mm_page_t *page, const uint64_t *free_bits, size_t os_page) {
  size_t from = os_page * MM_OS_PAGE_SIZE;
  size_t last = (from + MM_OS_PAGE_SIZE - 1) / page->stride;
  if (last >= page->capacity) last = (size_t)page->capacity - 1;
  for (size_t i = from / page->stride; i <= last; i++)
    if (!mm_bits_test(free_bits, i)) return false;
  return true;
}

/* Gives back every OS page the carved blocks reach whose blocks are all
 * free, in runs of neighbours (one madvise each); returns how many went
 * back.  The last one may be carved in part: the page carves further only
 * once it links its held-out blocks again (_mm_page_unshrink).  A run may
 * take in OS pages given back before: a block linked again from an OS page
 * given back reaches into the next ones, and makes them resident when it is
 * used.  A run of such OS pages only is left alone. */
static size_t mm_page_give_back(mm_page_t *page, mm_page_shrunk_t *shrunk, const uint64_t *free_bits) {
  size_t carved_pages = mm_os_page_round((size_t)page->capacity * page->stride) / MM_OS_PAGE_SIZE;
  size_t given = 0, run = 0, fresh = 0;
  for (size_t p = 0; p <= carved_pages; p++) {
    if (p < carved_pages && mm_page_os_page_free(page, free_bits, p)) {
      fresh += !mm_bits_test(shrunk->os_pages, p);
      mm_bits_set(shrunk->os_pages, p);
      run++;
      continue;
    }
    if (fresh > 0) _mm_os_purge(page->start + (p - run) * MM_OS_PAGE_SIZE, run * MM_OS_PAGE_SIZE);
    given += fresh;
    run = fresh = 0;
  }
  return given;
}

/* Relinks the free blocks in address order, leaving out those that start
 * in an OS page given back; counts those in shrunk->held_out. */
static void mm_page_relink(mm_page_t *page, mm_page_shrunk_t *shrunk, const uint64_t *free_bits) {
  mm_block_t *list = NULL;
  size_t held_out = 0, listed = 0;
  for (size_t i = page->capacity; i-- > 0;) {
    if (!mm_bits_test(free_bits, i)) continue;
    uint8_t *block = page->start + i * page->stride;
    if (mm_bits_test(shrunk->os_pages, (size_t)(block - page->start) / MM_OS_PAGE_SIZE)) {
      held_out++;
      continue;
    }
    ((mm_block_t *)block)->next = list;
    list = (mm_block_t *)block;
    listed++;
  }
  page->free = list;
  shrunk->held_out = (uint32_t)held_out;
  shrunk->free_left = (uint32_t)(listed * page->stride);
}

/* Gives back the page's OS pages that hold only free blocks; returns how
 * many went back. */
static size_t mm_page_shrink(mm_page_t *page) {
  uint64_t free_bits[MM_PAGE_BLOCKS_MAX / 64];
  mm_page_shrunk_t *shrunk = mm_page_shrunk_of(page);
  _mm_page_collect(page);
  mm_page_mark_free(page, shrunk, free_bits);
  size_t given = mm_page_give_back(page, shrunk, free_bits);
  mm_page_relink(page, shrunk, free_bits);
  return given;
}

/* Links the blocks that start in OS page `p`, given back, into the free
 * list, and those of the given-back OS pages after it that these blocks
 * reach into (using one makes both resident); returns how many OS pages
 * come back so. */
static size_t mm_page_unshrink_from(mm_page_t *page, mm_page_shrunk_t *shrunk, size_t p) {
  size_t back = 0, reach = 0; /* bytes the blocks linked so far reach up to */
  for (size_t q = p; q < MM_SLOT_OS_PAGES_MAX && mm_bits_test(shrunk->os_pages, q); q++) {
    if (q > p && reach <= q * MM_OS_PAGE_SIZE) break;
    size_t first, end;
    mm_page_os_page_blocks(page, q, &first, &end);
    for (size_t i = end; i-- > first;) {
      mm_block_t *block = (mm_block_t *)(page->start + i * page->stride);
      block->next = page->free;
      page->free = block;
    }
    shrunk->held_out -= (uint32_t)(end - first);
    if (end > first) reach = end * page->stride;
    shrunk->os_pages[q / 64] &= ~((uint64_t)1 << (q % 64));
    back++;
  }
  return back;
}

/* Links the blocks of the lowest OS page the page gave back that blocks
 * start in; false when it holds none out.  An OS page that no block starts
 * in stays marked while blocks are held out (the block over it may be free
 * and given back again); then the marks go, before the page carves
 * further: a block carved in a marked OS page would count as held out. */
bool _mm_page_unshrink(mm_page_t *page) {
  mm_page_shrunk_t *shrunk = mm_page_shrunk_of(page);
  if (shrunk->held_out == 0) {
    memset(shrunk->os_pages, 0, sizeof shrunk->os_pages);
    return false;
  }
  for (size_t w = 0; w < MM_SLOT_OS_PAGES_MAX / 64; w++) {
    for (uint64_t m = shrunk->os_pages[w]; m != 0; m &= m - 1) {
      size_t p = w * 64 + (size_t)__builtin_ctzll(m), first, end;
      mm_page_os_page_blocks(page, p, &first, &end);
      if (first == end) continue;
      size_t back = mm_page_unshrink_from(page, shrunk, p);
      shrunk->unshrinks++;
      _mm_purge_refaulted(mm_segment_of(page->start)->heap, back);
      return true;
    }
  }
  return false;
}

/* Whether the page may hold an OS page of free blocks more than when its
 * last shrink ended, or than when it was last seen with fewer (a page whose
 * free blocks lie scattered is not sorted again and again for nothing). */
static bool mm_page_worth_shrinking(const mm_page_t *page, size_t free_bytes) {
  if (page->block_size == 0 || page->in_full) return false;
  mm_page_shrunk_t *shrunk = mm_page_shrunk_of(page);
  if (free_bytes < shrunk->free_left) shrunk->free_left = (uint32_t)free_bytes;
  if (shrunk->unshrinks != shrunk->unshrinks_seen) { /* it took back what it gave: pass it by a while */
    shrunk->unshrinks_seen = shrunk->unshrinks;
    shrunk->rest_next = shrunk->rest_next == 0 ? 1 : shrunk->rest_next < MM_SHRINK_REST_MAX ? shrunk->rest_next * 2 : MM_SHRINK_REST_MAX;
    shrunk->rest = shrunk->rest_next;
  }
  if (shrunk->rest > 0) {
    shrunk->rest--;
    return false;
  }
  return free_bytes >= MM_OS_PAGE_SIZE && free_bytes > shrunk->free_left;
}

/* Keeps `page` among the `*count` (at most MM_SHRINK_BEST) pages with the
 * most free bytes, in descending order. */
static void mm_shrink_rank(mm_page_t **best, size_t *best_free, size_t *count, mm_page_t *page, size_t free_bytes) {
  size_t i = *count < MM_SHRINK_BEST ? (*count)++ : MM_SHRINK_BEST;
  for (; i > 0 && best_free[i - 1] < free_bytes; i--) {
    if (i < MM_SHRINK_BEST) {
      best[i] = best[i - 1];
      best_free[i] = best_free[i - 1];
    }
  }
  if (i < MM_SHRINK_BEST) {
    best[i] = page;
    best_free[i] = free_bytes;
  }
}

/* Pages of the heap give back up to about `units` OS pages of free blocks,
 * those with the most free bytes first, among up
 * to MM_SHRINK_VISIT_MAX pages from the class where the last call stopped. */
size_t _mm_heap_shrink_pages(mm_heap_t *heap, size_t units) {
  mm_page_t *best[MM_SHRINK_BEST];
  size_t best_free[MM_SHRINK_BEST], count = 0, visited = 0, given = 0;
  unsigned c = heap->shrink_class;
  for (unsigned n = 0; n <= MM_MEDIUM_CLASS_LAST && visited < MM_SHRINK_VISIT_MAX; n++) {
    c = (c + 1) % (MM_MEDIUM_CLASS_LAST + 1);
    for (mm_page_t *page = heap->queues[c].first; page != NULL && visited < MM_SHRINK_VISIT_MAX; page = page->next) {
      size_t free_bytes = mm_page_free_bytes(page);
      if (mm_page_worth_shrinking(page, free_bytes)) mm_shrink_rank(best, best_free, &count, page, free_bytes);
      visited++;
    }
  }
  heap->shrink_class = c;
  size_t sorted = 0;
  for (size_t i = 0; i < count && given < units && sorted < MM_SHRINK_SORT_MAX; i++) {
    given += mm_page_shrink(best[i]);
    sorted += best[i]->capacity;
  }
  return given;
}

/* OS pages of the page's carved blocks that it did not give back. */
size_t _mm_page_resident_units(const mm_page_t *page) {
  const mm_page_shrunk_t *shrunk = mm_page_shrunk_of(page);
  size_t carved = mm_os_page_round((size_t)page->capacity * page->stride) / MM_OS_PAGE_SIZE, held = 0;
  for (size_t w = 0; w < MM_SLOT_OS_PAGES_MAX / 64; w++) held += (size_t)__builtin_popcountll(shrunk->os_pages[w]);
  return carved > held ? carved - held : 0;
}

/* A page with no live block gives back all it carved, and carves again
 * from its start when next used (faulting that memory in again,
 * _mm_page_extend). */
void _mm_page_shrink_all(mm_page_t *page) {
  _mm_segment_purge_slot(mm_segment_of(page->start), page->index);
  page->free = NULL;
  page->capacity = 0;
  _mm_page_shrunk_reset(page);
}

/* The page slot starts over (_mm_page_init): nothing is held out. */
void _mm_page_shrunk_reset(mm_page_t *page) {
  memset(mm_page_shrunk_of(page), 0, sizeof(mm_page_shrunk_t));
}
