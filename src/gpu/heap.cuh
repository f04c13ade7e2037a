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

// A chunk or Superblock start (unit aligned) as region:4 | unit index:28, the
// paper's 32-bit offset payload widened by a region number for xmcGrow.
__device__ __forceinline__ uint32_t xmc_ref(const char *start, uint32_t region) {
  return region << xmc_region_unit_bits |
         (uint32_t)((start - xmc_c_heap.regions[region].base) >> xmc_unit_shift);
}
__device__ __forceinline__ char *xmc_deref(uint32_t ref) {
  return xmc_c_heap.regions[ref >> xmc_region_unit_bits].base +
         ((size_t)(ref & ((1u << xmc_region_unit_bits) - 1)) << xmc_unit_shift);
}

// Region holding `p` (a pointer into the heap).
__device__ __forceinline__ uint32_t xmc_region_of(const char *p) {
  uint32_t i = 0;
  while (i + 1 < xmc_c_heap.num_regions &&
         (size_t)(p - xmc_c_heap.regions[i].base) >= ((size_t)xmc_c_heap.regions[i].units << xmc_unit_shift))
    ++i;
  return i;
}

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
