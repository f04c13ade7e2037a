/* SPDX-License-Identifier: Apache-2.0 */
// gpu/coalesce.cuh: SIMD-level allocation coalescing (J. Supercomputing 2011,
// Sect. 5.1, Figs. 3-4; CIT 2010, Sect. IV). The lanes of a warp asking for
// small blocks of one size (in 16-byte units) become one request: one lane
// takes a chunk for all of them and each lane gets its compartment. The
// chunk's word says which compartments are live; the chunk goes back to its
// class when the last one is freed.
//
//   chunk:  [hdr: . | word | . | tag][comp 0][comp 1] ... [comp n-1]
//           +0      +8            +24 +32     +32+16u
//   word:   live compartments:32 | class:8 | units:8 | magic:16
//
// Compartments carry no header (the papers give each one): xmcFree finds the
// chunk through the region's unit map (unit_map.cuh), so 32 lanes asking for
// 16 bytes share a 512-byte chunk, not one of 1 KiB.
#pragma once
#include "buffer.cuh"
#include "size_class.cuh"
#include "unit_map.cuh"

// Compartment size of a request in 16-byte units (1..16).
__device__ __forceinline__ uint32_t xmc_coalesce_units(size_t size) { return (uint32_t)((size + 15) >> 4); }

__device__ __forceinline__ uint64_t *xmc_coalesced_word_of(char *chunk) {
  return (uint64_t *)(chunk + xmc_coalesced_word);
}

// Lanes of `group` (two or more, each asking for `units` 16-byte units)
// share one chunk. Returns the calling lane's compartment, or nullptr for
// all if the heap is exhausted.
__device__ inline void *xmc_coalesce_malloc(unsigned group, uint32_t units) {
  const int leader = xmc_warp_leader(group);
  const uint32_t n = __popc(group);
  char *chunk = nullptr;
  if ((int)xmc_lane_id() == leader) {
    const int cls = xmc_class_of(n * units * 16);
    chunk = xmc_buffer_get_warp(1u << leader, cls, false);
    xmc_sm_stats *st = xmc_stats_here();
    if (chunk) {
      *xmc_coalesced_word_of(chunk) = xmc_coalesced::make(xmc_bits_below(n), cls, units);
      xmc_atomic_add(&st->allocs[cls], 1);
    } else {
      xmc_atomic_add(&st->failed, n);
    }
  }
  chunk = xmc_warp_broadcast(group, chunk, leader);
  if (!chunk) return nullptr;
  const uint32_t bytes = units * 16, rank = xmc_warp_rank(group);
  char *p = chunk + xmc_chunk_header + rank * bytes;
  // The lowest compartment starting in each unit writes its map entry.
  if (rank == 0 || ((uintptr_t)(p - bytes) >> xmc_unit_shift) != ((uintptr_t)p >> xmc_unit_shift))
    xmc_map_mark(xmc_region_of(chunk), chunk, p);
  __syncwarp(group);  // the word and the map are written before any lane can free
  return p;
}

// What a compartment pointer `p` of the chunk whose word is `w` is: its
// index, or -1 when p is not the start of one.
__device__ __forceinline__ int xmc_compartment_index(const char *chunk, uint64_t w, const char *p) {
  const uint32_t units = xmc_coalesced::units(w);
  const size_t off = p - chunk - xmc_chunk_header;
  if (xmc_coalesced::magic(w) != xmc_magic_comp || !units || (off & 15)) return -1;
  // granule / units in floating point, no integer division: for a multiple
  // k * units the quotient is k + 0.5 / units, far from the rounding error.
  const uint32_t granule = (uint32_t)(off >> 4);
  if (granule >= 32 * units) return -1;
  const uint32_t index = __float2uint_rd(__fdividef((float)granule + 0.5f, (float)units));
  return index * units == granule ? (int)index : -1;
}

// Lanes of `group` free compartments `bits` of `chunk`, whose word they read
// as `w`: one 64-bit atomic clears their live bits and reads the class beside
// them. Returns, on the leader, the class when the chunk is now empty (else
// -1); compartments that were not live (double frees) are counted as invalid
// and change nothing. When `w` shows no live compartment but the group's,
// the group frees the last ones and the word is only stored: bits are set
// only by the allocation that `w` already reflects and cleared only by
// frees, so the word cannot have changed since (a free racing with the
// group's own of the same compartments excepted: a double free in the
// caller's program, found only when it comes later). That saves the atomic's
// round trip when a warp frees what it took together.
__device__ inline int xmc_coalesce_release(unsigned group, char *chunk, uint64_t w, uint32_t bits) {
  if ((int)xmc_lane_id() != xmc_warp_leader(group)) return -1;
  if (xmc_coalesced::live(w) == bits) {
    xmc_atomic64(*xmc_coalesced_word_of(chunk)).store(w & ~(uint64_t)bits, cuda::memory_order_relaxed);
    return (int)xmc_coalesced::cls(w);
  }
  const uint64_t old = xmc_atomic_and(xmc_coalesced_word_of(chunk), ~(uint64_t)bits);
  const uint32_t live = xmc_coalesced::live(old);
  if (uint32_t stale = bits & ~live) xmc_atomic_add(&xmc_stats_here()->invalid, __popc(stale));
  return (bits & live) && !(live & ~bits) ? (int)xmc_coalesced::cls(old) : -1;
}

// The last compartment is gone: the chunk goes back to its class. A chunk
// shared by compartments never had its live bit set (no pointer to it was
// handed out, so xmcFree of its start is taken for its first compartment).
__device__ inline void xmc_coalesce_recycle(char *chunk, int cls) {
  xmc_buffer_put(chunk, cls, xmc_region_of(chunk));
}
