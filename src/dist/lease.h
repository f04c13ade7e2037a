/* SPDX-License-Identifier: Apache-2.0 */
/* lease.h: the worker's local fast path. The scheduler leases a worker
 * whole slabs of a region; the worker hands out and takes back their slots
 * itself, and reports their bitmaps on its next request. */
#ifndef MMD_LEASE_H
#define MMD_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include "manymalloc/myrmics.h"
#include "msg.h"
#include "trie.h"

struct mmd_lclass;

/* A slab this worker leases. */
typedef struct mmd_lslab {
  uint64_t off;                  /* its offset in the global space */
  uint64_t live;                 /* bit i: slot i allocated */
  struct mmd_lclass *cls;
  struct mmd_lslab *avail_next;  /* in its class's list of slabs with free slots */
  struct mmd_lslab *avail_prev;
  struct mmd_lslab *all_next;    /* in its class's list of every slab */
  struct mmd_lslab *all_prev;
  uint32_t dirty_at;             /* 1 + its index in the dirty list, 0 if clean */
  bool in_avail;
} mmd_lslab_t;

/* The leased slabs of one region and slot size. */
typedef struct mmd_lclass {
  rid_t rid;
  uint64_t slot;
  uint64_t mask;                 /* bits of the slots a slab has */
  mmd_lslab_t *avail;
  mmd_lslab_t *all;
  int grant;                     /* slabs the next lease asks for */
  bool elsewhere;                /* another scheduler's region: allocations go there */
  struct mmd_lclass *hash_next;
} mmd_lclass_t;

#define MMD_LEASE_BUCKETS 1024
#define MMD_LEASE_CAP     512    /* slabs held before the empty ones go back */

typedef struct mmd_leases {
  mmd_meta_t meta;
  mmd_trie_t by_slab;            /* slab key -> mmd_lslab_t * */
  mmd_lclass_t *bucket[MMD_LEASE_BUCKETS];
  mmd_lslab_t **dirty;           /* slabs whose bitmap changed since the last report */
  size_t ndirty, dirty_cap;
  mmd_buf_t returning;           /* mmd_report_t of slabs given up, sent with the next request */
  size_t nslabs;
  size_t trim_above;             /* slabs held at which the empty ones go back */
  uintptr_t base;
} mmd_leases_t;

void mmd_leases_init(mmd_leases_t *L, uintptr_t base, unsigned key_bits);
void mmd_leases_destroy(mmd_leases_t *L);

static inline size_t mmd_lease_bucket(rid_t rid, uint64_t slot) {
  return (((uint64_t)rid * 0x9e3779b97f4a7c15ull ^ slot) >> 20) % MMD_LEASE_BUCKETS;
}

static inline mmd_lclass_t *mmd_lease_class(const mmd_leases_t *L, rid_t rid, uint64_t slot) {
  mmd_lclass_t *c = L->bucket[mmd_lease_bucket(rid, slot)];
  while (c && (c->rid != rid || c->slot != slot)) c = c->hash_next;
  return c;
}

void mmd_lease_mark_dirty(mmd_leases_t *L, mmd_lslab_t *s);
void mmd_lease_unavail(mmd_lslab_t *s);

/* A slot of a leased slab of (rid, slot), or NULL when none is free. */
static inline void *mmd_lease_alloc(mmd_leases_t *L, rid_t rid, uint64_t slot) {
  mmd_lclass_t *c = mmd_lease_class(L, rid, slot);
  mmd_lslab_t *s = c ? c->avail : NULL;
  if (s == NULL) return NULL;
  unsigned bit = (unsigned)__builtin_ctzll(~s->live & c->mask);
  s->live |= 1ull << bit;
  if ((s->live & c->mask) == c->mask) mmd_lease_unavail(s);
  if (!s->dirty_at) mmd_lease_mark_dirty(L, s);
  return (void *)(L->base + s->off + bit * slot);
}

/* The leased slab holding off, or NULL. */
static inline mmd_lslab_t *mmd_lease_find(const mmd_leases_t *L, uint64_t off) {
  return (mmd_lslab_t *)(uintptr_t)mmd_trie_find(&L->by_slab, off >> 12);
}

/* Frees off in its leased slab s: 0, SYS_ERR_NOTOBJECT or SYS_ERR_FREED. */
int mmd_lease_free(mmd_leases_t *L, mmd_lslab_t *s, uint64_t off);
/* The slot size at off in s if live, else a negative code. */
int64_t mmd_lease_usable(const mmd_lslab_t *s, uint64_t off);

/* Adds the slabs a LEASE reply granted ((offset, live) pairs). */
int mmd_lease_add(mmd_leases_t *L, rid_t rid, uint64_t slot, const uint64_t *pairs, size_t n);
/* Records that (rid, slot) is not leased here: its region is another
 * scheduler's. 0 or SYS_ERR_NOMEM. */
int mmd_lease_mark_elsewhere(mmd_leases_t *L, rid_t rid, uint64_t slot);
/* Drops every slab of a region the scheduler revoked; drop(ctx, off) is
 * called for each so that its pages go back. */
void mmd_lease_revoke(mmd_leases_t *L, rid_t rid, void (*drop)(void *ctx, uint64_t off), void *ctx);
/* Applies slots freed through the scheduler: the count freed twice. */
int mmd_lease_remote(mmd_leases_t *L, uint64_t off, uint64_t bits);
/* Gives every slab up (reported with the next request): the worker ends. */
void mmd_lease_return_all(mmd_leases_t *L);
/* At the cap: the empty slabs are given up (reported with the next request);
 * the cap then doubles past what is still held, full and partial slabs,
 * whose frees stay local. */
void mmd_lease_trim(mmd_leases_t *L);
/* Appends the due reports to a request; the slabs are clean afterwards. */
int mmd_lease_reports(mmd_leases_t *L, mmd_buf_t *req, uint32_t *nreports);

#endif
