/* SPDX-License-Identifier: Apache-2.0 */
// tests/gpu/test_fifo.cu: the sequence-numbered FIFO of the replicated
// buffers (src/gpu/fifo.cuh) on its own. Alone, it is first in first out,
// holds as many messages as it has slots and says so when full or empty. Under
// contention (many warps, diverged: some lanes enqueue while the others of
// their warp dequeue as a group, all on one small FIFO so that dequeue CAS
// retries, a full FIFO and wrap-arounds are constant), every
// payload enqueued comes out exactly once.
#include "gpu_test.cuh"
#include "fifo.cuh"

namespace {

constexpr uint32_t kCapacity = 64;

struct FifoOnDevice {
  DeviceArray<xmc_fifo> fifo{1};
  DeviceArray<uint64_t> slots{kCapacity};
};

__global__ void k_fifo_init(xmc_fifo *f, uint64_t *slots) { xmc_fifo_init(f, slots, kCapacity); }

// One lane fills the FIFO to its first refusal, then empties it.
__global__ void k_fifo_fill_drain(xmc_fifo *f, uint32_t base, uint32_t *accepted, uint32_t *out,
                                  uint32_t *drained) {
  uint32_t n = 0;
  while (n < 2 * kCapacity && xmc_fifo_enqueue(f, base + n)) ++n;
  *accepted = n;
  uint32_t m = 0;
  for (uint32_t p; m < 2 * kCapacity && (p = xmc_fifo_dequeue(f)) != xmc_nil;) out[m++] = p;
  *drained = m;
}

TEST(XmcFifo, AloneItIsFirstInFirstOutAndHoldsItsCapacity) {
  ASSERT_TRUE(gt_have_gpu());
  FifoOnDevice d;
  DeviceArray<uint32_t> accepted(1), out(2 * kCapacity), drained(1);
  LAUNCH_OK(k_fifo_init<<<1, 1>>>(d.fifo.ptr, d.slots.ptr));
  // Three rounds, so that the second and third wrap around the slots.
  for (uint32_t round = 0; round < 3; ++round) {
    const uint32_t base = 1000 * round;
    LAUNCH_OK(k_fifo_fill_drain<<<1, 1>>>(d.fifo.ptr, base, accepted.ptr, out.ptr, drained.ptr));
    ASSERT_EQ(kCapacity, accepted.host()[0]) << "round " << round;
    ASSERT_EQ(kCapacity, drained.host()[0]) << "round " << round;
    const std::vector<uint32_t> got = out.host();
    for (uint32_t i = 0; i < kCapacity; ++i) ASSERT_EQ(base + i, got[i]) << "round " << round;
  }
}

// A warp group dequeues in one step: the lane of rank r gets message head + r.
// Twenty messages; the 16 even lanes take the first 16, then 8 odd lanes
// ask for what is left and the first 4 of them get it.
__global__ void k_fifo_group_dequeue(xmc_fifo *f, uint32_t *out) {
  const unsigned lane = threadIdx.x;
  if (lane == 0)
    for (uint32_t i = 0; i < 20; ++i) xmc_fifo_enqueue(f, 500 + i);
  __syncwarp();
  uint32_t got = xmc_nil;
  if (lane % 2 == 0) got = xmc_fifo_dequeue_warp(f, 0x55555555u);
  __syncwarp();
  if (lane % 2 == 1 && lane < 16) got = xmc_fifo_dequeue_warp(f, 0x0000aaaau);
  out[lane] = got;
}

TEST(XmcFifo, AWarpGroupTakesConsecutiveMessagesInRankOrder) {
  ASSERT_TRUE(gt_have_gpu());
  FifoOnDevice d;
  DeviceArray<uint32_t> out(32);
  LAUNCH_OK(k_fifo_init<<<1, 1>>>(d.fifo.ptr, d.slots.ptr));
  LAUNCH_OK(k_fifo_group_dequeue<<<1, 32>>>(d.fifo.ptr, out.ptr));
  const std::vector<uint32_t> got = out.host();
  for (uint32_t r = 0; r < 16; ++r) EXPECT_EQ(500 + r, got[2 * r]) << "even lane " << 2 * r;
  for (uint32_t r = 0; r < 8; ++r) EXPECT_EQ(r < 4 ? 516 + r : xmc_nil, got[2 * r + 1]) << "odd lane " << 2 * r + 1;
  for (uint32_t lane = 17; lane < 32; lane += 2) EXPECT_EQ(xmc_nil, got[lane]) << "lane " << lane << " did not ask";
}

// Thread t enqueues payloads t * rounds + r, one per round r, dequeuing one
// message itself whenever the FIFO is full, so that every payload goes in.
// Before it, in round r, the lanes with (lane + r) % 3 == 0 dequeue
// together: a group of about a third of the warp, beside lanes of the same
// warp that enqueue.
__global__ void k_fifo_churn(xmc_fifo *f, uint32_t rounds, uint32_t *enqueued, uint32_t *dequeued) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t r = 0; r < rounds; ++r) {
    if ((threadIdx.x + r) % 3 == 0) {
      const uint32_t got = xmc_fifo_dequeue_warp(f, __activemask());
      if (got != xmc_nil) atomicAdd(&dequeued[got], 1u);
    }
    const uint32_t payload = tid * rounds + r;
    while (!xmc_fifo_enqueue(f, payload)) {
      const uint32_t got = xmc_fifo_dequeue(f);
      if (got != xmc_nil) atomicAdd(&dequeued[got], 1u);
    }
    atomicAdd(&enqueued[payload], 1u);
  }
}

// What is left, taken by one full warp.
__global__ void k_fifo_drain(xmc_fifo *f, uint32_t *dequeued, uint32_t limit) {
  for (uint32_t i = 0; i < limit; ++i) {
    const uint32_t got = xmc_fifo_dequeue_warp(f, 0xffffffffu);
    if (got != xmc_nil) atomicAdd(&dequeued[got], 1u);
    if (__ballot_sync(0xffffffffu, got != xmc_nil) == 0) return;
  }
}

TEST(XmcFifo, UnderContentionEveryPayloadComesOutExactlyOnce) {
  ASSERT_TRUE(gt_have_gpu());
  const uint32_t blocks = (uint32_t)gt_scaled(64), threads = 128, rounds = 24;
  const size_t payloads = (size_t)blocks * threads * rounds;
  FifoOnDevice d;
  DeviceArray<uint32_t> enqueued(payloads), dequeued(payloads);
  LAUNCH_OK(k_fifo_init<<<1, 1>>>(d.fifo.ptr, d.slots.ptr));
  LAUNCH_OK(k_fifo_churn<<<blocks, threads>>>(d.fifo.ptr, rounds, enqueued.ptr, dequeued.ptr));
  LAUNCH_OK(k_fifo_drain<<<1, 32>>>(d.fifo.ptr, dequeued.ptr, kCapacity));
  const std::vector<uint32_t> in = enqueued.host(), out = dequeued.host();
  for (size_t i = 0; i < payloads; ++i) {
    ASSERT_EQ(1u, in[i]) << "payload " << i << " not accepted exactly once";
    ASSERT_EQ(1u, out[i]) << "payload " << i << (out[i] ? " came out twice" : " lost");
  }
}

}  // namespace
