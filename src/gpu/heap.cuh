/* SPDX-License-Identifier: Apache-2.0 */
// gpu/heap.cuh: the per-device heap instance, the 32-bit references that the
// FIFOs carry, and the setup kernels that host.cu launches.
#pragma once
#include "types.cuh"

// The heap's state: its regions' tops, locks and free lists, the peak, the
// reclaimer's lock. Written by device code.
extern __device__ xmc_heap xmc_g_heap;
// The same header as the host last installed it: everything fixed between
// launches (switches, buffer layout, region bases). Read on every call, so it
// sits in constant memory, cached on each SM and broadcast to the warp.
extern __constant__ xmc_heap xmc_c_heap;

// Index of the 64-byte unit holding `p` in the region based at `base`.
__device__ __forceinline__ uint32_t xmc_unit_in(const char *base, const char *p) {
  return (uint32_t)((size_t)(p - base) >> xmc_unit_shift);
}

// A chunk or Superblock start (unit aligned) as region:4 | unit index:28, the
// paper's 32-bit offset payload widened by a region number for xmcGrow.
__device__ __forceinline__ uint32_t xmc_ref(const char *start, uint32_t region) {
  return region << xmc_region_unit_bits | xmc_unit_in(xmc_c_heap.regions[region].base, start);
}
__device__ __forceinline__ char *xmc_deref(uint32_t ref) {
  return xmc_c_heap.regions[ref >> xmc_region_unit_bits].base +
         ((size_t)(ref & ((1u << xmc_region_unit_bits) - 1)) << xmc_unit_shift);
}

// The region whose blocks hold `p`, or -1: not a pointer into this heap.
__device__ __forceinline__ int xmc_region_holding(const char *p) {
  const xmc_heap &h = xmc_c_heap;
  for (uint32_t i = 0; i < h.num_regions; ++i)
    if ((size_t)(p - h.regions[i].base) < ((size_t)h.regions[i].units << xmc_unit_shift)) return (int)i;
  return -1;
}

// Region holding `p`, a pointer into the heap.
__device__ __forceinline__ uint32_t xmc_region_of(const char *p) { return (uint32_t)xmc_region_holding(p); }

// ---- setup (host.cu) -------------------------------------------------------

// Installs `h` as this device's heap, state and constant copy (h.ready == 0
// tears it down). Between launches only.
cudaError_t xmc_heap_install(const xmc_heap &h);
// Refreshes the constant copy after regions were added.
cudaError_t xmc_heap_publish(const xmc_heap &h);


// Appends `region` (zeroed: all wilderness) to the heap.
__global__ void xmc_heap_add_region_kernel(xmc_region region);
// Empties `count` FIFOs of `capacity` slots each; grid-stride over FIFOs.
__global__ void xmc_fifo_init_kernel(xmc_fifo *fifos, uint64_t *slots, uint32_t count,
                                     uint32_t capacity);
// Copies the heap's header into `out`, for xmcGetStats.
__global__ void xmc_heap_read_kernel(xmc_heap *out);
