/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: what every benchmark kernel shares: the error check, the
// per-run counters that prove an allocator worked, and the size/tag hashes.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// A CUDA error in a benchmark child is fatal: the parent reports the case
// as failed, and a sticky error cannot leak into the next case.
#define BENCH_CUDA(call) bench_cuda_check((call), #call, __FILE__, __LINE__)

inline void bench_cuda_check(cudaError_t err, const char *what, const char *file, int line) {
  if (err == cudaSuccess) return;
  fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, cudaGetErrorString(err));
  exit(3);
}

// Filled by the kernels, summed over repetitions: a benchmark of an allocator
// that hands out NULL or overlapping blocks is not a benchmark.
struct BenchCounters {
  unsigned long long nulls;   // allocations that returned NULL
  unsigned long long bad;     // blocks whose written tag did not read back
  unsigned long long bytes;   // bytes handed out (fill benchmark)
};

__host__ __device__ __forceinline__ uint32_t bench_hash(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU;
  x ^= x >> 15; x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// The tag a thread writes into its block and checks before freeing it.
__device__ __forceinline__ uint64_t bench_tag(uint32_t tid, uint32_t seed) {
  return (uint64_t(bench_hash(tid ^ seed)) << 32) | tid;
}

constexpr size_t bench_min_size = 16;
constexpr size_t bench_max_size = 4096;

// Mixed sizes: a power-of-two range 16 B..4 KiB picked uniformly, then a
// size anywhere in its upper half, so that few requests hit a class exactly.
__device__ __forceinline__ size_t bench_mixed_size(uint32_t tid, uint32_t seed) {
  uint32_t h = bench_hash(tid * 0x9e3779b9U + seed);
  size_t top = bench_min_size << (h % 9);          // 16 .. 4096
  return top / 2 + 1 + (h >> 8) % (top / 2);       // (top/2, top]
}

__device__ __forceinline__ void bench_count(unsigned long long *counter) {
  atomicAdd(counter, 1ull);
}
