/* SPDX-License-Identifier: Apache-2.0 */
/* region.c: local regions. Each region is a slab pool; the scheduler's
 * memory not held by any region is in the Free Ranges, what regions hold is
 * in the Used Ranges (each run tagged with its region's ID), and region IDs
 * are in the Used/Free Region IDs tries. A region takes memory in runs of
 * refill_slabs near its last run, keeps at most high_water free slabs, and
 * gives up all but low_water of them when the Free Ranges run dry. */
#include <stdlib.h>
#include "region.h"
#include "runs.h"

/* The Used Ranges hold first slab key -> run length << 32 | rid. */
static inline bool used_run_of(const mmd_regions_t *R, uint64_t key, uint64_t *first, uint64_t *n,
                               rid_t *rid) {
  uint32_t tag;
  bool in = mmd_truns_of(&R->used_ranges, key, first, n, &tag);
  *rid = tag;
  return in;
}

/* ---------------------------------------------------------------------------
 * Memory between the Free Ranges and a region's pool
 * ------------------------------------------------------------------------- */

static void region_give_back(mmd_regions_t *R, uint64_t key, uint64_t n) {
  mmd_truns_cut(&R->used_ranges, key, n);
  mmd_regions_release(R, key, n);
}

void mmd_regions_release(mmd_regions_t *R, uint64_t key, uint64_t n) {
  mmd_runs_add(&R->free_ranges, key, n);
  R->free_slabs += n;
}

/* Gives back the region's free slabs above keep. */
static void region_trim_to(mmd_regions_t *R, mmd_region_t *g, uint64_t keep) {
  uint64_t key, n;
  while (g->pool.n.slabs_free > keep &&
         mmd_pool_take_free(&g->pool, g->pool.n.slabs_free - keep, &key, &n))
    region_give_back(R, key, n);
}

static bool region_take(mmd_regions_t *R, mmd_region_t *g, uint64_t n, uint64_t *key) {
  if (!mmd_runs_take_near(&R->free_ranges, n, g->near_key, key)) return false;
  R->free_slabs -= n;
  if (mmd_truns_add(&R->used_ranges, *key, n, (uint32_t)g->rid) != 0) {
    mmd_regions_release(R, *key, n);
    return false;
  }
  if (mmd_pool_add_free(&g->pool, *key, n) != 0) {
    region_give_back(R, *key, n); /* cuts the Used Ranges entry just added */
    return false;
  }
  g->near_key = *key + n;
  return true;
}

/* Memory pressure: every region, from where the last pass stopped, keeps
 * only low_water free slabs, until take(ctx) succeeds (enough free slabs
 * are not enough: a large object needs them in one run). */
static bool regions_trim_until(mmd_regions_t *R, bool (*take)(mmd_regions_t *, void *), void *ctx) {
  mmd_region_t *t = R->trim_cursor;
  for (uint64_t i = 0; i < R->nregions; i++) {
    uint64_t before = R->free_slabs;
    region_trim_to(R, t, R->low_water);
    t = t->trim_next;
    if (R->free_slabs != before && take(R, ctx)) {
      R->trim_cursor = t;
      return true;
    }
  }
  R->trim_cursor = t;
  return false;
}

typedef struct region_want {
  mmd_region_t *g;
  uint64_t n, align, key;
} region_want_t;

static bool region_take_want(mmd_regions_t *R, void *ctx) {
  region_want_t *w = ctx;
  return R->free_slabs >= w->n && region_take(R, w->g, w->n, &w->key);
}

static bool regions_take_want(mmd_regions_t *R, void *ctx) {
  region_want_t *w = ctx;
  if (R->free_slabs < w->n || !mmd_runs_take_aligned(&R->free_ranges, w->n, w->align, &w->key)) return false;
  R->free_slabs -= w->n;
  return true;
}

void mmd_regions_trim_all(mmd_regions_t *R) {
  mmd_region_t *g = R->trim_cursor;
  for (uint64_t i = 0; g && i < R->nregions; i++, g = g->trim_next) region_trim_to(R, g, R->low_water);
}

bool mmd_regions_take_aligned(mmd_regions_t *R, uint64_t n, uint64_t align, uint64_t *key) {
  region_want_t w = {.n = n, .align = align};
  bool ok = regions_take_want(R, &w) || regions_trim_until(R, regions_take_want, &w);
  *key = w.key;
  return ok;
}

/* Gives g at least need free slabs: 0 or SYS_ERR_NOMEM. */
static int region_refill(mmd_regions_t *R, mmd_region_t *g, uint64_t need) {
  uint64_t key, batch = need > R->refill_slabs ? need : R->refill_slabs;
  if (region_take(R, g, batch, &key)) return 0;
  if (batch > need && region_take(R, g, need, &key)) return 0;
  if (regions_trim_until(R, region_take_want, &(region_want_t){.g = g, .n = need})) return 0;
  R->short_slabs = need;
  return SYS_ERR_NOMEM;
}

/* ---------------------------------------------------------------------------
 * The region table
 * ------------------------------------------------------------------------- */

static mmd_region_t *region_new(mmd_regions_t *R, rid_t rid, mmd_region_t *parent, int hint) {
  mmd_region_t *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  if (mmd_trie_insert(&R->used_ids, (uint64_t)rid, (uint64_t)(uintptr_t)g) != 0) {
    free(g);
    return NULL;
  }
  g->rid = rid;
  g->level_hint = hint;
  g->parent = parent;
  g->near_key = parent ? parent->near_key : 0;
  mmd_pool_init(&g->pool, &R->meta, R->key_bits);
  if (parent) {
    g->next_sibling = parent->first_child;
    if (parent->first_child) parent->first_child->prev_sibling = g;
    parent->first_child = g;
  }
  mmd_region_t *ring = R->trim_cursor;
  g->trim_next = ring ? ring : g;
  g->trim_prev = ring ? ring->trim_prev : g;
  g->trim_prev->trim_next = g;
  g->trim_next->trim_prev = g;
  if (!ring) R->trim_cursor = g;
  R->nregions++;
  return g;
}

int mmd_regions_init(mmd_regions_t *R, uint64_t space_bytes, rid_t max_rid, bool own_all) {
  *R = (mmd_regions_t){.refill_slabs = 16, .high_water = 32, .low_water = 0};
  /* The Used Ranges pack a run's length and its region's ID in 32 bits each. */
  if (max_rid < 0 || (uint64_t)max_rid >> 32 != 0 || (space_bytes >> MMD_SLAB_SHIFT) >> 32 != 0)
    return SYS_ERR_ARG;
  R->space_slabs = space_bytes >> MMD_SLAB_SHIFT;
  R->key_bits = mmd_trie_bits_for(R->space_slabs);
  mmd_meta_init(&R->meta);
  mmd_trie_init(&R->free_ranges, &R->meta, R->key_bits);
  mmd_trie_init(&R->used_ranges, &R->meta, R->key_bits);
  mmd_trie_init(&R->free_ids, &R->meta, mmd_trie_bits_for((uint64_t)max_rid));
  mmd_trie_init(&R->used_ids, &R->meta, mmd_trie_bits_for((uint64_t)max_rid));
  if (R->space_slabs == 0) return SYS_ERR_ARG;
  R->root = region_new(R, 0, NULL, 0);
  if (R->root == NULL) return SYS_ERR_NOMEM;
  if (!own_all) {   /* an anchor for regions whose parents live elsewhere; not a region here */
    mmd_trie_remove(&R->used_ids, 0);
    return 0;
  }
  if (mmd_runs_add(&R->free_ranges, 0, R->space_slabs) != 0 ||
      (max_rid > 0 && mmd_regions_add_ids(R, 1, (uint64_t)max_rid) != 0))
    return SYS_ERR_NOMEM;
  R->free_slabs = R->space_slabs;
  return 0;
}

int mmd_regions_add_ids(mmd_regions_t *R, uint64_t first, uint64_t n) {
  if (mmd_runs_add(&R->free_ids, first, n) != 0) return SYS_ERR_NOMEM;
  R->free_id_count += n;
  return 0;
}

bool mmd_regions_take_ids(mmd_regions_t *R, uint64_t max, uint64_t *first, uint64_t *n) {
  if (!mmd_runs_take_highest(&R->free_ids, max, first, n)) return false;
  R->free_id_count -= *n;
  return true;
}

mmd_region_t *mmd_region_get(const mmd_regions_t *R, rid_t rid) {
  if (rid < 0 || (uint64_t)rid >> (3u * R->used_ids.levels) != 0) return NULL;
  return (mmd_region_t *)(uintptr_t)mmd_trie_find(&R->used_ids, (uint64_t)rid);
}

mmd_region_t *mmd_region_of(const mmd_regions_t *R, uint64_t off) {
  uint64_t first, n;
  rid_t rid;
  if (!used_run_of(R, off >> MMD_SLAB_SHIFT, &first, &n, &rid)) return NULL;
  return mmd_region_get(R, rid);
}

static rid_t region_create_under(mmd_regions_t *R, mmd_region_t *p, int level_hint, mmd_region_t **out) {
  uint64_t rid;
  if (!mmd_runs_take_near(&R->free_ids, 1, R->next_rid, &rid)) return SYS_ERR_NOIDS;
  R->free_id_count--;
  R->next_rid = rid + 1;
  mmd_region_t *g = region_new(R, (rid_t)rid, p, level_hint);
  if (g == NULL) {
    mmd_regions_add_ids(R, rid, 1);
    return SYS_ERR_NOMEM;
  }
  *out = g;
  return g->rid;
}

rid_t mmd_region_create(mmd_regions_t *R, rid_t parent, int level_hint) {
  mmd_region_t *p = mmd_region_get(R, parent), *g;
  return p ? region_create_under(R, p, level_hint, &g) : SYS_ERR_NOREGION;
}

rid_t mmd_region_create_remote(mmd_regions_t *R, const rid_t *chain, size_t n, int level_hint) {
  rid_t *copy = n ? malloc(n * sizeof *copy) : NULL;
  if (n && copy == NULL) return SYS_ERR_NOMEM;
  mmd_region_t *g;
  rid_t rid = region_create_under(R, R->root, level_hint, &g);
  if (rid < 0) {
    free(copy);
    return rid;
  }
  for (size_t i = 0; i < n; i++) copy[i] = chain[i];
  g->ancestors = copy;
  g->nancestors = (uint32_t)n;
  return rid;
}

int mmd_region_add_kid(mmd_region_t *g, rid_t rid, int32_t child) {
  if (g->nkids == g->kids_cap) {
    uint32_t cap = g->kids_cap ? 2 * g->kids_cap : 4;
    mmd_kid_t *k = realloc(g->kids, cap * sizeof *k);
    if (k == NULL) return SYS_ERR_NOMEM;
    g->kids = k;
    g->kids_cap = cap;
  }
  g->kids[g->nkids++] = (mmd_kid_t){rid, child};
  return 0;
}

bool mmd_region_drop_kid(mmd_region_t *g, rid_t rid) {
  for (uint32_t i = 0; i < g->nkids; i++)
    if (g->kids[i].rid == rid) {
      g->kids[i] = g->kids[--g->nkids];
      return true;
    }
  return false;
}

/* ---------------------------------------------------------------------------
 * Destruction: a step a slab run and a step a region, none an object
 * ------------------------------------------------------------------------- */

typedef struct region_giving {
  mmd_regions_t *R;
  rid_t rid;
} region_giving_t;

static void region_give_run(void *ctx, uint64_t key, uint64_t n, int32_t lease) {
  region_giving_t *gv = ctx;
  if (lease != MMD_NO_WORKER && gv->R->zombie) {
    mmd_truns_cut(&gv->R->used_ranges, key, n);
    gv->R->zombie(gv->R->zombie_ctx, gv->rid, key, n, lease);
    return;
  }
  region_give_back(gv->R, key, n);
}

static void region_unlink(mmd_regions_t *R, mmd_region_t *g) {
  if (g->prev_sibling) g->prev_sibling->next_sibling = g->next_sibling;
  else if (g->parent) g->parent->first_child = g->next_sibling;
  if (g->next_sibling) g->next_sibling->prev_sibling = g->prev_sibling;
  if (R->trim_cursor == g) R->trim_cursor = g->trim_next;
  g->trim_prev->trim_next = g->trim_next;
  g->trim_next->trim_prev = g->trim_prev;
  R->nregions--;
}

/* Frees one region with no sub-regions left. */
static void region_dispose(mmd_regions_t *R, mmd_region_t *g) {
  region_giving_t gv = {R, g->rid};
  mmd_pool_destroy(&g->pool, region_give_run, &gv);
  mmd_trie_remove(&R->used_ids, (uint64_t)g->rid);
  mmd_regions_add_ids(R, (uint64_t)g->rid, 1);
  region_unlink(R, g);
  free(g->ancestors);
  free(g->kids);
  free(g);
}

/* Post-order without recursion: sub-regions may nest arbitrarily deep. */
static void region_dispose_tree(mmd_regions_t *R, mmd_region_t *top) {
  mmd_region_t *g = top;
  for (;;) {
    while (g->first_child) g = g->first_child;
    mmd_region_t *parent = g->parent;
    bool last = g == top;
    region_dispose(R, g);
    if (last) return;
    g = parent;
  }
}

int mmd_region_destroy(mmd_regions_t *R, rid_t rid) {
  if (rid == 0) return SYS_ERR_ROOT;
  mmd_region_t *g = mmd_region_get(R, rid);
  if (g == NULL) return SYS_ERR_NOREGION;
  region_dispose_tree(R, g);
  return 0;
}

void mmd_regions_destroy(mmd_regions_t *R) {
  if (R->root == NULL) {   /* init failed part way */
    mmd_meta_destroy(&R->meta);
    return;
  }
  while (R->root->first_child) region_dispose_tree(R, R->root->first_child);
  region_giving_t gv = {R, 0};
  mmd_pool_destroy(&R->root->pool, region_give_run, &gv);
  free(R->root->kids);
  free(R->root);
  mmd_meta_destroy(&R->meta);
  *R = (mmd_regions_t){0};
}

/* ---------------------------------------------------------------------------
 * Objects and leases
 * ------------------------------------------------------------------------- */

int mmd_region_alloc(mmd_regions_t *R, mmd_region_t *g, uint64_t size, uint64_t *off) {
  if (size == 0) return SYS_ERR_ARG;
  if (size > R->space_slabs << MMD_SLAB_SHIFT) return SYS_ERR_NOMEM;
  uint64_t slot = mmd_slot_of(size);
  for (;;) {
    int rc = mmd_pool_alloc(&g->pool, slot, off);
    if (rc != MMD_POOL_EMPTY) return rc;
    rc = region_refill(R, g, mmd_slabs_for(slot));
    if (rc != 0) return rc;
  }
}

int mmd_region_free(mmd_regions_t *R, uint64_t off, int32_t *notify) {
  mmd_region_t *g = mmd_region_of(R, off);
  *notify = MMD_NO_WORKER;
  if (g == NULL) return SYS_ERR_FREED;
  int rc = mmd_pool_free(&g->pool, off, notify);
  if (rc == 0) region_trim_to(R, g, R->high_water);
  return rc;
}

int mmd_region_lease(mmd_regions_t *R, mmd_region_t *g, uint64_t slot, int32_t worker, int want,
                     mmd_cell_t *cells) {
  for (;;) {
    int got = mmd_pool_lease(&g->pool, slot, worker, want, cells);
    if (got != 0) return got;
    int rc = region_refill(R, g, (uint64_t)want * mmd_slabs_for(slot));
    if (rc != 0 && want > 1) rc = region_refill(R, g, mmd_slabs_for(slot));
    if (rc != 0) return rc;
  }
}

int mmd_region_unlease(mmd_regions_t *R, mmd_region_t *g, mmd_cell_t cell, uint64_t bits) {
  int twice = mmd_pool_unlease(&g->pool, cell, bits);
  region_trim_to(R, g, R->high_water);
  return twice;
}

/* ---------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------- */

const mmd_region_t *mmd_region_walk_next(const mmd_region_t *g, const mmd_region_t *top) {
  if (g->first_child) return g->first_child;
  while (g != top && !g->next_sibling) g = g->parent;
  return g == top ? NULL : g->next_sibling;
}

void mmd_region_counts(const mmd_region_t *g, int with_subregions, mmd_pool_counts_t *c,
                       uint64_t *subregions) {
  *c = (mmd_pool_counts_t){0};
  *subregions = 0;
  for (const mmd_region_t *r = g; r; r = mmd_region_walk_next(r, g)) {
    if (r != g) ++*subregions;
    if (r != g && !with_subregions) continue;
    c->live_objects += r->pool.n.live_objects;
    c->live_bytes += r->pool.n.live_bytes;
    c->slabs_full += r->pool.n.slabs_full;
    c->slabs_partial += r->pool.n.slabs_partial;
    c->slabs_free += r->pool.n.slabs_free;
    c->slabs_leased += r->pool.n.slabs_leased;
    c->slabs_leased_live += r->pool.n.slabs_leased_live;
  }
}
