/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: giving memory back to the OS, the policy.
 *
 * This file decides what goes back and when; the structures only offer to
 * give back N units of 4 KiB (span.c: free runs, segment.c: free page slots
 * and retired segments, shrink.c: free blocks inside pages, page.c: spare
 * pages, large.c: cached mappings).  Its state is the heap's mm_purge_t and
 * one process-wide timer.
 *
 * Matching growth.  The structures report the units they take afresh
 * (_mm_purge_grown) and those they fault in again after giving them back
 * (_mm_purge_refaulted).  Per MM_GROWN_BATCH units, the next malloc's slow
 * path gives back as many, so that a heap that grows while it holds free
 * memory stays near its live size, as glibc's does by handing a free chunk
 * to any size.  Away from the heap's peak only free spans give back, and
 * faults are not matched: a program that frees and allocates as much again
 * would otherwise give back and fault in the same pages every round.  With
 * many threads growth is matched once the purge delay is over.  At
 * the peak, and only while few threads have heaps (each madvise interrupts
 * every other CPU running the process), free page slots and free blocks
 * inside pages give back too.
 *
 * The time budget.  What pages give back from inside (shrink.c) mostly
 * comes back, each OS page at the price of a share of an madvise and a
 * fault; a budget that grows by MANYMALLOC_SHRINK_RATE up to
 * MM_PURGE_BURST bounds that cost for a program that allocates as fast as
 * it can at its peak (decision 0033: the shrink rate bound).
 *
 * Delays.  An emptied segment, the heap's kept empty span segment and a
 * cached large mapping go back once they stayed unused for
 * MANYMALLOC_PURGE_DELAY ms.  The heap's own wait for `purge.due`; those of
 * exited threads and the large mappings for `_mm_purge_warm_due`, which any
 * thread's slow path serves. */
#include "internal.h"

#define MM_PURGE_BURST 64 /* 4 KiB units the time budget holds at most */

uintptr_t _mm_purge_warm_due; /* ms when the oldest one expires; 0: none */

/* ---------------------------------------------------------------------------
 * Accounting
 * ------------------------------------------------------------------------- */

/* The heap took `units` of 4 KiB that were never resident (a page carved
 * further, a span reaching untouched memory). */
void _mm_purge_grown(mm_heap_t *heap, size_t units) {
  if (_mm_options.purge) heap->purge.grown += units; /* MANYMALLOC_PURGE=0: keep everything committed */
}

/* The heap faults in again `units` of 4 KiB that it gave back. */
void _mm_purge_refaulted(mm_heap_t *heap, size_t units) {
  if (_mm_options.purge) heap->purge.refaulted += units;
}

/* Bytes in blocks of the heap, as its statistics last counted them. */
static size_t mm_purge_in_use(const mm_heap_t *heap) {
  intptr_t bytes = 0;
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) bytes += heap->stats.blocks[c] * (intptr_t)mm_size_class_size(c);
  return bytes > 0 ? (size_t)bytes : 0;
}

/* Whether the heap is at its peak: bytes in use within 1/MM_NEAR_HIGH of
 * their highest so far, that highest rose within the last MM_RISING_CALLS
 * give-backs, and few threads have heaps (MANYMALLOC_SHRINK on). */
static bool mm_purge_at_peak(mm_purge_t *purge, size_t in_use, bool few_threads) {
  if (in_use > purge->in_use_high) {
    purge->in_use_high = in_use;
    purge->high_rose_at = purge->give_backs;
  }
  bool rising = purge->give_backs - purge->high_rose_at <= MM_RISING_CALLS;
  return _mm_options.shrink && rising && in_use >= purge->in_use_high - purge->in_use_high / MM_NEAR_HIGH && few_threads;
}

/* ---------------------------------------------------------------------------
 * The time budget of shrinking pages
 * ------------------------------------------------------------------------- */

/* Units the heap's pages may give back now, at most `units`: the budget,
 * grown by the rate since it last grew (MANYMALLOC_SHRINK_RATE=0: any
 * number).  A second refills the burst at any rate of 1 MiB/s or more, so
 * the time counts up to a second, and the product cannot overflow
 * (options.c). */
static size_t mm_purge_budget(mm_heap_t *heap, size_t units) {
  if (_mm_options.shrink_rate == 0) return units;
  mm_purge_t *purge = &heap->purge;
  uint64_t now = _mm_os_clock_ms(), elapsed = now - purge->budget_at;
  if (elapsed > 1000) elapsed = 1000;
  uint64_t grown = elapsed * _mm_options.shrink_rate * (1024 * 1024 / MM_OS_PAGE_SIZE) / 1000;
  intptr_t budget = purge->budget_at == 0 || grown >= MM_PURGE_BURST ? MM_PURGE_BURST : purge->budget + (intptr_t)grown;
  purge->budget = budget > MM_PURGE_BURST ? MM_PURGE_BURST : budget;
  purge->budget_at = now;
  return purge->budget <= 0 ? 0 : units < (size_t)purge->budget ? units : (size_t)purge->budget;
}

/* Pages give back up to about `units` OS pages of free blocks within the
 * budget; a run may give back more than asked, and the budget goes below
 * zero. */
static size_t mm_purge_shrink_pages(mm_heap_t *heap, size_t units) {
  units = mm_purge_budget(heap, units);
  if (units == 0) return 0;
  size_t given = _mm_heap_shrink_pages(heap, units);
  heap->purge.budget -= (intptr_t)given;
  return given;
}

/* ---------------------------------------------------------------------------
 * Giving back as the heap grows
 * ------------------------------------------------------------------------- */

/* With more threads than MANYMALLOC_SHRINK_THREADS, each madvise makes
 * every other CPU running the process flush its TLB: growth is matched once
 * the purge delay since its oldest unmatched part is over, in one pass over
 * the runs still free then, so that runs freed and cut again meanwhile
 * neither go back nor fault in again (decision 0096: growth matched after
 * the delay with many threads). */
static void mm_purge_owe(mm_heap_t *heap, size_t units) {
  mm_purge_t *purge = &heap->purge;
  /* no more than the free spans could match now: growth while none is free is forgiven */
  purge->owed = purge->owed + units < heap->span_resident ? purge->owed + units : heap->span_resident;
  if (purge->owed == 0 || purge->owed_since != 0) return;
  uint64_t now = _mm_os_clock_ms();
  purge->owed_since = now != 0 ? now : 1;
  _mm_purge_schedule(heap, mm_purge_delay_end(now));
}

/* The growth owed since the delay began goes back from free spans, their
 * tails only; what they cannot match is forgiven. */
static void mm_purge_repay(mm_heap_t *heap, uint64_t now) {
  mm_purge_t *purge = &heap->purge;
  if (purge->owed_since == 0) return;
  if (mm_purge_delay_end(purge->owed_since) > now) {
    _mm_purge_schedule(heap, mm_purge_delay_end(purge->owed_since));
    return;
  }
  _mm_span_purge(heap, purge->owed, false);
  purge->owed = 0;
  purge->owed_since = 0;
}

/* Gives back as many units as the heap took afresh, from free spans that
 * are resident (the largest first).  At its peak it also gives back as many
 * as it faulted in again, and where the spans fall short, the spare pages,
 * the resident memory of free page slots and the OS pages of free blocks
 * inside pages.  With many threads it only owes the growth
 * (mm_purge_owe).  Called where no page or span is in hand. */
void _mm_purge_growth(mm_heap_t *heap) {
  mm_purge_t *purge = &heap->purge;
  bool few_threads = _mm_few_threads();
  bool at_peak = mm_purge_at_peak(purge, mm_purge_in_use(heap), few_threads);
  size_t want = purge->grown + (at_peak ? purge->refaulted : 0);
  purge->give_backs++;
  purge->refaulted = 0;
  if (want < MM_GROWN_BATCH) return; /* faulted in away from the peak: nothing to match yet */
  purge->grown = 0;
  if (!few_threads) {
    mm_purge_owe(heap, want);
    return;
  }
  size_t given = _mm_span_purge(heap, want, true);
  if (!at_peak) return;
  _mm_heap_release_spares(heap);
  if (given < want) given += _mm_segment_purge_free_slots(heap, want - given);
  if (given < want) mm_purge_shrink_pages(heap, want - given);
}

/* A page that its class keeps while it has no live block (_mm_page_retire)
 * gives back all it carved, within the budget, so that a program whose
 * sizes change as it runs does not keep an empty page resident in every
 * class it used.  A page of fewer than MM_SHRINK_EMPTY_MIN carved OS pages
 * keeps them: a class whose few blocks come and go would give them back
 * and fault them in each time (decision 0034: the least an empty page
 * gives back).  A page that gave back as it emptied less than the purge
 * delay ago waits out the delay instead, and goes back then if it is still
 * empty (mm_purge_kept_waiting): a class whose blocks come and go around
 * none would otherwise give back and fault in the same OS pages at every
 * turn (decision 0095: an emptied page gives back at most once a delay).
 * In checked mode pages keep what they carved: the carved range tells a
 * double free from a pointer never handed out (checked.c). */
void _mm_purge_page_emptied(mm_page_t *page) {
  if (!_mm_options.shrink || _mm_options.checked || !_mm_few_threads()) return;
  size_t units = _mm_page_resident_units(page);
  if (units < MM_SHRINK_EMPTY_MIN) return;
  mm_segment_t *seg = mm_segment_of(page->start);
  mm_heap_t *heap = seg->heap;
  mm_slot_memory_t *memory = &seg->slot_memory[page->index];
  uint64_t now = _mm_os_clock_ms();
  if (memory->emptied_back != 0 && (uint32_t)now - memory->emptied_back < _mm_options.purge_delay) {
    heap->purge.kept_waiting = true;
    _mm_purge_schedule(heap, mm_purge_delay_end(now));
    return;
  }
  if (mm_purge_budget(heap, units) < units) return;
  heap->purge.budget -= (intptr_t)units;
  memory->emptied_back = (uint32_t)now != 0 ? (uint32_t)now : 1;
  _mm_page_shrink_all(page);
}

/* The kept pages that waited out the delay give back if still empty (those
 * that emptied again meanwhile wait once more). */
static void mm_purge_kept_waiting(mm_heap_t *heap) {
  heap->purge.kept_waiting = false;
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) {
    mm_page_t *page = heap->queues[c].first;
    for (unsigned kept = 0; page != NULL && kept < 2; page = page->next, kept++)
      if (page->used == 0) _mm_purge_page_emptied(page);
  }
}

/* ---------------------------------------------------------------------------
 * Giving back after a delay
 * ------------------------------------------------------------------------- */

/* Some of the heap's memory (a retired segment, the empty span segment's
 * tail) goes back to the OS at `at` (ms) if it is still unused then. */
void _mm_purge_schedule(mm_heap_t *heap, uint64_t at) {
  if (heap->purge.due == 0 || at < heap->purge.due) heap->purge.due = at;
}

/* Makes _mm_purge_warm_due at most `at`: exited threads' segments or a
 * cached large mapping go back then. */
void _mm_purge_warm_schedule(uint64_t at) {
  uintptr_t due = mm_atomic_load_relaxed(&_mm_purge_warm_due);
  while ((due == 0 || at < due) && !mm_atomic_cas(&_mm_purge_warm_due, &due, (uintptr_t)at)) {}
}

/* Releases the handed-over segments and the cached large mappings whose
 * delay is over (or all of the segments), once _mm_purge_warm_due has come;
 * one thread at a time does it, and they schedule again what stays. */
static void mm_purge_warm_expire(uint64_t now, bool all) {
  uintptr_t due = mm_atomic_load_relaxed(&_mm_purge_warm_due);
  if (due == 0 || (now < due && !all)) return;
  if (!mm_atomic_cas(&_mm_purge_warm_due, &due, 0)) return;
  if (_mm_options.purge) _mm_large_cache_expire(now); /* MANYMALLOC_PURGE=0: keep everything committed */
  _mm_segment_warm_expire(now, all);
}

/* Gives back what is due at `now` (ms): the heap's own, and exited
 * threads' segments and cached large mappings, which any heap's slow path
 * releases.  Called from the slow paths while something is scheduled; a
 * thread that stops allocating keeps its own until it allocates again,
 * exits or calls mm_collect. */
void _mm_purge_expired(mm_heap_t *heap, uint64_t now) {
  mm_purge_warm_expire(now, false);
  if (heap->purge.due == 0 || now < heap->purge.due) return;
  heap->purge.due = 0;
  _mm_segment_purge_expired(heap, now);
  _mm_span_purge_expired(heap, now);
  mm_purge_repay(heap, now);
  if (heap->purge.kept_waiting) mm_purge_kept_waiting(heap);
}

/* ---------------------------------------------------------------------------
 * Collection
 * ------------------------------------------------------------------------- */

/* The heap's empty pages went back to their segments (_mm_heap_collect).
 * With `release_all` (mm_collect) its retired segments, the resident
 * memory of its free page slots and of its free span runs go back to the
 * OS; else its thread exits and hands the retired segments over to the
 * threads after it.  Nothing of the heap's stays scheduled. */
void _mm_purge_collect(mm_heap_t *heap, bool release_all) {
  if (release_all) {
    _mm_segment_retired_release(heap);
    _mm_segment_purge_free_slots(heap, SIZE_MAX);
    _mm_span_purge(heap, SIZE_MAX, true);
  } else {
    _mm_segment_retired_hand_over(heap);
  }
  heap->purge.due = 0;
  heap->purge.owed = 0;
  heap->purge.owed_since = 0;
  heap->purge.kept_waiting = false;
}

/* Returns every cached segment and mapping of the process to the OS. */
void _mm_purge_caches(void) {
  mm_purge_warm_expire(0, true);
  _mm_segment_cache_purge();
  _mm_large_cache_purge();
}
