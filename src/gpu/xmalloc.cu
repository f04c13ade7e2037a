// gpu/xmalloc.cu: the device API. xmcMalloc sorts the calling lanes: small
// requests of two or more lanes are coalesced into one chunk, the others are
// grouped by size class so that one lane acts for each class, and requests
// above the largest class go to the Memoryblock heap one by one. xmcFree reads
// the header word in front of the pointer to learn what it frees.
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
    atomicAdd(&st->failed, 1ull);
    return nullptr;
  }
  uint32_t units = (uint32_t)((size + xmc_chunk_header + xmc_unit - 1) >> xmc_unit_shift);
  xmc_mb *mb = xmc_mb_alloc(units, xmc_kind_memory, xmc_class_large);
  if (!mb && xmc_reclaim(1u << xmc_lane_id())) mb = xmc_mb_alloc(units, xmc_kind_memory, xmc_class_large);
  if (!mb) {
    atomicAdd(&st->failed, 1ull);
    return nullptr;
  }
  atomicOr((unsigned long long *)&mb->tag, xmc_tag::live);
  atomicAdd(&st->large_allocs, 1ull);
  atomicAdd(&st->large_units, (unsigned long long)mb->size_units);
  return mb + 1;
}

// Lanes of `rest` that are not coalesced: one chunk each.
static __device__ void *xmc_malloc_chunks(unsigned rest, size_t size) {
  const bool large = size > xmc_class_max_body;
  const unsigned classed = xmc_warp_ballot(rest, !large);
  if (large) return xmc_malloc_large(size);
  const int cls = xmc_class_of((uint32_t)size);
  const unsigned group = xmc_warp_match(classed, (uint64_t)cls);
  char *chunk = xmc_buffer_get_warp(group, cls);
  if (chunk) atomicOr((unsigned long long *)xmc_chunk_tag(chunk), xmc_tag::live);  // handed out whole
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
  const bool small = h.coalescing && size <= xmc_coalesce_max;
  unsigned smalls = xmc_warp_ballot(active, small);
  if (__popc(smalls) < 2) smalls = 0;  // one lane alone gains nothing from coalescing
  if (smalls & (1u << xmc_lane_id())) return xmc_coalesce_malloc(smalls, size);
  return xmc_malloc_chunks(active & ~smalls, size);
}

// ---- free --------------------------------------------------------------------------

// Clears a chunk's live bit; true when it was live (false: a double free or
// not a chunk). *tag receives its tag, live bit cleared.
static __device__ bool xmc_chunk_unlive(char *chunk, uint64_t *tag) {
  const uint64_t t = atomicAnd((unsigned long long *)xmc_chunk_tag(chunk), ~xmc_tag::live);
  *tag = t & ~xmc_tag::live;
  return xmc_tag::magic(t) == xmc_magic_chunk && (t & xmc_tag::live);
}

static __device__ void xmc_free_chunk(char *chunk) {
  uint64_t t;
  if (!xmc_chunk_unlive(chunk, &t)) {
    atomicAdd(&xmc_stats_here()->invalid, 1ull);
    return;
  }
  if (xmc_tag::cls(t) != xmc_class_large) return xmc_buffer_put(chunk, xmc_tag::cls(t), xmc_tag::region(t));
  xmc_sm_stats *st = xmc_stats_here();
  atomicAdd(&st->large_frees, 1ull);
  atomicAdd(&st->large_units_freed, (unsigned long long)((xmc_mb *)chunk)->size_units);
  xmc_mb_free((xmc_mb *)chunk);
}

// Frees the compartment at `p` (header `hdr`) for the lanes of `group`, all
// in the same coalesced block.
static __device__ void xmc_free_compartment(unsigned group, char *p, uint64_t hdr) {
  char *block = p - 8 - xmc_comp::offset(hdr);
  *(uint64_t *)(p - 8) = (hdr & ~0xffffull) | xmc_magic_comp_freed;
  __syncwarp(group);  // every mark lands before the block can be handed out again
  const int cls = xmc_coalesce_release(group, block);
  if (cls >= 0) xmc_coalesce_recycle(block, cls);
}

// The block xmcMalloc handed out at `p` (header word `hdr`), for xmcAlignedAlloc's
// shifted pointers: the block it was carved from.
static __device__ char *xmc_unshift(char *p, uint64_t *hdr) {
  if (xmc_tag::magic(*hdr) != xmc_magic_aligned) return p;
  p -= xmc_comp::offset(*hdr);
  *hdr = *(uint64_t *)(p - 8);
  return p;
}

// Any block, by the calling lane alone.
static __device__ void xmc_free_one(char *p) {
  uint64_t hdr = *(uint64_t *)(p - 8);
  p = xmc_unshift(p, &hdr);
  switch (xmc_tag::magic(hdr)) {
  case xmc_magic_comp: return xmc_free_compartment(1u << xmc_lane_id(), p, hdr);
  case xmc_magic_chunk: return xmc_free_chunk(p - xmc_chunk_header);
  default: atomicAdd(&xmc_stats_here()->invalid, 1ull);
  }
}

// Lanes of `group` free Basicblocks of one Superblock: one atomic gives them
// all back to it (bypassing the buffers, which a single chunk would take).
static __device__ void xmc_free_basicblocks(unsigned group, char *p, uint64_t hdr) {
  char *chunk = p - xmc_chunk_header;
  uint64_t t;
  const bool ok = xmc_chunk_unlive(chunk, &t);
  const unsigned freed = xmc_warp_ballot(group, ok);
  const uint32_t bits = xmc_warp_or(group, ok ? 1u << xmc_tag::index(hdr) : 0);
  if ((int)xmc_lane_id() != xmc_warp_leader(group)) return;
  xmc_sm_stats *st = xmc_stats_here();
  xmc_stats_add(&st->invalid, __popc(group) - __popc(freed));
  if (!bits) return;
  xmc_stats_count_frees(st, xmc_tag::cls(hdr), __popc(freed));
  xmc_sb_return_bits(xmc_sb_holding(chunk, hdr), xmc_tag::cls(hdr), bits);
}

// The header word of a Basicblock handed out whole.
static __device__ bool xmc_is_basicblock(uint64_t hdr) {
  return xmc_tag::magic(hdr) == xmc_magic_chunk && xmc_tag::kind(hdr) == xmc_kind_basic;
}

// What lanes free together: a compartment's coalesced block, a Basicblock's
// Superblock; any other pointer alone. The header's magic is part of the key,
// so that pointers of different kinds never meet in one group.
static __device__ uint64_t xmc_free_key(char *p, uint64_t hdr) {
  char *key = p;
  if (xmc_tag::magic(hdr) == xmc_magic_comp) key = p - 8 - xmc_comp::offset(hdr);
  else if (xmc_is_basicblock(hdr)) key = (char *)xmc_sb_holding(p - xmc_chunk_header, hdr);
  return (uint64_t)key ^ (uint64_t)xmc_tag::magic(hdr) << 48;
}

// Lanes freeing compartments of one coalesced block decrement its count once;
// lanes freeing Basicblocks of one Superblock return them at once.
__device__ void xmcFree(void *ptr) {
  char *p = (char *)ptr;
  const unsigned active = __activemask();
  const uint64_t hdr = p ? *(uint64_t *)(p - 8) : 0;
  const unsigned group = xmc_warp_match(active, p ? xmc_free_key(p, hdr) : 0);
  if (!p) return;
  if (xmc_tag::magic(hdr) == xmc_magic_comp) xmc_free_compartment(group, p, hdr);
  else if (__popc(group) > 1 && xmc_is_basicblock(hdr)) xmc_free_basicblocks(group, p, hdr);
  else xmc_free_one(p);
}

// ---- calloc, realloc, aligned ------------------------------------------------------

static __device__ size_t xmc_usable_size(char *p) {
  uint64_t hdr = *(uint64_t *)(p - 8);
  char *block = xmc_unshift(p, &hdr);
  size_t shift = p - block;
  if (xmc_tag::magic(hdr) == xmc_magic_comp) return xmc_coalesce_usable(hdr) - shift;
  if (xmc_tag::cls(hdr) != xmc_class_large) return xmc_class_body(xmc_tag::cls(hdr)) - shift;
  xmc_mb *mb = (xmc_mb *)(block - xmc_chunk_header);
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
  size_t usable = xmc_usable_size((char *)ptr);
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
  *(uint64_t *)(p - 8) = xmc_magic_aligned | (uint64_t)(p - raw) << 32;
  return p;
}
