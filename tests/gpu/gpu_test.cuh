/* SPDX-License-Identifier: Apache-2.0 */
// tests/gpu/gpu_test.cuh: what the XMalloc tests share: CUDA error checks, a
// per-test heap fixture, and the host-side checks on collected blocks.
#pragma once
#include <cstdlib>
#include <gtest/gtest.h>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
#include "manymalloc/xmalloc.cuh"

#define CUDA_OK(call) ASSERT_EQ(cudaSuccess, (call)) << #call
#define XMC_OK(call) ASSERT_EQ(xmcSuccess, (call)) << #call

// Launch, then surface both launch and execution errors.
#define LAUNCH_OK(...)                      \
  do {                                      \
    __VA_ARGS__;                            \
    CUDA_OK(cudaGetLastError());            \
    CUDA_OK(cudaDeviceSynchronize());       \
  } while (0)

__host__ __device__ inline uint32_t gt_hash(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}

// The byte a block's owner writes at offset j: depends on owner and offset.
__host__ __device__ inline uint8_t gt_pattern(uint32_t owner, size_t j) {
  return (uint8_t)gt_hash(owner * 2654435761u + (uint32_t)(j >> 2) * 97u + (uint32_t)j);
}

__device__ inline void gt_fill(void *p, size_t size, uint32_t owner) {
  uint8_t *b = (uint8_t *)p;
  for (size_t j = 0; j < size; ++j) b[j] = gt_pattern(owner, j);
}
__device__ inline bool gt_holds(const void *p, size_t size, uint32_t owner) {
  const uint8_t *b = (const uint8_t *)p;
  for (size_t j = 0; j < size; ++j)
    if (b[j] != gt_pattern(owner, j)) return false;
  return true;
}

// Device array that frees itself.
template <class T>
struct DeviceArray {
  T *ptr = nullptr;
  size_t n = 0;
  explicit DeviceArray(size_t count) : n(count) {
    cudaMalloc(&ptr, count * sizeof(T));
    cudaMemset(ptr, 0, count * sizeof(T));
  }
  ~DeviceArray() { cudaFree(ptr); }
  std::vector<T> host() const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }
};

// Live blocks [p, p + size) must not overlap; nullptr entries are skipped.
inline void gt_expect_disjoint(const std::vector<void *> &ptrs, const std::vector<size_t> &sizes) {
  std::vector<std::pair<uintptr_t, size_t>> blocks;
  for (size_t i = 0; i < ptrs.size(); ++i)
    if (ptrs[i]) blocks.emplace_back((uintptr_t)ptrs[i], sizes[i]);
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i)
    ASSERT_LE(blocks[i - 1].first + blocks[i - 1].second, blocks[i].first)
        << "blocks " << i - 1 << " and " << i << " overlap";
}

// The counters that disagree, for a failure message.
inline std::string gt_unbalanced(const xmcStats &st) {
  std::string out;
  for (int c = 0; c < st.num_classes; ++c)
    if (st.class_allocs[c] != st.class_frees[c])
      out += " class " + std::to_string(c) + " (" + std::to_string(st.class_size[c]) + " B): " +
             std::to_string(st.class_allocs[c]) + " allocs, " + std::to_string(st.class_frees[c]) + " frees;";
  return out + " large allocs " + std::to_string(st.large_allocs) + ", invalid frees " +
         std::to_string(st.invalid_frees);
}

inline bool gt_have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Under compute-sanitizer (scripts/gpu-check sets MANYMALLOC_GPU_TEST_SMALL=1)
// the heaviest tests run fewer threads: the sanitizers look for faults and
// races, the full-size runs are the plain test step's.
inline int gt_scaled(int n) {
  const char *small = std::getenv("MANYMALLOC_GPU_TEST_SMALL");
  return small && *small == '1' ? n / 5 | 1 : n;  // odd stays odd
}

// A fresh heap per test, torn down after it.
class XmcHeap : public ::testing::Test {
 protected:
  void init(size_t bytes, const xmcConfig &config = xmcConfig{}) {
    ASSERT_TRUE(gt_have_gpu());
    XMC_OK(xmcInitWithConfig(bytes, config));
    live_ = true;
  }
  void TearDown() override {
    if (live_) EXPECT_EQ(xmcSuccess, xmcShutdown());
  }
  bool live_ = false;
};
