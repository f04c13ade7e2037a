/* SPDX-License-Identifier: Apache-2.0 */
// tests/gpu/test_xmalloc_stress.cu: many threads at once, under every ablation
// switch: each block is written whole and checked in a later kernel, live
// blocks never overlap, diverged warps allocate and free, blocks are freed by
// other threads in later launches, and the heap recovers from exhaustion.
#include "gpu_test.cuh"

namespace {

struct Ablation {
  const char *name;
  xmcConfig config;
};

xmcConfig make_config(bool coalescing, bool buffering, bool superblocks, int buffers = 0) {
  xmcConfig c;
  c.coalescing = coalescing;
  c.buffering = buffering;
  c.superblocks = superblocks;
  c.buffers_per_class = buffers;
  return c;
}

const Ablation ablations[] = {
    {"all_on", make_config(true, true, true)},
    {"no_coalescing", make_config(false, true, true)},
    {"no_buffering", make_config(true, false, true)},
    {"no_superblocks", make_config(true, true, false)},
    {"all_off", make_config(false, false, false)},
    {"one_buffer", make_config(true, true, true, 1)},
};

class XmcStress : public XmcHeap, public ::testing::WithParamInterface<Ablation> {};

// Mostly small (coalesced) sizes, some medium (class chunks), a few large.
__host__ __device__ inline size_t gt_size(uint32_t i, uint32_t seed) {
  uint32_t h = gt_hash(i ^ seed * 0x9e3779b9u);
  uint32_t r = h % 100;
  if (r < 70) return 1 + (h >> 8) % 256;
  if (r < 97) return 257 + (h >> 8) % 8000;
  return 16385 + (h >> 8) % 40000;
}

__global__ void k_alloc_fill(void **ptrs, size_t *sizes, int n, uint32_t seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // the last warp runs partly filled
  size_t size = gt_size(i, seed);
  void *p = xmcMalloc(size);
  if (p) gt_fill(p, size, i);
  ptrs[i] = p;
  sizes[i] = size;
}

__global__ void k_check(void **ptrs, size_t *sizes, int n, int *bad, int *nulls) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (!ptrs[i]) atomicAdd(nulls, 1);
  else if (!gt_holds(ptrs[i], sizes[i], i)) atomicAdd(bad, 1);
}

// Thread i frees the block of thread (i * stride) mod n: another thread's,
// usually in another warp and block.
__global__ void k_free_permuted(void **ptrs, int n, int stride) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) xmcFree(ptrs[(size_t)i * stride % n]);
}

void expect_blocks_ok(void **ptrs, size_t *sizes, int n, int expect_nulls_max) {
  DeviceArray<int> bad(1), nulls(1);
  LAUNCH_OK(k_check<<<(n + 255) / 256, 256>>>(ptrs, sizes, n, bad.ptr, nulls.ptr));
  EXPECT_EQ(0, bad.host()[0]) << "blocks lost their contents";
  EXPECT_LE(nulls.host()[0], expect_nulls_max);
  std::vector<void *> p(n);
  std::vector<size_t> s(n);
  CUDA_OK(cudaMemcpy(p.data(), ptrs, n * sizeof(void *), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(s.data(), sizes, n * sizeof(size_t), cudaMemcpyDeviceToHost));
  gt_expect_disjoint(p, s);
}

TEST_P(XmcStress, BlocksKeepContentsAndNeverOverlap) {
  init(512 << 20, GetParam().config);
  const int n = gt_scaled(20000);  // not a multiple of 32
  DeviceArray<void *> ptrs(n);
  DeviceArray<size_t> sizes(n);
  for (uint32_t round = 0; round < 3; ++round) {
    LAUNCH_OK(k_alloc_fill<<<(n + 127) / 128, 128>>>(ptrs.ptr, sizes.ptr, n, round));
    expect_blocks_ok(ptrs.ptr, sizes.ptr, n, 0);
    LAUNCH_OK(k_free_permuted<<<(n + 127) / 128, 128>>>(ptrs.ptr, n, 7919));
  }
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
  EXPECT_EQ(0u, st.invalid_frees);
}

// Lanes allocate in different branches, with different sizes, at different
// times (the sleeps break up the warp under independent thread scheduling);
// `mixed` also sends some lanes through calloc and aligned alloc.
__global__ void k_diverged_alloc(void **ptrs, size_t *sizes, int n, bool mixed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned lane = threadIdx.x % 32;
  size_t size;
  void *p;
  if (lane % 3 == 0) {
    size = 8;
    p = xmcMalloc(size);
  } else if (lane % 3 == 1) {
    __nanosleep(200 * (lane % 5));
    size = 100 + lane;
    p = xmcMalloc(size);
  } else if (lane & 4) {
    size = 3000 + lane;
    p = mixed ? xmcCalloc(1, size) : xmcMalloc(size);
  } else {
    size = 20000;
    p = mixed ? xmcAlignedAlloc(64, size) : xmcMalloc(size);
  }
  if (p) gt_fill(p, size, i);
  ptrs[i] = p;
  sizes[i] = size;
}

// Each lane frees its neighbour's block, even and odd lanes in two branches.
__global__ void k_diverged_free(void **ptrs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = i ^ 1;
  if (i >= n || j >= n) return;
  if (i & 1) {
    xmcFree(ptrs[j]);
  } else {
    __nanosleep(100 * (threadIdx.x % 7));
    xmcFree(ptrs[j]);
  }
}

TEST_P(XmcStress, DivergedWarpsAllocateAndFree) {
  init(256 << 20, GetParam().config);
  const int n = 8192;
  DeviceArray<void *> ptrs(n);
  DeviceArray<size_t> sizes(n);
  for (bool mixed : {false, true}) {
    LAUNCH_OK(k_diverged_alloc<<<n / 256, 256>>>(ptrs.ptr, sizes.ptr, n, mixed));
    expect_blocks_ok(ptrs.ptr, sizes.ptr, n, 0);
    LAUNCH_OK(k_diverged_free<<<n / 256, 256>>>(ptrs.ptr, n));
    xmcStats st;
    XMC_OK(xmcGetStats(&st));
    EXPECT_EQ(0u, st.bytes_in_use) << "mixed " << mixed << gt_unbalanced(st);
    EXPECT_EQ(0u, st.invalid_frees);
  }
}

// MilThreads with a check: each thread allocates, writes, reads back and
// frees, many times in one kernel, while the others do the same.
__global__ void k_alloc_free_loop(int iterations, size_t size, int *bad) {
  uint32_t me = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < iterations; ++k) {
    size_t s = size ? size : 1 + gt_hash(me + k) % 512;
    void *p = xmcMalloc(s);
    if (!p) { atomicAdd(bad, 1); continue; }
    gt_fill(p, s, me + k);
    if (!gt_holds(p, s, me + k)) atomicAdd(bad, 1);
    xmcFree(p);
  }
}

TEST_P(XmcStress, AllocWriteFreeInOneKernel) {
  init(256 << 20, GetParam().config);
  // Without Superblocks every chunk is a Memoryblock taken under the region
  // lock: fewer threads keep that configuration quick.
  const int blocks = GetParam().config.superblocks ? 64 : 8;
  for (size_t size : {8, 0}) {
    DeviceArray<int> bad(1);
    LAUNCH_OK(k_alloc_free_loop<<<blocks, 256>>>(4, size, bad.ptr));
    EXPECT_EQ(0, bad.host()[0]) << "size " << size;
  }
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
}

// Each thread allocates up to `per` blocks of `size`, stopping at the first NULL.
__global__ void k_alloc_until_null(void **ptrs, size_t *sizes, int per, size_t size, int *nulls) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < per; ++k) {
    void *p = xmcMalloc(size);
    ptrs[i * per + k] = p;
    sizes[i * per + k] = size;
    if (!p) {
      atomicAdd(nulls, 1);
      return;
    }
    gt_fill(p, size, i * per + k);
  }
}
__global__ void k_free_all(void **ptrs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) xmcFree(ptrs[i]);
}

size_t gt_count(const std::vector<void *> &ptrs) {
  return std::count_if(ptrs.begin(), ptrs.end(), [](void *p) { return p != nullptr; });
}

TEST_P(XmcStress, ExhaustionReturnsNullAndRecovers) {
  init(8 << 20, GetParam().config);
  const int threads = 4096, per = 8, n = threads * per;
  DeviceArray<void *> ptrs(n);
  DeviceArray<size_t> sizes(n);
  size_t first = 0;
  // 1000 B twice (the same class comes back), then 250 B, coalesced into
  // chunks of other classes: memory freed by one class must serve another.
  for (size_t size : {1000, 1000, 250}) {
    CUDA_OK(cudaMemset(ptrs.ptr, 0, n * sizeof(void *)));
    DeviceArray<int> nulls(1);
    LAUNCH_OK(k_alloc_until_null<<<threads / 128, 128>>>(ptrs.ptr, sizes.ptr, per, size, nulls.ptr));
    EXPECT_GT(nulls.host()[0], 0) << "an 8 MiB heap cannot hold every request";
    expect_blocks_ok(ptrs.ptr, sizes.ptr, n, n);
    size_t got = gt_count(ptrs.host()) * size;
    if (!first) first = got;
    EXPECT_GE(got, first / 2) << "size " << size << ": the heap did not recover after frees";
    EXPECT_GE(got, (size_t)(8 << 20) / 4) << "size " << size;
    LAUNCH_OK(k_free_all<<<n / 256, 256>>>(ptrs.ptr, n));
  }
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
  EXPECT_GT(st.failed_allocs, 0u);
}

// Every warp asks for one size above the coalescing limit, so that a full
// warp takes a whole Superblock, and frees its blocks the ways a group can:
// all at once (one group for the whole Superblock), twice (each a double
// free), in halves (even lanes, then odd), or each by another thread. Sizes
// differ between warps, so Superblocks of several classes are in play.
__global__ void k_alloc_per_warp(void **ptrs, size_t *sizes, int n, uint32_t seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  size_t size = 257 + gt_hash(i / 32 * 0x9e3779b9u + seed) % 3840;
  void *p = xmcMalloc(size);
  if (p) gt_fill(p, size, i);
  ptrs[i] = p;
  sizes[i] = size;
}

// Frees the blocks of the threads whose index has parity `parity` (-1: all).
__global__ void k_free_parity(void **ptrs, int n, int parity) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && (parity < 0 || (i & 1) == parity)) xmcFree(ptrs[i]);
}

TEST_P(XmcStress, WarpsFreeWholeSuperblocks) {
  init(256 << 20, GetParam().config);
  const int n = gt_scaled(16384) + 7;  // the last warp partly filled
  DeviceArray<void *> ptrs(n);
  DeviceArray<size_t> sizes(n);
  unsigned long long doubles = 0;
  for (uint32_t round = 0; round < 4; ++round) {
    LAUNCH_OK(k_alloc_per_warp<<<(n + 127) / 128, 128>>>(ptrs.ptr, sizes.ptr, n, round));
    expect_blocks_ok(ptrs.ptr, sizes.ptr, n, 0);
    if (round % 3 == 0) {
      LAUNCH_OK(k_free_parity<<<(n + 127) / 128, 128>>>(ptrs.ptr, n, -1));
      if (GetParam().config.superblocks) {  // a block is not reused before the next allocation
        LAUNCH_OK(k_free_parity<<<(n + 127) / 128, 128>>>(ptrs.ptr, n, -1));
        doubles += n;
      }
    } else if (round % 3 == 1) {
      LAUNCH_OK(k_free_parity<<<(n + 127) / 128, 128>>>(ptrs.ptr, n, 0));
      LAUNCH_OK(k_free_parity<<<(n + 127) / 128, 128>>>(ptrs.ptr, n, 1));
    } else {
      LAUNCH_OK(k_free_permuted<<<(n + 127) / 128, 128>>>(ptrs.ptr, n, 7919));
    }
  }
  // Whole warps of 1 KiB blocks taking Superblocks and freeing them, all at once.
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_alloc_free_loop<<<GetParam().config.superblocks ? 64 : 8, 256>>>(8, 1024, bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
  EXPECT_EQ(doubles, st.invalid_frees) << "every double free is counted, no other free is";
}

// A heap filled with coalesced 16-byte blocks, freed, then filled with
// 20 KiB blocks (past the largest class: straight from the Memoryblock heap,
// over memory whose unit map named compartments) and 16-byte blocks again.
// Every block keeps its contents and every free finds its block: none is
// taken for a compartment of a chunk that is gone.
TEST_P(XmcStress, MemoryOfCompartmentsServesLargeBlocks) {
  init(8 << 20, GetParam().config);
  // 16 B: up to 10 MB; without Superblocks every block is a Memoryblock
  // taken under the region lock, so fewer.
  const int threads = 4096, per = gt_scaled(GetParam().config.superblocks ? 160 : 16), n = threads * per;
  DeviceArray<void *> ptrs(n);
  DeviceArray<size_t> sizes(n);
  for (size_t size : {16, 20000, 16}) {
    CUDA_OK(cudaMemset(ptrs.ptr, 0, n * sizeof(void *)));
    DeviceArray<int> nulls(1);
    LAUNCH_OK(k_alloc_until_null<<<threads / 128, 128>>>(ptrs.ptr, sizes.ptr, per, size, nulls.ptr));
    expect_blocks_ok(ptrs.ptr, sizes.ptr, n, n);
    if (size > 16) EXPECT_GE(gt_count(ptrs.host()) * size, (size_t)(8 << 20) / 2) << "the heap kept memory back";
    LAUNCH_OK(k_free_all<<<n / 256, 256>>>(ptrs.ptr, n));
  }
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.invalid_frees);
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
}

INSTANTIATE_TEST_SUITE_P(Ablations, XmcStress, ::testing::ValuesIn(ablations),
                         [](const ::testing::TestParamInfo<Ablation> &info) { return std::string(info.param.name); });

}  // namespace
