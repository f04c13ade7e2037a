/* SPDX-License-Identifier: Apache-2.0 */
/* lease.c: the worker's leased slabs (see lease.h). Slabs are found by
 * their key in a trie of the worker's own kernel pool, and grouped by
 * (region, slot size) in a hash table of classes. */
#include <stdlib.h>
#include "lease.h"
#include "slab.h"

#define MMD_LEASE_GRANT_MAX 64

void mmd_leases_init(mmd_leases_t *L, uintptr_t base, unsigned key_bits) {
  *L = (mmd_leases_t){.base = base, .trim_above = MMD_LEASE_CAP};
  mmd_meta_init(&L->meta);
  mmd_trie_init(&L->by_slab, &L->meta, key_bits);
}

/* ---------------------------------------------------------------------------
 * Lists
 * ------------------------------------------------------------------------- */

void mmd_lease_unavail(mmd_lslab_t *s) {
  mmd_lclass_t *c = s->cls;
  if (s->avail_prev) s->avail_prev->avail_next = s->avail_next;
  else c->avail = s->avail_next;
  if (s->avail_next) s->avail_next->avail_prev = s->avail_prev;
  s->avail_next = s->avail_prev = NULL;
  s->in_avail = false;
}

static void lease_avail(mmd_lslab_t *s) {
  mmd_lclass_t *c = s->cls;
  s->avail_prev = NULL;
  s->avail_next = c->avail;
  if (c->avail) c->avail->avail_prev = s;
  c->avail = s;
  s->in_avail = true;
}

void mmd_lease_mark_dirty(mmd_leases_t *L, mmd_lslab_t *s) {
  if (L->ndirty == L->dirty_cap) {
    size_t cap = L->dirty_cap ? 2 * L->dirty_cap : 64;
    mmd_lslab_t **d = realloc(L->dirty, cap * sizeof *d);
    if (d == NULL) return;  /* reported later, with the slab's return */
    L->dirty = d;
    L->dirty_cap = cap;
  }
  L->dirty[L->ndirty++] = s;
  s->dirty_at = (uint32_t)L->ndirty;
}

static void lease_unmark_dirty(mmd_leases_t *L, mmd_lslab_t *s) {
  if (!s->dirty_at) return;
  mmd_lslab_t *last = L->dirty[--L->ndirty];
  L->dirty[s->dirty_at - 1] = last;
  last->dirty_at = s->dirty_at;
  s->dirty_at = 0;
}

/* ---------------------------------------------------------------------------
 * Frees and queries
 * ------------------------------------------------------------------------- */

static int64_t lease_slot_index(const mmd_lslab_t *s, uint64_t off) {
  uint64_t rel = off - s->off, slot = s->cls->slot;
  if (rel % slot != 0 || !((s->cls->mask >> (rel / slot)) & 1)) return SYS_ERR_NOTOBJECT;
  return (int64_t)(rel / slot);
}

int mmd_lease_free(mmd_leases_t *L, mmd_lslab_t *s, uint64_t off) {
  int64_t i = lease_slot_index(s, off);
  if (i < 0) return (int)i;
  if (!((s->live >> i) & 1)) return SYS_ERR_FREED;
  s->live &= ~(1ull << i);
  if (!s->in_avail) lease_avail(s);
  if (!s->dirty_at) mmd_lease_mark_dirty(L, s);
  return 0;
}

int64_t mmd_lease_usable(const mmd_lslab_t *s, uint64_t off) {
  int64_t i = lease_slot_index(s, off);
  if (i < 0) return i;
  return ((s->live >> i) & 1) ? (int64_t)s->cls->slot : SYS_ERR_FREED;
}

int mmd_lease_remote(mmd_leases_t *L, uint64_t off, uint64_t bits) {
  mmd_lslab_t *s = mmd_lease_find(L, off);
  if (s == NULL) return 0;
  int twice = __builtin_popcountll(bits & ~s->live);
  s->live &= ~bits;
  if (!s->in_avail && (s->live & s->cls->mask) != s->cls->mask) lease_avail(s);
  return twice;
}

/* ---------------------------------------------------------------------------
 * Slabs in and out
 * ------------------------------------------------------------------------- */

static mmd_lclass_t *lease_class_get(mmd_leases_t *L, rid_t rid, uint64_t slot) {
  mmd_lclass_t *c = mmd_lease_class(L, rid, slot);
  if (c) return c;
  c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  uint64_t nslots = MMD_SLAB_SIZE / slot;
  *c = (mmd_lclass_t){.rid = rid, .slot = slot, .grant = 1,
                      .mask = nslots == 64 ? ~0ull : (1ull << nslots) - 1};
  size_t b = mmd_lease_bucket(rid, slot);
  c->hash_next = L->bucket[b];
  L->bucket[b] = c;
  return c;
}

int mmd_lease_add(mmd_leases_t *L, rid_t rid, uint64_t slot, const uint64_t *pairs, size_t n) {
  mmd_lclass_t *c = lease_class_get(L, rid, slot);
  if (c == NULL) return SYS_ERR_NOMEM;
  if (c->grant < MMD_LEASE_GRANT_MAX) c->grant *= 2;
  for (size_t i = 0; i < n; i++) {
    mmd_lslab_t *s = calloc(1, sizeof *s);
    if (s == NULL || mmd_trie_insert(&L->by_slab, pairs[2 * i] >> MMD_SLAB_SHIFT, (uintptr_t)s) != 0) {
      free(s);
      mmd_report_t r = {pairs[2 * i], pairs[2 * i + 1], 1};  /* give it straight back */
      mmd_buf_put(&L->returning, &r, sizeof r);
      continue;
    }
    *s = (mmd_lslab_t){.off = pairs[2 * i], .live = pairs[2 * i + 1], .cls = c, .all_next = c->all};
    if (c->all) c->all->all_prev = s;
    c->all = s;
    if ((s->live & c->mask) != c->mask) lease_avail(s);
    L->nslabs++;
  }
  return 0;
}

int mmd_lease_mark_elsewhere(mmd_leases_t *L, rid_t rid, uint64_t slot) {
  mmd_lclass_t *c = lease_class_get(L, rid, slot);
  if (c == NULL) return SYS_ERR_NOMEM;
  c->elsewhere = true;
  return 0;
}

static void lease_drop(mmd_leases_t *L, mmd_lslab_t *s) {
  mmd_lclass_t *c = s->cls;
  if (s->in_avail) mmd_lease_unavail(s);
  lease_unmark_dirty(L, s);
  if (s->all_prev) s->all_prev->all_next = s->all_next;
  else c->all = s->all_next;
  if (s->all_next) s->all_next->all_prev = s->all_prev;
  mmd_trie_remove(&L->by_slab, s->off >> MMD_SLAB_SHIFT);
  L->nslabs--;
  free(s);
}

static void lease_class_free(mmd_leases_t *L, mmd_lclass_t *c) {
  mmd_lclass_t **p = &L->bucket[mmd_lease_bucket(c->rid, c->slot)];
  while (*p != c) p = &(*p)->hash_next;
  *p = c->hash_next;
  free(c);
}

void mmd_lease_revoke(mmd_leases_t *L, rid_t rid, void (*drop)(void *ctx, uint64_t off), void *ctx) {
  for (size_t b = 0; b < MMD_LEASE_BUCKETS; b++) {
    mmd_lclass_t *c = L->bucket[b];
    while (c) {
      mmd_lclass_t *next = c->hash_next;
      if (c->rid == rid) {
        while (c->all) {
          drop(ctx, c->all->off);
          lease_drop(L, c->all);
        }
        lease_class_free(L, c);
      }
      c = next;
    }
  }
}

static void lease_return(mmd_leases_t *L, mmd_lslab_t *s) {
  mmd_report_t r = {s->off, s->live, 1};
  if (mmd_buf_put(&L->returning, &r, sizeof r) == 0) lease_drop(L, s);
}

/* Gives up every slab, or with only_empty those with no live slot. */
static void lease_return_slabs(mmd_leases_t *L, bool only_empty) {
  for (size_t b = 0; b < MMD_LEASE_BUCKETS; b++)
    for (mmd_lclass_t *c = L->bucket[b]; c; c = c->hash_next)
      for (mmd_lslab_t *s = c->all, *next; s; s = next) {
        next = s->all_next;
        if (!only_empty || (s->live & c->mask) == 0) lease_return(L, s);
      }
}

void mmd_lease_return_all(mmd_leases_t *L) { lease_return_slabs(L, false); }

void mmd_lease_trim(mmd_leases_t *L) {
  if (L->nslabs < L->trim_above) return;
  lease_return_slabs(L, true);
  L->trim_above = 2 * L->nslabs > MMD_LEASE_CAP ? 2 * L->nslabs : MMD_LEASE_CAP;
}

int mmd_lease_reports(mmd_leases_t *L, mmd_buf_t *req, uint32_t *nreports) {
  for (size_t i = 0; i < L->ndirty; i++) {
    mmd_report_t r = {L->dirty[i]->off, L->dirty[i]->live, 0};
    if (mmd_buf_put(req, &r, sizeof r) != 0) return SYS_ERR_NOMEM;
  }
  if (mmd_buf_put(req, L->returning.p, L->returning.len) != 0) return SYS_ERR_NOMEM;
  *nreports = (uint32_t)(L->ndirty + L->returning.len / sizeof(mmd_report_t));
  for (size_t i = 0; i < L->ndirty; i++) L->dirty[i]->dirty_at = 0;
  L->ndirty = 0;
  L->returning.len = 0;
  return 0;
}

void mmd_leases_destroy(mmd_leases_t *L) {
  for (size_t b = 0; b < MMD_LEASE_BUCKETS; b++)
    while (L->bucket[b]) {
      mmd_lclass_t *c = L->bucket[b];
      while (c->all) lease_drop(L, c->all);
      lease_class_free(L, c);
    }
  free(L->dirty);
  mmd_buf_free(&L->returning);
  mmd_trie_clear(&L->by_slab);
  mmd_meta_destroy(&L->meta);
}
