/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: spans, runs of OS pages for blocks of 32 KiB - 1 MiB
 * (and for blocks that realloc grows past 4 KiB, which then grow in place).
 *
 * Pages of one size class keep a freed block for that class alone, of no
 * use to the sizes beside theirs, and class rounding leaves up to 12.5% of
 * every big block resident (decision 0029: spans for blocks above 32 KiB).  Blocks above MM_MEDIUM_BLOCK_MAX instead take
 * a run of whole 4 KiB units from a span segment (glibc's chunks, mimalloc's
 * spans, at OS page grain): malloc takes the first free run that fits from
 * the smallest bin of free runs that holds one and splits off the rest; free
 * merges the run with the free runs on either side, so freed memory serves
 * any size, and realloc grows or shrinks a run in place.
 *
 * The first and the last unit of a run describe it (mm_span_t, in the
 * segment header, never in the run, so a free run is not touched).  Like a
 * page, a span segment belongs to one heap and only its owner touches the
 * runs; other threads hand their frees over on heap->delayed_free. */
#include "internal.h"

static mm_span_t *mm_span_units(mm_segment_t *seg) {
  return (mm_span_t *)((uint8_t *)seg + MM_SPAN_OFFSET);
}

static uint8_t *mm_span_area(mm_segment_t *seg) {
  return (uint8_t *)seg + MM_SEGMENT_HEADER_SIZE;
}

/* The unit a block starts at. */
static size_t mm_span_index(mm_segment_t *seg, const void *p) {
  return (size_t)((uintptr_t)p - (uintptr_t)mm_span_area(seg)) >> MM_SPAN_SHIFT;
}

static size_t mm_span_units_for(size_t size) {
  size_t units = (size + MM_SPAN_UNIT - 1) >> MM_SPAN_SHIFT;
  return units == 0 ? 1 : units;
}

/* The class a run of `units` counts under in the statistics. */
static unsigned mm_span_class(size_t units) {
  return mm_size_class_of(units << MM_SPAN_SHIFT);
}

/* Bins follow the size classes, on units instead of bytes: exact up to
 * 8 units, then 8 bins per power of two (992 units fall in bin 63). */
static unsigned mm_span_bin(size_t units) {
  return mm_size_class_of(units * MM_ALIGNMENT);
}

/* ---------------------------------------------------------------------------
 * Runs and bins
 * ------------------------------------------------------------------------- */

/* The last descriptor serves the run after it, to merge backwards: a run
 * that ends the segment has none, and leaves the header's last OS page
 * untouched (a span segment's first block touched three header pages). */
static void mm_span_set(mm_span_t *first, size_t units, bool free) {
  first->units = (uint32_t)units;
  first->free = free;
  mm_span_t *last = first + units - 1;
  if (last == first || last == mm_span_units(mm_segment_of(first)) + MM_SPAN_UNITS - 1) return;
  last->units = (uint32_t)units;
  last->free = free;
}

static void mm_span_bin_insert(mm_heap_t *heap, mm_span_t *run) {
  unsigned b = mm_span_bin(run->units);
  run->prev = NULL;
  run->next = heap->span_bins[b];
  if (run->next != NULL) run->next->prev = run;
  heap->span_bins[b] = run;
  heap->span_bin_mask |= (uint64_t)1 << b;
  heap->span_resident += run->resident;
}

static void mm_span_bin_remove(mm_heap_t *heap, mm_span_t *run) {
  unsigned b = mm_span_bin(run->units);
  if (run->prev != NULL) run->prev->next = run->next;
  else if ((heap->span_bins[b] = run->next) == NULL) heap->span_bin_mask &= ~((uint64_t)1 << b);
  if (run->next != NULL) run->next->prev = run->prev;
  heap->span_resident -= run->resident;
}

/* Makes `units` from `first` one free run and bins it; at most `resident`
 * of its units (none past the segment's touched ones) may be resident. */
static void mm_span_make_free(mm_heap_t *heap, mm_span_t *first, size_t units, size_t resident) {
  mm_segment_t *seg = mm_segment_of(first);
  size_t i = (size_t)(first - mm_span_units(seg));
  size_t touched = seg->span_touched > i ? seg->span_touched - i : 0;
  if (resident > units) resident = units;
  if (resident > touched) resident = touched;
  mm_span_set(first, units, true);
  first->resident = (uint16_t)resident;
  mm_span_bin_insert(heap, first);
}

/* Makes units [i, i + n) of a segment, just freed, one free run merged with
 * the free runs beside it. */
static void mm_span_release(mm_heap_t *heap, mm_segment_t *seg, size_t i, size_t n) {
  mm_span_t *units = mm_span_units(seg);
  size_t resident = n;
  if (i + n < MM_SPAN_UNITS && units[i + n].free) {
    mm_span_bin_remove(heap, &units[i + n]);
    resident += units[i + n].resident;
    n += units[i + n].units;
  }
  if (i > 0 && units[i - 1].free) {
    size_t before = units[i - 1].units;
    i -= before;
    mm_span_bin_remove(heap, &units[i]);
    resident += units[i].resident;
    n += before;
  }
  mm_span_make_free(heap, &units[i], n, resident);
}

/* A free run of at least `units`: the first that fits among the first few
 * of its own bin (whose runs may be a little short), else the first of the
 * next bin that holds any (all of whose runs fit).  NULL if none. */
#define MM_SPAN_SCAN 16
static mm_span_t *mm_span_find_fit(mm_heap_t *heap, size_t units) {
  unsigned b = mm_span_bin(units);
  unsigned scanned = 0;
  for (mm_span_t *run = heap->span_bins[b]; run != NULL && scanned < MM_SPAN_SCAN; run = run->next, scanned++)
    if (run->units >= units) return run;
  uint64_t above = heap->span_bin_mask & (~(uint64_t)1 << b);
  return above == 0 ? NULL : heap->span_bins[__builtin_ctzll(above)];
}

/* Among the first few runs of the bins above bin `b` (all longer than
 * `units`), the first that may be resident over `units`; NULL if none. */
static mm_span_t *mm_span_find_resident(mm_heap_t *heap, unsigned b, size_t units) {
  unsigned scanned = 0;
  for (uint64_t above = heap->span_bin_mask & (~(uint64_t)1 << b); above != 0; above &= above - 1) {
    for (mm_span_t *run = heap->span_bins[__builtin_ctzll(above)]; run != NULL; run = run->next) {
      if (run->resident >= units) return run;
      if (++scanned == MM_SPAN_SCAN) return NULL;
    }
  }
  return NULL;
}

/* The run to cut `units` from: the fit, unless it was purged (in part)
 * while a longer run is resident.  Reused purged memory faults in again
 * (mm_span_fault_in), so taking it while resident memory lies free raises
 * the footprint; splitting the longer resident run costs nothing and saves
 * faults (decision 0044: resident runs before purged ones). */
static mm_span_t *mm_span_find(mm_heap_t *heap, size_t units) {
  mm_span_t *fit = mm_span_find_fit(heap, units);
  if (fit == NULL || fit->resident >= units) return fit;
  mm_span_t *resident = mm_span_find_resident(heap, mm_span_bin(fit->units), units);
  return resident != NULL ? resident : fit;
}

/* Gives free runs with at least MM_SPAN_PURGE_MIN resident units back to
 * the OS, the largest first, until about `units` went back; returns how
 * many.  With `whole_runs`, a run goes back whole (its length counts, though
 * it may have been resident only in part): the heap then ends up below its
 * live size plus what it grew.  Else only as much of a run's tail as is
 * wanted goes (blocks are cut from its front), so that with many threads,
 * where each madvise interrupts the others, the heap gives back no more
 * than it grew (decision 0045: whole runs with few threads, tails with many).
 * Shorter runs stay: the next blocks are cut from them, and purging them
 * would cost a madvise and a fault for nearly every page given back. */
#define MM_SPAN_PURGE_MIN 16
size_t _mm_span_purge(mm_heap_t *heap, size_t units, bool whole_runs) {
  size_t purged = 0;
  for (int b = MM_SPAN_BINS - 1; b >= 0 && purged < units && heap->span_resident > 0; b--) {
    for (mm_span_t *run = heap->span_bins[b]; run != NULL && purged < units; run = run->next) {
      if (run->resident < MM_SPAN_PURGE_MIN) continue;
      mm_segment_t *seg = mm_segment_of(run);
      size_t i = (size_t)(run - mm_span_units(seg)), end = i + run->units;
      if (end > seg->span_touched) end = seg->span_touched;
      size_t from = i;
      if (!whole_runs) { /* its resident units, taken as its front: their tail */
        if (end > i + run->resident) end = i + run->resident;
        if (end - i > units - purged + MM_SPAN_PURGE_MIN) from = end - (units - purged);
      }
      _mm_os_purge(mm_span_area(seg) + (from << MM_SPAN_SHIFT), (end - from) << MM_SPAN_SHIFT);
      purged += end - from;
      heap->span_resident -= run->resident - (from - i);
      run->resident = (uint16_t)(from - i);
    }
  }
  return purged;
}

/* Units [i, i + units) of the segment are in use, cut from a run of which
 * at most `resident` units were resident: those never touched before are
 * growth (_mm_purge_grown), those that went back fault in again
 * (_mm_purge_refaulted). */
static void mm_span_fault_in(mm_heap_t *heap, mm_segment_t *seg, size_t i, size_t units, size_t resident) {
  size_t end = i + units, touched = seg->span_touched > i ? seg->span_touched : i;
  size_t fresh = end > touched ? end - touched : 0, reused = units - fresh;
  if (end > seg->span_touched) seg->span_touched = (uint32_t)end;
  _mm_purge_grown(heap, fresh);
  _mm_purge_refaulted(heap, reused > resident ? reused - resident : 0);
}

/* ---------------------------------------------------------------------------
 * Segments
 * ------------------------------------------------------------------------- */

static bool mm_span_segment_new(mm_heap_t *heap) {
  mm_segment_t *seg = _mm_segment_alloc(heap, MM_SEGMENT_SPAN);
  if (seg == NULL) return false;
  heap->span_segments++;
  /* as resident as the segment's record says: a retired one may still be */
  mm_span_make_free(heap, mm_span_units(seg), MM_SPAN_UNITS, MM_SPAN_UNITS);
  return true;
}

static void mm_span_segment_free(mm_heap_t *heap, mm_segment_t *seg) {
  mm_span_bin_remove(heap, mm_span_units(seg));
  heap->span_segments--;
  _mm_segment_free(heap, seg);
}

/* The segment has no run in use any more.  The heap keeps one such segment,
 * as it is, and gives back all but its first MM_KEEP_BYTES if it stays
 * unused for the delay (_mm_span_purge_expired), so that a malloc/free loop
 * makes no system call, nor one that frees everything and starts over; any
 * other segment is retired. */
static void mm_span_segment_empty(mm_heap_t *heap, mm_segment_t *seg) {
  if (heap->span_empty != NULL) {
    mm_span_segment_free(heap, seg);
    return;
  }
  heap->span_empty = seg;
  if (!_mm_options.purge) return;
  uint64_t now = _mm_os_clock_ms();
  seg->purge_at = mm_purge_delay_end(now);
  _mm_purge_schedule(heap, seg->purge_at);
  _mm_purge_expired(heap, now);
}

/* The kept empty segment, unused for the delay, gives back all but its
 * first MM_KEEP_BYTES. */
void _mm_span_purge_expired(mm_heap_t *heap, uint64_t now) {
  mm_segment_t *seg = heap->span_empty;
  if (seg == NULL || !_mm_options.purge) return;
  if (seg->purge_at > now) {
    _mm_purge_schedule(heap, seg->purge_at);
    return;
  }
  size_t keep = MM_KEEP_BYTES >> MM_SPAN_SHIFT;
  if (seg->span_touched > keep) {
    _mm_os_purge(mm_span_area(seg) + (keep << MM_SPAN_SHIFT), (seg->span_touched - keep) << MM_SPAN_SHIFT);
    seg->span_touched = (uint32_t)keep;
    mm_span_t *run = mm_span_units(seg);
    mm_span_bin_remove(heap, run);
    mm_span_make_free(heap, run, MM_SPAN_UNITS, keep);
  }
}

/* Returns the kept empty segment (mm_collect, thread exit). */
void _mm_span_collect(mm_heap_t *heap) {
  if (heap->span_empty == NULL) return;
  mm_span_segment_free(heap, heap->span_empty);
  heap->span_empty = NULL;
}

/* ---------------------------------------------------------------------------
 * malloc, free, realloc
 * ------------------------------------------------------------------------- */

/* A block of `size` bytes (at most MM_SIZE_CLASS_MAX) at `alignment` (a
 * power of two, at most MM_SEGMENT_HEADER_SIZE: runs start at multiples of
 * 4 KiB, the area at a multiple of 128 KiB).  NULL (errno ENOMEM) when the
 * OS has no memory left. */
void *_mm_span_alloc(mm_heap_t *heap, size_t size, size_t alignment) {
  size_t units = mm_span_units_for(size);
  size_t slack = alignment > MM_SPAN_UNIT ? (alignment >> MM_SPAN_SHIFT) - 1 : 0;
  mm_span_t *run = mm_span_find(heap, units + slack);
  /* a run not resident comes second to a retired segment, which is */
  bool new_segment = run == NULL || (run->resident < units + slack && _mm_segment_retired_resident(heap, MM_SEGMENT_SPAN));
  if (new_segment && mm_span_segment_new(heap)) run = mm_span_find(heap, units + slack);
  if (run == NULL) return NULL;
  mm_segment_t *seg = mm_segment_of(run);
  mm_span_t *all = mm_span_units(seg);
  if (seg == heap->span_empty) heap->span_empty = NULL;
  mm_span_bin_remove(heap, run);
  size_t i = (size_t)(run - all), n = run->units, resident = run->resident;
  uintptr_t start = (uintptr_t)mm_span_area(seg) + (i << MM_SPAN_SHIFT);
  size_t skip = (size_t)((((start + alignment - 1) & ~(uintptr_t)(alignment - 1)) - start) >> MM_SPAN_SHIFT);
  if (skip > 0) {
    mm_span_make_free(heap, run, skip, resident);
    i += skip;
    n -= skip;
  }
  if (n > units) mm_span_make_free(heap, &all[i + units], n - units, resident);
  mm_span_set(&all[i], units, false);
  seg->used_pages++;
  heap->stats.blocks[mm_span_class(units)]++;
  mm_span_fault_in(heap, seg, i, units, resident);
  void *p = mm_span_area(seg) + (i << MM_SPAN_SHIFT);
  if (mm_unlikely(_mm_options.checked)) _mm_checked_on_malloc(seg, p);
  return p;
}

/* A free by the segment's owner. */
void _mm_span_free(mm_heap_t *heap, mm_segment_t *seg, void *p) {
  size_t i = mm_span_index(seg, p);
  size_t n = mm_span_units(seg)[i].units;
  MM_ASSERT(!mm_span_units(seg)[i].free && seg->used_pages > 0 && i + n <= MM_SPAN_UNITS);
  heap->stats.blocks[mm_span_class(n)]--;
  mm_span_release(heap, seg, i, n);
  if (--seg->used_pages == 0) mm_span_segment_empty(heap, seg);
}

/* A free by any other thread: the owner frees the block when it drains its
 * delayed_free list. */
void _mm_span_free_remote(mm_segment_t *seg, void *p) {
  _mm_heap_delayed_push(seg->heap, (mm_block_t *)p);
}

/* The class a live block counts under in the statistics. */
unsigned _mm_span_block_class(mm_segment_t *seg, const void *p) {
  return mm_span_class(mm_span_units(seg)[mm_span_index(seg, p)].units);
}

size_t _mm_span_usable_size(mm_segment_t *seg, const void *p) {
  return (size_t)mm_span_units(seg)[mm_span_index(seg, p)].units << MM_SPAN_SHIFT;
}

/* Resizes p's run in place to hold `size` bytes (at most MM_SIZE_CLASS_MAX):
 * a shrink frees the tail, a growth takes the front of the free run after
 * it.  False when that run is too short, or when the caller does not own
 * the segment. */
bool _mm_span_resize(mm_segment_t *seg, void *p, size_t size) {
  mm_heap_t *heap = _mm_heap_tls;
  if (seg->heap != heap) return false;
  mm_span_t *all = mm_span_units(seg);
  size_t i = mm_span_index(seg, p), n = all[i].units, want = mm_span_units_for(size);
  if (want > n) {
    mm_span_t *next = i + n < MM_SPAN_UNITS ? &all[i + n] : NULL;
    if (next == NULL || !next->free || n + next->units < want) return false;
    size_t rest = n + next->units - want;
    size_t resident = next->resident;
    mm_span_bin_remove(heap, next);
    if (rest > 0) mm_span_make_free(heap, &all[i + want], rest, resident);
    mm_span_fault_in(heap, seg, i + n, want - n, resident);
  }
  heap->stats.blocks[mm_span_class(n)]--;
  heap->stats.blocks[mm_span_class(want)]++;
  mm_span_set(&all[i], want, false);
  if (want < n) mm_span_release(heap, seg, i + want, n - want);
  return true;
}
