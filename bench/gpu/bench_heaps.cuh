// bench/gpu: the heap policies the kernels are instantiated with. A policy has
//   static bool supports(const BenchConfig &)   which configurations it has
//   static void init(size_t bytes, const BenchConfig &)
//   static void shutdown()                      back to an empty heap
//   __device__ static void *alloc(size_t) / release(void *)
#pragma once
#include <manymalloc/xmalloc.cuh>
#include "bench_case.h"
#include "bench_device.cuh"

// CUDA's own device malloc. Its heap size can only be set before the first
// kernel that uses it, so init takes effect once per process (one case per
// child process makes that enough); shutdown has nothing to release, the
// cases free every block before the next repetition.
struct BenchHeapCuda {
  static bool supports(const BenchConfig &config) { return config.is_default(); }
  static void init(size_t bytes, const BenchConfig &) {
    static bool limit_set = false;
    if (limit_set) return;
    BENCH_CUDA(cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes));
    limit_set = true;
  }
  static void shutdown() {}
  __device__ static void *alloc(size_t n) { return malloc(n); }
  __device__ static void release(void *p) { free(p); }
};

// manymalloc's XMalloc, re-initialized for every repetition.
struct BenchHeapXmc {
  static bool supports(const BenchConfig &) { return true; }
  static void init(size_t bytes, const BenchConfig &config) {
    xmcConfig c;
    c.coalescing = config.coalescing;
    c.superblocks = config.superblocks;
    c.buffers_per_class = config.buffers_per_class;
    check(xmcInitWithConfig(bytes, c), "xmcInitWithConfig");
  }
  static void shutdown() { check(xmcShutdown(), "xmcShutdown"); }
  __device__ static void *alloc(size_t n) { return xmcMalloc(n); }
  __device__ static void release(void *p) { xmcFree(p); }

private:
  static void check(xmcError err, const char *what) {
    if (err == xmcSuccess) return;
    fprintf(stderr, "%s: %s\n", what, xmcGetErrorString(err));
    exit(3);
  }
};
