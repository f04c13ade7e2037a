/* SPDX-License-Identifier: Apache-2.0 */
// gpu/xmalloc.cu: the device API. xmcMalloc sorts the calling lanes: small
// requests of one size (in 16-byte units) from two or more lanes are
// coalesced into one chunk, the others are grouped by size class so that one
// lane acts for each class, and requests above the largest class go to the
// Memoryblock heap one by one. xmcFree looks the pointer up in the unit map
// (compartments) and the Superblock map (Basicblocks), and reads the word in
// front of it only for other blocks.
//
// All stages are header-only and meet in this one translation unit, so the
// whole path from xmcMalloc down to the FIFO is inlined without device LTO;
// a caller's kernel pays one call into the library.
#include "manymalloc/xmalloc.cuh"
#include "coalesce.cuh"

// ---- allocation ----------------------------------------------------------------

static __device__ __noinline__ void *xmc_malloc_large(size_t size) {
  xmc_sm_stats *st = xmc_stats_here();
  if (size > xmc_max_region_bytes - xmc_chunk_header) {
    xmc_atomic_add(&st->failed, 1);
    return nullptr;
  }
  uint32_t units = (uint32_t)((size + xmc_chunk_header + xmc_unit - 1) >> xmc_unit_shift);
  xmc_mb *mb = xmc_mb_alloc(units, xmc_kind_memory, xmc_class_large);
  if (!mb && xmc_reclaim(1u << xmc_lane_id())) mb = xmc_mb_alloc(units, xmc_kind_memory, xmc_class_large);
  if (!mb) {
    xmc_atomic_add(&st->failed, 1);
    return nullptr;
  }
  xmc_atomic_or(&mb->tag, xmc_tag::live);
  xmc_atomic_add(&st->large_allocs, 1);
  xmc_atomic_add(&st->large_units, mb->size_units);
  return mb + 1;
}

// Lanes of `rest` that are not coalesced: one chunk each.
static __device__ void *xmc_malloc_chunks(unsigned rest, size_t size) {
  const bool large = size > xmc_class_max_body;
  const unsigned classed = xmc_warp_ballot(rest, !large);
  if (large) return xmc_malloc_large(size);
  const int cls = xmc_class_of((uint32_t)size);
  const unsigned group = xmc_warp_match(classed, (uint64_t)cls);
  char *chunk = xmc_buffer_get_warp(group, cls, true);
  const unsigned served = xmc_warp_ballot(group, chunk != nullptr);
  if ((int)xmc_lane_id() == xmc_warp_leader(group)) {
    xmc_sm_stats *st = xmc_stats_here();
    xmc_stats_add(&st->allocs[cls], __popc(served));
    xmc_stats_add(&st->failed, __popc(group) - __popc(served));
  }
  return chunk ? chunk + xmc_chunk_header : nullptr;
}

__device__ void *xmcMalloc(size_t size) {
  const xmc_heap &h = xmc_c_heap;
  if (!h.ready) return nullptr;
  if (size == 0) size = 1;
  const unsigned active = __activemask();
  // Lanes asking for the same number of 16-byte units share a chunk; a lane
  // alone gains nothing from coalescing.
  const bool small = h.coalescing && size <= xmc_coalesce_max;
  const uint32_t units = small ? xmc_coalesce_units(size) : 0;
  const unsigned peers = xmc_warp_match(active, units);
  const unsigned shared = xmc_warp_ballot(active, small && __popc(peers) > 1);
  if (shared & xmc_lanemask_eq()) return xmc_coalesce_malloc(peers, units);
  return xmc_malloc_chunks(active & ~shared, size);
}

// ---- free --------------------------------------------------------------------------

// What a pointer names: a compartment of a coalesced chunk, a Basicblock
// handed out whole, another chunk handed out whole (a class or large
// Memoryblock), nothing (NULL), or nothing of ours (counted as an invalid
// free).
enum xmc_what : uint32_t { xmc_none, xmc_compartment, xmc_basicblock, xmc_whole, xmc_invalid };

struct xmc_block {
  xmc_what what;
  int index;        // compartment: its index in its chunk; Basicblock: in its Superblock
  char *at;         // compartment: its chunk; otherwise the block (an aligned pointer's, shifted back)
  uint64_t word;    // compartment: the chunk's word; Basicblock: its class; whole: its tag
};

// A chunk's payload, by its tag: a Basicblock (its class and index), another
// chunk handed out whole, or nothing of ours. Whether it is live is the
// free's to find out.
static __device__ xmc_block xmc_chunk_block(char *p, uint64_t tag) {
  if (xmc_tag::magic(tag) != xmc_magic_chunk) return {xmc_invalid};
  if (xmc_tag::kind(tag) == xmc_kind_basic) return {xmc_basicblock, (int)xmc_tag::index(tag), p, (uint64_t)xmc_tag::cls(tag)};
  return {xmc_whole, -1, p, tag};
}

// Looks `p` up: the unit map (a compartment has no header), then the
// Superblock map (a Basicblock), both compact, then the word in front of
// it. An xmcAlignedAlloc pointer leads back to its block once. A chunk
// once shared by compartments stays in the unit map: its payload is its
// first compartment's too, and while that is not live it is the chunk's
// (handed out whole, or a compartment freed twice), told by the tag loaded
// beside the chunk's word.
static __device__ xmc_block xmc_block_of(char *p) {
  if (!p) return {xmc_none};
  const xmc_heap &h = xmc_c_heap;
  for (int pass = 0; pass < 2; ++pass) {
    const int region = xmc_region_holding(p);
    // Every block starts 16-byte aligned; the word in front of any other
    // pointer is not read (a misaligned load would fault).
    if (region < 0 || ((uintptr_t)p & 15) || p - h.regions[region].base < (ptrdiff_t)xmc_chunk_header) break;
    const uint32_t unit = xmc_unit_in(h.regions[region].base, p);
    // Both map entries read at once: a Basicblock's free then waits for one
    // round trip, not two.
    const uint32_t back = h.coalescing ? xmc_map_entry(region, unit) : 0;
    const uint32_t sb_entry = h.superblocks ? xmc_sb_map_load(region, unit) : 0;
    if (char *chunk = xmc_map_chunk(region, unit, back)) {
      const uint64_t w = *xmc_coalesced_word_of(chunk), tag = *xmc_chunk_tag(chunk);
      const int index = xmc_compartment_index(chunk, w, p);
      if (index > 0 || (index == 0 && (xmc_coalesced::live(w) & 1))) return {xmc_compartment, index, chunk, w};
      if (index == 0) return xmc_chunk_block(p, tag);
    }
    const xmc_sb_at sb = xmc_sb_map_decode(sb_entry, unit);
    int index = xmc_sb_block_index(region, sb, p);
    if (index >= 0) return {xmc_basicblock, index, p, (uint64_t)sb.cls};
    const uint64_t hdr = *(uint64_t *)(p - 8);
    if (xmc_tag::magic(hdr) == xmc_magic_chunk && xmc_tag::kind(hdr) != xmc_kind_basic) return {xmc_whole, -1, p, hdr};
    if (xmc_tag::magic(hdr) != xmc_magic_aligned) break;
    p -= xmc_shift::offset(hdr);
  }
  return {xmc_invalid};
}

// Clears a chunk's live bit; true when it was live (false: a double free or
// not a chunk). *tag receives its tag, live bit cleared.
static __device__ bool xmc_chunk_unlive(char *chunk, uint64_t *tag) {
  const uint64_t t = xmc_atomic_and(xmc_chunk_tag(chunk), ~xmc_tag::live);
  *tag = t & ~xmc_tag::live;
  return xmc_tag::magic(t) == xmc_magic_chunk && (t & xmc_tag::live);
}

// A class or large Memoryblock handed out whole.
static __device__ void xmc_free_chunk(char *chunk) {
  uint64_t t;
  if (!xmc_chunk_unlive(chunk, &t)) {
    xmc_atomic_add(&xmc_stats_here()->invalid, 1);
    return;
  }
  if (xmc_tag::cls(t) != xmc_class_large) return xmc_buffer_put(chunk, xmc_tag::cls(t), xmc_tag::region(t));
  xmc_sm_stats *st = xmc_stats_here();
  xmc_atomic_add(&st->large_frees, 1);
  xmc_atomic_add(&st->large_units_freed, ((xmc_mb *)chunk)->size_units);
  xmc_mb_free((xmc_mb *)chunk);
}

// Lanes of `group` free compartments of one chunk: one atomic for all.
static __device__ void xmc_free_compartments(unsigned group, const xmc_block &b) {
  const int cls = xmc_coalesce_release(group, b.at, b.word, xmc_warp_bits(group, b.index));
  if (cls >= 0) xmc_coalesce_recycle(b.at, cls);
}

// Clears the live mark of a Basicblock freed alone: in its tag (taken from
// the buffers), else in its Superblock's mask. False: it was not live.
static __device__ bool xmc_basicblock_unlive(char *chunk, xmc_mb *mb, uint32_t index) {
  uint64_t t;
  return xmc_chunk_unlive(chunk, &t) || xmc_sb_unmark_live(mb, 1u << index);
}

// Lanes of `group` free Basicblocks of one Superblock. A lane alone parks
// its block in the buffers. More clear the live marks in the Superblock's
// mask with one atomic (the lanes whose blocks came from the buffers clear
// their tags instead) and give the blocks straight back to it with one more.
static __device__ void xmc_free_basicblocks(unsigned group, const xmc_block &b) {
  const int cls = (int)b.word;
  char *chunk = b.at - xmc_chunk_header;
  xmc_mb *mb = xmc_sb_holding(chunk, cls, b.index);
  if (__popc(group) == 1) {
    if (xmc_basicblock_unlive(chunk, mb, b.index)) return xmc_buffer_put(chunk, cls, xmc_region_of(chunk));
    xmc_atomic_add(&xmc_stats_here()->invalid, 1);
    return;
  }
  const int leader = xmc_warp_leader(group);
  const uint32_t bits = xmc_warp_or(group, 1u << b.index);
  uint32_t freed = 0;
  if ((int)xmc_lane_id() == leader) freed = xmc_sb_unmark_live(mb, bits);
  freed = __shfl_sync(group, freed, leader);
  uint64_t t;
  const bool by_tag = !(freed >> b.index & 1) && xmc_chunk_unlive(chunk, &t);
  freed |= xmc_warp_or(group, by_tag ? 1u << b.index : 0);
  if ((int)xmc_lane_id() != leader) return;
  xmc_sm_stats *st = xmc_stats_here();
  xmc_stats_add(&st->invalid, __popc(group) - __popc(freed));
  if (!freed) return;
  xmc_stats_count_frees(st, cls, __popc(freed));
  xmc_sb_return_bits(mb, cls, freed);
}

// What lanes free together: the compartments of one chunk, the Basicblocks
// of one Superblock; any other pointer alone. The kind is part of the key,
// so that pointers of different kinds never meet in one group (a
// Superblock starts on a unit, a compartment's chunk too, but the kinds
// differ).
static __device__ uint64_t xmc_free_key(const xmc_block &b) {
  const char *key = b.at;
  if (b.what == xmc_basicblock) key = (char *)xmc_sb_holding(b.at - xmc_chunk_header, (int)b.word, b.index);
  return (uint64_t)key ^ (uint64_t)b.what << 56;
}

__device__ void xmcFree(void *ptr) {
  const unsigned active = __activemask();
  const xmc_block b = xmc_block_of((char *)ptr);
  const unsigned group = xmc_warp_match(active, xmc_free_key(b));
  switch (b.what) {
  case xmc_none: return;
  case xmc_compartment: return xmc_free_compartments(group, b);
  case xmc_basicblock: return xmc_free_basicblocks(group, b);
  case xmc_whole: return xmc_free_chunk(b.at - xmc_chunk_header);
  default: xmc_atomic_add(&xmc_stats_here()->invalid, 1);
  }
}

// ---- calloc, realloc, aligned ------------------------------------------------------

__device__ size_t xmcUsableSize(void *ptr) {
  char *p = (char *)ptr;
  const xmc_block b = xmc_block_of(p);
  if (b.what == xmc_compartment) {
    const size_t bytes = xmc_coalesced::units(b.word) * 16;
    return b.at + xmc_chunk_header + (b.index + 1) * bytes - p;
  }
  const size_t shift = p - b.at;
  if (b.what == xmc_basicblock) return xmc_class_body((int)b.word) - shift;
  if (b.what != xmc_whole) return 0;
  if (xmc_tag::cls(b.word) != xmc_class_large) return xmc_class_body(xmc_tag::cls(b.word)) - shift;
  const xmc_mb *mb = (const xmc_mb *)(b.at - xmc_chunk_header);
  return ((size_t)mb->size_units << xmc_unit_shift) - xmc_chunk_header - shift;
}

__device__ void *xmcCalloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return nullptr;
  const size_t bytes = count * size;
  void *p = xmcMalloc(bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

__device__ void *xmcRealloc(void *ptr, size_t size) {
  if (!ptr) return xmcMalloc(size);
  if (size == 0) {
    xmcFree(ptr);
    return nullptr;
  }
  const size_t usable = xmcUsableSize(ptr);
  if (size <= usable) return ptr;
  void *q = xmcMalloc(size);
  if (q) {
    memcpy(q, ptr, usable);
    xmcFree(ptr);
  }
  return q;
}

// Over-allocates and shifts; the 8 bytes in front of the result lead back to
// the block xmcFree must release.
__device__ void *xmcAlignedAlloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) || alignment > ((size_t)1 << 31)) return nullptr;
  if (alignment <= 16) return xmcMalloc(size);
  char *raw = (char *)xmcMalloc(size + alignment + 8);
  if (!raw) return nullptr;
  char *p = (char *)(((uintptr_t)raw + 8 + alignment - 1) & ~(uintptr_t)(alignment - 1));
  *(uint64_t *)(p - 8) = xmc_shift::make((uint32_t)(p - raw));
  return p;
}
