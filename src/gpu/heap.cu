/* SPDX-License-Identifier: Apache-2.0 */
// gpu/heap.cu: the per-device heap instance and the kernels that set it up,
// grow it and read it back for the host API (host.cu).
#include "fifo.cuh"
#include "heap.cuh"

__device__ xmc_heap xmc_g_heap;
__constant__ xmc_heap xmc_c_heap;

// <<<1, 1>>>
__global__ void xmc_heap_install_kernel(xmc_heap h) { xmc_g_heap = h; }

cudaError_t xmc_heap_publish(const xmc_heap &h) { return cudaMemcpyToSymbol(xmc_c_heap, &h, sizeof h); }

cudaError_t xmc_heap_install(const xmc_heap &h) {
  xmc_heap_install_kernel<<<1, 1>>>(h);
  return xmc_heap_publish(h);
}

// <<<1, 1>>>, between launches: nobody else touches the region list. The
// region arrives all wilderness (zeroed, top 0, no free list).
__global__ void xmc_heap_add_region_kernel(xmc_region region) {
  xmc_heap &h = xmc_g_heap;
  h.regions[h.num_regions] = region;
  __threadfence();
  h.total_units += region.units;
  h.num_regions++;
}

// Grid-stride over FIFOs; any shape.
__global__ void xmc_fifo_init_kernel(xmc_fifo *fifos, uint64_t *slots, uint32_t count, uint32_t capacity) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    xmc_fifo_init(&fifos[i], slots + (size_t)i * capacity, capacity);
}

// <<<1, 1>>>
__global__ void xmc_heap_read_kernel(xmc_heap *out) { *out = xmc_g_heap; }
