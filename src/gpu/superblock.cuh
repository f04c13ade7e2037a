/* SPDX-License-Identifier: Apache-2.0 */
// gpu/superblock.cuh: two-level allocation (CIT 2010, Sect. V, Figs. 4-5). A
// Superblock is a Memoryblock cut into 32 Basicblocks of one class; one
// 64-bit word holds which of them are available and whether the Superblock
// is published (in a second-level buffer, or on a stack of sb_stack.cuh), so
// claiming and returning blocks are single atomics. The "published" bit is a
// token: its holder alone may claim. A Superblock whose blocks are all back
// stays published with its class; the reclaimer gives it back to the
// Memoryblock heap when another class needs the memory.
#pragma once
#include "fifo.cuh"
#include "memoryblock.cuh"
#include "sb_map.cuh"
#include "sb_stack.cuh"
#include "check.cuh"
#include "size_class.cuh"
#include "unit_map.cuh"

// Start of Basicblock `i` (a chunk: 32-byte header, then payload).
__device__ __forceinline__ char *xmc_sb_block(xmc_mb *mb, int cls, unsigned i) {
  XMC_ASSERT(i < xmc_sb_blocks && cls >= 0 && cls < xmc_classes);
  return (char *)mb + xmc_unit + (size_t)i * xmc_class_stride(cls);
}

__device__ __forceinline__ xmc_fifo_ref xmc_sb_buffer(int cls, unsigned replica) {
  const xmc_heap &h = xmc_c_heap;
  const unsigned i = cls * h.num_sb_buffers + replica % h.num_sb_buffers;
  return {&h.sb_buffers[i], h.sb_buffer_slots + (size_t)i * xmc_sb_fifo_capacity, xmc_sb_fifo_capacity - 1};
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
  if (avail != xmc_sb_full) return;
  const int cls = xmc_tag::cls(mb->tag);
  xmc_map_forget(mb, cls);
  xmc_sb_map_update(mb, xmc_sb_units(cls), cls, false);
  xmc_mb_free(mb);
}

// Hands a Superblock whose token the caller holds to the second-level
// buffer: this SM's, or when that is full one of the next few; when all are
// full, to a stack of the class on this SM, which has room for any number.
static __device__ __noinline__ void xmc_sb_publish(xmc_mb *mb, int cls) {
  const uint32_t ref = xmc_ref((char *)mb, xmc_tag::region(mb->tag));
  for (unsigned j = 0; j < 4; ++j)
    if (xmc_fifo_enqueue(xmc_sb_buffer(cls, xmc_sm_id() + j), ref)) return;
  xmc_sb_stack_push(xmc_sb_stack_here(cls), xmc_sb_of(mb), ref);
}

// The reclaimer's sort of a published Superblock: one with every block back
// leaves the class, the others are published again.
static __device__ void xmc_sb_republish(xmc_mb *mb, int cls) {
  if ((uint32_t)xmc_atomic64(xmc_sb_of(mb)->state).load(cuda::memory_order_acquire) == xmc_sb_full)
    xmc_sb_unpublish(mb);
  else
    xmc_sb_publish(mb, cls);
}

// ---- returning Basicblocks ----------------------------------------------------

// Makes `bits` of a Superblock available. Whoever finds no token takes it and
// publishes the Superblock, even one with every block back: it stays with its
// class until memory is reclaimed for another class.
__device__ inline void xmc_sb_return_bits(xmc_mb *mb, int cls, uint32_t bits) {
  uint64_t s = xmc_atomic64(xmc_sb_of(mb)->state).fetch_or(bits | xmc_sb_inbuf, cuda::memory_order_acq_rel);
  // We took the token: make the blocks reachable.
  if (!(s & xmc_sb_inbuf)) xmc_sb_publish(mb, cls);
}

// The Superblock that holds Basicblock `index` of class `cls`, whose chunk
// starts at `block`.
__device__ __forceinline__ xmc_mb *xmc_sb_holding(char *block, int cls, uint32_t index) {
  XMC_ASSERT(index < xmc_sb_blocks && cls >= 0 && cls < xmc_classes);   // a Basicblock's tag
  return (xmc_mb *)(block - xmc_unit - (size_t)index * xmc_class_stride(cls));
}
__device__ __forceinline__ xmc_mb *xmc_sb_holding(char *block, uint64_t tag) {
  return xmc_sb_holding(block, xmc_tag::cls(tag), xmc_tag::index(tag));
}

// Index of the Basicblock whose payload starts at `p` in the Superblock
// `at` of region `region` names, or -1 when p is no Basicblock's payload.
// The quotient in floating point, no integer division: for a multiple
// k * stride it is k + 0.5 / stride, far from the rounding error.
__device__ __forceinline__ int xmc_sb_block_index(uint32_t region, xmc_sb_at at, const char *p) {
  if (at.cls < 0) return -1;
  const char *first = xmc_c_heap.regions[region].base + ((size_t)at.unit << xmc_unit_shift) + xmc_unit + xmc_chunk_header;
  const size_t off = (size_t)(p - first), stride = xmc_class_stride(at.cls);
  if (off >= xmc_sb_blocks * stride) return -1;  // before the first block (wrapped) or past the last
  const uint32_t index = __float2uint_rd(__fdividef((float)off + 0.5f, (float)stride));
  return index * stride == off ? (int)index : -1;
}

// ---- Basicblocks handed out whole --------------------------------------------
// Taken from their Superblock, they are marked live in its mask, one atomic
// for a warp's group; taken from the buffers, in their own tags (buffer.cuh),
// which needs no lookup. xmcFree clears whichever is set.

__device__ __forceinline__ void xmc_sb_mark_live(xmc_mb *mb, uint32_t bits) { xmc_atomic_or(&xmc_sb_of(mb)->live, bits); }

// Clears `bits` of the live mask; returns those that were set (the others:
// double frees, or blocks never handed out whole).
__device__ __forceinline__ uint32_t xmc_sb_unmark_live(xmc_mb *mb, uint32_t bits) {
  return xmc_atomic_and(&xmc_sb_of(mb)->live, ~bits) & bits;
}

__device__ inline void xmc_sb_return(char *block, uint64_t tag) {
  xmc_sb_return_bits(xmc_sb_holding(block, tag), xmc_tag::cls(tag), 1u << xmc_tag::index(tag));
}

// ---- claiming Basicblocks ------------------------------------------------------

// Blocks 0..n-1 of a Superblock's mask.
__device__ __forceinline__ uint32_t xmc_bits_below(uint32_t n) { return n >= 32 ? xmc_sb_full : (1u << n) - 1; }

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


// A new Superblock from the Memoryblock heap: its Basicblocks tagged, none
// available yet (the caller hands them out) or live, no buffer token, and
// entered in the Superblock map.
static __device__ __noinline__ xmc_mb *xmc_sb_create(int cls) {
  xmc_mb *mb = xmc_mb_alloc(xmc_sb_units(cls), xmc_kind_super, cls);
  if (!mb) return nullptr;
  uint32_t region = xmc_tag::region(mb->tag);
  for (unsigned i = 0; i < xmc_sb_blocks; ++i)
    ((uint64_t *)xmc_sb_block(mb, cls, i))[3] = xmc_tag::make(xmc_kind_basic, cls, i, region);
  xmc_sb_map_update(mb, xmc_sb_units(cls), cls, true);
  xmc_atomic32(xmc_sb_of(mb)->live).store(0, cuda::memory_order_relaxed);
  xmc_atomic64(xmc_sb_of(mb)->state).store(0, cuda::memory_order_release);
  return mb;
}

// A new Superblock of which the caller keeps the first k blocks; the rest
// go to the second-level buffer. For groups that want most of one.
__device__ inline xmc_mb *xmc_sb_create_claimed(int cls, unsigned k, uint32_t *taken) {
  xmc_mb *mb = xmc_sb_create(cls);
  if (!mb) return nullptr;
  *taken = xmc_bits_below(k);
  if (uint32_t left = xmc_sb_full & ~*taken) xmc_sb_return_bits(mb, cls, left);
  return mb;
}

// ---- the cursor -------------------------------------------------------------------

// Cursor `i` (class * num_sb_cursors + replica) and its spare.
__device__ __forceinline__ xmc_atomic_u64 xmc_cursor(unsigned i) { return xmc_atomic_u64(xmc_c_heap.sb_cursor[i]); }
__device__ __forceinline__ xmc_atomic32 xmc_cursor_spare(unsigned i) { return xmc_atomic32(xmc_c_heap.sb_spare[i]); }

// Makes the next Superblock of cursor `i` while its claims still find
// blocks, so that the claim taking the last one installs it at once instead
// of carving while the others wait. A spare already there is kept; one that
// turns up meanwhile (the maker for an earlier Superblock, done late, when
// its install had carved one of its own) goes to the class, every block
// available.
static __device__ __noinline__ void xmc_sb_spare_make(unsigned i, int cls) {
  if (xmc_cursor_spare(i).load(cuda::memory_order_relaxed) != xmc_nil) return;
  xmc_mb *mb = xmc_sb_create(cls);
  if (!mb) return;
  // Release: the installer reads the Superblock's header and tags.
  const uint32_t old =
      xmc_cursor_spare(i).exchange(xmc_ref((char *)mb, xmc_tag::region(mb->tag)), cuda::memory_order_acq_rel);
  if (old != xmc_nil) xmc_sb_return_bits((xmc_mb *)xmc_deref(old), cls, xmc_sb_full);
}

// Puts the next Superblock under cursor `i`, the caller's first `first`
// blocks claimed: the spare if there is one, else a new one; an empty cursor
// if the heap is exhausted. The cursor is left as the claims found it (used
// up, or no Superblock yet) until then: a marker stored first would only
// make the release of the new word wait for it, and the waiting claims
// longer (docs/decisions/0067-gpu-superblock-cursors.md).
static __device__ __noinline__ xmc_mb *xmc_sb_cursor_install(unsigned i, int cls, uint32_t first) {
  xmc_atomic_u64 cursor = xmc_cursor(i);
  const uint32_t spare = xmc_cursor_spare(i).exchange(xmc_nil, cuda::memory_order_acquire);
  xmc_mb *mb = spare != xmc_nil ? (xmc_mb *)xmc_deref(spare) : xmc_sb_create(cls);
  cursor.store(mb ? (unsigned long long)xmc_ref((char *)mb, xmc_tag::region(mb->tag)) << 32 | first
                  : xmc_cursor_empty,
               cuda::memory_order_release);
  return mb;
}

// Whether a cursor word names a Superblock with blocks left to claim.
__device__ __forceinline__ bool xmc_cursor_has_blocks(unsigned long long w) {
  return (uint32_t)(w >> 32) != xmc_nil && (uint32_t)w < xmc_sb_blocks;
}

// A claim of k blocks that found cursor `i`'s word `w` (with blocks left)
// took blocks [start, start + k) of its Superblock, as many as there were:
// their mask in *taken. The claim that takes the last block installs the
// next Superblock; the one that crosses the middle makes it.
__device__ inline xmc_mb *xmc_sb_cursor_took(unsigned i, int cls, unsigned long long w, unsigned k,
                                             uint32_t *taken) {
  const uint32_t start = (uint32_t)w;
  *taken = xmc_bits_below(start + k) & ~xmc_bits_below(start);
  if (start + k >= xmc_sb_blocks) xmc_sb_cursor_install(i, cls, 0);
  else if (start < xmc_cursor_spare_at && start + k >= xmc_cursor_spare_at) xmc_sb_spare_make(i, cls);
  return (xmc_mb *)xmc_deref((uint32_t)(w >> 32));
}

// Up to k (<= 16) blocks from the cursor of `cls` for this SM's group: one
// fetch-and-add in the common case. The claim that takes a Superblock's last
// block, or the first claim on an empty cursor, installs the next one;
// claims that find the cursor used up wait for it.
__device__ inline xmc_mb *xmc_sb_cursor_claim(int cls, unsigned k, uint32_t *taken) {
  const xmc_heap &h = xmc_c_heap;
  const unsigned pick = xmc_sm_id() * xmc_sb_cursors_per_sm + xmc_warp_salt() % xmc_sb_cursors_per_sm;
  const unsigned i = cls * h.num_sb_cursors + pick % h.sb_cursors_in_use[cls];
  xmc_atomic_u64 cursor = xmc_cursor(i);
  for (;;) {
    const unsigned long long w = cursor.fetch_add(k, cuda::memory_order_acquire);
    const uint32_t ref = (uint32_t)(w >> 32), start = (uint32_t)w;
    if (xmc_cursor_has_blocks(w)) return xmc_sb_cursor_took(i, cls, w, k, taken);
    if (ref == xmc_nil && start == 0) {
      xmc_mb *mb = xmc_sb_cursor_install(i, cls, k);
      *taken = xmc_bits_below(k);
      return mb;
    }
    // Used up, or no Superblock yet: wait until the installer is done (a
    // new word: another Superblock, or the index restarted). An empty cursor
    // then means it failed (or a reclaim took the cursor's Superblock): no
    // claim here now, rather than every waiter trying again.
    for (unsigned long long now;; __nanosleep(64)) {
      now = cursor.load(cuda::memory_order_relaxed);
      if (now == xmc_cursor_empty) return nullptr;
      if ((uint32_t)(now >> 32) != ref || (uint32_t)now < start) break;
    }
  }
}

// Up to k blocks from whichever cursor of `cls` still has some, for a
// request whose own cursor could not serve it on an exhausted heap: the other
// SMs' cursors may hold most of a Superblock each, which no free would ever
// publish. A CAS, not a fetch-and-add, so that a used-up cursor is left as it
// is; the claim that takes a Superblock's last block installs the next one,
// as every claim does.
static __device__ __noinline__ xmc_mb *xmc_sb_cursor_steal(int cls, unsigned k, uint32_t *taken) {
  const xmc_heap &h = xmc_c_heap;
  for (unsigned j = 0; j < h.sb_cursors_in_use[cls]; ++j) {
    const unsigned i = cls * h.num_sb_cursors + j;
    xmc_atomic_u64 cursor = xmc_cursor(i);
    unsigned long long w = cursor.load(cuda::memory_order_relaxed);
    while (xmc_cursor_has_blocks(w) &&
           !cursor.compare_exchange_weak(w, w + min(k, xmc_sb_blocks - (uint32_t)w), cuda::memory_order_acquire,
                                         cuda::memory_order_relaxed)) {
    }
    if (xmc_cursor_has_blocks(w)) return xmc_sb_cursor_took(i, cls, w, k, taken);
  }
  return nullptr;
}

// Takes cursor `i`'s spare and Superblock away and makes the blocks they had
// not handed out available (reclaiming memory for other classes).
static __device__ __noinline__ void xmc_sb_cursor_retire(unsigned i, int cls) {
  const uint32_t spare = xmc_cursor_spare(i).exchange(xmc_nil, cuda::memory_order_acquire);
  if (spare != xmc_nil) xmc_sb_return_bits((xmc_mb *)xmc_deref(spare), cls, xmc_sb_full);
  xmc_atomic_u64 cursor = xmc_cursor(i);
  unsigned long long w = cursor.load(cuda::memory_order_relaxed);
  do {
    // Only a Superblock with blocks left: a used-up one belongs to the claim
    // that is installing its successor.
    if (!xmc_cursor_has_blocks(w)) return;
  } while (!cursor.compare_exchange_weak(w, xmc_cursor_empty, cuda::memory_order_acq_rel,
                                         cuda::memory_order_relaxed));
  xmc_sb_return_bits((xmc_mb *)xmc_deref((uint32_t)(w >> 32)), cls, ~xmc_bits_below((uint32_t)w));
}

// A published Superblock of `cls` from any SM's buffers and stacks, this
// SM's first. The heads are read eight at a time (independent loads, one
// round trip), since on an exhausted heap every one of them comes back empty.
__device__ inline uint32_t xmc_sb_published_anywhere(int cls) {
  const xmc_heap &h = xmc_c_heap;
  constexpr unsigned batch = 8;
  const unsigned fifos = h.num_sb_buffers, stacks = xmc_sb_stacks(), sources = fifos + stacks;
  const unsigned sm = xmc_sm_id() % fifos;
  auto stack = [&](unsigned i) { return xmc_sb_stack(cls, (i - fifos + sm * xmc_sb_stacks_per_sm) % stacks); };
  for (unsigned base = 0; base < sources; base += batch) {
    bool seen[batch];
#pragma unroll
    for (unsigned k = 0; k < batch; ++k) {
      const unsigned i = base + k;
      seen[k] = i < fifos ? xmc_fifo_maybe_nonempty(xmc_sb_buffer(cls, sm + i).f)
                : i < sources && (uint32_t)stack(i).load(cuda::memory_order_relaxed) != xmc_nil;
    }
    for (unsigned k = 0; k < batch; ++k) {
      const unsigned i = base + k;
      uint32_t ref = !seen[k] ? xmc_nil
                     : i < fifos ? xmc_fifo_dequeue(xmc_sb_buffer(cls, sm + i)) : xmc_sb_stack_pop(stack(i));
      if (ref != xmc_nil) return ref;
    }
  }
  return xmc_nil;
}

// A published Superblock of `cls`: from this SM's buffer or this warp's
// stack, or when `everywhere`, from any buffer or stack of the class.
__device__ inline uint32_t xmc_sb_published(int cls, bool everywhere) {
  const xmc_fifo_ref fifo = xmc_sb_buffer(cls, xmc_sm_id());
  xmc_atomic_u64 stack = xmc_sb_stack_here(cls);
  // Both looked at in one round trip: on a fresh heap both are empty.
  const bool queued = xmc_fifo_maybe_nonempty(fifo.f);
  const bool stacked = (uint32_t)stack.load(cuda::memory_order_relaxed) != xmc_nil;
  uint32_t ref = queued ? xmc_fifo_dequeue(fifo) : xmc_nil;
  if (ref == xmc_nil && stacked) ref = xmc_sb_stack_pop(stack);
  if (ref == xmc_nil && everywhere) ref = xmc_sb_published_anywhere(cls);
  return ref;
}

// Up to k blocks from a published Superblock, else from a new one: a group
// that wants more than half a Superblock carves its own, the others share
// the cursor. `everywhere` (the heap looked exhausted): any SM's published
// Superblocks, then any cursor of the class, before carving. Without
// `published` (and not `everywhere`), published Superblocks are not looked at.
__device__ inline xmc_mb *xmc_sb_take(int cls, unsigned k, bool everywhere, bool published, uint32_t *taken) {
  for (uint32_t ref; (published || everywhere) && (ref = xmc_sb_published(cls, everywhere)) != xmc_nil;) {
    xmc_mb *mb = (xmc_mb *)xmc_deref(ref);
    if ((*taken = xmc_sb_claim(mb, cls, k)) != 0) return mb;
  }
  if (everywhere)
    if (xmc_mb *mb = xmc_sb_cursor_steal(cls, k, taken)) return mb;
  if (k > xmc_sb_blocks / 2) return xmc_sb_create_claimed(cls, k, taken);
  return xmc_sb_cursor_claim(cls, k, taken);
}

// Every lane of `group` gets a Basicblock start, or nullptr once the heap is
// exhausted. One lane claims for all still waiting, one CAS per Superblock,
// and marks the blocks live in one atomic when they are handed out `whole`.
__device__ inline char *xmc_sb_alloc_warp(unsigned group, int cls, bool everywhere, bool whole, bool published) {
  char *got = nullptr;
  for (;;) {
    unsigned want = xmc_warp_ballot(group, got == nullptr);
    if (!want) break;
    int leader = xmc_warp_leader(want);
    xmc_mb *mb = nullptr;
    uint32_t taken = 0;
    if ((int)xmc_lane_id() == leader) {
      mb = xmc_sb_take(cls, __popc(want), everywhere, published, &taken);
      if (mb && whole) xmc_sb_mark_live(mb, taken);
    }
    mb = (xmc_mb *)xmc_warp_broadcast(group, (char *)mb, leader);
    taken = xmc_warp_broadcast(group, taken, leader);
    if (!mb) break;
    if (!got) {
      unsigned r = xmc_warp_rank(want);
      if (r < (unsigned)__popc(taken)) got = xmc_sb_block(mb, cls, xmc_nth_set_bit(taken, r));
    }
  }
  if (whole) __syncwarp(group);  // marked live before any lane can free
  return got;
}

