/* SPDX-License-Identifier: Apache-2.0 */
/* region.h: local regions (the paper's Sect. 4). One scheduler's regions,
 * each a slab pool with sub-regions, and the memory and region IDs it holds:
 * the Used/Free Ranges tries (which region holds which slab runs, which runs
 * are unused) and the Used/Free Region IDs tries. Offsets are bytes into the
 * global space; no MPI here. */
#ifndef MMD_REGION_H
#define MMD_REGION_H

#include <stdint.h>
#include "manymalloc/myrmics.h"
#include "ranges.h"
#include "slab.h"

typedef struct mmd_region {
  rid_t rid;
  int level_hint;
  struct mmd_region *parent;
  struct mmd_region *first_child;   /* sub-regions, a doubly linked sibling list */
  struct mmd_region *next_sibling;
  struct mmd_region *prev_sibling;
  struct mmd_region *trim_next;     /* every region, in the ring the trimmer visits */
  struct mmd_region *trim_prev;
  uint64_t near_key;                /* where its last fresh run ended: refills start there */
  mmd_pool_t pool;
  rid_t *ancestors;                 /* a parent on another scheduler: it and its ancestors */
  uint32_t nancestors;              /* (the root aside), nearest first; else 0 */
  uint32_t nkids, kids_cap;
  struct mmd_kid *kids;             /* sub-regions that other schedulers own */
} mmd_region_t;

/* A sub-region owned by the scheduler below: the child it went to. */
typedef struct mmd_kid {
  rid_t rid;
  int32_t child;
} mmd_kid_t;

/* Receives each leased slab run of a destroyed region: the worker holding
 * the lease may still hand out its slots until it hears of the destruction,
 * so the scheduler keeps the run out of the Free Ranges until then
 * (mmd_regions_release). */
typedef void mmd_zombie_fn(void *ctx, rid_t rid, uint64_t key, uint64_t n, int32_t worker);

typedef struct mmd_regions {
  mmd_meta_t meta;          /* the kernel pool: every region pool's metadata */
  unsigned key_bits;        /* width of slab keys in this space */
  uint64_t space_slabs;     /* slabs in the whole space */
  mmd_trie_t free_ranges;   /* Free Ranges: first slab key -> run length, held by no region */
  mmd_trie_t used_ranges;   /* Used Ranges: first slab key -> run length << 32 | rid */
  mmd_trie_t free_ids;      /* Free Region IDs: first ID -> count */
  mmd_trie_t used_ids;      /* Used Region IDs: rid -> mmd_region_t * */
  uint64_t free_slabs;      /* slabs in free_ranges */
  uint64_t refill_slabs;    /* slabs a region takes at once when it needs memory */
  uint64_t high_water;      /* free slabs a region keeps when it frees */
  uint64_t low_water;       /* free slabs a region keeps under memory pressure */
  uint64_t nregions;
  uint64_t free_id_count;   /* IDs in free_ids */
  uint64_t short_slabs;     /* the run the last failed refill needed */
  uint64_t next_rid;         /* IDs are handed out upward from here, wrapping: a freed
                             * ID comes back only after all others, so a stale one
                             * fails instead of reaching a new region */
  mmd_region_t *root;
  mmd_region_t *trim_cursor;/* where the next trimming pass starts */
  mmd_zombie_fn *zombie;    /* see above; NULL frees leased runs at once */
  void *zombie_ctx;
} mmd_regions_t;

/* Regions in a space of space_bytes with IDs up to max_rid. With own_all,
 * the scheduler holds the whole space and every ID, and region 0, the root,
 * is its own; otherwise it starts with nothing (memory and IDs come from
 * its parent: mmd_regions_release, mmd_regions_add_ids). 0 or a code. */
int mmd_regions_init(mmd_regions_t *R, uint64_t space_bytes, rid_t max_rid, bool own_all);
void mmd_regions_destroy(mmd_regions_t *R);

mmd_region_t *mmd_region_get(const mmd_regions_t *R, rid_t rid);
/* The region holding the slab at off, or NULL. */
mmd_region_t *mmd_region_of(const mmd_regions_t *R, uint64_t off);

/* A new region under parent: its ID, or SYS_ERR_NOREGION / NOIDS / NOMEM. */
rid_t mmd_region_create(mmd_regions_t *R, rid_t parent, int level_hint);
/* A new region whose parent lives on another scheduler: chain holds the
 * parent and its ancestors (the root aside), nearest first. */
rid_t mmd_region_create_remote(mmd_regions_t *R, const rid_t *chain, size_t n, int level_hint);
/* The sub-regions of g owned below this scheduler. 0 or SYS_ERR_NOMEM. */
int mmd_region_add_kid(mmd_region_t *g, rid_t rid, int32_t child);
bool mmd_region_drop_kid(mmd_region_t *g, rid_t rid);
/* Destroys the region and its sub-regions, giving their memory back:
 * 0, SYS_ERR_NOREGION, SYS_ERR_ROOT. */
int mmd_region_destroy(mmd_regions_t *R, rid_t rid);

/* An object of size bytes in region g: 0 and *off, or SYS_ERR_ARG / NOMEM. */
int mmd_region_alloc(mmd_regions_t *R, mmd_region_t *g, uint64_t size, uint64_t *off);
/* Frees the object at off (whatever its region): 0 or a negative code;
 * *notify as for mmd_pool_free(). */
int mmd_region_free(mmd_regions_t *R, uint64_t off, int32_t *notify);
/* Leases slabs of slot size slot in region g to worker: count or a code. */
int mmd_region_lease(mmd_regions_t *R, mmd_region_t *g, uint64_t slot, int32_t worker,
                     int want, mmd_cell_t *cells);
/* Ends the lease of the slab at cell in region g (see mmd_pool_unlease) and
 * trims the region's free slabs to its high watermark. */
int mmd_region_unlease(mmd_regions_t *R, mmd_region_t *g, mmd_cell_t cell, uint64_t bits);

/* Returns the run [key, key + n) to the Free Ranges (a zombie run whose
 * lease has been dropped). */
void mmd_regions_release(mmd_regions_t *R, uint64_t key, uint64_t n);

/* ---- trading with the parent scheduler ---- */
/* Takes a run of n slabs aligned to align slabs, trimming regions to their
 * low watermark if the Free Ranges have none. */
bool mmd_regions_take_aligned(mmd_regions_t *R, uint64_t n, uint64_t align, uint64_t *key);
/* Every region keeps only low_water free slabs; the rest join the Free Ranges. */
void mmd_regions_trim_all(mmd_regions_t *R);
/* IDs [first, first + n) join the Free Region IDs. 0 or SYS_ERR_NOMEM. */
int mmd_regions_add_ids(mmd_regions_t *R, uint64_t first, uint64_t n);
/* Takes up to max free IDs in one run: true with the run. */
bool mmd_regions_take_ids(mmd_regions_t *R, uint64_t max, uint64_t *first, uint64_t *n);

/* The region after g in a pre-order walk of top's subtree, or NULL. */
const mmd_region_t *mmd_region_walk_next(const mmd_region_t *g, const mmd_region_t *top);

/* Counts of g alone or of g and all its sub-regions. */
void mmd_region_counts(const mmd_region_t *g, int with_subregions, mmd_pool_counts_t *c,
                       uint64_t *subregions);

/* ---- pack.c ---- */
/* Appends the (offset, length) runs of every slab in use in g (and, with
 * with_subregions, in all its sub-regions), adjacent slabs coalesced. */
int mmd_pack_region(mmd_region_t *g, int with_subregions, mmd_ranges_t *out);
/* Appends the parts of [off, off + len) that regions hold, keeping only
 * those of regions for which keep(ctx, region) is true. */
typedef bool mmd_region_pred_fn(void *ctx, const mmd_region_t *g);
int mmd_pack_live_part(const mmd_regions_t *R, uint64_t off, uint64_t len, mmd_region_pred_fn *keep,
                       void *ctx, mmd_ranges_t *out);

#endif
