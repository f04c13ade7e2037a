// gpu/memoryblock.cuh: the heap underneath everything (CIT 2010, Sect. V-A,
// Fig. 6). Each region is a list of Memoryblocks in address order, linked by
// boundary tags (own size, distance back to the previous block); the free ones
// also sit on a free list. Allocation is first fit and splits a block, carving
// from its end so that the free block keeps its place; freeing merges with
// free neighbours. Serves Superblocks and requests above the largest class.
//
// A spin lock per region guards the list. That is safe under Volta+
// independent thread scheduling (a waiting lane never blocks the holder, even
// in its own warp) and stays off the hot path: one lane of a warp comes here
// only when the buffers and Superblocks of a class are exhausted.
#pragma once
#include <cuda/atomic>
#include "heap.cuh"

__device__ __forceinline__ xmc_mb *xmc_mb_at(xmc_region *r, uint32_t unit) {
  return (xmc_mb *)(r->base + ((size_t)unit << xmc_unit_shift));
}
__device__ __forceinline__ uint32_t xmc_mb_unit(xmc_region *r, const xmc_mb *mb) {
  return (uint32_t)(((const char *)mb - r->base) >> xmc_unit_shift);
}

__device__ inline void xmc_mb_lock(xmc_region *r) {
  cuda::atomic_ref<int, cuda::thread_scope_device> lock(r->lock);
  while (lock.exchange(1, cuda::memory_order_acquire) != 0) __nanosleep(64);
}
__device__ inline void xmc_mb_unlock(xmc_region *r) {
  cuda::atomic_ref<int, cuda::thread_scope_device>(r->lock).store(0, cuda::memory_order_release);
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

// The block after `mb`, or nullptr at the region's end.
__device__ __forceinline__ xmc_mb *xmc_mb_next(xmc_region *r, xmc_mb *mb) {
  uint32_t next = xmc_mb_unit(r, mb) + mb->size_units;
  return next < r->units ? xmc_mb_at(r, next) : nullptr;
}

__device__ inline void xmc_mb_account(long long units) {
  unsigned long long held = atomicAdd(&xmc_g_heap.held_units, (unsigned long long)units);
  if (units > 0) atomicMax(&xmc_g_heap.peak_units, held + units);
}

// ---- allocate and free --------------------------------------------------------

__device__ inline xmc_mb *xmc_mb_alloc_in(xmc_region *r, uint32_t units) {
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
  if (mb) xmc_mb_account(units);
  xmc_mb_unlock(r);
  return mb;
}

// A Memoryblock of at least `units` units, tagged `kind`/`cls`; nullptr when
// no region has a free block that large.
__device__ inline xmc_mb *xmc_mb_alloc(uint32_t units, xmc_kind kind, uint32_t cls) {
  for (uint32_t i = 0; i < xmc_g_heap.num_regions; ++i) {
    xmc_mb *mb = xmc_mb_alloc_in(&xmc_g_heap.regions[i], units);
    if (mb) {
      mb->tag = xmc_tag::make(kind, cls, 0, i);
      return mb;
    }
  }
  return nullptr;
}

__device__ inline void xmc_mb_free(xmc_mb *mb) {
  xmc_region *r = &xmc_g_heap.regions[xmc_tag::region(mb->tag)];
  xmc_mb_lock(r);
  xmc_mb_account(-(long long)mb->size_units);
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
