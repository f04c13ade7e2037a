// gpu/coalesce.cuh: SIMD-level allocation coalescing (J. Supercomputing 2011,
// Sect. 5.1, Figs. 3-4; CIT 2010, Sect. IV). The lanes of a warp asking for
// small blocks become one request: their compartment sizes are scanned, one
// lane takes a chunk for the total, and each lane initialises its own
// compartment. The coalesced block counts its live compartments and goes back
// to its class when the last one is freed.
//
//   chunk payload p:  [count:32 | class:32][hdr|data ][hdr|data     ]...
//                      8 bytes             compartment compartment
//   compartment hdr:  magic:16 | units:16 | offset of the hdr from p:32
#pragma once
#include "buffer.cuh"
#include "size_class.cuh"

struct alignas(8) xmc_coalesced {
  uint32_t count;        // live compartments (the low word of the pair)
  uint32_t cls;          // the chunk's class, for its return
};

// Compartment of a `size`-byte request in 16-byte units: an 8-byte header,
// then the data, so that data lands 16-byte aligned (compartments start at
// p + 8 + 16k). At most 17 units for size <= xmc_coalesce_max.
__device__ __forceinline__ uint32_t xmc_coalesce_units(size_t size) {
  return (uint32_t)((size + 8 + 15) >> 4);
}

// Class of the chunk for compartments of `total` units whose last one ends
// `tail` bytes before its 16-byte unit does. The last compartment needs no
// padding after its data, so the chunk may be `tail` bytes short of the
// units (32 x 128 B then fits a 4608-byte body instead of a 5120-byte one),
// where the chunk's stride leaves at least `tail` bytes after its body: the
// last compartment's usable size (whole units) still ends inside the stride.
__device__ inline int xmc_coalesce_class(uint32_t total, uint32_t tail) {
  const uint32_t bytes = sizeof(xmc_coalesced) + total * 16;
  const int trimmed = xmc_class_of(bytes - tail);
  const uint32_t slack = xmc_class_stride(trimmed) - xmc_chunk_header - xmc_class_body(trimmed);
  return slack >= tail ? trimmed : xmc_class_of(bytes);
}

// Lanes of `group` (two or more, all with size <= xmc_coalesce_max) share one
// chunk. Returns the calling lane's block, or nullptr for all if the heap is
// exhausted.
__device__ inline void *xmc_coalesce_malloc(unsigned group, size_t size) {
  const int leader = xmc_warp_leader(group);
  const uint32_t units = xmc_coalesce_units(size);
  uint32_t total;
  const uint32_t before = xmc_warp_scan_small<5>(group, units, &total);
  const uint32_t tail = __shfl_sync(group, units * 16 - 8 - (uint32_t)size, 31 - __clz(group));
  char *p = nullptr;
  if ((int)xmc_lane_id() == leader) {
    const int cls = xmc_coalesce_class(total, tail);
    char *chunk = xmc_buffer_get_warp(1u << leader, cls);
    xmc_sm_stats *st = xmc_stats_here();
    if (chunk) {
      p = chunk + xmc_chunk_header;
      *(xmc_coalesced *)p = xmc_coalesced{(uint32_t)__popc(group), (uint32_t)cls};
      atomicAdd(&st->allocs[cls], 1ull);
    } else {
      atomicAdd(&st->failed, (unsigned long long)__popc(group));
    }
  }
  __syncwarp(group);  // the count is written before any lane can free
  p = xmc_warp_broadcast(group, p, leader);
  if (!p) return nullptr;
  const uint32_t offset = sizeof(xmc_coalesced) + before * 16;
  *(uint64_t *)(p + offset) = xmc_comp::make(units, offset);
  return p + offset + 8;
}

// Lanes of `group` free compartments of the coalesced block at `p`. One
// 64-bit atomic takes their number off the count and reads the class beside
// it; the lane that brings the count to zero gets the class (else -1).
__device__ inline int xmc_coalesce_release(unsigned group, char *p) {
  if ((int)xmc_lane_id() != xmc_warp_leader(group)) return -1;
  const uint32_t n = __popc(group);
  const unsigned long long old = atomicAdd((unsigned long long *)p, 0ull - n);  // count is the low word
  return (uint32_t)old == n ? (int)(old >> 32) : -1;
}

// The last compartment is gone: the chunk goes back to its class. No tag is
// read: the class came with the count, the region follows from the address,
// and a chunk shared by compartments never had its live bit set (no pointer
// to it was handed out, so xmcFree of its start is invalid).
__device__ inline void xmc_coalesce_recycle(char *p, int cls) {
  char *chunk = p - xmc_chunk_header;
  xmc_buffer_put(chunk, cls, xmc_region_of(chunk));
}

// Usable bytes of a compartment from its header.
__device__ __forceinline__ size_t xmc_coalesce_usable(uint64_t hdr) { return xmc_comp::units(hdr) * 16 - 8; }
