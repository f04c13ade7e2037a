/* SPDX-License-Identifier: Apache-2.0 */
// gpu/memoryblock.cuh: the heap underneath everything (CIT 2010, Sect. V-A,
// Fig. 6). Each region is a list of Memoryblocks in address order, linked by
// boundary tags (own size, distance back to the previous block); the free ones
// also sit on a free list. Serves Superblocks and requests above the largest
// class.
//
// A region grows its list from the low end of its wilderness: carving takes
// one fetch-and-add on the region's top, no lock, so that a burst of warps
// needing fresh Superblocks does not queue. The carver writes its block's
// size and, in the header position right after it, the successor's distance
// back. Once the wilderness is used up, requests go to the free list: first
// fit, splitting a block from its end so that the free block keeps its place;
// freeing merges with free neighbours. A spin lock per region guards the free
// list. That is safe under Volta+ independent thread scheduling (a waiting
// lane never blocks the holder, even in its own warp).
#pragma once
#include <cuda/atomic>
#include "heap.cuh"

__device__ __forceinline__ xmc_mb *xmc_mb_at(xmc_region *r, uint32_t unit) {
  return (xmc_mb *)(r->base + ((size_t)unit << xmc_unit_shift));
}
__device__ __forceinline__ uint32_t xmc_mb_unit(xmc_region *r, const xmc_mb *mb) {
  return xmc_unit_in(r->base, (const char *)mb);
}

__device__ inline void xmc_mb_lock(xmc_region *r) {
  xmc_atomic_int lock(r->lock);
  while (lock.exchange(1, cuda::memory_order_acquire) != 0) __nanosleep(64);
}
__device__ inline void xmc_mb_unlock(xmc_region *r) {
  xmc_atomic_int(r->lock).store(0, cuda::memory_order_release);
}

// ---- accounting ---------------------------------------------------------------

// Units held now: carved and not on a free list. Grows by carving (no
// bookkeeping) and by free-list allocations; shrinks only when a block goes
// onto a free list, so the peak is sampled there (and by xmcGetStats).
__device__ inline unsigned long long xmc_mb_held_units() {
  unsigned long long held = 0;
  for (uint32_t i = 0; i < xmc_g_heap.num_regions; ++i) {
    xmc_region *r = &xmc_g_heap.regions[i];
    held += xmc_region_held(xmc_atomic_u64(r->top).load(cuda::memory_order_relaxed), r->units,
                            xmc_atomic_u64(r->free_units).load(cuda::memory_order_relaxed));
  }
  return held;
}

__device__ inline void xmc_mb_sample_peak() {
  xmc_atomic_max(&xmc_g_heap.peak_units, xmc_mb_held_units());
}

// ---- free list (caller holds the region lock) -------------------------------

__device__ inline void xmc_mb_list_push(xmc_region *r, xmc_mb *mb) {
  uint32_t unit = xmc_mb_unit(r, mb);
  mb->is_free = 1;
  mb->free_prev = xmc_nil;
  mb->free_next = r->free_head;
  if (r->free_head != xmc_nil) xmc_mb_at(r, r->free_head)->free_prev = unit;
  r->free_head = unit;
}

__device__ inline void xmc_mb_list_remove(xmc_region *r, xmc_mb *mb) {
  if (mb->free_prev != xmc_nil) xmc_mb_at(r, mb->free_prev)->free_next = mb->free_next;
  else r->free_head = mb->free_next;
  if (mb->free_next != xmc_nil) xmc_mb_at(r, mb->free_next)->free_prev = mb->free_prev;
  mb->is_free = 0;
}

// The header position after `mb`, or nullptr at the region's end. It may be
// uncarved wilderness: zeroed, so it never reads as free.
__device__ __forceinline__ xmc_mb *xmc_mb_next(xmc_region *r, xmc_mb *mb) {
  uint32_t next = xmc_mb_unit(r, mb) + mb->size_units;
  return next < r->units ? xmc_mb_at(r, next) : nullptr;
}

// ---- allocate and free --------------------------------------------------------

__device__ inline xmc_mb *xmc_mb_alloc_listed(xmc_region *r, uint32_t units) {
  if (xmc_atomic_u64(r->free_units).load(cuda::memory_order_relaxed) < units) return nullptr;  // not worth the lock
  xmc_mb_lock(r);
  xmc_mb *mb = nullptr;
  for (uint32_t u = r->free_head; u != xmc_nil; u = xmc_mb_at(r, u)->free_next) {
    xmc_mb *cand = xmc_mb_at(r, u);
    if (cand->size_units < units) continue;
    if (cand->size_units == units) {
      xmc_mb_list_remove(r, cand);
      mb = cand;
    } else {  // carve the tail off: the free block keeps its list position
      xmc_mb *next = xmc_mb_next(r, cand);
      cand->size_units -= units;
      mb = xmc_mb_at(r, u + cand->size_units);
      mb->prev_units = cand->size_units;
      mb->size_units = units;
      mb->is_free = 0;
      if (next) next->prev_units = units;
    }
    break;
  }
  if (mb) xmc_atomic_u64(r->free_units).fetch_sub(units, cuda::memory_order_relaxed);
  xmc_mb_unlock(r);
  return mb;
}

// A previous block's distance of 0 means "first in the region" or "its carver
// has not written it yet"; either way there is nothing to merge backwards with.
static __device__ __noinline__ void xmc_mb_free(xmc_mb *mb) {
  xmc_region *r = &xmc_g_heap.regions[xmc_tag::region(mb->tag)];
  xmc_mb_lock(r);
  xmc_mb_sample_peak();
  xmc_atomic_u64(r->free_units).fetch_add(mb->size_units, cuda::memory_order_relaxed);
  mb->tag = 0;
  xmc_mb *next = xmc_mb_next(r, mb);
  if (next && next->is_free) {
    xmc_mb_list_remove(r, next);
    mb->size_units += next->size_units;
    next = xmc_mb_next(r, mb);
  }
  xmc_mb *prev = mb->prev_units ? (xmc_mb *)((char *)mb - ((size_t)mb->prev_units << xmc_unit_shift))
                                : nullptr;
  if (prev && prev->is_free) {
    prev->size_units += mb->size_units;
    mb = prev;
  } else {
    xmc_mb_list_push(r, mb);
  }
  if (next) next->prev_units = mb->size_units;
  xmc_mb_unlock(r);
}

// `units` from the wilderness, lock-free; nullptr once it is used up. The
// request that crosses the region's end turns what is left into a free block.
// No load of `top` first: that was a round trip of its own on the path of
// every Superblock a cursor installs; past the end, top (64 bits) only grows,
// and whoever reads it clamps it to the region (xmc_region_held).
__device__ inline xmc_mb *xmc_mb_carve(xmc_region *r, uint32_t region, uint32_t units) {
  const unsigned long long start = xmc_atomic_u64(r->top).fetch_add(units, cuda::memory_order_relaxed);
  const bool fits = start + units <= r->units;
  if (!fits && start >= r->units) return nullptr;
  xmc_mb *mb = xmc_mb_at(r, (uint32_t)start);
  mb->size_units = fits ? units : r->units - (uint32_t)start;
  mb->is_free = 0;
  if (start + units < r->units) xmc_mb_at(r, (uint32_t)(start + units))->prev_units = units;
  if (fits) return mb;
  mb->tag = xmc_tag::make(xmc_kind_memory, xmc_class_large, 0, region);
  xmc_mb_free(mb);
  return nullptr;
}

// A Memoryblock of at least `units` units, tagged `kind`/`cls`; nullptr when
// no region has a free block that large.
static __device__ __noinline__ xmc_mb *xmc_mb_alloc(uint32_t units, xmc_kind kind, uint32_t cls) {
  for (uint32_t i = 0; i < xmc_c_heap.num_regions; ++i) {
    xmc_region *r = &xmc_g_heap.regions[i];
    xmc_mb *mb = xmc_mb_carve(r, i, units);
    if (!mb) mb = xmc_mb_alloc_listed(r, units);
    if (mb) {
      mb->tag = xmc_tag::make(kind, cls, 0, i);
      return mb;
    }
  }
  return nullptr;
}
