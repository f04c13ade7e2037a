/* SPDX-License-Identifier: Apache-2.0 */
// manymalloc gpu/: XMalloc, dynamic memory allocation from inside CUDA kernels.
//
// Usage: include this header, compile with -rdc=true, link libmanymalloc_gpu.a.
//   xmcInit(1ull << 30);                 // host: one heap per device
//   kernel<<<...>>>();                   // device: p = xmcMalloc(n); xmcFree(p);
//   xmcShutdown();
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

// ---- host API --------------------------------------------------------------

enum xmcError {
  xmcSuccess = 0,
  xmcErrorInvalidValue = 1,     // bad argument (zero or too small a heap, ...)
  xmcErrorNotInitialized = 2,   // no heap on the current device
  xmcErrorAlreadyInitialized = 3,
  xmcErrorOutOfMemory = 4,      // cudaMalloc of the heap failed
  xmcErrorCuda = 5,             // another CUDA runtime error
};

constexpr int xmcMaxSizeClasses = 64;

// Counters are kept per SM off the hot path's shared lines and summed here; a
// "block" below is what one size class hands out: a whole coalesced block
// serves the lanes of one warp, so class_allocs counts warps, not threads.
struct xmcStats {
  size_t heap_bytes;           // total bytes of the heap's regions (1/65 of them is its unit map)
  size_t bytes_in_use;         // bytes in live class blocks and large blocks
  size_t bytes_in_use_peak;    // high-water mark of heap bytes held in memoryblocks
  size_t bytes_free;           // block memory (heap_bytes less the map) not held by memoryblocks now
  int    num_classes;          // size classes in use
  size_t class_size[xmcMaxSizeClasses];                // usable bytes of a class block
  unsigned long long class_allocs[xmcMaxSizeClasses];  // class blocks handed out
  unsigned long long class_frees[xmcMaxSizeClasses];   // class blocks given back
  unsigned long long large_allocs;   // served straight from memoryblocks
  unsigned long long failed_allocs;  // requests that returned NULL
  unsigned long long invalid_frees;  // frees of blocks not live, or not ours (ignored)
};

// Switches for the papers' ablations; defaults are all on.
struct xmcConfig {
  bool coalescing = true;       // warp-level allocation coalescing
  bool buffering = true;        // replicated per-class FIFO buffers
  bool superblocks = true;      // two-level Superblock/Basicblock allocation
  int buffers_per_class = 0;    // replicated FIFOs per class; 0: eight per SM
};

xmcError xmcInit(size_t heap_bytes);
xmcError xmcInitWithConfig(size_t heap_bytes, const xmcConfig &config);
xmcError xmcShutdown();
xmcError xmcGrow(size_t extra_bytes);   // between launches only
xmcError xmcGetStats(xmcStats *out);
const char *xmcGetErrorString(xmcError err);

// ---- device API ------------------------------------------------------------

__device__ void *xmcMalloc(size_t size);
__device__ void  xmcFree(void *ptr);
__device__ void *xmcCalloc(size_t count, size_t size);
__device__ void *xmcRealloc(void *ptr, size_t size);
__device__ void *xmcAlignedAlloc(size_t alignment, size_t size);
// Bytes usable from `ptr` on (>= the size asked for); 0 for NULL or a pointer
// that is not a live block of this heap.
__device__ size_t xmcUsableSize(void *ptr);
