/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: segments, the unit of memory taken from the OS.
 *
 * A segment is MM_SEGMENT_SIZE bytes aligned to its size.  Its first
 * MM_SEGMENT_HEADER_SIZE bytes hold the header (and the checked-mode bitmap);
 * the rest is cut into page slots of one size per segment kind, or into
 * spans (span.c).  A heap lists the segments that still have free slots; a
 * segment whose last page is freed is retired: it stays with its heap as it
 * is, the first the heap reuses, and goes to the central segment cache (a
 * seq_fifo, lock-free; purged) or back to the OS once it has stayed unused
 * for MANYMALLOC_PURGE_DELAY ms. */
#include <errno.h>

#include "internal.h"
#include "common/seq_fifo.h"

_Static_assert(offsetof(mm_segment_t, pages[1]) <= MM_LARGE_OFFSET,
               "a large block's header must fit before the block");
_Static_assert(sizeof(mm_segment_t) <= MM_SEGMENT_CHECK_OFFSET, "segment header too big");
_Static_assert(MM_MAX_PAGES <= 256, "mm_page_t.index is a byte");
_Static_assert(sizeof(mm_segment_t) <= MM_SPAN_OFFSET &&
               MM_SPAN_OFFSET + MM_SPAN_UNITS * sizeof(mm_span_t) <= MM_SEGMENT_CHECK_OFFSET,
               "the span units' descriptors lie between the header and the checked bitmap");
_Static_assert(((size_t)1 << MM_SMALL_PAGE_SHIFT) / MM_ALIGNMENT <= UINT16_MAX, "mm_page_t.capacity is 16 bits");
_Static_assert(sizeof(mm_page_t) == 64, "a page descriptor is 64 bytes");
/* Every descriptor's `free` lies at 8 mod 16 within its 4 KiB page, where no
 * 16-aligned block's first word (stored by free, loaded by malloc) can: a
 * load whose low 12 address bits match an earlier store's waits for that
 * store (4K aliasing), and malloc's load of page->free heads its chain
 * (decision 0028: page descriptors off the 16-byte grid). */
_Static_assert(offsetof(mm_segment_t, pages) % 16 == 8 && offsetof(mm_page_t, free) == 0,
               "page->free off the 16-byte grid of block starts");
_Static_assert(sizeof(uintptr_t) == 8 && ((uintptr_t)1 << MM_MEDIUM_PAGE_SHIFT) / MM_ALIGNMENT < ((uintptr_t)1 << (64 - MM_XTHREAD_COUNT_SHIFT)),
               "xthread_free's top bits count every block a page can hold");

#define MM_SEGMENT_CACHE_MAX 1024
static mm_fifo_cell_t mm_segment_cache_cells[MM_SEGMENT_CACHE_MAX];
static mm_seq_fifo_t mm_segment_cache;

/* Empty segments of threads that exited, as they were (resident).  A thread
 * that needs a segment takes one of these before the cache, so that threads
 * started again and again (a pool per task, a trace replayed by new threads)
 * reuse what the ones before them had faulted in, instead of each exit
 * purging it and the next threads faulting it in again (and, counted as
 * growth, making their heaps give other memory back).  Any thread's slow
 * path releases those unused for the delay (_mm_segment_warm_expire). */
#define MM_SEGMENT_WARM_MAX 32 /* per kind: a segment of another kind counts as growth */
static mm_fifo_cell_t mm_segment_warm_cells[MM_SEGMENT_KINDS_CARVED][MM_SEGMENT_WARM_MAX];
static mm_seq_fifo_t mm_segment_warm[MM_SEGMENT_KINDS_CARVED];

void _mm_segment_cache_init(void) {
  size_t cap = _mm_options.segment_cache < MM_SEGMENT_CACHE_MAX ? _mm_options.segment_cache : MM_SEGMENT_CACHE_MAX;
  mm_seq_fifo_init(&mm_segment_cache, mm_segment_cache_cells, cap);
  for (unsigned k = 0; k < MM_SEGMENT_KINDS_CARVED; k++)
    mm_seq_fifo_init(&mm_segment_warm[k], mm_segment_warm_cells[k], MM_SEGMENT_WARM_MAX);
}

/* The page kind of a class served by pages (up to MM_MEDIUM_BLOCK_MAX). */
unsigned _mm_segment_kind_for(unsigned size_class) {
  return mm_size_class_size(size_class) <= MM_SMALL_BLOCK_MAX ? MM_SEGMENT_SMALL : MM_SEGMENT_MEDIUM;
}

/* A span segment has no page slots: every address maps to pages[0], whose
 * in_spans flag sends each free to the slow path. */
static const uint32_t mm_segment_page_shift[MM_SEGMENT_KINDS_CARVED] = {
  MM_SMALL_PAGE_SHIFT, MM_MEDIUM_PAGE_SHIFT, 63,
};

/* Start and size of page slot `index`; the slots overlapping the header
 * shrink (or vanish: they are never marked free). */
uint8_t *_mm_segment_page_area(const mm_segment_t *seg, size_t index, size_t *size) {
  uintptr_t start = (uintptr_t)index << seg->page_shift;
  uintptr_t end = start + ((uintptr_t)1 << seg->page_shift);
  if (start < MM_SEGMENT_HEADER_SIZE) start = MM_SEGMENT_HEADER_SIZE;
  *size = end - start;
  return (uint8_t *)seg + start;
}

/* ---------------------------------------------------------------------------
 * Segment life cycle
 * ------------------------------------------------------------------------- */

/* Sets a segment up for `kind`.  A `resident` segment (retired, never
 * purged) of the same kind keeps its record of what it touched, so that
 * carving memory it holds already does not count as growth (_mm_purge_grown)
 * and make the heap give other memory back. */
static void mm_segment_setup(mm_segment_t *seg, mm_heap_t *heap, unsigned kind, bool resident) {
  uint32_t shift = mm_segment_page_shift[kind];
  mm_slot_memory_t slot_memory[MM_MAX_PAGES];
  uint32_t span_touched = seg->span_touched;
  bool keep_touched = resident && seg->kind == kind;
  if (keep_touched) memcpy(slot_memory, seg->slot_memory, sizeof slot_memory);
  memset(seg, 0, sizeof(*seg));
  if (keep_touched) {
    memcpy(seg->slot_memory, slot_memory, sizeof slot_memory);
    seg->span_touched = span_touched;
  }
  seg->heap = heap;
  seg->kind = kind;
  seg->page_shift = shift;
  seg->mapped_size = MM_SEGMENT_SIZE;
  seg->page_count = shift < MM_SEGMENT_SHIFT ? (uint32_t)(MM_SEGMENT_SIZE >> shift) : 0;
  seg->pages[0].in_spans = kind == MM_SEGMENT_SPAN;
  for (uint32_t i = 0; i < seg->page_count; i++) {
    seg->pages[i].index = (uint8_t)i;
    seg->pages[i].remote = &seg->remote[i];
    if (((uintptr_t)(i + 1) << shift) > MM_SEGMENT_HEADER_SIZE) seg->free_pages |= (uint64_t)1 << i;
  }
}

/* A fresh segment from the OS.  Its blocks' addresses must leave the top
 * bits of xthread_free to the count (types.h); Linux maps there only
 * when asked to. */
static mm_segment_t *mm_segment_map(void) {
  mm_segment_t *seg = _mm_os_alloc_aligned(MM_SEGMENT_SIZE, MM_SEGMENT_SIZE, 0);
  if (seg == NULL || ((uintptr_t)seg + MM_SEGMENT_SIZE - 1) >> MM_XTHREAD_COUNT_SHIFT == 0) return seg;
  _mm_os_free(seg, MM_SEGMENT_SIZE);
  errno = ENOMEM;
  return NULL;
}

/* Whether the heap's next segment would be a retired one of `kind`.  Its
 * memory is resident: a heap that needs memory it never touched takes that
 * segment first (pages: _mm_segment_page_alloc, spans: _mm_span_alloc).
 * Carving fresh memory while a whole segment lay resident and unused would
 * raise the footprint by that segment. */
bool _mm_segment_retired_resident(const mm_heap_t *heap, unsigned kind) {
  return heap->retired != NULL && heap->retired->kind == kind;
}

/* Takes the newest retired segment off the heap's list. */
static mm_segment_t *mm_segment_unretire(mm_heap_t *heap) {
  mm_segment_t *seg = heap->retired;
  heap->retired = seg->next;
  heap->retired_count--;
  return seg;
}

mm_segment_t *_mm_segment_alloc(mm_heap_t *heap, unsigned kind) {
  uintptr_t cached;
  mm_segment_t *seg;
  bool resident = true;
  if (heap->retired != NULL) {
    seg = mm_segment_unretire(heap);
  } else if (mm_seq_fifo_pop(&mm_segment_warm[kind], &cached)) {
    seg = (mm_segment_t *)cached;
  } else if (mm_seq_fifo_pop(&mm_segment_cache, &cached)) {
    seg = (mm_segment_t *)cached;
    resident = !_mm_options.purge;
  } else {
    seg = mm_segment_map();
    if (seg == NULL) return NULL;
    _mm_stats_segments(1);
    _mm_checked_on_map(seg);
    resident = false;
  }
  if (_mm_options.checked && resident) /* its bitmap still records the blocks it had */
    memset((uint8_t *)seg + MM_SEGMENT_CHECK_OFFSET, 0, MM_SEGMENT_SIZE / MM_ALIGNMENT / 8);
  mm_segment_setup(seg, heap, kind, resident);
  _mm_stats_update_peak();
  return seg;
}

/* The segment has no page in use: cache it (its pages purged) or unmap it. */
static void mm_segment_release(mm_segment_t *seg) {
  if (_mm_options.purge) {
    size_t keep = mm_os_page_round(sizeof(mm_segment_t));
    _mm_os_purge((uint8_t *)seg + keep, MM_SEGMENT_SIZE - keep);
  }
  if (mm_seq_fifo_push(&mm_segment_cache, (uintptr_t)seg)) return;
  _mm_checked_on_unmap(seg, false);
  _mm_stats_segments(-1);
  _mm_os_free(seg, MM_SEGMENT_SIZE);
}

/* Releases every retired segment after `keep` (the newest first). */
static void mm_segment_release_after(mm_heap_t *heap, mm_segment_t **keep) {
  mm_segment_t *seg = *keep;
  *keep = NULL;
  while (seg != NULL) {
    mm_segment_t *next = seg->next;
    heap->retired_count--;
    mm_segment_release(seg);
    seg = next;
  }
}

/* The segment has no page in use: the heap retires it, as it is, and the
 * next segment it needs is the newest retired one.  A program whose pages
 * come and go at a segment boundary would otherwise purge a segment and
 * fault its pages in again every time, and one that frees everything and
 * starts over would purge and refault all of it (decision 0037: retired segments
 * stay resident for the purge delay).  The newest retired segment stays until another one empties;
 * the others go once they have stayed unused for the delay
 * (_mm_segment_purge_expired), or beyond MM_RETIRED_MAX at once, or all with
 * the heap's collection. */
#define MM_RETIRED_MAX 8
void _mm_segment_free(mm_heap_t *heap, mm_segment_t *seg) {
  uint64_t now = _mm_os_clock_ms();
  seg->heap = NULL;
  seg->purge_at = mm_purge_delay_end(now);
  seg->next = heap->retired;
  heap->retired = seg;
  if (++heap->retired_count > MM_RETIRED_MAX) {
    mm_segment_t **last = &heap->retired;
    for (uint32_t i = 1; i < MM_RETIRED_MAX; i++) last = &(*last)->next;
    mm_segment_release_after(heap, &(*last)->next);
  }
  if (seg->next != NULL) _mm_purge_schedule(heap, seg->next->purge_at);
  _mm_purge_expired(heap, now);
}

/* Releases the retired segments, but the newest, whose delay is over. */
void _mm_segment_purge_expired(mm_heap_t *heap, uint64_t now) {
  if (heap->retired == NULL) return;
  mm_segment_t **link = &heap->retired->next;
  while (*link != NULL && (*link)->purge_at > now) link = &(*link)->next;
  mm_segment_release_after(heap, link); /* older ones retired earlier: expired too */
  mm_segment_t *oldest = heap->retired->next;
  while (oldest != NULL && oldest->next != NULL) oldest = oldest->next;
  if (oldest != NULL) _mm_purge_schedule(heap, oldest->purge_at);
}

void _mm_segment_retired_release(mm_heap_t *heap) {
  mm_segment_release_after(heap, &heap->retired);
}

/* The exiting thread's heap hands its retired segments over to any thread
 * (releasing those that find no room), each expiring at its own time. */
void _mm_segment_retired_hand_over(mm_heap_t *heap) {
  for (mm_segment_t *seg = heap->retired, *next; seg != NULL; seg = next) {
    next = seg->next;
    if (mm_seq_fifo_push(&mm_segment_warm[seg->kind], (uintptr_t)seg)) _mm_purge_warm_schedule(seg->purge_at);
    else mm_segment_release(seg);
  }
  heap->retired = NULL;
  heap->retired_count = 0;
}

/* Releases the handed-over segments whose delay is over at `now` (or all
 * of them); those that stay are scheduled again (mm_purge_warm_expire). */
void _mm_segment_warm_expire(uint64_t now, bool all) {
  for (unsigned k = 0; k < MM_SEGMENT_KINDS_CARVED; k++) {
    mm_seq_fifo_t *warm = &mm_segment_warm[k];
    uintptr_t cached;
    for (size_t n = MM_SEGMENT_WARM_MAX; n > 0 && mm_seq_fifo_pop(warm, &cached); n--) {
      mm_segment_t *seg = (mm_segment_t *)cached;
      if (all || seg->purge_at <= now || !mm_seq_fifo_push(warm, cached)) mm_segment_release(seg);
      else _mm_purge_warm_schedule(seg->purge_at);
    }
  }
}

/* Returns every segment of the central cache to the OS. */
void _mm_segment_cache_purge(void) {
  uintptr_t cached;
  while (mm_seq_fifo_pop(&mm_segment_cache, &cached)) {
    _mm_checked_on_unmap((mm_segment_t *)cached, false);
    _mm_stats_segments(-1);
    _mm_os_free((void *)cached, MM_SEGMENT_SIZE);
  }
}

/* ---------------------------------------------------------------------------
 * The heap's list of segments with free page slots
 * ------------------------------------------------------------------------- */

static void mm_segment_enqueue(mm_heap_t *heap, mm_segment_t *seg) {
  mm_segment_t **head = &heap->segments[seg->kind];
  seg->prev = NULL;
  seg->next = *head;
  if (*head != NULL) (*head)->prev = seg;
  *head = seg;
  seg->in_queue = true;
}

static void mm_segment_dequeue(mm_heap_t *heap, mm_segment_t *seg) {
  if (seg->prev != NULL) seg->prev->next = seg->next;
  else heap->segments[seg->kind] = seg->next;
  if (seg->next != NULL) seg->next->prev = seg->prev;
  seg->next = seg->prev = NULL;
  seg->in_queue = false;
}

/* ---------------------------------------------------------------------------
 * Pages
 * ------------------------------------------------------------------------- */

/* A fresh page of `size_class` for `heap`; NULL (errno ENOMEM) when the OS
 * has no memory left.  A slot whose memory was never touched comes second
 * to a retired segment of the kind, which is resident (_mm_segment_alloc
 * takes it); see _mm_segment_retired_resident. */
mm_page_t *_mm_segment_page_alloc(mm_heap_t *heap, unsigned size_class) {
  unsigned kind = _mm_segment_kind_for(size_class);
  mm_segment_t *seg = heap->segments[kind];
  if (seg != NULL && seg->slot_memory[__builtin_ctzll(seg->free_pages)].touched == 0 &&
      _mm_segment_retired_resident(heap, kind))
    seg = NULL;
  if (seg == NULL) {
    seg = _mm_segment_alloc(heap, kind);
    if (seg == NULL) return NULL;
    mm_segment_enqueue(heap, seg);
  }
  unsigned index = (unsigned)__builtin_ctzll(seg->free_pages);
  seg->free_pages &= ~((uint64_t)1 << index);
  seg->used_pages++;
  if (seg->free_pages == 0) mm_segment_dequeue(heap, seg);
  mm_page_t *page = &seg->pages[index];
  _mm_page_init(page, seg, size_class);
  heap->stats.pages[size_class]++;
  return page;
}

/* Gives back all that page slot `index` touched (its page, if any, has no
 * block carved), and records it: carving there faults it in again
 * (_mm_page_extend).  Returns how many OS pages were resident. */
size_t _mm_segment_purge_slot(mm_segment_t *seg, unsigned index) {
  mm_slot_memory_t *memory = &seg->slot_memory[index];
  uint32_t touched = (uint32_t)mm_os_page_round(memory->touched);
  uint32_t resident = touched - (memory->purged_to - memory->purged_from);
  if (resident == 0) return 0;
  size_t area;
  _mm_os_purge(_mm_segment_page_area(seg, index, &area), touched);
  memory->purged_from = 0;
  memory->purged_to = touched;
  return resident / MM_OS_PAGE_SIZE;
}

/* Gives back the resident memory of the free page slots of the heap's
 * segments, up to about `units` OS pages; returns how many went back.  A
 * page carving that memory again faults it in (_mm_page_extend). */
size_t _mm_segment_purge_free_slots(mm_heap_t *heap, size_t units) {
  size_t purged = 0;
  for (unsigned kind = 0; kind < MM_PAGE_KINDS; kind++) {
    for (mm_segment_t *seg = heap->segments[kind]; seg != NULL && purged < units; seg = seg->next) {
      for (uint64_t free = seg->free_pages; free != 0 && purged < units; free &= free - 1) {
        purged += _mm_segment_purge_slot(seg, (unsigned)__builtin_ctzll(free));
      }
    }
  }
  return purged;
}

/* The page (already out of every heap queue) has no live block. */
void _mm_segment_page_free(mm_heap_t *heap, mm_page_t *page) {
  mm_segment_t *seg = mm_segment_of(page->start);
  MM_ASSERT(page->used == 0 && seg->used_pages > 0 && (seg->free_pages >> page->index & 1) == 0);
  mm_stats_count_page(heap, page);
  heap->stats.pages[page->size_class]--;
  page->block_size = 0;
  seg->free_pages |= (uint64_t)1 << page->index;
  seg->used_pages--;
  if (seg->used_pages == 0) {
    if (seg->in_queue) mm_segment_dequeue(heap, seg);
    _mm_segment_free(heap, seg);
  } else if (!seg->in_queue) {
    mm_segment_enqueue(heap, seg);
  }
}
