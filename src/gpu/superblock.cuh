// gpu/superblock.cuh: two-level allocation (CIT 2010, Sect. V, Figs. 4-5). A
// Superblock is a Memoryblock cut into 32 Basicblocks of one class; one
// 64-bit word holds which of them are available and whether the Superblock
// sits in a second-level buffer, so claiming and returning blocks are single
// CASes. The "in a buffer" bit is a token: its holder alone may claim, and a
// Superblock whose blocks are all back and that holds no token goes back to
// the Memoryblock heap.
#pragma once
#include "fifo.cuh"
#include "memoryblock.cuh"
#include "size_class.cuh"

__device__ __forceinline__ xmc_sb *xmc_sb_of(xmc_mb *mb) { return (xmc_sb *)(mb + 1); }

// Start of Basicblock `i` (a chunk: 32-byte header, then payload).
__device__ __forceinline__ char *xmc_sb_block(xmc_mb *mb, int cls, unsigned i) {
  return (char *)mb + xmc_unit + (size_t)i * xmc_class_stride(cls);
}

__device__ __forceinline__ xmc_fifo *xmc_sb_buffer(int cls, unsigned replica) {
  const xmc_heap &h = xmc_g_heap;
  return &h.sb_buffers[cls * h.num_sb_buffers + replica % h.num_sb_buffers];
}

// ---- the buffer token ----------------------------------------------------------

// Drops the token; a Superblock found entirely free then leaves the class.
__device__ inline void xmc_sb_unpublish(xmc_mb *mb) {
  xmc_atomic64 state(xmc_sb_of(mb)->state);
  uint64_t s = state.load(cuda::memory_order_acquire);
  uint32_t avail;
  do {
    avail = (uint32_t)s;
  } while (!state.compare_exchange_weak(s, avail == xmc_sb_full ? 0 : avail, cuda::memory_order_acq_rel,
                                        cuda::memory_order_acquire));
  if (avail == xmc_sb_full) xmc_mb_free(mb);
}

// Hands a Superblock whose token the caller holds to the second-level buffer.
__device__ inline void xmc_sb_publish(xmc_mb *mb, int cls) {
  uint32_t region = xmc_tag::region(mb->tag);
  if (!xmc_fifo_enqueue(xmc_sb_buffer(cls, xmc_sm_id()), xmc_ref((char *)mb, region)))
    xmc_sb_unpublish(mb);
}

// ---- claiming Basicblocks ------------------------------------------------------

__device__ __forceinline__ uint32_t xmc_lowest_bits(uint32_t bits, unsigned k) {
  uint32_t take = 0;
  for (unsigned i = 0; i < k && bits; ++i) {
    uint32_t low = bits & (0u - bits);
    take |= low;
    bits ^= low;
  }
  return take;
}

// Claims up to k available Basicblocks of a Superblock whose token the caller
// holds; a Superblock with blocks left goes back to the buffer.
__device__ inline uint32_t xmc_sb_claim(xmc_mb *mb, int cls, unsigned k) {
  xmc_atomic64 state(xmc_sb_of(mb)->state);
  uint64_t s = state.load(cuda::memory_order_acquire);
  uint32_t take, left;
  do {
    take = xmc_lowest_bits((uint32_t)s, k);
    left = (uint32_t)s & ~take;
  } while (!state.compare_exchange_weak(s, left ? (left | xmc_sb_inbuf) : 0, cuda::memory_order_acq_rel,
                                        cuda::memory_order_acquire));
  if (left) xmc_sb_publish(mb, cls);
  return take;
}

// A new Superblock from the Memoryblock heap, its first k blocks claimed.
__device__ inline xmc_mb *xmc_sb_create(int cls, unsigned k, uint32_t *taken) {
  uint32_t units = 1 + xmc_sb_blocks * (xmc_class_stride(cls) >> xmc_unit_shift);
  xmc_mb *mb = xmc_mb_alloc(units, xmc_kind_super, cls);
  if (!mb) return nullptr;
  uint32_t region = xmc_tag::region(mb->tag);
  for (unsigned i = 0; i < xmc_sb_blocks; ++i)
    ((uint64_t *)xmc_sb_block(mb, cls, i))[3] = xmc_tag::make(xmc_kind_basic, cls, i, region);
  uint32_t take = k >= xmc_sb_blocks ? xmc_sb_full : (1u << k) - 1;
  uint32_t left = xmc_sb_full & ~take;
  xmc_atomic64(xmc_sb_of(mb)->state).store(left ? (left | xmc_sb_inbuf) : 0, cuda::memory_order_release);
  if (left) xmc_sb_publish(mb, cls);
  *taken = take;
  return mb;
}

// Up to k blocks from a buffered Superblock (this SM's buffer, or every
// buffer of the class when `everywhere`), else from a new one. One lane at a
// time creates a Superblock for a buffer; the others wait for it and look
// again, so that a burst of warps does not carve one Superblock each. After a
// few rounds a waiter creates its own, which bounds the wait.
__device__ inline xmc_mb *xmc_sb_take(int cls, unsigned k, bool everywhere, uint32_t *taken) {
  const xmc_heap &h = xmc_g_heap;
  const unsigned n = everywhere ? h.num_sb_buffers : 1;
  const unsigned start = xmc_sm_id();
  cuda::atomic_ref<int, cuda::thread_scope_device> creating(
      h.sb_creating[cls * h.num_sb_buffers + start % h.num_sb_buffers]);
  for (int round = 0;; ++round) {
    for (unsigned j = 0; j < n; ++j) {
      uint32_t ref = xmc_fifo_dequeue(xmc_sb_buffer(cls, start + j));
      if (ref == xmc_nil) continue;
      xmc_mb *mb = (xmc_mb *)xmc_deref(ref);
      if ((*taken = xmc_sb_claim(mb, cls, k)) != 0) return mb;
    }
    if (round == 8) return xmc_sb_create(cls, k, taken);
    if (creating.exchange(1, cuda::memory_order_acquire) == 0) {
      xmc_mb *mb = xmc_sb_create(cls, k, taken);
      creating.store(0, cuda::memory_order_release);
      return mb;
    }
    while (creating.load(cuda::memory_order_acquire) != 0) __nanosleep(128);
  }
}

// Every lane of `group` gets a Basicblock start, or nullptr once the heap is
// exhausted. One lane claims for all still waiting, one CAS per Superblock.
__device__ inline char *xmc_sb_alloc_warp(unsigned group, int cls, bool everywhere) {
  char *got = nullptr;
  for (;;) {
    unsigned want = xmc_warp_ballot(group, got == nullptr);
    if (!want) break;
    int leader = xmc_warp_leader(want);
    xmc_mb *mb = nullptr;
    uint32_t taken = 0;
    if ((int)xmc_lane_id() == leader) mb = xmc_sb_take(cls, __popc(want), everywhere, &taken);
    mb = (xmc_mb *)xmc_warp_broadcast(group, (char *)mb, leader);
    taken = xmc_warp_broadcast(group, taken, leader);
    if (!mb) break;
    if (!got) {
      unsigned r = xmc_warp_rank(want);
      if (r < (unsigned)__popc(taken)) got = xmc_sb_block(mb, cls, xmc_nth_set_bit(taken, r));
    }
  }
  return got;
}

// ---- returning a Basicblock ----------------------------------------------------

__device__ inline void xmc_sb_return(char *block, uint64_t tag) {
  const int cls = xmc_tag::cls(tag);
  const unsigned i = xmc_tag::index(tag);
  xmc_mb *mb = (xmc_mb *)(block - xmc_unit - (size_t)i * xmc_class_stride(cls));
  xmc_atomic64 state(xmc_sb_of(mb)->state);
  uint64_t s = state.load(cuda::memory_order_acquire), next;
  uint32_t avail;
  do {
    avail = (uint32_t)s | 1u << i;
    bool inbuf = s & xmc_sb_inbuf;
    next = inbuf || avail != xmc_sb_full ? (avail | xmc_sb_inbuf) : 0;
  } while (!state.compare_exchange_weak(s, next, cuda::memory_order_acq_rel, cuda::memory_order_acquire));
  if (s & xmc_sb_inbuf) return;           // a buffered Superblock: its holder will see the block
  if (next == 0) xmc_mb_free(mb);         // all blocks back, no token: leave the class
  else xmc_sb_publish(mb, cls);           // we took the token: make the block reachable
}
