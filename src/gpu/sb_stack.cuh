/* SPDX-License-Identifier: Apache-2.0 */
// gpu/sb_stack.cuh: where published Superblocks (partly free or emptied) go
// when the second-level FIFOs they may join are full. A few lock-free stacks
// per class and SM, a warp picking one by its salt, linked through the
// Superblocks' own headers: they never run out of room, so publishing a
// Superblock always succeeds, and a burst of frees that empties thousands of
// Superblocks (free-all) never sends them through the region lock. The head
// word is ABA tag:32 (high) | ref:32 of the top Superblock; the tag changes
// with every push and pop, so a pop that read a stale `next` fails its CAS.
#pragma once
#include "heap.cuh"
#include "warp.cuh"

__device__ __forceinline__ xmc_sb *xmc_sb_of(xmc_mb *mb) { return (xmc_sb *)(mb + 1); }

// Stack `i` of class `cls` (i < xmc_sb_stacks(), any SM's).
__device__ __forceinline__ xmc_atomic_u64 xmc_sb_stack(int cls, unsigned i) {
  const xmc_heap &h = xmc_c_heap;
  return xmc_atomic_u64(h.sb_stacks[cls * h.num_sb_buffers * xmc_sb_stacks_per_sm + i]);
}
__device__ __forceinline__ unsigned xmc_sb_stacks() { return xmc_c_heap.num_sb_buffers * xmc_sb_stacks_per_sm; }

// The stack of `cls` that this warp uses on this SM.
__device__ __forceinline__ xmc_atomic_u64 xmc_sb_stack_here(int cls) {
  return xmc_sb_stack(cls, xmc_sm_id() % xmc_c_heap.num_sb_buffers * xmc_sb_stacks_per_sm +
                               xmc_warp_salt() % xmc_sb_stacks_per_sm);
}

__device__ __forceinline__ unsigned long long xmc_sb_stack_word(unsigned long long old, uint32_t ref) {
  return ((old >> 32) + 1) << 32 | ref;
}

// Pushes the Superblock `sb` (reference `ref`); the caller holds its token.
__device__ inline void xmc_sb_stack_push(xmc_atomic_u64 head, xmc_sb *sb, uint32_t ref) {
  xmc_atomic32 next(sb->stack_next);
  unsigned long long w = head.load(cuda::memory_order_relaxed);
  do {
    next.store((uint32_t)w, cuda::memory_order_relaxed);
  } while (!head.compare_exchange_weak(w, xmc_sb_stack_word(w, ref), cuda::memory_order_release,
                                       cuda::memory_order_relaxed));
}

// The top Superblock's reference, or xmc_nil. Its `next` may be read after
// another lane popped it and reused the memory: the tag then makes the CAS
// fail, and the heap is never unmapped, so the read itself is harmless.
__device__ inline uint32_t xmc_sb_stack_pop(xmc_atomic_u64 head) {
  unsigned long long w = head.load(cuda::memory_order_acquire);
  while ((uint32_t)w != xmc_nil) {
    xmc_sb *sb = xmc_sb_of((xmc_mb *)xmc_deref((uint32_t)w));
    uint32_t next = xmc_atomic32(sb->stack_next).load(cuda::memory_order_relaxed);
    if (head.compare_exchange_weak(w, xmc_sb_stack_word(w, next), cuda::memory_order_acquire,
                                   cuda::memory_order_acquire))
      return (uint32_t)w;
  }
  return xmc_nil;
}

// Takes the whole stack at once (the reclaimer), leaving it empty: the first
// reference of a chain that the caller walks through stack_next.
__device__ inline uint32_t xmc_sb_stack_take_all(xmc_atomic_u64 head) {
  unsigned long long w = head.load(cuda::memory_order_relaxed);
  while ((uint32_t)w != xmc_nil &&
         !head.compare_exchange_weak(w, xmc_sb_stack_word(w, xmc_nil), cuda::memory_order_acquire,
                                     cuda::memory_order_relaxed)) {
  }
  return (uint32_t)w;
}
