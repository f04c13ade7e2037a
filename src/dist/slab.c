/* SPDX-License-Identifier: Apache-2.0 */
/* slab.c: slab pools. A slab is in one of four states, kept by
 * slab_leave()/slab_enter() so that lists and counts always agree:
 *   partial  some slots live: on the partial list of its slot size
 *   full     every slot live: in the Used Trie only
 *   leased   a worker hands out its slots: in the Used Trie only
 *   empty    no slot live: its descriptor is freed and its run joins the
 *            Free Trie
 * A large object's run of slabs is a slab with one slot. */
#include "slab.h"
#include "runs.h"
#include "manymalloc/myrmics.h"

enum { SLAB_EMPTY, SLAB_PARTIAL, SLAB_FULL, SLAB_LEASED };

#define MMD_SLOT_KEY_BITS 7   /* slot / 64 <= 64 */

void mmd_pool_init(mmd_pool_t *p, mmd_meta_t *meta, unsigned key_bits) {
  *p = (mmd_pool_t){.meta = meta};
  mmd_trie_init(&p->used, meta, key_bits);
  mmd_trie_init(&p->partial, meta, MMD_SLOT_KEY_BITS);
  mmd_trie_init(&p->free, meta, key_bits);
}

static inline mmd_slab_t *slab_at(const mmd_pool_t *p, mmd_cell_t cell) {
  return mmd_cell(p->meta, cell);
}

static inline uint64_t slab_mask(const mmd_slab_t *s) {
  return s->nslots == 64 ? ~0ull : (1ull << s->nslots) - 1;
}

static int slab_state(const mmd_slab_t *s) {
  if (s->lease != MMD_NO_WORKER) return SLAB_LEASED;
  if (s->nlive == 0) return SLAB_EMPTY;
  return s->nlive == s->nslots ? SLAB_FULL : SLAB_PARTIAL;
}

/* ---------------------------------------------------------------------------
 * The partial lists: one per slot size, its head in the Partial Trie
 * ------------------------------------------------------------------------- */

static int partial_push(mmd_pool_t *p, mmd_cell_t cell, mmd_slab_t *s) {
  uint64_t k = s->slot / MMD_SLOT_ALIGN;
  mmd_cell_t head = (mmd_cell_t)mmd_trie_find(&p->partial, k);
  if (mmd_trie_insert(&p->partial, k, cell) != 0) return SYS_ERR_NOMEM;
  s->prev = 0;
  s->next = head;
  if (head) slab_at(p, head)->prev = cell;
  return 0;
}

static void partial_unlink(mmd_pool_t *p, mmd_slab_t *s) {
  if (s->prev) slab_at(p, s->prev)->next = s->next;
  else if (s->next) mmd_trie_insert(&p->partial, s->slot / MMD_SLOT_ALIGN, s->next); /* replaces: no node */
  else mmd_trie_remove(&p->partial, s->slot / MMD_SLOT_ALIGN);
  if (s->next) slab_at(p, s->next)->prev = s->prev;
  s->next = s->prev = 0;
}

/* ---------------------------------------------------------------------------
 * State changes
 * ------------------------------------------------------------------------- */

static void slab_leave(mmd_pool_t *p, mmd_slab_t *s, int state) {
  switch (state) {
  case SLAB_PARTIAL: partial_unlink(p, s); p->n.slabs_partial -= s->nslabs; break;
  case SLAB_FULL: p->n.slabs_full -= s->nslabs; break;
  case SLAB_LEASED:
    p->n.slabs_leased -= s->nslabs;
    if (s->nlive) p->n.slabs_leased_live -= s->nslabs;
    break;
  default: break;
  }
}

static void slab_release(mmd_pool_t *p, mmd_cell_t cell, mmd_slab_t *s) {
  uint64_t key = s->key, n = s->nslabs;
  mmd_trie_remove(&p->used, key);
  p->shape++;
  mmd_meta_free(p->meta, cell);
  mmd_pool_add_free(p, key, n);
}

static void slab_enter(mmd_pool_t *p, mmd_cell_t cell, mmd_slab_t *s, int state) {
  switch (state) {
  case SLAB_EMPTY: slab_release(p, cell, s); break;
  case SLAB_PARTIAL:
    /* A node for a new list head can only fail with the kernel pool full;
     * the slab then stays usable through the Used Trie, counted full. */
    if (partial_push(p, cell, s) == 0) p->n.slabs_partial += s->nslabs;
    else p->n.slabs_full += s->nslabs;
    break;
  case SLAB_FULL: p->n.slabs_full += s->nslabs; break;
  case SLAB_LEASED:
    p->n.slabs_leased += s->nslabs;
    if (s->nlive) p->n.slabs_leased_live += s->nslabs;
    break;
  }
}

static void slab_settle(mmd_pool_t *p, mmd_cell_t cell, mmd_slab_t *s, int before) {
  int after = slab_state(s);
  if (after == before) return;
  slab_leave(p, s, before);
  slab_enter(p, cell, s, after);
}

static void slab_count_live(mmd_pool_t *p, const mmd_slab_t *s, int64_t objects) {
  p->n.live_objects += (uint64_t)objects;
  p->n.live_bytes += (uint64_t)(objects * (int64_t)s->slot);
}

static void slab_set_live(mmd_pool_t *p, mmd_slab_t *s, uint64_t live) {
  int nlive = __builtin_popcountll(live);
  if ((nlive == 0) != (s->nlive == 0)) {
    p->shape++;
    if (s->lease != MMD_NO_WORKER) p->n.slabs_leased_live += nlive ? s->nslabs : -(uint64_t)s->nslabs;
  }
  slab_count_live(p, s, nlive - (int)s->nlive);
  s->live = live;
  s->nlive = (uint16_t)nlive;
}

/* ---------------------------------------------------------------------------
 * Fresh slabs from the Free Trie: first fit, taken from the top of the run
 * so the run's key stays and the trie needs no node
 * ------------------------------------------------------------------------- */

static int slab_new(mmd_pool_t *p, uint64_t slot, mmd_cell_t *out) {
  uint64_t n = mmd_slabs_for(slot), first;
  mmd_cell_t cell = mmd_meta_alloc(p->meta);
  if (cell == 0) return SYS_ERR_NOMEM;
  if (!mmd_runs_take_top_fit(&p->free, n, &first)) {
    mmd_meta_free(p->meta, cell);
    return MMD_POOL_EMPTY;
  }
  if (mmd_trie_insert(&p->used, first, cell) != 0) {
    mmd_runs_add(&p->free, first, n);
    mmd_meta_free(p->meta, cell);
    return SYS_ERR_NOMEM;
  }
  p->n.slabs_free -= n;
  mmd_slab_t *s = slab_at(p, cell);
  *s = (mmd_slab_t){.key = first, .nslabs = (uint32_t)n, .slot = slot,
                    .lease = MMD_NO_WORKER,
                    .nslots = (uint16_t)(slot <= MMD_SLAB_SIZE ? MMD_SLAB_SIZE / slot : 1)};
  *out = cell;
  return 0;
}

/* ---------------------------------------------------------------------------
 * Allocation and free
 * ------------------------------------------------------------------------- */

static uint64_t slab_take_slot(mmd_pool_t *p, mmd_cell_t cell, mmd_slab_t *s, int before) {
  unsigned bit = (unsigned)__builtin_ctzll(~s->live & slab_mask(s));
  s->live |= 1ull << bit;
  if (s->nlive++ == 0) p->shape++;
  slab_count_live(p, s, 1);
  slab_settle(p, cell, s, before);
  return (s->key << MMD_SLAB_SHIFT) + (uint64_t)bit * s->slot;
}

int mmd_pool_alloc(mmd_pool_t *p, uint64_t slot, uint64_t *off) {
  mmd_cell_t cell = 0;
  if (slot <= MMD_SLAB_SIZE) cell = (mmd_cell_t)mmd_trie_find(&p->partial, slot / MMD_SLOT_ALIGN);
  if (cell) {
    *off = slab_take_slot(p, cell, slab_at(p, cell), SLAB_PARTIAL);
    return 0;
  }
  int rc = slab_new(p, slot, &cell);
  if (rc != 0) return rc;
  mmd_slab_t *s = slab_at(p, cell);
  *off = slab_take_slot(p, cell, s, SLAB_EMPTY); /* a fresh slab is in no list yet */
  return 0;
}

mmd_slab_t *mmd_pool_find(const mmd_pool_t *p, uint64_t off, mmd_cell_t *cell) {
  uint64_t key = off >> MMD_SLAB_SHIFT, first, value;
  *cell = 0;
  if (!mmd_trie_floor(&p->used, key, &first, &value)) return NULL;
  mmd_slab_t *s = slab_at(p, (mmd_cell_t)value);
  if (key >= s->key + s->nslabs) return NULL;
  *cell = (mmd_cell_t)value;
  return s;
}

/* The slot index of off in s, or a negative code. */
static int64_t slab_slot_index(const mmd_slab_t *s, uint64_t off) {
  uint64_t rel = off - (s->key << MMD_SLAB_SHIFT);
  if (rel % s->slot != 0 || rel / s->slot >= s->nslots) return SYS_ERR_NOTOBJECT;
  return (int64_t)(rel / s->slot);
}

int mmd_pool_free(mmd_pool_t *p, uint64_t off, int32_t *notify) {
  mmd_cell_t cell;
  *notify = MMD_NO_WORKER;
  mmd_slab_t *s = mmd_pool_find(p, off, &cell);
  if (s == NULL) return SYS_ERR_FREED;
  int64_t i = slab_slot_index(s, off);
  if (i < 0) return (int)i;
  uint64_t bit = 1ull << i;
  if (s->lease != MMD_NO_WORKER) {
    if (s->remote & bit) return SYS_ERR_FREED;
    if (s->remote == 0) *notify = s->lease;
    s->remote |= bit;
    slab_set_live(p, s, s->live & ~bit);   /* counted free now; the holder clears it later */
    return 0;
  }
  if (!(s->live & bit)) return SYS_ERR_FREED;
  int before = slab_state(s);
  s->live &= ~bit;
  s->nlive--;
  slab_count_live(p, s, -1);
  slab_settle(p, cell, s, before);
  return 0;
}

int64_t mmd_pool_usable(const mmd_pool_t *p, uint64_t off) {
  mmd_cell_t cell;
  const mmd_slab_t *s = mmd_pool_find(p, off, &cell);
  if (s == NULL) return SYS_ERR_FREED;
  int64_t i = slab_slot_index(s, off);
  if (i < 0) return i;
  /* A leased slab's bitmap is as its holder last reported: exact for the
   * holder itself, whose reports come with each of its requests. */
  bool live = ((s->live & ~s->remote) >> i) & 1;
  return live ? (int64_t)s->slot : SYS_ERR_FREED;
}

/* ---------------------------------------------------------------------------
 * The Free Trie: runs coalesced with their neighbours
 * ------------------------------------------------------------------------- */

int mmd_pool_add_free(mmd_pool_t *p, uint64_t key, uint64_t n) {
  if (mmd_runs_add(&p->free, key, n) != 0) return SYS_ERR_NOMEM;
  p->n.slabs_free += n;
  return 0;
}

bool mmd_pool_take_free(mmd_pool_t *p, uint64_t max, uint64_t *key, uint64_t *n) {
  if (!mmd_runs_take_highest(&p->free, max, key, n)) return false;
  p->n.slabs_free -= *n;
  return true;
}

/* ---------------------------------------------------------------------------
 * Leases
 * ------------------------------------------------------------------------- */

static void slab_lease_to(mmd_pool_t *p, mmd_cell_t cell, mmd_slab_t *s, int before, int32_t w) {
  s->lease = w;
  s->remote = 0;
  slab_settle(p, cell, s, before);
}

int mmd_pool_lease(mmd_pool_t *p, uint64_t slot, int32_t worker, int want, mmd_cell_t *cells) {
  int got = 0;
  while (got < want) {
    mmd_cell_t cell = (mmd_cell_t)mmd_trie_find(&p->partial, slot / MMD_SLOT_ALIGN);
    if (!cell) break;
    slab_lease_to(p, cell, slab_at(p, cell), SLAB_PARTIAL, worker);
    cells[got++] = cell;
  }
  while (got < want) {
    mmd_cell_t cell;
    int rc = slab_new(p, slot, &cell);
    if (rc != 0) return got || rc == MMD_POOL_EMPTY ? got : rc;
    mmd_slab_t *s = slab_at(p, cell);
    s->lease = worker;
    slab_enter(p, cell, s, SLAB_LEASED);
    cells[got++] = cell;
  }
  return got;
}

void mmd_pool_sync(mmd_pool_t *p, mmd_cell_t cell, uint64_t bits) {
  mmd_slab_t *s = slab_at(p, cell);
  slab_set_live(p, s, bits & slab_mask(s) & ~s->remote);
}

int mmd_pool_unlease(mmd_pool_t *p, mmd_cell_t cell, uint64_t bits) {
  mmd_slab_t *s = slab_at(p, cell);
  bits &= slab_mask(s);
  int twice = __builtin_popcountll(s->remote & ~bits);
  slab_set_live(p, s, bits & ~s->remote);
  s->remote = 0;
  s->lease = MMD_NO_WORKER;
  slab_settle(p, cell, s, SLAB_LEASED);
  return twice;
}

uint64_t mmd_pool_take_remote(mmd_pool_t *p, mmd_cell_t cell) {
  mmd_slab_t *s = slab_at(p, cell);
  uint64_t remote = s->remote;
  slab_set_live(p, s, s->live & ~remote);
  s->remote = 0;
  return remote;
}

/* ---------------------------------------------------------------------------
 * Destruction: one step a slab run, never a step an object
 * ------------------------------------------------------------------------- */

void mmd_pool_destroy(mmd_pool_t *p, mmd_pool_give_fn *give, void *ctx) {
  uint64_t key, value, run_key = 0, run_n = 0;
  int32_t run_lease = MMD_NO_WORKER;
  for (bool ok = mmd_trie_first(&p->used, &key, &value); ok; ok = mmd_trie_next(&p->used, &key, &value)) {
    mmd_slab_t *s = slab_at(p, (mmd_cell_t)value);
    if (run_n && (s->key != run_key + run_n || s->lease != run_lease)) {   /* adjacent slabs go as one run */
      give(ctx, run_key, run_n, run_lease);
      run_n = 0;
    }
    if (run_n == 0) run_key = s->key, run_lease = s->lease;
    run_n += s->nslabs;
    mmd_meta_free(p->meta, (mmd_cell_t)value);
  }
  if (run_n) give(ctx, run_key, run_n, run_lease);
  for (bool ok = mmd_trie_first(&p->free, &key, &value); ok; ok = mmd_trie_next(&p->free, &key, &value))
    give(ctx, key, value, MMD_NO_WORKER);
  mmd_trie_clear(&p->used);
  mmd_trie_clear(&p->partial);
  mmd_trie_clear(&p->free);
  mmd_ranges_free(&p->packed);
  p->n = (mmd_pool_counts_t){0};
  p->packed_shape = 0;
}
