/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: the heap policies the kernels are instantiated with. A policy has
//   static bool supports(const BenchCase &)     which cases it runs
//   static void init(size_t bytes, const BenchConfig &)
//   static void shutdown()                      back to an empty heap
//   __device__ static void *alloc(size_t) / release(void *)
//   static bool held_bytes(size_t *)            the heap's own count of bytes held, if it keeps one
#pragma once
#include <manymalloc/xmalloc.cuh>
#include "bench_case.h"
#include "bench_device.cuh"

// CUDA's own device malloc. Its heap size can only be set before the first
// kernel that uses it, so init takes effect once per process (one case per
// child process makes that enough); shutdown has nothing to release, the
// cases free every block before the next repetition.
struct BenchHeapCuda {
  static bool supports(const BenchCase &c) { return c.config == "default"; }
  static void init(size_t bytes, const BenchConfig &) {
    static bool limit_set = false;
    if (limit_set) return;
    BENCH_CUDA(cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes));
    limit_set = true;
  }
  static void shutdown() {}
  static bool held_bytes(size_t *) { return false; }
  __device__ static void *alloc(size_t n) { return malloc(n); }
  __device__ static void release(void *p) { free(p); }
};

// manymalloc's XMalloc, re-initialized for every repetition.
struct BenchHeapXmc {
  static bool supports(const BenchCase &c) { return BenchConfig::parse(c.config, nullptr); }
  static void init(size_t bytes, const BenchConfig &config) {
    xmcConfig c;
    c.coalescing = config.coalescing;
    c.superblocks = config.superblocks;
    c.buffers_per_class = config.buffers_per_class;
    check(xmcInitWithConfig(bytes, c), "xmcInitWithConfig");
  }
  static void shutdown() { check(xmcShutdown(), "xmcShutdown"); }
  static bool held_bytes(size_t *bytes) {
    xmcStats st;
    check(xmcGetStats(&st), "xmcGetStats");
    *bytes = st.bytes_in_use;
    return true;
  }
  __device__ static void *alloc(size_t n) { return xmcMalloc(n); }
  __device__ static void release(void *p) { xmcFree(p); }

private:
  static void check(xmcError err, const char *what) {
    if (err == xmcSuccess) return;
    fprintf(stderr, "%s: %s\n", what, xmcGetErrorString(err));
    exit(3);
  }
};

// No allocator: thread t always gets slot t of an array made once, and
// release does nothing. Run on the MilThreads cases (8-byte blocks), it
// measures what their kernels cost without allocating, the floor under every
// allocator's figure there.
__device__ uint2 *bench_floor_slots;

struct BenchHeapFloor {
  static constexpr size_t max_threads = size_t(32) << 20;   // MilThreads with one lane

  static bool supports(const BenchCase &c) {
    return (c.bench == "milthreads" || c.bench == "scaling") && c.config == "default";
  }
  static void init(size_t, const BenchConfig &) {
    static uint2 *slots = nullptr;
    if (slots) return;
    BENCH_CUDA(cudaMalloc(&slots, max_threads * sizeof(uint2)));
    BENCH_CUDA(cudaMemcpyToSymbol(bench_floor_slots, &slots, sizeof slots));
  }
  static void shutdown() {}
  static bool held_bytes(size_t *) { return false; }
  __device__ static void *alloc(size_t n) {
    size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    return n <= sizeof(uint2) && t < max_threads ? &bench_floor_slots[t] : nullptr;
  }
  __device__ static void release(void *) {}
};
