/* SPDX-License-Identifier: Apache-2.0 */
// gpu/unit_map.cuh: finding a compartment's chunk by address. Compartments
// of a coalesced chunk carry no header, so each region keeps one byte per
// 64-byte unit: 1 + the distance in units back to the start of the chunk
// that has a compartment starting in that unit; 0 where none has. The lanes
// of a coalesced allocation write it, the lowest lane of each unit. An entry
// stays true while the Superblock (or class Memoryblock) holding the chunk
// keeps its layout, whoever uses the chunk next, and is cleared when that
// goes back to the Memoryblock heap. So a chunk handed out whole may still
// be named: its payload is then also its first compartment's, not live, and
// xmcFree reads the chunk's tag to tell them apart (xmalloc.cu). The map
// follows the region's units (host.cu).
//
// The entries of a tile of 256 units are stored in a swizzled order, so that
// one 32-byte sector holds 8 neighbouring units from each of 4 stretches 4
// KiB apart:
//
//   unit:  ... | b7 b6 | b5 | b4 b3 | b2 b1 b0
//   entry: ... | b5 | b4 b3 | b7 b6 | b2 b1 b0     (sector: the low 5 bits)
//
// A warp freeing 32 Basicblocks of 2 or 4 KiB in a row then reads at most
// 14 / 11 sectors, not 32: in a heap too large for L2 the map otherwise
// costs up to a third of such a free. The compartments of one chunk take two.
#pragma once
#include <cuda/atomic>
#include "heap.cuh"
#include "size_class.cuh"

// An entry is read and written as a relaxed device-scope byte (not through
// atomic_ref, whose byte accesses are CAS loops on the enclosing word: the
// lanes of one coalesced allocation, marking neighbouring entries, would
// retry each other's CAS).
__device__ __forceinline__ uint32_t xmc_map_load(const uint8_t *entry) { return xmc_relaxed_load_u8(entry); }
__device__ __forceinline__ void xmc_map_store(uint8_t *entry, uint32_t v) { xmc_relaxed_store_u8(entry, v); }

// Where unit `unit`'s entry is stored in its region's map.
__device__ __forceinline__ uint32_t xmc_map_slot(uint32_t unit) {
  const uint32_t field = unit & 0xf8;  // bits 3-7, rotated left by two places
  return (unit & ~0xf8u) | ((field << 2 | field >> 3) & 0xf8);
}

// The map's entry for unit `unit` of region `region`.
__device__ __forceinline__ uint32_t xmc_map_entry(uint32_t region, uint32_t unit) {
  return xmc_map_load(&xmc_c_heap.regions[region].map[xmc_map_slot(unit)]);
}

// The chunk that entry `back` of unit `unit` names, or nullptr.
__device__ __forceinline__ char *xmc_map_chunk(uint32_t region, uint32_t unit, uint32_t back) {
  return back ? xmc_c_heap.regions[region].base + ((size_t)(unit + 1 - back) << xmc_unit_shift) : nullptr;
}

// Records that a compartment of `chunk` (in region `region`) starts at `p`.
__device__ __forceinline__ void xmc_map_mark(uint32_t region, const char *chunk, const char *p) {
  const char *base = xmc_c_heap.regions[region].base;
  const uint32_t unit = xmc_unit_in(base, p);
  xmc_map_store(&xmc_c_heap.regions[region].map[xmc_map_slot(unit)], unit + 1 - xmc_unit_in(base, chunk));
}

// Forgets the chunks of a Memoryblock going back to the heap (`units` from
// `start`, in region `region`).
__device__ inline void xmc_map_clear(const char *start, uint32_t units, uint32_t region) {
  uint8_t *map = xmc_c_heap.regions[region].map;
  const uint32_t first = xmc_unit_in(xmc_c_heap.regions[region].base, start), end = first + units;
  // Eight units from a multiple of 8 have neighbouring entries.
  uint32_t u = first;
  for (; u < end && (u & 7); ++u) xmc_map_store(&map[xmc_map_slot(u)], 0);
  for (; u + 8 <= end; u += 8) xmc_atomic_u64(*(unsigned long long *)&map[xmc_map_slot(u)]).store(0, cuda::memory_order_relaxed);
  for (; u < end; ++u) xmc_map_store(&map[xmc_map_slot(u)], 0);
}

// A Superblock or class Memoryblock of `cls` goes back to the heap: the
// entries of its chunks go with it (only classes that coalesced chunks use).
__device__ inline void xmc_map_forget(const xmc_mb *mb, uint32_t cls) {
  if (xmc_c_heap.coalescing && cls < xmc_classes && xmc_class_body((int)cls) <= xmc_coalesced_max_body)
    xmc_map_clear((const char *)mb, mb->size_units, xmc_tag::region(mb->tag));
}
