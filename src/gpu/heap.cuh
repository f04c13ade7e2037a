// gpu/heap.cuh: the per-device heap instance, the 32-bit references that the
// FIFOs carry, and the setup kernels that host.cu launches.
#pragma once
#include "types.cuh"

extern __device__ xmc_heap xmc_g_heap;

// A chunk or Superblock start (unit aligned) as region:4 | unit index:28, the
// paper's 32-bit offset payload widened by a region number for xmcGrow.
__device__ __forceinline__ uint32_t xmc_ref(const char *start, uint32_t region) {
  return region << xmc_region_unit_bits |
         (uint32_t)((start - xmc_g_heap.regions[region].base) >> xmc_unit_shift);
}
__device__ __forceinline__ char *xmc_deref(uint32_t ref) {
  return xmc_g_heap.regions[ref >> xmc_region_unit_bits].base +
         ((size_t)(ref & ((1u << xmc_region_unit_bits) - 1)) << xmc_unit_shift);
}

// ---- setup kernels (one thread unless noted) -------------------------------

// Publishes `h` as this device's heap (h.ready == 0 tears it down).
__global__ void xmc_heap_install_kernel(xmc_heap h);
// Appends `region` (zeroed: all wilderness) to the heap.
__global__ void xmc_heap_add_region_kernel(xmc_region region);
// Empties `count` FIFOs of `capacity` slots each; grid-stride over FIFOs.
__global__ void xmc_fifo_init_kernel(xmc_fifo *fifos, uint64_t *slots, uint32_t count,
                                     uint32_t capacity);
// Copies the heap's header into `out`, for xmcGetStats.
__global__ void xmc_heap_read_kernel(xmc_heap *out);
