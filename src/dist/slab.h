/* SPDX-License-Identifier: Apache-2.0 */
/* slab.h: slab pools (the paper's Sect. 3). A pool hands out slots of any
 * multiple of 64 bytes from 4 KiB slabs; an object larger than a slab takes
 * a run of whole slabs. The pool works on byte offsets into the global
 * space and never touches that memory: all its metadata (descriptors, trie
 * nodes) lives in the kernel pool it names. */
#ifndef MMD_SLAB_H
#define MMD_SLAB_H

#include <stdbool.h>
#include <stdint.h>
#include "meta.h"
#include "ranges.h"
#include "trie.h"

#define MMD_SLAB_SHIFT 12
#define MMD_SLAB_SIZE  (1ull << MMD_SLAB_SHIFT)       /* 4 KiB */
#define MMD_PAGE_SIZE  (1ull << 20)                   /* 1 MiB: the unit traded between schedulers */
#define MMD_SLOT_ALIGN 64
#define MMD_SLOTS_MAX  (MMD_SLAB_SIZE / MMD_SLOT_ALIGN) /* 64: one bitmap word */
#define MMD_NO_WORKER  (-1)

/* mmd_pool_alloc() and mmd_pool_lease() need more free slabs first. */
#define MMD_POOL_EMPTY 1

/* One slab, or the run of slabs of a large object: one kernel-pool cell. */
typedef struct mmd_slab {
  uint64_t live;        /* bit i: slot i is allocated (as last known, while leased) */
  uint64_t remote;      /* slots freed through the scheduler while a worker leases the slab */
  uint64_t key;         /* its first slab: offset >> MMD_SLAB_SHIFT */
  uint64_t slot;        /* slot size in bytes */
  uint32_t nslabs;      /* 1 for a slotted slab; a large object's run length */
  mmd_cell_t next;      /* the partial list of its slot size */
  mmd_cell_t prev;
  int32_t lease;        /* the worker that hands out its slots, or MMD_NO_WORKER */
  uint16_t nslots;
  uint16_t nlive;
} mmd_slab_t;

/* What a pool's slabs hold, for statistics and the fragmentation figures. */
typedef struct mmd_pool_counts {
  uint64_t live_objects, live_bytes;
  uint64_t slabs_full, slabs_partial, slabs_free, slabs_leased;
  uint64_t slabs_leased_live;  /* leased slabs holding a slot, as last reported */
} mmd_pool_counts_t;

typedef struct mmd_pool {
  mmd_meta_t *meta;     /* the pool its metadata comes from (the kernel pool) */
  mmd_trie_t used;      /* Used Trie: first slab key -> slab cell, every slab in use */
  mmd_trie_t partial;   /* Partial Trie: slot / 64 -> first slab of its partial list */
  mmd_trie_t free;      /* Free Trie: first slab key -> run length, empty slabs kept */
  mmd_pool_counts_t n;
  uint64_t shape;         /* bumped whenever the slabs a pack sends change (pack.c) */
  uint64_t packed_shape;  /* shape + 1 when packed is the pack of this shape, else 0 */
  mmd_ranges_t packed;    /* the slab runs with a live slot, sorted and merged */
} mmd_pool_t;

/* key_bits: width of slab keys in this space. */
void mmd_pool_init(mmd_pool_t *p, mmd_meta_t *meta, unsigned key_bits);

/* The slot a request of size bytes takes (0 for size 0), and how many slabs
 * a fresh slab of that slot needs. */
static inline uint64_t mmd_slot_of(uint64_t size) {
  return (size + MMD_SLOT_ALIGN - 1) & ~(uint64_t)(MMD_SLOT_ALIGN - 1);
}
static inline uint64_t mmd_slabs_for(uint64_t slot) {
  return (slot + MMD_SLAB_SIZE - 1) >> MMD_SLAB_SHIFT;
}

/* Allocates a slot of slot bytes (a multiple of 64): 0 and *off set,
 * MMD_POOL_EMPTY (add mmd_slabs_for(slot) free slabs, then retry), or
 * SYS_ERR_NOMEM (no metadata cell). */
int mmd_pool_alloc(mmd_pool_t *p, uint64_t slot, uint64_t *off);

/* Frees the object at off: 0, SYS_ERR_NOTOBJECT, SYS_ERR_FREED. A slab
 * leased to a worker records the free in its remote bits (and counts it
 * at once); *notify is then that worker if these are the slab's first
 * remote bits since it last heard (else MMD_NO_WORKER). */
int mmd_pool_free(mmd_pool_t *p, uint64_t off, int32_t *notify);

/* The slab holding off, or NULL (and *cell 0) when no slab in use does. */
mmd_slab_t *mmd_pool_find(const mmd_pool_t *p, uint64_t off, mmd_cell_t *cell);

/* The live object's slot size at off: > 0, or a negative code. */
int64_t mmd_pool_usable(const mmd_pool_t *p, uint64_t off);

/* Gives the pool the empty run [key, key + n), coalesced with its neighbours. */
int mmd_pool_add_free(mmd_pool_t *p, uint64_t key, uint64_t n);
/* Takes back at most max slabs of the highest free run: true and the run. */
bool mmd_pool_take_free(mmd_pool_t *p, uint64_t max, uint64_t *key, uint64_t *n);

/* Leases up to want slabs of slot size slot (<= MMD_SLAB_SIZE) to worker,
 * partial ones first: returns the number leased with their cells in
 * cells[] (0: none could be, add free slabs), or SYS_ERR_NOMEM. */
int mmd_pool_lease(mmd_pool_t *p, uint64_t slot, int32_t worker, int want, mmd_cell_t *cells);

/* The worker holding the lease of the slab at cell reports its allocation
 * bitmap: sync keeps the lease, unlease ends it (the slab becomes full,
 * partial or free) and returns how many slots freed through the scheduler
 * the worker's bitmap did not hold (freed twice). */
void mmd_pool_sync(mmd_pool_t *p, mmd_cell_t cell, uint64_t bits);
int mmd_pool_unlease(mmd_pool_t *p, mmd_cell_t cell, uint64_t bits);
/* The slots freed through the scheduler since the holder last heard,
 * now free in the scheduler's view too; the holder clears them. */
uint64_t mmd_pool_take_remote(mmd_pool_t *p, mmd_cell_t cell);

/* Empties the pool: calls give(ctx, key, n, lease) for every run of slabs it
 * holds, in use, leased or free (lease: the worker holding it or
 * MMD_NO_WORKER), adjacent slabs with one holder as one run; frees every
 * descriptor and node. Cost: a step a slab and a give a run, whatever the
 * number of objects. */
typedef void mmd_pool_give_fn(void *ctx, uint64_t key, uint64_t n, int32_t lease);
void mmd_pool_destroy(mmd_pool_t *p, mmd_pool_give_fn *give, void *ctx);

#endif
