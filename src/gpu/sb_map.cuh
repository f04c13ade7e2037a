/* SPDX-License-Identifier: Apache-2.0 */
// gpu/sb_map.cuh: finding a Basicblock's Superblock by address, without
// touching the block. Each region keeps one 32-bit entry per granule of 32
// units (2 KiB). A Superblock is longer than a granule, so at most two meet
// any granule: the one covering its first byte (field A: distance back to
// its start, in units, and its class) and one starting inside it (field B:
// its offset in the granule, and its class). The Superblock's creator sets
// the fields of every granule it meets; they are cleared before its memory
// goes back to the Memoryblock heap. Neighbours share an entry, so fields
// are set and cleared with atomic OR and AND.
//
//   entry:  back A:14 | class A + 1:6 | offset B:5 | class B + 1:6 | 0:1
//           (class 0: no Superblock)
//
// xmcFree reads the entry beside the unit map's and uses it when the unit
// map names no compartment; with the class it finds the block's index by
// arithmetic and frees it with one atomic on the Superblock's live mask.
// Granules and the map's size are in types.cuh (the host lays the map out).
#pragma once
#include "heap.cuh"
#include "size_class.cuh"

static_assert(xmc_sb_units(0) > xmc_granule_units, "a Superblock is longer than a granule");
static_assert(xmc_sb_units(xmc_classes - 1) < (1u << 14), "field A's distance fits 14 bits");

struct xmc_sb_field {
  static __host__ __device__ constexpr uint32_t a(uint32_t back, int cls) { return back | (uint32_t)(cls + 1) << 14; }
  static __host__ __device__ constexpr uint32_t b(uint32_t offset, int cls) {
    return offset << 20 | (uint32_t)(cls + 1) << 25;
  }
  static constexpr uint32_t a_mask = (1u << 20) - 1, b_mask = ((1u << 11) - 1) << 20;
};

// A Superblock found from an address: its Memoryblock's unit and its class
// (cls < 0: none).
struct xmc_sb_at {
  uint32_t unit;
  int cls;
};

// The Superblock map of a region follows its unit map.
__device__ __forceinline__ uint32_t *xmc_sb_map_of(const xmc_region &r) { return (uint32_t *)(r.map + r.units); }

__device__ __forceinline__ uint32_t *xmc_sb_map_entry(uint32_t region, uint32_t unit) {
  return &xmc_sb_map_of(xmc_c_heap.regions[region])[unit >> xmc_granule_shift];
}

// The entry of the granule holding `unit`, read relaxed (neighbours update
// other fields of it).
__device__ __forceinline__ uint32_t xmc_sb_map_load(uint32_t region, uint32_t unit) {
  return xmc_relaxed_load_u32(xmc_sb_map_entry(region, unit));
}

// The Superblock that `entry` (of the granule holding `unit`) names for
// that unit, if any; the caller checks that the unit lies inside it.
__device__ __forceinline__ xmc_sb_at xmc_sb_map_decode(uint32_t entry, uint32_t unit) {
  const uint32_t first = unit & ~(xmc_granule_units - 1);
  const uint32_t offset_b = entry >> 20 & 31, cls_b = entry >> 25 & 63;
  if (cls_b && unit - first >= offset_b) return {first + offset_b, (int)cls_b - 1};
  const uint32_t back_a = entry & ((1u << 14) - 1), cls_a = entry >> 14 & 63;
  return {first - back_a, (int)cls_a - 1};
}

// Sets (`set`) or clears the fields of Superblock `mb` (`units` long, class
// `cls`) in every granule it meets. Only the granules at its two ends may
// hold a neighbour's field too; those take an atomic, the others a store.
__device__ inline void xmc_sb_map_update(const xmc_mb *mb, uint32_t units, int cls, bool set) {
  const uint32_t region = xmc_tag::region(mb->tag);
  uint32_t *map = xmc_sb_map_of(xmc_c_heap.regions[region]);
  const uint32_t start = xmc_unit_in(xmc_c_heap.regions[region].base, (const char *)mb), end = start + units;
  uint32_t g = start >> xmc_granule_shift;
  if (start & (xmc_granule_units - 1)) {
    const uint32_t field = xmc_sb_field::b(start & (xmc_granule_units - 1), cls);
    set ? xmc_atomic_or(&map[g], field) : xmc_atomic_and(&map[g], ~xmc_sb_field::b_mask);
    ++g;
  }
  auto value = [&](uint32_t k) { return set ? xmc_sb_field::a((k << xmc_granule_shift) - start, cls) : 0u; };
  for (; (g & 3) && (g + 1) << xmc_granule_shift <= end; ++g) map[g] = value(g);
  for (; (g + 4) << xmc_granule_shift <= end; g += 4) *(uint4 *)&map[g] = make_uint4(value(g), value(g + 1), value(g + 2), value(g + 3));
  for (; (g + 1) << xmc_granule_shift <= end; ++g) map[g] = value(g);
  if (g << xmc_granule_shift < end)
    set ? xmc_atomic_or(&map[g], xmc_sb_field::a((g << xmc_granule_shift) - start, cls)) : xmc_atomic_and(&map[g], ~xmc_sb_field::a_mask);
}
