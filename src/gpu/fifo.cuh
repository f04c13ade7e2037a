/* SPDX-License-Identifier: Apache-2.0 */
// gpu/fifo.cuh: the fixed-capacity, lock-free, sequence-numbered FIFO of
// XMalloc (J. Supercomputing 2011, Sect. 5.2.1, Figs. 7-9). The n-th message
// carries sequence number n and lives in slot n mod capacity; the sequence
// number in every 64-bit message both locates it and guards against ABA, so a
// stale read is detected. Dequeue takes up to one message per lane of a warp
// group with a single CAS on the head. Unlike the paper, an enqueue claims
// its sequence number with a fetch-and-add on the tail, after taking a unit
// of `room` (free slots): a burst of frees then never retries on the tail.
#pragma once
#include <cuda/atomic>
#include "types.cuh"
#include "warp.cuh"


__device__ __forceinline__ uint32_t xmc_msg_seq(uint64_t m) { return (uint32_t)m; }
__device__ __forceinline__ uint32_t xmc_msg_payload(uint64_t m) { return (uint32_t)(m >> 32); }
__device__ __forceinline__ uint64_t xmc_msg(uint32_t seq, uint32_t payload) {
  return (uint64_t)payload << 32 | seq;
}

// A FIFO and where its slots are. The heap's FIFOs know both from the
// constant header (buffer.cuh, superblock.cuh), so that an operation does not
// wait for the FIFO's own header after the acquire of its claim, which would
// be a round trip of its own; other FIFOs take them from the header.
struct xmc_fifo_ref {
  xmc_fifo *f;
  uint64_t *slots;
  uint32_t mask;
};
__device__ __forceinline__ xmc_fifo_ref xmc_fifo_self(xmc_fifo *f) { return {f, f->slots, f->mask}; }

// Empty FIFO: head and tail 0, every slot free, slot i holding message
// i - capacity, so that no slot looks written for the sequence it awaits.
__device__ inline void xmc_fifo_init(xmc_fifo *f, uint64_t *slots, uint32_t capacity) {
  f->head = 0;
  f->tail = 0;
  f->room = (int32_t)capacity;
  f->mask = capacity - 1;
  f->slots = slots;
  for (uint32_t i = 0; i < capacity; ++i) slots[i] = (uint32_t)(i - capacity);
}

// Returns false when the FIFO is full. Taking a unit of room (acquire) makes
// the dequeues that freed it happen before the store into the slot. One
// release fence then covers both what the enqueuer wrote before (the chunk,
// its Superblock's state), for whichever dequeuer acquires the message, and
// the tail's chain, which passes the room's dequeues on to whichever
// enqueuer gets the slot: the claim and the store themselves need no
// ordering of their own, and two fences cost frees time
// (docs/decisions/0065-gpu-fifo-enqueue-fetch-add.md).
__device__ inline bool xmc_fifo_enqueue(xmc_fifo_ref q, uint32_t payload) {
  xmc_fifo *f = q.f;
  xmc_atomic_i32 room(f->room);
  if (room.fetch_sub(1, cuda::memory_order_acquire) <= 0) {
    room.fetch_add(1, cuda::memory_order_relaxed);
    return false;
  }
  cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
  const uint32_t seq = xmc_atomic32(f->tail).fetch_add(1, cuda::memory_order_acquire);
  xmc_atomic64(q.slots[seq & q.mask]).store(xmc_msg(seq, payload), cuda::memory_order_relaxed);
  return true;
}
__device__ __forceinline__ bool xmc_fifo_enqueue(xmc_fifo *f, uint32_t payload) {
  return xmc_fifo_enqueue(xmc_fifo_self(f), payload);
}

// Fig. 8, widened to a warp group: the leader snapshots head and tail, lane of
// rank r reads message head + r, and the leader commits the messages already
// written, in order, with one CAS (an enqueuer may still be storing the
// next). Every lane of `group` must call; a lane gets its payload or xmc_nil.
__device__ inline uint32_t xmc_fifo_dequeue_warp(xmc_fifo_ref q, unsigned group) {
  xmc_fifo *f = q.f;
  const int leader = xmc_warp_leader(group);
  const bool is_leader = (int)xmc_lane_id() == leader;
  const uint32_t rank = xmc_warp_rank(group);
  const uint32_t want = __popc(group);
  xmc_atomic32 head(f->head);
  for (;;) {
    uint32_t h = 0, t = 0;
    if (is_leader) {
      h = head.load(cuda::memory_order_acquire);
      t = xmc_atomic32(f->tail).load(cuda::memory_order_acquire);
    }
    h = xmc_warp_broadcast(group, h, leader);
    t = xmc_warp_broadcast(group, t, leader);
    const int32_t count = (int32_t)(t - h);
    uint32_t take = count <= 0 ? 0 : (uint32_t)count < want ? (uint32_t)count : want;
    uint64_t m = 0;
    if (rank < take) m = xmc_atomic64(q.slots[(h + rank) & q.mask]).load(cuda::memory_order_acquire);
    const unsigned unwritten = xmc_warp_ballot(group, rank < take && xmc_msg_seq(m) != h + rank);
    if (unwritten) take = __popc(group & ((unwritten & -unwritten) - 1));
    if (take == 0) return xmc_nil;
    bool committed = false;
    if (is_leader && head.compare_exchange_strong(h, h + take, cuda::memory_order_acq_rel, cuda::memory_order_relaxed)) {
      committed = true;
      xmc_atomic_i32(f->room).fetch_add((int32_t)take, cuda::memory_order_release);
    }
    if (__shfl_sync(group, committed, leader)) return rank < take ? xmc_msg_payload(m) : xmc_nil;
  }
}

__device__ __forceinline__ uint32_t xmc_fifo_dequeue_warp(xmc_fifo *f, unsigned group) {
  return xmc_fifo_dequeue_warp(xmc_fifo_self(f), group);
}

// Single-thread dequeue, for the slow paths run by one lane.
__device__ __forceinline__ uint32_t xmc_fifo_dequeue(xmc_fifo_ref q) {
  return xmc_fifo_dequeue_warp(q, 1u << xmc_lane_id());
}
__device__ __forceinline__ uint32_t xmc_fifo_dequeue(xmc_fifo *f) { return xmc_fifo_dequeue(xmc_fifo_self(f)); }

// A FIFO's head and tail, read without ordering: a hint. Read ahead of the
// operations before a dequeue, so that an empty FIFO costs no round trip of
// its own; a stale answer only sends the caller to its next source.
struct xmc_fifo_glance {
  uint32_t head, tail;
  __device__ bool maybe_nonempty() const { return (int32_t)(tail - head) > 0; }
  // Nothing was ever enqueued (or 2^32 messages were).
  __device__ bool never_used() const { return tail == 0; }
};

__device__ __forceinline__ xmc_fifo_glance xmc_fifo_glance_at(xmc_fifo *f) {
  return {xmc_atomic32(f->head).load(cuda::memory_order_relaxed), xmc_atomic32(f->tail).load(cuda::memory_order_relaxed)};
}

__device__ __forceinline__ bool xmc_fifo_maybe_nonempty(xmc_fifo *f) { return xmc_fifo_glance_at(f).maybe_nonempty(); }

// Messages claimed at this moment (a snapshot; others may change it at once,
// and the last few may still be being written).
__device__ __forceinline__ uint32_t xmc_fifo_size(xmc_fifo *f) {
  uint32_t h = xmc_atomic32(f->head).load(cuda::memory_order_acquire);
  uint32_t t = xmc_atomic32(f->tail).load(cuda::memory_order_acquire);
  return (int32_t)(t - h) > 0 ? t - h : 0;
}
