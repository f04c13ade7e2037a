/* SPDX-License-Identifier: Apache-2.0 */
/* resident.c: the memory a worker has written or received. A worker keeps
 * copies of regions it received after their owner frees them; they go back
 * to the OS here. The worker records the ranges it wrote or received and
 * the regions they came from. Whenever the recorded bytes have doubled since
 * the last check (and passed 16 MiB), it asks its scheduler which parts a
 * region it recorded (or a sub-region of one) still holds, and releases the
 * rest: also a copy of memory that a region it never used has taken over
 * since. Released memory is retained a while (retain.c), then goes back.
 * A long run of receive, free and reallocate thus keeps a worker's memory
 * within about twice what is live in the regions it uses, plus what it
 * released within the retention delay. */
#include <stdlib.h>
#include "worker.h"
#include "space.h"

#define MMD_RESIDENT_MIN_CHECK     (16ull << 20)  /* bytes recorded before the first check */
#define MMD_RESIDENT_MIN_NORMALIZE 1024           /* entries appended before the first normalize */

void mmd_resident_init(mmd_resident_t *r) {
  *r = (mmd_resident_t){.check_above = MMD_RESIDENT_MIN_CHECK,
                        .normalize_above = MMD_RESIDENT_MIN_NORMALIZE};
}

void mmd_resident_destroy(mmd_resident_t *r) {
  mmd_ranges_free(&r->ranges);
  mmd_buf_free(&r->rids);
}

static void resident_normalize(mmd_resident_t *r) {
  mmd_ranges_normalize(&r->ranges);
  r->bytes = mmd_ranges_bytes(&r->ranges);
  r->normalize_above = 2 * r->ranges.n + MMD_RESIDENT_MIN_NORMALIZE;
}

void mmd_resident_add(mmd_worker_t *w, uint64_t off, uint64_t len) {
  mmd_resident_t *r = &w->resident;
  mmd_retain_claim(w, off, len);
  if (mmd_ranges_add(&r->ranges, off, len) != 0) return;
  r->bytes += len;
  if (r->ranges.n > r->normalize_above) resident_normalize(r);
  if (r->bytes > r->check_above) {
    resident_normalize(r);
    r->check_due = r->bytes > r->check_above;   /* not now: the caller may still read a reply */
  }
}

static int rid_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void mmd_resident_touch(mmd_worker_t *w, rid_t rid) {
  mmd_buf_t *b = &w->resident.rids;
  if (b->len >= 8 && ((const int64_t *)b->p)[b->len / 8 - 1] == rid) return;
  mmd_buf_put(b, &rid, sizeof rid);
}

/* Sorts the recorded regions and drops repeats. */
static void resident_rids_unique(mmd_buf_t *b) {
  int64_t *r = (int64_t *)b->p;
  size_t n = b->len / 8, out = 0;
  if (n) qsort(r, n, 8, rid_cmp);
  for (size_t i = 0; i < n; i++)
    if (out == 0 || r[out - 1] != r[i]) r[out++] = r[i];
  b->len = out * 8;
}

/* The request's items: the ranges, then the regions. */
static int resident_request(mmd_resident_t *r, mmd_buf_t *items) {
  resident_rids_unique(&r->rids);
  if (mmd_buf_put(items, r->ranges.r, r->ranges.n * sizeof *r->ranges.r) != 0 ||
      mmd_buf_put(items, r->rids.p, r->rids.len) != 0)
    return SYS_ERR_NOMEM;
  return 0;
}

static void resident_retire(void *ctx, uint64_t off, uint64_t len) { mmd_retain(ctx, off, len); }

int mmd_resident_check(mmd_worker_t *w) {
  mmd_resident_t *r = &w->resident;
  r->check_due = false;
  resident_normalize(r);
  mmd_buf_t items = {0};
  int64_t rc = resident_request(r, &items);
  if (rc == 0) rc = mmd_call(w, MMD_MSG_LIVE, (int64_t)r->ranges.n * 2, -1, 0, items.p, items.len / 8);
  mmd_buf_free(&items);
  if (rc != 0) return (int)rc;
  const mmd_range_t *live = (const mmd_range_t *)w->reply.items;
  size_t nlive = (size_t)w->reply.hdr->val / 2;
  mmd_ranges_gaps(&r->ranges, live, nlive, resident_retire, w);
  r->ranges.n = 0;
  for (size_t i = 0; i < nlive; i++) mmd_ranges_add(&r->ranges, live[i].off, live[i].len);
  resident_normalize(r);
  r->rids.len = 0;   /* the regions that still exist */
  mmd_buf_put(&r->rids, w->reply.items + nlive * 2, (w->reply.hdr->nitems - nlive * 2) * 8);
  r->check_above = 2 * r->bytes > MMD_RESIDENT_MIN_CHECK ? 2 * r->bytes : MMD_RESIDENT_MIN_CHECK;
  return 0;
}

void mmd_resident_defer(mmd_worker_t *w, mmd_ranges_t *l, uint64_t off, uint64_t len) {
  if (mmd_ranges_add(l, off, len) != 0) mmd_space_discard(w->base, off, len);   /* no room: now */
}

void mmd_resident_release_runs(mmd_worker_t *w, mmd_ranges_t *l, bool now) {
  mmd_ranges_normalize(l);   /* one madvise a run */
  for (size_t i = 0; i < l->n; i++) {
    if (now) mmd_space_discard(w->base, l->r[i].off, l->r[i].len);
    else mmd_retain(w, l->r[i].off, l->r[i].len);
  }
}

void mmd_resident_release(mmd_worker_t *w, const uint64_t *pairs, size_t npairs, bool now) {
  mmd_ranges_t l = {0};
  for (size_t i = 0; i < npairs; i++) mmd_resident_defer(w, &l, pairs[2 * i], pairs[2 * i + 1]);
  mmd_resident_release_runs(w, &l, now);
  mmd_ranges_free(&l);
}
