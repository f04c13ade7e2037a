/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: the benchmark kernels, each templated on a heap policy (see
// bench_heaps.cuh) so that every allocator runs the very same code.
// Launch shape of all kernels: 1-D grid of bench_block threads.
#pragma once
#include "bench_device.cuh"

constexpr int bench_block = 256;

inline unsigned bench_grid(unsigned long long threads) {
  return unsigned((threads + bench_block - 1) / bench_block);
}

__device__ __forceinline__ unsigned bench_tid() {
  return blockIdx.x * blockDim.x + threadIdx.x;
}

// Writes the tag at both ends of a block (blocks are at least 8 bytes): a
// block shorter than asked for, or shared with another thread, fails the check.
__device__ __forceinline__ void bench_block_write(void *p, size_t size, uint64_t tag) {
  static_cast<volatile uint64_t *>(p)[0] = tag;
  if (size > 8) static_cast<volatile uint8_t *>(p)[size - 1] = uint8_t(tag);
}

__device__ __forceinline__ bool bench_block_check(const void *p, size_t size, uint64_t tag) {
  return static_cast<const volatile uint64_t *>(p)[0] == tag &&
         (size <= 8 || static_cast<const volatile uint8_t *>(p)[size - 1] == uint8_t(tag));
}

// MilThreads (XMalloc 2010, Sect. VI): each active thread allocates `size`
// bytes, writes them, reads them back and frees them, `iters` times. Only the
// first `lanes` lanes of each warp run, which is how the papers vary SIMD width.
template <class Heap>
__global__ void bench_milthreads_kernel(unsigned threads, int lanes, int iters, size_t size,
                                        BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads || int(threadIdx.x % 32) >= lanes) return;
  for (int i = 0; i < iters; ++i) {
    void *p = Heap::alloc(size);
    if (p == nullptr) { bench_count(&counters->nulls); continue; }
    uint64_t tag = bench_tag(tid, i);
    bench_block_write(p, size, tag);
    if (!bench_block_check(p, size, tag)) bench_count(&counters->bad);
    Heap::release(p);
  }
}

// Alloc-all: every thread allocates one block (size 0: mixed sizes) and keeps it.
template <class Heap>
__global__ void bench_alloc_all_kernel(void **ptrs, unsigned threads, size_t size, uint32_t seed,
                                       BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  size_t n = size ? size : bench_mixed_size(tid, seed);
  void *p = Heap::alloc(n);
  ptrs[tid] = p;
  if (p == nullptr) { bench_count(&counters->nulls); return; }
  bench_block_write(p, n, bench_tag(tid, seed));
}

// Check-all: every thread checks the block bench_alloc_all_kernel gave it,
// after every allocation of the grid is made (an overlap shows here).
template <class Heap>
__global__ void bench_check_all_kernel(void **ptrs, unsigned threads, size_t size, uint32_t seed,
                                       BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads || ptrs[tid] == nullptr) return;
  size_t n = size ? size : bench_mixed_size(tid, seed);
  if (!bench_block_check(ptrs[tid], n, bench_tag(tid, seed))) bench_count(&counters->bad);
}

// Free-all: every thread frees the block bench_alloc_all_kernel gave it.
template <class Heap>
__global__ void bench_free_all_kernel(void **ptrs, unsigned threads, size_t, uint32_t,
                                      BenchCounters *) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  if (void *p = ptrs[tid]) Heap::release(p);
}

// One churn round: every thread frees the block of the last round (mixed sizes,
// seed - 1) and allocates a new one of another size (seed).
template <class Heap>
__global__ void bench_churn_kernel(void **ptrs, unsigned threads, uint32_t seed,
                                   BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  if (void *old = ptrs[tid]) {
    if (!bench_block_check(old, bench_mixed_size(tid, seed - 1), bench_tag(tid, seed - 1)))
      bench_count(&counters->bad);
    Heap::release(old);
  }
  size_t n = bench_mixed_size(tid, seed);
  void *p = Heap::alloc(n);
  ptrs[tid] = p;
  if (p == nullptr) { bench_count(&counters->nulls); return; }
  bench_block_write(p, n, bench_tag(tid, seed));
}

// Alloc-all with one allocation per warp: lane 0 allocates 32 blocks' worth
// and the warp shares it, the hand-made coalescing an allocator should make
// unnecessary. ptrs holds one pointer per warp; threads is a multiple of 32.
template <class Heap>
__global__ void bench_warp_alloc_kernel(void **ptrs, unsigned threads, size_t size, uint32_t seed,
                                        BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  unsigned lane = threadIdx.x % 32;
  void *p = lane == 0 ? Heap::alloc(32 * size) : nullptr;
  p = reinterpret_cast<void *>(__shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p), 0));
  if (lane == 0) ptrs[tid / 32] = p;
  if (p == nullptr) {
    if (lane == 0) bench_count(&counters->nulls);
    return;
  }
  bench_block_write(static_cast<char *>(p) + lane * size, size, bench_tag(tid, seed));
}

template <class Heap>
__global__ void bench_warp_check_kernel(void **ptrs, unsigned threads, size_t size, uint32_t seed,
                                        BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  char *p = static_cast<char *>(ptrs[tid / 32]);
  if (p == nullptr) return;
  unsigned lane = threadIdx.x % 32;
  if (!bench_block_check(p + lane * size, size, bench_tag(tid, seed))) bench_count(&counters->bad);
}

template <class Heap>
__global__ void bench_warp_free_kernel(void **ptrs, unsigned threads, size_t, uint32_t,
                                       BenchCounters *) {
  unsigned tid = bench_tid();
  if (tid >= threads || threadIdx.x % 32 != 0) return;
  if (void *p = ptrs[tid / 32]) Heap::release(p);
}

// Fill: every thread allocates until its first NULL, chaining its blocks
// through their first word; counts the bytes obtained. The cap on blocks per
// thread only guards against an allocator that never says no.
template <class Heap>
__global__ void bench_fill_kernel(void **heads, unsigned threads, size_t size, uint32_t seed,
                                  BenchCounters *counters) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  void *head = nullptr;
  unsigned long long bytes = 0;
  for (uint32_t k = 0; k < (1u << 20); ++k) {
    size_t n = size ? size : bench_mixed_size(tid, seed + k);
    void *p = Heap::alloc(n);
    if (p == nullptr) break;
    *static_cast<void **>(p) = head;
    head = p;
    bytes += n;
  }
  heads[tid] = head;
  atomicAdd(&counters->bytes, bytes);
}

template <class Heap>
__global__ void bench_unfill_kernel(void **heads, unsigned threads) {
  unsigned tid = bench_tid();
  if (tid >= threads) return;
  for (void *p = heads[tid]; p != nullptr;) {
    void *next = *static_cast<void **>(p);
    Heap::release(p);
    p = next;
  }
}
