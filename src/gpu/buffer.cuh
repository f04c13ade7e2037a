// gpu/buffer.cuh: replicated buffers (J. Supercomputing 2011, Sect. 5.2). Per
// size class, several first-level FIFOs of free chunks; a warp picks one by
// its SM and its warp index, so warps of one SM share a few FIFOs and SMs do
// not meet. In front of each FIFO sit a few exchange slots, each holding one
// chunk: taking or parking a chunk there is one atomic exchange that never
// retries, so a chunk freed and wanted again on the same SM skips the FIFO's
// CAS loops. Below the buffers are the chunk sources: Superblocks, or one
// Memoryblock per chunk when Superblocks are switched off.
#pragma once
#include "superblock.cuh"
#include "stats.cuh"

// A warp-uniform number that differs between the warps resident on one SM.
__device__ __forceinline__ unsigned xmc_warp_salt() {
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  return (tid >> 5) + block * ((blockDim.x * blockDim.y * blockDim.z + 31) >> 5);
}

// Index of the replica that `salt` picks among this SM's buffers of `cls`
// (into h.buffers; its exchange slots are h.hot[index * xmc_hot_slots ...]).
__device__ __forceinline__ unsigned xmc_buffer_index(int cls, unsigned salt) {
  const xmc_heap &h = xmc_g_heap;
  unsigned r = (xmc_sm_id() * h.buffers_per_sm + salt % h.buffers_per_sm) % h.num_buffers;
  return cls * h.num_buffers + r;
}

__device__ __forceinline__ xmc_atomic32 xmc_hot_slot(unsigned index, unsigned salt) {
  const xmc_heap &h = xmc_g_heap;
  return xmc_atomic32(h.hot[index * xmc_hot_slots + salt / h.buffers_per_sm % xmc_hot_slots]);
}

__device__ __forceinline__ uint64_t *xmc_chunk_tag(char *chunk) { return (uint64_t *)chunk + 3; }

// ---- below the buffers ------------------------------------------------------------

__device__ inline char *xmc_chunk_source_warp(unsigned group, int cls, bool everywhere) {
  if (xmc_g_heap.superblocks) return xmc_sb_alloc_warp(group, cls, everywhere);
  return (char *)xmc_mb_alloc(xmc_class_stride(cls) >> xmc_unit_shift, xmc_kind_memory, cls);
}

__device__ inline void xmc_chunk_sink(char *chunk, uint64_t tag) {
  if (xmc_tag::kind(tag) == xmc_kind_basic) xmc_sb_return(chunk, tag);
  else xmc_mb_free((xmc_mb *)chunk);
}

// ---- reclaiming -----------------------------------------------------------------

// Gives the chunks parked in every exchange slot and buffer back to their
// Superblocks, the blocks the cursors have not handed out too, and entirely
// free Superblocks back to the heap, so that another class can use
// the memory. Run by one lane when a request finds the heap exhausted, and
// skipped when no class block was freed since the last pass. A second caller
// waits for the running pass (bounded work) and retries its request after it.
__device__ inline bool xmc_reclaim() {
  xmc_heap &h = xmc_g_heap;
  cuda::atomic_ref<int, cuda::thread_scope_device> lock(h.reclaim_lock);
  if (lock.exchange(1, cuda::memory_order_acquire) != 0) {
    while (lock.load(cuda::memory_order_acquire) != 0) __nanosleep(256);
    return true;
  }
  unsigned long long frees = 0;
  for (unsigned i = 0; i < xmc_stat_slots; ++i)
    frees += cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(h.stats[i].frees_total).load();
  bool run = frees != h.reclaim_seen;
  h.reclaim_seen = frees;
  const unsigned hot_slots = h.buffering ? xmc_classes * h.num_buffers * xmc_hot_slots : 0;
  for (unsigned i = 0; run && i < hot_slots; ++i) {
    xmc_atomic32 slot(h.hot[i]);
    uint32_t ref = slot.load(cuda::memory_order_relaxed);
    if (ref == xmc_nil || (ref = slot.exchange(xmc_nil, cuda::memory_order_acq_rel)) == xmc_nil) continue;
    char *chunk = xmc_deref(ref);
    xmc_chunk_sink(chunk, xmc_atomic64(*xmc_chunk_tag(chunk)).load(cuda::memory_order_relaxed));
  }
  for (int cls = 0; run && h.buffering && cls < xmc_classes; ++cls)
    for (unsigned r = 0; r < h.num_buffers; ++r) {
      xmc_fifo *f = &h.buffers[cls * h.num_buffers + r];
      for (uint32_t n = xmc_fifo_size(f), ref; n-- && (ref = xmc_fifo_dequeue(f)) != xmc_nil;) {
        char *chunk = xmc_deref(ref);
        xmc_chunk_sink(chunk, xmc_atomic64(*xmc_chunk_tag(chunk)).load(cuda::memory_order_relaxed));
      }
    }
  for (int cls = 0; run && h.superblocks && cls < xmc_classes; ++cls)
    for (unsigned r = 0; r < h.num_sb_buffers; ++r) {
      xmc_sb_cursor_retire(&h.sb_cursor[cls * h.num_sb_buffers + r], cls);
      xmc_fifo *f = xmc_sb_buffer(cls, r);
      for (uint32_t n = xmc_fifo_size(f), ref; n-- && (ref = xmc_fifo_dequeue(f)) != xmc_nil;) {
        xmc_mb *mb = (xmc_mb *)xmc_deref(ref);
        if ((uint32_t)xmc_atomic64(xmc_sb_of(mb)->state).load() == xmc_sb_full) xmc_sb_unpublish(mb);
        else xmc_sb_publish(mb, cls);
      }
    }
  lock.store(0, cuda::memory_order_release);
  return run;
}

// ---- get and put --------------------------------------------------------------------

// Exhausted: every buffer of the class, every partly free Superblock of it,
// then memory reclaimed from other classes. Bounded; returns nullptr at the end.
__device__ inline char *xmc_buffer_scavenge_warp(unsigned group, int cls) {
  const xmc_heap &h = xmc_g_heap;
  char *chunk = nullptr;
  for (unsigned r = 0; h.buffering && r < h.num_buffers; ++r) {
    unsigned want = xmc_warp_ballot(group, !chunk);
    if (!want) return chunk;
    if (!chunk) {
      uint32_t ref = xmc_fifo_dequeue_warp(&h.buffers[cls * h.num_buffers + r], want);
      if (ref != xmc_nil) chunk = xmc_deref(ref);
    }
  }
  unsigned want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk) chunk = xmc_chunk_source_warp(want, cls, true);
  want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk) {
    const int leader = xmc_warp_leader(want);
    bool reclaimed = (int)xmc_lane_id() == leader && xmc_reclaim();
    if (__shfl_sync(want, reclaimed, leader)) chunk = xmc_chunk_source_warp(want, cls, true);
  }
  return chunk;
}

// Every lane of `group` gets a chunk start of class `cls`, or nullptr.
__device__ inline char *xmc_buffer_get_warp(unsigned group, int cls) {
  const xmc_heap &h = xmc_g_heap;
  char *chunk = nullptr;
  if (h.buffering) {
    const unsigned salt = xmc_warp_salt(), rank = xmc_warp_rank(group);
    const unsigned index = xmc_buffer_index(cls, salt);
    if (rank < xmc_hot_slots) {
      uint32_t ref = xmc_hot_slot(index, salt + rank * h.buffers_per_sm).exchange(xmc_nil, cuda::memory_order_acq_rel);
      if (ref != xmc_nil) chunk = xmc_deref(ref);
    }
    unsigned want = xmc_warp_ballot(group, !chunk);
    if (want && !chunk) {
      uint32_t ref = xmc_fifo_dequeue_warp(&h.buffers[index], want);
      if (ref != xmc_nil) chunk = xmc_deref(ref);
    }
  }
  unsigned want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk) chunk = xmc_chunk_source_warp(want, cls, false);
  want = xmc_warp_ballot(group, !chunk);
  if (want && !chunk) chunk = xmc_buffer_scavenge_warp(want, cls);
  if (chunk) atomicOr((unsigned long long *)xmc_chunk_tag(chunk), xmc_tag::live);
  return chunk;
}

// Returns a chunk whose live bit the caller has cleared: into an exchange
// slot; the chunk it displaces goes on to the FIFO behind it, or to its source.
__device__ inline void xmc_buffer_put(char *chunk, uint64_t tag) {
  const xmc_heap &h = xmc_g_heap;
  const int cls = xmc_tag::cls(tag);
  xmc_sm_stats *st = xmc_stats_here();
  atomicAdd(&st->frees[cls], 1ull);
  atomicAdd(&st->frees_total, 1ull);
  if (h.buffering) {
    const unsigned salt = xmc_warp_salt() + xmc_lane_id();
    const unsigned index = xmc_buffer_index(cls, salt);
    uint32_t ref = xmc_hot_slot(index, salt).exchange(xmc_ref(chunk, xmc_tag::region(tag)),
                                                       cuda::memory_order_acq_rel);
    if (ref == xmc_nil || xmc_fifo_enqueue(&h.buffers[index], ref)) return;
    chunk = xmc_deref(ref);
    tag = xmc_atomic64(*xmc_chunk_tag(chunk)).load(cuda::memory_order_relaxed);
  }
  xmc_chunk_sink(chunk, tag);
}
