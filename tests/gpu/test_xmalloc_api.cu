/* SPDX-License-Identifier: Apache-2.0 */
// tests/gpu/test_xmalloc_api.cu: XMalloc's API, one behaviour per test: the
// host calls' error codes, xmcFree(NULL), calloc, realloc, aligned alloc,
// large blocks, xmcGrow, statistics and their peak, compartments' whole usable
// size, Superblocks kept beyond the buffers, double free, a chunk parked in
// another exchange slot taken before the FIFO's, several devices.
#include "gpu_test.cuh"

namespace {

class XmcApi : public XmcHeap {};

__global__ void k_free_null(int *ok) {
  xmcFree(nullptr);
  ok[threadIdx.x] = 1;
}

__global__ void k_malloc_one(void **out, size_t size) { out[blockIdx.x * blockDim.x + threadIdx.x] = xmcMalloc(size); }
__global__ void k_free_each(void **ptrs) { xmcFree(ptrs[blockIdx.x * blockDim.x + threadIdx.x]); }

TEST_F(XmcApi, HostCallsCheckTheirState) {
  ASSERT_TRUE(gt_have_gpu());
  EXPECT_EQ(xmcErrorNotInitialized, xmcShutdown());
  EXPECT_EQ(xmcErrorNotInitialized, xmcGrow(1 << 20));
  xmcStats st;
  EXPECT_EQ(xmcErrorNotInitialized, xmcGetStats(&st));
  EXPECT_EQ(xmcErrorInvalidValue, xmcInit(0));
  init(8 << 20);
  EXPECT_EQ(xmcErrorAlreadyInitialized, xmcInit(8 << 20));
  EXPECT_EQ(xmcErrorInvalidValue, xmcGetStats(nullptr));
  EXPECT_STRNE("unknown error", xmcGetErrorString(xmcErrorOutOfMemory));
}

TEST_F(XmcApi, FreeNullIsNoop) {
  init(8 << 20);
  DeviceArray<int> ok(64);
  LAUNCH_OK(k_free_null<<<1, 64>>>(ok.ptr));
  for (int v : ok.host()) EXPECT_EQ(1, v);
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.invalid_frees);
}

__global__ void k_calloc_dirty(void **out, size_t size) {
  int i = threadIdx.x;
  void *p = xmcMalloc(size);  // leave garbage behind for calloc to clear
  if (p) memset(p, 0xAB, size);
  xmcFree(p);
  out[i] = xmcCalloc(size / 4, 4);
}
__global__ void k_count_nonzero(void **ptrs, size_t size, int *bad) {
  const uint8_t *b = (const uint8_t *)ptrs[threadIdx.x];
  if (!b) { atomicAdd(bad, 1); return; }
  for (size_t j = 0; j < size; ++j)
    if (b[j]) { atomicAdd(bad, 1); return; }
}
__global__ void k_calloc_overflow(void **out) { out[0] = xmcCalloc(SIZE_MAX / 2, 4); }

TEST_F(XmcApi, CallocZeroes) {
  init(16 << 20);
  for (size_t size : {16, 200, 3000, 40000}) {
    DeviceArray<void *> ptrs(64);
    DeviceArray<int> bad(1);
    LAUNCH_OK(k_calloc_dirty<<<1, 64>>>(ptrs.ptr, size));
    LAUNCH_OK(k_count_nonzero<<<1, 64>>>(ptrs.ptr, size, bad.ptr));
    EXPECT_EQ(0, bad.host()[0]) << "size " << size;
    LAUNCH_OK(k_free_each<<<1, 64>>>(ptrs.ptr));
  }
  DeviceArray<void *> out(1);
  LAUNCH_OK(k_calloc_overflow<<<1, 1>>>(out.ptr));
  EXPECT_EQ(nullptr, out.host()[0]);
}

// Each thread grows its block through several sizes, checking the prefix.
__global__ void k_realloc_chain(int *bad) {
  const uint32_t me = threadIdx.x;
  size_t sizes[] = {24, 250, 1000, 5000, 40000, 100};
  size_t kept = 0;
  void *p = nullptr;
  for (size_t size : sizes) {
    void *q = xmcRealloc(p, size);
    if (!q) { atomicAdd(bad, 1); return; }
    if (!gt_holds(q, kept < size ? kept : size, me)) atomicAdd(bad, 1);
    gt_fill(q, size, me);
    kept = size;
    p = q;
  }
  if (xmcRealloc(p, 0) != nullptr) atomicAdd(bad, 1);
}

TEST_F(XmcApi, ReallocPreservesContent) {
  init(64 << 20);
  DeviceArray<int> bad(1);
  LAUNCH_OK(k_realloc_chain<<<1, 96>>>(bad.ptr));
  EXPECT_EQ(0, bad.host()[0]);
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use);
}

__global__ void k_aligned(void **out, size_t alignment, size_t size) {
  int i = threadIdx.x;
  void *p = xmcAlignedAlloc(alignment, size + i);
  if (p) gt_fill(p, size + i, i);
  out[i] = p;
}
__global__ void k_check_fill(void **ptrs, size_t size, int *bad) {
  int i = threadIdx.x;
  if (!ptrs[i] || !gt_holds(ptrs[i], size + i, i)) atomicAdd(bad, 1);
}
__global__ void k_aligned_bad(void **out) { out[0] = xmcAlignedAlloc(48, 8); }

TEST_F(XmcApi, AlignedAllocAligns) {
  init(32 << 20);
  for (size_t alignment : {8, 16, 32, 256, 4096}) {
    DeviceArray<void *> ptrs(64);
    DeviceArray<int> bad(1);
    LAUNCH_OK(k_aligned<<<1, 64>>>(ptrs.ptr, alignment, 40));
    LAUNCH_OK(k_check_fill<<<1, 64>>>(ptrs.ptr, 40, bad.ptr));
    EXPECT_EQ(0, bad.host()[0]);
    for (void *p : ptrs.host()) EXPECT_EQ(0u, (uintptr_t)p % alignment) << "alignment " << alignment;
    LAUNCH_OK(k_free_each<<<1, 64>>>(ptrs.ptr));
  }
  DeviceArray<void *> out(1);
  LAUNCH_OK(k_aligned_bad<<<1, 1>>>(out.ptr));
  EXPECT_EQ(nullptr, out.host()[0]);
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use);
  EXPECT_EQ(0u, st.invalid_frees);
}

TEST_F(XmcApi, LargeBlockUpToMostOfTheHeap) {
  init(16 << 20);
  DeviceArray<void *> out(1);
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(out.ptr, (size_t)15 << 20));
  ASSERT_NE(nullptr, out.host()[0]);
  DeviceArray<void *> second(1);
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(second.ptr, (size_t)4 << 20));
  EXPECT_EQ(nullptr, second.host()[0]) << "a 4 MiB block cannot fit beside 15 MiB in 16 MiB";
  LAUNCH_OK(k_free_each<<<1, 1>>>(out.ptr));
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(second.ptr, (size_t)15 << 20));
  EXPECT_NE(nullptr, second.host()[0]) << "freeing merges the heap back";
  LAUNCH_OK(k_free_each<<<1, 1>>>(second.ptr));
}

// Warp 0 of a block takes two chunks of 32 16-byte compartments and frees
// them: the first is parked in its exchange slot, the second displaces it
// into the FIFO. Warp 8 then asks for the same, on the same buffer (warps
// 0 and 8 of block 0) but another slot: it takes the chunk parked in warp
// 0's slot before the one in the FIFO.
__global__ void k_parked_before_queued(void **got) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0) {
    void *a = xmcMalloc(16), *b = xmcMalloc(16);
    got[lane] = a;
    got[32 + lane] = b;
    xmcFree(a);
    __syncwarp();
    xmcFree(b);
  }
  __syncthreads();
  if (warp == 8) {
    void *c = xmcMalloc(16);
    got[64 + lane] = c;
    xmcFree(c);
  }
}

TEST_F(XmcApi, ChunkParkedInAnotherSlotBeforeTheFifo) {
  init(16 << 20);
  DeviceArray<void *> got(96);
  LAUNCH_OK(k_parked_before_queued<<<1, 1024>>>(got.ptr));
  const std::vector<void *> p = got.host();
  ASSERT_NE(nullptr, p[0]);
  ASSERT_NE(nullptr, p[32]);
  ASSERT_NE(p[0], p[32]) << "two chunks";
  EXPECT_EQ(p[32], p[64]) << "warp 8 got the chunk parked in warp 0's slot";
}

TEST_F(XmcApi, GrowServesWhatDidNotFit) {
  init(4 << 20);
  DeviceArray<void *> out(1);
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(out.ptr, (size_t)6 << 20));
  EXPECT_EQ(nullptr, out.host()[0]);
  XMC_OK(xmcGrow(8 << 20));
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(out.ptr, (size_t)6 << 20));
  ASSERT_NE(nullptr, out.host()[0]);
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ((size_t)12 << 20, st.heap_bytes);
  LAUNCH_OK(k_free_each<<<1, 1>>>(out.ptr));
}

TEST_F(XmcApi, StatsCountAndReturnToZero) {
  init(32 << 20);
  const int n = 4096;
  DeviceArray<void *> ptrs(n);
  LAUNCH_OK(k_malloc_one<<<n / 256, 256>>>(ptrs.ptr, 40));
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  unsigned long long allocs = 0;
  for (int c = 0; c < st.num_classes; ++c) allocs += st.class_allocs[c];
  EXPECT_GT(allocs, 0u);
  EXPECT_GE(st.bytes_in_use, (size_t)n * 40);
  EXPECT_GE(st.bytes_in_use_peak, st.bytes_in_use);
  EXPECT_LE(st.bytes_free, st.heap_bytes);
  LAUNCH_OK(k_free_each<<<n / 256, 256>>>(ptrs.ptr));
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use);
  EXPECT_EQ(0u, st.failed_allocs);
}

// Carving keeps no counter of bytes held; the peak is sampled when memory
// goes back to the heap, so a block already freed still shows in it.
TEST_F(XmcApi, PeakCoversBlocksAlreadyFreed) {
  init(16 << 20);
  DeviceArray<void *> out(1);
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(out.ptr, (size_t)8 << 20));
  ASSERT_NE(nullptr, out.host()[0]);
  LAUNCH_OK(k_free_each<<<1, 1>>>(out.ptr));
  LAUNCH_OK(k_malloc_one<<<1, 1>>>(out.ptr, 64));
  ASSERT_NE(nullptr, out.host()[0]);
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_GE(st.bytes_in_use_peak, (size_t)8 << 20);
  EXPECT_LT(st.heap_bytes - st.bytes_free, (size_t)1 << 20) << "the 8 MiB block went back to the heap";
  LAUNCH_OK(k_free_each<<<1, 1>>>(out.ptr));
}

// Thread i allocates blocks i, i + n/threads, ... of `size` bytes until
// the first NULL, each filled with its index's pattern.
__global__ void k_fill_until_null(void **ptrs, int n, size_t size) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    void *p = xmcMalloc(size);
    ptrs[i] = p;
    if (!p) return;
    gt_fill(p, size, i);
  }
}
__global__ void k_check_and_free(void **ptrs, int n, size_t size, int *bad) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (!ptrs[i]) continue;
    if (!gt_holds(ptrs[i], size, i)) atomicAdd(bad, 1);
    xmcFree(ptrs[i]);
  }
}

// Every lane of a full warp takes a block of the warp's size, grows it to
// the compartment's whole usable size with xmcRealloc (in place, no copy)
// and writes all of it: the last compartment of a coalesced block, whose
// padding was left out of the chunk, must still not reach another block.
__global__ void k_fill_usable(void **ptrs, size_t *sizes, int *moved, int mode) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t size = 8 + (i / 32 % 16) * 16 + i / 32 % 7;  // 8..255 bytes, one size per warp
  void *p = xmcMalloc(size);
  const size_t usable = mode == 0 || !p ? size : xmcUsableSize(p);
  if (usable < size) atomicAdd(moved, 1000);
  void *q = p && mode == 2 ? xmcRealloc(p, usable) : p;
  if (q != p) atomicAdd(moved, 1);
  if (q) gt_fill(q, usable, i);
  ptrs[i] = q;
  sizes[i] = usable;
}
__global__ void k_check_sized(void **ptrs, size_t *sizes, int *bad, int *nulls) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (!ptrs[i]) atomicAdd(nulls, 1);
  else if (!gt_holds(ptrs[i], sizes[i], i)) atomicAdd(bad, 1);
}

// The blocks of 16 sizes at once, 19 MB in all, must fit a 64 MiB heap: the
// heap is not exhausted while other SMs' cursors still hold blocks.
TEST_F(XmcApi, CompartmentsHoldTheirWholeUsableSize) {
  init(64 << 20);
  const int n = 1 << 16;
  DeviceArray<void *> ptrs(n);
  DeviceArray<size_t> sizes(n);
  DeviceArray<int> moved(1), bad(1), nulls(1);
  for (int mode = 0; mode < 3; ++mode) {  // the size asked for; the usable size; grown to it
    LAUNCH_OK(k_fill_usable<<<n / 256, 256>>>(ptrs.ptr, sizes.ptr, moved.ptr, mode));
    EXPECT_EQ(0, moved.host()[0]) << "growing within the usable size must not move a block (1000s: usable < size)";
    gt_expect_disjoint(ptrs.host(), sizes.host());
    LAUNCH_OK(k_check_sized<<<n / 256, 256>>>(ptrs.ptr, sizes.ptr, bad.ptr, nulls.ptr));
    EXPECT_EQ(0, nulls.host()[0]) << "NULL with most of the heap free, mode " << mode;
    EXPECT_EQ(0, bad.host()[0]) << "a block's usable bytes were overwritten by another's, mode " << mode;
    LAUNCH_OK(k_free_each<<<n / 256, 256>>>(ptrs.ptr));
  }
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.invalid_frees) << "a header was overwritten";
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
}

// One thread block frees a heap full of 1000-byte blocks, so that one SM
// publishes far more emptied Superblocks than its second-level FIFOs hold.
// The rest go onto the SM's Superblock stack; a heap full of another size
// afterwards shows that none of them was lost.
TEST_F(XmcApi, SuperblocksBeyondTheBuffersAreKept) {
  const size_t heap = 64 << 20;
  init(heap);
  const int n = heap / 1000;
  DeviceArray<void *> ptrs(n);
  DeviceArray<int> bad(1);
  for (size_t size : {1000, 3000}) {
    LAUNCH_OK(k_fill_until_null<<<256, 256>>>(ptrs.ptr, n, size));
    std::vector<void *> got = ptrs.host();
    size_t blocks = std::count_if(got.begin(), got.end(), [](void *p) { return p != nullptr; });
    EXPECT_GE(blocks * size, heap * 8 / 10) << size << " B blocks: the heap held back memory";
    LAUNCH_OK(k_check_and_free<<<1, 1024>>>(ptrs.ptr, n, size, bad.ptr));
    CUDA_OK(cudaMemset(ptrs.ptr, 0, n * sizeof(void *)));
  }
  EXPECT_EQ(0, bad.host()[0]) << "blocks lost their contents";
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
}

__global__ void k_double_free(void **ptrs) {
  int i = threadIdx.x;
  if (i % 2 == 0) xmcFree(ptrs[i]);  // twice: the second is caught by the tag
}

TEST_F(XmcApi, DoubleFreeIsCountedNotApplied) {
  init(16 << 20);
  for (size_t size : {8, 4000, 100000}) {
    DeviceArray<void *> ptrs(64);
    LAUNCH_OK(k_malloc_one<<<1, 64>>>(ptrs.ptr, size));
    LAUNCH_OK(k_double_free<<<1, 64>>>(ptrs.ptr));
    LAUNCH_OK(k_double_free<<<1, 64>>>(ptrs.ptr));
    xmcStats st;
    XMC_OK(xmcGetStats(&st));
    EXPECT_EQ(32u, st.invalid_frees) << "size " << size;
    LAUNCH_OK(k_free_each<<<1, 64>>>(ptrs.ptr));  // odd ones now; even ones a third time
    XMC_OK(xmcShutdown());
    XMC_OK(xmcInit(16 << 20));
  }
}

// Two lanes of one warp free the same block in one call. A block handed out
// whole is freed by the first and counted as invalid for the second; a
// compartment named twice is freed once, the lanes' bits merged.
__global__ void k_free_in_pairs(void **ptrs) { xmcFree(ptrs[threadIdx.x / 2]); }
__global__ void k_free_upper_half(void **ptrs) { xmcFree(ptrs[blockDim.x + threadIdx.x]); }

TEST_F(XmcApi, DoubleFreeWithinOneCallIsCountedNotApplied) {
  init(16 << 20);
  for (size_t size : {8, 4000, 100000}) {
    DeviceArray<void *> ptrs(64);
    LAUNCH_OK(k_malloc_one<<<1, 64>>>(ptrs.ptr, size));
    LAUNCH_OK(k_free_in_pairs<<<1, 64>>>(ptrs.ptr));   // blocks 0..31, each twice
    LAUNCH_OK(k_free_upper_half<<<1, 32>>>(ptrs.ptr)); // blocks 32..63, once
    xmcStats st;
    XMC_OK(xmcGetStats(&st));
    EXPECT_EQ(size > 256 ? 32u : 0u, st.invalid_frees) << "size " << size;
    EXPECT_EQ(0u, st.bytes_in_use) << "size " << size << ": " << gt_unbalanced(st);
    // A block given back twice would be handed out twice.
    LAUNCH_OK(k_malloc_one<<<1, 64>>>(ptrs.ptr, size));
    gt_expect_disjoint(ptrs.host(), std::vector<size_t>(64, size));
    LAUNCH_OK(k_free_each<<<1, 64>>>(ptrs.ptr));
    XMC_OK(xmcShutdown());
    XMC_OK(xmcInit(16 << 20));
  }
}

// A warp's 32 coalesced 16-byte blocks share one 512-byte chunk; freed, the
// chunk is parked, and lane 0 asking for 512 bytes alone takes it back
// whole. The unit map still names the chunk, so its payload is also its
// first compartment's: xmcFree must free the whole block once and count a
// second free of it as invalid.
__global__ void k_coalesced_then_whole(void **out) {
  void *p = xmcMalloc(16);
  if (threadIdx.x == 0) out[0] = p;
  __syncwarp();
  xmcFree(p);
  __syncwarp();
  if (threadIdx.x == 0) out[1] = xmcMalloc(512);
}

__global__ void k_free_at(void **ptrs, int i) { xmcFree(ptrs[i]); }

TEST_F(XmcApi, AChunkOnceSharedIsFreedWholeOnce) {
  init(16 << 20);
  DeviceArray<void *> ptrs(2);
  LAUNCH_OK(k_coalesced_then_whole<<<1, 32>>>(ptrs.ptr));
  const std::vector<void *> got = ptrs.host();
  ASSERT_NE(nullptr, got[1]);
  EXPECT_EQ(got[0], got[1]) << "the parked chunk was not the one handed out: this test misses its path";
  LAUNCH_OK(k_free_at<<<1, 1>>>(ptrs.ptr, 1));
  LAUNCH_OK(k_free_at<<<1, 1>>>(ptrs.ptr, 1));
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(1u, st.invalid_frees);
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
  // Given back once, the chunk is handed out once.
  LAUNCH_OK(k_malloc_one<<<1, 2>>>(ptrs.ptr, 512));
  const std::vector<void *> again = ptrs.host();
  EXPECT_NE(again[0], again[1]);
  LAUNCH_OK(k_free_each<<<1, 2>>>(ptrs.ptr));
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(1u, st.invalid_frees);
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
}

__device__ uint64_t gt_not_heap[64];

// A full warp takes coalesced 16-byte blocks (zeroed), then frees a pointer
// into the middle of each, a misaligned one and one outside the heap: all
// invalid, none touching a live block (nor faulting); the usable size of
// each is 0.
__global__ void k_free_bad_pointers(void **ptrs, size_t *usable) {
  const int i = threadIdx.x;
  char *p = (char *)xmcMalloc(16);
  ptrs[i] = p;
  if (!p) return;
  memset(p, 0, 16);
  usable[i] = xmcUsableSize(p) + xmcUsableSize(p + 8) + xmcUsableSize(p + 3) + xmcUsableSize(&gt_not_heap[i]) +
              xmcUsableSize(nullptr);
  __syncwarp();
  xmcFree(p + 8);
  xmcFree(p + 3);
  xmcFree(&gt_not_heap[i]);
}

TEST_F(XmcApi, PointersIntoBlocksOrElsewhereAreInvalid) {
  init(16 << 20);
  DeviceArray<void *> ptrs(32);
  DeviceArray<size_t> usable(32);
  LAUNCH_OK(k_free_bad_pointers<<<1, 32>>>(ptrs.ptr, usable.ptr));
  for (size_t u : usable.host()) EXPECT_EQ(16u, u) << "only the block itself has a usable size";
  xmcStats st;
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(96u, st.invalid_frees);
  EXPECT_GT(st.bytes_in_use, 0u) << "the blocks are still live";
  LAUNCH_OK(k_free_each<<<1, 32>>>(ptrs.ptr));
  XMC_OK(xmcGetStats(&st));
  EXPECT_EQ(96u, st.invalid_frees);
  EXPECT_EQ(0u, st.bytes_in_use) << gt_unbalanced(st);
}

// Every device gets its own heap; blocks come from the device's own heap.
TEST(XmcDevices, OneHeapPerDevice) {
  ASSERT_TRUE(gt_have_gpu());
  int devices = 0;
  CUDA_OK(cudaGetDeviceCount(&devices));
  for (int d = 0; d < devices; ++d) {
    CUDA_OK(cudaSetDevice(d));
    XMC_OK(xmcInit(8 << 20));
  }
  for (int d = 0; d < devices; ++d) {
    CUDA_OK(cudaSetDevice(d));
    DeviceArray<void *> ptrs(256);
    LAUNCH_OK(k_malloc_one<<<1, 256>>>(ptrs.ptr, 100));
    for (void *p : ptrs.host()) {
      ASSERT_NE(nullptr, p);
      cudaPointerAttributes attr;
      CUDA_OK(cudaPointerGetAttributes(&attr, p));
      EXPECT_EQ(d, attr.device);
    }
    LAUNCH_OK(k_free_each<<<1, 256>>>(ptrs.ptr));
  }
  for (int d = 0; d < devices; ++d) {
    CUDA_OK(cudaSetDevice(d));
    XMC_OK(xmcShutdown());
  }
  CUDA_OK(cudaSetDevice(0));
}

}  // namespace
