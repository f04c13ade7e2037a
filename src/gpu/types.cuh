/* SPDX-License-Identifier: Apache-2.0 */
// gpu/types.cuh: every structure of the XMalloc device heap, its constants and
// the header words that sit in front of each block (layouts in
// docs/gpu-design.md). Device code only; the host sees these through
// heap.cuh.
#pragma once
#include <cstdint>
#include "atomic.cuh"   // every shared word is read and written through it

// ---- constants ---------------------------------------------------------------

constexpr unsigned xmc_unit = 64;           // heap granule: memoryblocks and chunks start on it
constexpr unsigned xmc_unit_shift = 6;
constexpr unsigned xmc_max_regions = 16;    // heap regions (xmcInit's, then one per xmcGrow)
constexpr unsigned xmc_region_unit_bits = 28;
constexpr uint64_t xmc_max_region_bytes = (uint64_t)1 << (xmc_region_unit_bits + xmc_unit_shift);
constexpr unsigned xmc_nil = 0xffffffffu;   // "none" for unit indices and FIFO payloads
constexpr unsigned xmc_granule_shift = 5;   // Superblock map: one word per 32 units (sb_map.cuh)
constexpr unsigned xmc_granule_units = 1u << xmc_granule_shift;

constexpr int xmc_classes = 56;             // 8 classes up to 256 B, then 8 per doubling to 16 KiB
constexpr unsigned xmc_class_max_body = 16384;
constexpr unsigned xmc_coalesce_max = 256;  // larger requests are not coalesced (freed at once)
constexpr unsigned xmc_coalesced_max_body = 32 * xmc_coalesce_max;  // the largest coalesced chunk

constexpr unsigned xmc_chunk_header = 32;   // header in front of every chunk's payload
constexpr unsigned xmc_sb_blocks = 32;      // Basicblocks per Superblock
constexpr unsigned xmc_sb_full = 0xffffffffu;

constexpr unsigned xmc_fifo_capacity = 64;      // first level: free chunks of one class
constexpr unsigned xmc_hot_slots = 8;           // exchange slots in front of each first-level FIFO
// The exchange slots of one first-level FIFO: one 32-byte sector, read at
// once when the warp's own slot is empty (buffer.cuh).
struct alignas(32) xmc_hot_row {
  uint32_t slot[xmc_hot_slots];
};
static_assert(sizeof(xmc_hot_row) == 32, "xmc_hot_occupied reads a row as two 16-byte loads");
constexpr unsigned xmc_sb_fifo_capacity = 256;  // second level: partly free Superblocks
constexpr unsigned xmc_sb_cursors_per_sm = 2;  // Superblock cursors per class and SM
constexpr unsigned xmc_sb_stacks_per_sm = 4;   // Superblock stacks per class and SM
constexpr unsigned xmc_stat_slots = 256;        // per-SM counter slots (>= %nsmid)

// ---- header words ------------------------------------------------------------
// The 8 bytes in front of a chunk's payload say what it is; compartments of
// a coalesced chunk have none (their chunk is found by address).

constexpr uint32_t xmc_magic_chunk = 0xB10C;   // payload of a class chunk or large block
constexpr uint32_t xmc_magic_comp = 0xC0A1;    // a chunk shared by compartments (its word at + 8)
constexpr uint32_t xmc_magic_aligned = 0xA11E; // xmcAlignedAlloc's shifted pointer

enum xmc_kind : uint32_t {
  xmc_kind_basic = 1,     // Basicblock inside a Superblock
  xmc_kind_memory = 2,    // a Memoryblock handed out whole (class chunk or large)
  xmc_kind_super = 3,     // a Memoryblock holding a Superblock (never handed out)
};
constexpr uint32_t xmc_class_large = 0xff;

// Chunk tag: magic:16 | kind:8 | class:8 | index in Superblock:8 | live:1 | region:4
struct xmc_tag {
  static __host__ __device__ uint64_t make(xmc_kind kind, uint32_t cls, uint32_t index, uint32_t region) {
    return xmc_magic_chunk | (uint64_t)kind << 16 | (uint64_t)cls << 24 | (uint64_t)index << 32 |
           (uint64_t)region << 44;
  }
  static constexpr uint64_t live = (uint64_t)1 << 40;
  static __device__ uint32_t magic(uint64_t t) { return (uint32_t)t & 0xffff; }
  static __device__ uint32_t kind(uint64_t t) { return (uint32_t)(t >> 16) & 0xff; }
  static __device__ uint32_t cls(uint64_t t) { return (uint32_t)(t >> 24) & 0xff; }
  static __device__ uint32_t index(uint64_t t) { return (uint32_t)(t >> 32) & 0xff; }
  static __device__ uint32_t region(uint64_t t) { return (uint32_t)(t >> 44) & 0xf; }
};

// Coalesced chunk word, at chunk + 8 (a Basicblock's header has room there,
// a class Memoryblock's free-list links are unused while it is handed out):
// live compartments:32 (low) | class:8 | compartment size in 16-byte units:8 |
// magic:16. Compartments carry no header; xmcFree finds their chunk through
// the region's unit map (unit_map.cuh).
struct xmc_coalesced {
  static __device__ uint64_t make(uint32_t live, uint32_t cls, uint32_t units) {
    return live | (uint64_t)cls << 32 | (uint64_t)units << 40 | (uint64_t)xmc_magic_comp << 48;
  }
  static __device__ uint32_t live(uint64_t w) { return (uint32_t)w; }
  static __device__ uint32_t cls(uint64_t w) { return (uint32_t)(w >> 32) & 0xff; }
  static __device__ uint32_t units(uint64_t w) { return (uint32_t)(w >> 40) & 0xff; }
  static __device__ uint32_t magic(uint64_t w) { return (uint32_t)(w >> 48); }
};
constexpr unsigned xmc_coalesced_word = 8;   // its offset in the chunk

// In front of an xmcAlignedAlloc pointer: magic:16 | offset back to the
// block xmcMalloc handed out:32 (high).
struct xmc_shift {
  static __device__ uint64_t make(uint32_t offset) { return xmc_magic_aligned | (uint64_t)offset << 32; }
  static __device__ uint32_t offset(uint64_t h) { return (uint32_t)(h >> 32); }
};

// ---- structures ----------------------------------------------------------------

// Memoryblock header: boundary tags of the region's block list, the free list
// links, and the chunk tag that precedes the payload (payload at +32).
struct xmc_mb {
  uint32_t prev_units;   // distance back to the previous block's start; 0: first in region
  uint32_t size_units;   // whole block, header included
  uint32_t free_next;    // unit index of the next free block (xmc_nil), while free
  uint32_t free_prev;
  uint32_t is_free;
  uint32_t pad;
  uint64_t tag;          // xmc_tag word; its live bit marks a handed-out payload
};
static_assert(sizeof(xmc_mb) == xmc_chunk_header, "memoryblock header is one chunk header");

// Superblock header, the payload of its Memoryblock (at mb + 32); the 32
// Basicblocks follow at mb + 64, each a chunk (32-byte header, then payload).
struct xmc_sb {
  uint64_t state;        // bits 0..31: Basicblocks available; bit 32: published (token held)
  uint32_t stack_next;   // next Superblock down a class stack (sb_stack.cuh), while on one
  uint32_t live;         // Basicblocks handed out whole (xmcFree clears their bits)
  uint64_t pad[2];       // the class is in the Memoryblock's tag
};
static_assert(sizeof(xmc_sb) == 32, "superblock header fills the rest of the first unit");
constexpr uint64_t xmc_sb_inbuf = (uint64_t)1 << 32;

// Superblock cursor: the Superblock whose Basicblocks are handed out in
// index order by fetch-and-add, ref:32 (high) | next index:32 (low). A ref of
// xmc_nil: none yet (the first claim installs one).
constexpr unsigned long long xmc_cursor_empty = (unsigned long long)xmc_nil << 32;
// The claim that crosses this index makes the cursor's next Superblock (its
// spare), so that the claim taking the last block installs it at once.
constexpr uint32_t xmc_cursor_spare_at = xmc_sb_blocks / 2;

// Sequence-numbered lock-free FIFO (J. Supercomputing 2011, Figs. 7-9): the
// next sequence number to dequeue and to enqueue, the free slots, and 2^s
// messages. A message is seq:32 (low) | payload:32 (high); payloads are
// xmc_ref encodings.
struct alignas(64) xmc_fifo {
  uint32_t head;         // next message to dequeue
  uint32_t tail;         // next sequence number an enqueue claims
  int32_t room;          // free slots, taken before the tail (< 0 only briefly)
  uint32_t mask;         // capacity - 1
  uint64_t *slots;
};

// One heap region: a cudaMalloc'd range. Below `top` it is a list of
// Memoryblocks; above it, untouched (zeroed) wilderness that is carved
// lock-free. The free list is guarded by the region's lock.
struct xmc_region {
  char *base;
  uint8_t *map;                    // one byte per unit (unit_map.cuh), after the units; then the
                                   // Superblock map, a word per 32 units (sb_map.cuh), ends the region
  uint32_t units;
  uint32_t free_head;              // unit index of the first free Memoryblock, xmc_nil if none
  unsigned long long top;          // units carved from the wilderness (may overshoot `units`)
  unsigned long long free_units;   // units in free Memoryblocks (under the lock)
  int lock;
  uint32_t pad;
};

// Bytes of a region's maps, after its `units` units: the unit map, a byte
// per unit, then the Superblock map, a word per granule.
__host__ __device__ constexpr size_t xmc_region_map_bytes(uint32_t units) {
  return units + (size_t)(units >> xmc_granule_shift) * sizeof(uint32_t);
}

// Units a region holds: carved (top may overshoot the end) and not on its
// free list. Device code passes atomic reads, xmcGetStats a copy.
__host__ __device__ inline unsigned long long xmc_region_held(unsigned long long top, uint32_t units,
                                                            unsigned long long free_units) {
  return (top < units ? top : units) - free_units;
}

// Per-SM counters; summed by xmcGetStats.
struct xmc_sm_stats {
  unsigned long long allocs[xmc_classes];
  unsigned long long frees[xmc_classes];
  unsigned long long frees_total;   // all class frees, read by the reclaimer
  unsigned long long large_allocs, large_frees, large_units, large_units_freed;
  unsigned long long failed, invalid;
};

// The whole device heap: one instance per device (a __device__ variable).
struct xmc_heap {
  xmc_region regions[xmc_max_regions];
  uint32_t num_regions;
  unsigned long long total_units;  // of all regions
  uint32_t ready;
  uint32_t coalescing, buffering, superblocks;
  uint32_t num_buffers;       // first-level FIFOs per class
  uint32_t buffers_per_sm_log2;  // a warp picks among 2^this of its SM's buffers
  uint32_t num_sb_buffers;    // second-level FIFOs per class
  uint32_t num_sb_cursors;    // Superblock cursors per class
  uint16_t sb_cursors_in_use[xmc_classes];  // of them, per class: see xmc_host_size_cursors
  xmc_fifo *buffers;          // [class * num_buffers + replica]
  uint64_t *buffer_slots;     // buffer i's xmc_fifo_capacity slots at [i * xmc_fifo_capacity]
  uint32_t *hot;              // [(class * num_buffers + replica) * xmc_hot_slots + slot]: chunk refs (xmc_hot_row)
  xmc_fifo *sb_buffers;       // [class * num_sb_buffers + replica]
  uint64_t *sb_buffer_slots;  // sb_buffers[i]'s xmc_sb_fifo_capacity slots at [i * xmc_sb_fifo_capacity]
  unsigned long long *sb_stacks;  // [(class * num_sb_buffers + replica) * xmc_sb_stacks_per_sm + i]: tag:32 | top ref:32
  unsigned long long *sb_cursor;  // [class * num_sb_cursors + replica]: see xmc_cursor
  uint32_t *sb_spare;         // [class * num_sb_cursors + replica]: the cursor's next Superblock, or xmc_nil
  xmc_sm_stats *stats;        // [xmc_stat_slots]
  unsigned long long peak_units;  // high-water mark of units held (carved and not free)
  unsigned long long reclaim_seen; // frees_total sum at the last reclaim
  int reclaim_lock;
};
