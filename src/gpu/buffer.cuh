/* SPDX-License-Identifier: Apache-2.0 */
// gpu/buffer.cuh: replicated buffers (J. Supercomputing 2011, Sect. 5.2). Per
// size class, several first-level FIFOs of free chunks; a warp picks one by
// its SM and its warp index, so warps of one SM share a few FIFOs and SMs do
// not meet. In front of each FIFO sit a few exchange slots, each holding one
// chunk: taking or parking a chunk there is one atomic exchange that never
// retries, so a chunk freed and wanted again on the same SM skips the FIFO's
// CAS loops. A request for a chunk to be shared by compartments whose own
// slot is empty looks at the buffer's other slots (one sector) before the
// FIFO. Below the buffers are the chunk sources: Superblocks, or one
// Memoryblock per chunk when Superblocks are switched off.
#pragma once
#include "superblock.cuh"
#include "stats.cuh"

// Index of the replica that `salt` picks among this SM's buffers of `cls`
// (into h.buffers; its exchange slots are h.hot[index * xmc_hot_slots ...]).
__device__ __forceinline__ unsigned xmc_buffer_index(int cls, unsigned salt) {
  const xmc_heap &h = xmc_c_heap;
  // buffers_per_sm is a power of two: no division on the fast path.
  unsigned r = (xmc_sm_id() << h.buffers_per_sm_log2) + (salt & ((1u << h.buffers_per_sm_log2) - 1));
  if (r >= h.num_buffers) r %= h.num_buffers;  // fewer buffers than SMs (an ablation)
  return cls * h.num_buffers + r;
}

// Buffer `index`'s FIFO and its slots, from the constant header.
__device__ __forceinline__ xmc_fifo_ref xmc_buffer_fifo(unsigned index) {
  const xmc_heap &h = xmc_c_heap;
  return {&h.buffers[index], h.buffer_slots + (size_t)index * xmc_fifo_capacity, xmc_fifo_capacity - 1};
}

// Which exchange slot (0..7) `salt` picks in front of a buffer: hashed, so
// that warps whose salts differ by a multiple of the SM count still spread.
__device__ __forceinline__ unsigned xmc_hot_pick(unsigned salt) {
  return (((salt >> xmc_c_heap.buffers_per_sm_log2) * 0x9E3779B1u) >> 16) % xmc_hot_slots;
}

// The exchange slots in front of buffer `index`.
__device__ __forceinline__ uint32_t *xmc_hot_slots_of(unsigned index) { return xmc_c_heap.hot + index * xmc_hot_slots; }

__device__ __forceinline__ xmc_atomic32 xmc_hot_slot(unsigned index, unsigned pick) {
  return xmc_atomic32(xmc_hot_slots_of(index)[pick]);
}

// Bit k set: exchange slot k in front of buffer `index` held a chunk (a
// hint, without ordering). The row is one sector: one round trip.
__device__ __forceinline__ uint32_t xmc_hot_occupied(unsigned index) {
  uint32_t v[xmc_hot_slots];
  xmc_relaxed_load_row8(xmc_hot_slots_of(index), v);
  uint32_t bits = 0;
#pragma unroll
  for (unsigned k = 0; k < xmc_hot_slots; ++k) bits |= (uint32_t)(v[k] != xmc_nil) << k;
  return bits;
}

// Takes the chunk in the rank-th slot of `occupied`, counting from slot
// `from` on (so that warps starting from their own slots spread), if it is
// still there.
__device__ __forceinline__ char *xmc_hot_take_seen(unsigned index, uint32_t occupied, unsigned rank, unsigned from) {
  if (rank >= (unsigned)__popc(occupied)) return nullptr;
  const uint32_t rotated = ((occupied | occupied << xmc_hot_slots) >> from) & ((1u << xmc_hot_slots) - 1);
  const unsigned pick = (xmc_nth_set_bit(rotated, rank) + from) % xmc_hot_slots;
  const uint32_t ref = xmc_hot_slot(index, pick).exchange(xmc_nil, cuda::memory_order_acquire);
  return ref != xmc_nil ? xmc_deref(ref) : nullptr;
}

__device__ __forceinline__ uint64_t *xmc_chunk_tag(char *chunk) { return (uint64_t *)chunk + 3; }

// ---- below the buffers ------------------------------------------------------------

// A chunk handed out whole from the buffers, or a class Memoryblock: its
// tag's live bit set. (Basicblocks taken from their Superblock to be handed
// out whole are marked in its live mask instead: superblock.cuh.)
__device__ __forceinline__ void xmc_chunk_mark_live(char *chunk) {
  xmc_atomic_or(xmc_chunk_tag(chunk), xmc_tag::live);
}

// Chunks for the lanes of `group`, marked live when they are to be handed
// out `whole` (not shared by compartments); `published`: see xmc_sb_take.
__device__ inline char *xmc_chunk_source_warp(unsigned group, int cls, bool everywhere, bool whole,
                                             bool published = true) {
  if (xmc_c_heap.superblocks) return xmc_sb_alloc_warp(group, cls, everywhere, whole, published);
  char *chunk = (char *)xmc_mb_alloc(xmc_class_stride(cls) >> xmc_unit_shift, xmc_kind_memory, cls);
  if (chunk && whole) xmc_chunk_mark_live(chunk);
  return chunk;
}

// Gives a chunk back to where it came from, as its tag says.
static __device__ __noinline__ void xmc_chunk_sink(char *chunk) {
  const uint64_t tag = xmc_atomic64(*xmc_chunk_tag(chunk)).load(cuda::memory_order_relaxed);
  if (xmc_tag::kind(tag) == xmc_kind_basic) return xmc_sb_return(chunk, tag);
  xmc_map_forget((xmc_mb *)chunk, xmc_tag::cls(tag));
  xmc_mb_free((xmc_mb *)chunk);
}

// ---- reclaiming -----------------------------------------------------------------

// Class frees so far, summed over the SMs' counters.
__device__ inline unsigned long long xmc_frees_total() {
  unsigned long long frees = 0;
  for (unsigned i = 0; i < xmc_stat_slots; ++i)
    frees += xmc_atomic_u64(xmc_c_heap.stats[i].frees_total).load(cuda::memory_order_relaxed);
  return frees;
}

// One lane's share of a reclaim pass over `count` items: rank, rank + n, ...
#define xmc_for_share(i, count, rank, n) for (unsigned i = (rank); i < (count); i += (n))

// Empties the first level: every exchange slot and FIFO gives its chunks
// back to where they came from (Superblocks, or the heap).
__device__ inline void xmc_reclaim_buffers(unsigned rank, unsigned n) {
  const xmc_heap &h = xmc_c_heap;
  if (!h.buffering) return;
  xmc_for_share(i, xmc_classes * h.num_buffers * xmc_hot_slots, rank, n) {
    xmc_atomic32 slot(h.hot[i]);
    uint32_t ref = slot.load(cuda::memory_order_relaxed);
    if (ref != xmc_nil && (ref = slot.exchange(xmc_nil, cuda::memory_order_acq_rel)) != xmc_nil)
      xmc_chunk_sink(xmc_deref(ref));
  }
  xmc_for_share(i, xmc_classes * h.num_buffers, rank, n) {
    const xmc_fifo_ref f = xmc_buffer_fifo(i);
    for (uint32_t k = xmc_fifo_size(f.f), ref; k-- && (ref = xmc_fifo_dequeue(f)) != xmc_nil;)
      xmc_chunk_sink(xmc_deref(ref));
  }
}

// Sorts every published Superblock again: those with every block back go
// to the heap.
__device__ inline void xmc_reclaim_superblocks(unsigned rank, unsigned n) {
  const xmc_heap &h = xmc_c_heap;
  xmc_for_share(i, xmc_classes * h.num_sb_buffers, rank, n) {
    const xmc_fifo_ref f = xmc_sb_buffer(i / h.num_sb_buffers, i % h.num_sb_buffers);
    for (uint32_t k = xmc_fifo_size(f.f), ref; k-- && (ref = xmc_fifo_dequeue(f)) != xmc_nil;)
      xmc_sb_republish((xmc_mb *)xmc_deref(ref), i / h.num_sb_buffers);
  }
  xmc_for_share(i, xmc_classes * xmc_sb_stacks(), rank, n) {
    const int cls = i / xmc_sb_stacks();
    for (uint32_t ref = xmc_sb_stack_take_all(xmc_sb_stack(cls, i % xmc_sb_stacks())); ref != xmc_nil;) {
      xmc_mb *mb = (xmc_mb *)xmc_deref(ref);
      ref = xmc_atomic32(xmc_sb_of(mb)->stack_next).load(cuda::memory_order_relaxed);
      xmc_sb_republish(mb, cls);
    }
  }
}

// Gives the chunks parked in every exchange slot and buffer back to their
// Superblocks, the blocks the cursors have not handed out too, and entirely
// free Superblocks back to the heap, so that another class can use the
// memory. Run by the lanes of `group` together (the leader decides and
// locks, all share the work) when a request finds the heap exhausted, and
// only when a class block was freed since the last pass (checked without
// the lock, so that a crowd of exhausted warps does not queue for nothing).
// A second caller waits for the running pass (bounded work) and retries its
// request after it. True when the caller should retry.
static __device__ __noinline__ bool xmc_reclaim(unsigned group) {
  xmc_heap &h = xmc_g_heap;
  xmc_atomic_int lock(h.reclaim_lock);
  const int leader = xmc_warp_leader(group);
  enum { idle, waited, running } state = idle;
  unsigned long long frees = 0;
  if ((int)xmc_lane_id() == leader) {
    frees = xmc_frees_total();
    if (frees != xmc_atomic_u64(h.reclaim_seen).load(cuda::memory_order_relaxed)) {
      if (lock.exchange(1, cuda::memory_order_acquire) == 0) {
        frees = xmc_frees_total();
        state = frees != h.reclaim_seen ? running : idle;
        if (state == idle) lock.store(0, cuda::memory_order_release);
      } else {
        while (lock.load(cuda::memory_order_acquire) != 0) __nanosleep(256);
        state = waited;
      }
    }
  }
  state = (decltype(state))__shfl_sync(group, (int)state, leader);
  if (state != running) return state == waited;
  const unsigned rank = xmc_warp_rank(group), n = __popc(group);
  xmc_reclaim_buffers(rank, n);
  __syncwarp(group);  // chunks are back in their Superblocks before those are sorted
  if (h.superblocks) {
    xmc_for_share(i, xmc_classes * h.num_sb_cursors, rank, n)
      xmc_sb_cursor_retire(i, i / h.num_sb_cursors);
    __syncwarp(group);
    xmc_reclaim_superblocks(rank, n);
    __syncwarp(group);
  }
  if ((int)xmc_lane_id() == leader) {
    // Marked done only now: a caller arriving during the pass waits for it.
    xmc_atomic_u64(h.reclaim_seen).store(frees, cuda::memory_order_relaxed);
    lock.store(0, cuda::memory_order_release);
  }
  return true;
}

// Exhausted: partly free Superblocks of the class on every SM, then memory
// reclaimed from every buffer and class (which also empties this class's
// buffers into its Superblocks). Bounded; returns nullptr at the end.
static __device__ __noinline__ char *xmc_buffer_scavenge_warp(unsigned group, int cls, bool whole) {
  char *chunk = xmc_chunk_source_warp(group, cls, true, whole);
  const unsigned want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk && xmc_reclaim(want)) chunk = xmc_chunk_source_warp(want, cls, true, whole);
  return chunk;
}

// ---- get and put --------------------------------------------------------------------

// Every lane of `group` gets a chunk start of class `cls`, or nullptr; one
// to be handed out `whole` is marked live.
__device__ inline char *xmc_buffer_get_warp(unsigned group, int cls, bool whole) {
  const xmc_heap &h = xmc_c_heap;
  char *chunk = nullptr;
  bool published = true;  // whether the Superblock source looks at published ones first
  if (h.buffering) {
    const unsigned salt = xmc_warp_salt(), rank = xmc_warp_rank(group);
    const unsigned index = xmc_buffer_index(cls, salt);
    const xmc_fifo_ref fifo = xmc_buffer_fifo(index);
    const xmc_fifo_glance glance = xmc_fifo_glance_at(fifo.f);  // overlaps the exchange
    // A buffer whose FIFO was never used (on a fresh heap, every one): no
    // slot has overflowed yet and nothing is published, so a shared chunk's
    // request skips both looks below, each a round trip for nothing. What is
    // published is found by requests for whole blocks, by any request once
    // the FIFO was used, and by all when the heap looks exhausted.
    const bool fresh = glance.never_used();
    published = whole || !fresh;
    const unsigned pick = xmc_hot_pick(salt + (rank << h.buffers_per_sm_log2));
    if (rank < xmc_hot_slots) {
      // Acquire only: taking a chunk publishes nothing.
      uint32_t ref = xmc_hot_slot(index, pick).exchange(xmc_nil, cuda::memory_order_acquire);
      if (ref != xmc_nil) chunk = xmc_deref(ref);
    }
    unsigned want = xmc_warp_ballot(group, !chunk);
    // A chunk to be shared by compartments: one parked in another slot of
    // the buffer, before the FIFO and the Superblocks.
    if (want && !chunk && !whole && !fresh)
      chunk = xmc_hot_take_seen(index, xmc_hot_occupied(index), xmc_warp_rank(want), pick);
    want = xmc_warp_ballot(group, !chunk);
    // The leader's hint for all: every lane of `want` must join the dequeue.
    if (want && !chunk && __shfl_sync(want, glance.maybe_nonempty(), xmc_warp_leader(want))) {
      uint32_t ref = xmc_fifo_dequeue_warp(fifo, want);
      if (ref != xmc_nil) chunk = xmc_deref(ref);
    }
    if (chunk && whole) xmc_chunk_mark_live(chunk);
  }
  unsigned want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk) chunk = xmc_chunk_source_warp(want, cls, false, whole, published);
  want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk) chunk = xmc_buffer_scavenge_warp(want, cls, whole);
  return chunk;
}

// Returns a chunk of class `cls` in `region` (its live bit clear) into an
// exchange slot; the chunk it displaces goes on to the FIFO behind it, or to
// its source. The free is counted after the chunk is parked: the release of
// the parking exchange would otherwise wait for the counters' atomics (a
// round trip), and a reclaimer that sees the count can find the chunk.
__device__ inline void xmc_buffer_put(char *chunk, int cls, uint32_t region) {
  const xmc_heap &h = xmc_c_heap;
  if (h.buffering) {
    const unsigned salt = xmc_warp_salt() + xmc_lane_id();
    const unsigned index = xmc_buffer_index(cls, salt);
    uint32_t ref = xmc_hot_slot(index, xmc_hot_pick(salt)).exchange(xmc_ref(chunk, region), cuda::memory_order_acq_rel);
    if (ref == xmc_nil || xmc_fifo_enqueue(xmc_buffer_fifo(index), ref))
      return xmc_stats_count_frees(xmc_stats_here(), cls, 1);
    chunk = xmc_deref(ref);
  }
  xmc_stats_count_frees(xmc_stats_here(), cls, 1);
  xmc_chunk_sink(chunk);
}
