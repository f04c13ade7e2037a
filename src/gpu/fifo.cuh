// gpu/fifo.cuh: the fixed-capacity, lock-free, sequence-numbered FIFO of
// XMalloc (J. Supercomputing 2011, Sect. 5.2.1, Figs. 7-9). The n-th message
// carries sequence number n and lives in slot n mod capacity; the sequence
// number in every 64-bit message both locates it and guards against ABA, so a
// stale read is detected and retried. Dequeue takes up to one message per lane
// of a warp group with a single CAS on the head.
#pragma once
#include <cuda/atomic>
#include "types.cuh"
#include "warp.cuh"


__device__ __forceinline__ uint32_t xmc_msg_seq(uint64_t m) { return (uint32_t)m; }
__device__ __forceinline__ uint32_t xmc_msg_payload(uint64_t m) { return (uint32_t)(m >> 32); }
__device__ __forceinline__ uint64_t xmc_msg(uint32_t seq, uint32_t payload) {
  return (uint64_t)payload << 32 | seq;
}

// Messages between head `h` and tail message `t` (both ends counted).
__device__ __forceinline__ uint32_t xmc_fifo_count(uint32_t h, uint64_t t) { return xmc_msg_seq(t) - h + 1; }

// Empty FIFO: head 0, tail "message -1", slot i holding message i - capacity,
// so that the first transfer into each slot finds the sequence it expects.
__device__ inline void xmc_fifo_init(xmc_fifo *f, uint64_t *slots, uint32_t capacity) {
  f->head = 0;
  f->mask = capacity - 1;
  f->tail = (uint64_t)0xffffffffu;
  f->slots = slots;
  for (uint32_t i = 0; i < capacity; ++i) slots[i] = (uint32_t)(i - capacity);
}

// Fig. 9. Returns false when the FIFO is full. A failed CAS on the tail
// returns the tail that beat it, which the next attempt starts from; head
// and tail are read again only when the FIFO then looks full.
__device__ inline bool xmc_fifo_enqueue(xmc_fifo *f, uint32_t payload) {
  xmc_atomic32 head(f->head);
  xmc_atomic64 tail(f->tail);
  const uint32_t capacity = f->mask + 1;
  uint32_t h = head.load(cuda::memory_order_acquire);
  uint64_t t = tail.load(cuda::memory_order_acquire);
  for (;;) {
    // >=: a head read before the tail may be stale and overstate the count.
    if (xmc_fifo_count(h, t) >= capacity) return false;
    // Move the old tail message into the array unless someone already did.
    xmc_atomic64 slot(f->slots[xmc_msg_seq(t) & f->mask]);
    uint64_t old = slot.load(cuda::memory_order_relaxed);
    if (xmc_msg_seq(old) + capacity == xmc_msg_seq(t))
      slot.compare_exchange_strong(old, t, cuda::memory_order_release, cuda::memory_order_relaxed);
    if (tail.compare_exchange_strong(t, xmc_msg(xmc_msg_seq(t) + 1, payload),
                                     cuda::memory_order_acq_rel, cuda::memory_order_acquire))
      return true;
    if (xmc_fifo_count(h, t) >= capacity) {  // perhaps only against the old head
      h = head.load(cuda::memory_order_acquire);
      t = tail.load(cuda::memory_order_acquire);
    }
  }
}

// Fig. 8, widened to a warp group: the leader snapshots head and tail, lane of
// rank r reads message head + r, and the leader commits all of them with one
// CAS. Every lane of `group` must call; a lane gets its payload or xmc_nil.
__device__ inline uint32_t xmc_fifo_dequeue_warp(xmc_fifo *f, unsigned group) {
  const int leader = xmc_warp_leader(group);
  const bool is_leader = (int)xmc_lane_id() == leader;
  const uint32_t rank = xmc_warp_rank(group);
  const uint32_t want = __popc(group);
  xmc_atomic32 head(f->head);
  for (;;) {
    uint32_t h = 0;
    uint64_t t = 0;
    if (is_leader) {
      h = head.load(cuda::memory_order_acquire);
      t = xmc_atomic64(f->tail).load(cuda::memory_order_acquire);
    }
    h = xmc_warp_broadcast(group, h, leader);
    t = xmc_warp_broadcast(group, t, leader);
    uint32_t count = xmc_fifo_count(h, t);
    uint32_t take = count < want ? count : want;
    if (take == 0) return xmc_nil;
    uint32_t seq = h + rank;
    uint64_t m = t;
    if (rank < take && seq != xmc_msg_seq(t))
      m = xmc_atomic64(f->slots[seq & f->mask]).load(cuda::memory_order_acquire);
    bool stale = rank < take && xmc_msg_seq(m) != seq;
    bool committed = false;
    if (xmc_warp_ballot(group, stale) == 0 && is_leader)
      committed = head.compare_exchange_strong(h, h + take, cuda::memory_order_acq_rel,
                                               cuda::memory_order_relaxed);
    if (__shfl_sync(group, committed, leader))
      return rank < take ? xmc_msg_payload(m) : xmc_nil;
  }
}

// Single-thread dequeue, for the slow paths run by one lane.
__device__ __forceinline__ uint32_t xmc_fifo_dequeue(xmc_fifo *f) {
  return xmc_fifo_dequeue_warp(f, 1u << xmc_lane_id());
}

// A hint, without ordering: false when the FIFO looked empty. Read ahead of
// the operations before a dequeue, so that an empty FIFO costs no round trip
// of its own; a stale answer only sends the caller to its next source.
__device__ __forceinline__ bool xmc_fifo_maybe_nonempty(xmc_fifo *f) {
  uint32_t h = xmc_atomic32(f->head).load(cuda::memory_order_relaxed);
  uint64_t t = xmc_atomic64(f->tail).load(cuda::memory_order_relaxed);
  return xmc_fifo_count(h, t) != 0;
}

// Messages present at this moment (a snapshot; others may change it at once).
__device__ __forceinline__ uint32_t xmc_fifo_size(xmc_fifo *f) {
  uint32_t h = xmc_atomic32(f->head).load(cuda::memory_order_acquire);
  uint64_t t = xmc_atomic64(f->tail).load(cuda::memory_order_acquire);
  return xmc_fifo_count(h, t);
}
