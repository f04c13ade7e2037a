/* SPDX-License-Identifier: Apache-2.0 */
/* sched_object.c: handlers for objects: allocating, freeing, their size,
 * and leasing slabs to a worker. A request for a region or an object that
 * another scheduler serves goes there (route.c); leases are only of this
 * scheduler's own regions, to its own workers. */
#include <stdlib.h>
#include "scheduler.h"

#define MMD_LEASE_MAX 64

void mmd_on_alloc(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (mmd_elsewhere(s, ev, mmd_route_rid(s, a[1], ev->from == MMD_FROM_PARENT), SYS_ERR_NOREGION)) return;
  uint64_t off = 0;
  int rc = mmd_region_alloc(&s->R, mmd_region_get(&s->R, a[1]), (uint64_t)a[0], &off);
  mmd_answer(s, ev, rc, (int64_t)off, NULL, 0);
}

/* A free into a slab a worker leases: that worker hears of it. */
static int sched_free(mmd_sched_t *s, uint64_t off) {
  int32_t notify;
  int rc = mmd_region_free(&s->R, off, &notify);
  if (notify != MMD_NO_WORKER) mmd_owe_remote(s, notify, off);
  return rc;
}

void mmd_on_free(mmd_sched_t *s, const mmd_event_t *ev) {
  uint64_t off = (uint64_t)ev->req.hdr->arg[0];
  if (mmd_elsewhere(s, ev, mmd_route_off(s, off, ev->from == MMD_FROM_PARENT), SYS_ERR_FREED)) return;
  mmd_answer_status(s, ev, sched_free(s, off));
}

void mmd_on_balloc(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (mmd_elsewhere(s, ev, mmd_route_rid(s, a[1], ev->from == MMD_FROM_PARENT), SYS_ERR_NOREGION)) return;
  mmd_region_t *g = mmd_region_get(&s->R, a[1]);
  if (a[2] < 0) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  uint64_t n = (uint64_t)a[2], *offs = malloc((n ? n : 1) * sizeof *offs);
  if (offs == NULL) return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  int rc = 0;
  uint64_t i = 0;
  for (; i < n && rc == 0; i++) rc = mmd_region_alloc(&s->R, g, (uint64_t)a[0], &offs[i]);
  if (rc != 0) {
    s->short_total = (n - i + 1) * mmd_slabs_for(mmd_slot_of((uint64_t)a[0]));  /* what a grant should bring */
    while (--i > 0) sched_free(s, offs[i - 1]);  /* all or nothing */
  }
  mmd_answer(s, ev, rc, 0, offs, rc == 0 ? n : 0);
  free(offs);
}

void mmd_on_usable(mmd_sched_t *s, const mmd_event_t *ev) {
  uint64_t off = (uint64_t)ev->req.hdr->arg[0];
  if (mmd_elsewhere(s, ev, mmd_route_off(s, off, ev->from == MMD_FROM_PARENT), SYS_ERR_FREED)) return;
  mmd_region_t *g = mmd_region_of(&s->R, off);
  mmd_answer(s, ev, mmd_pool_usable(&g->pool, off), g->rid, NULL, 0);
}

/* arg: rid, slot size, slabs wanted. Replies with (offset, live bits) per
 * slab; none, with val 1, when the region is another scheduler's: the
 * worker then allocates there through ALLOC. */
void mmd_on_lease(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (!mmd_from_worker(s, ev)) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  mmd_region_t *g = mmd_region_get(&s->R, a[0]);
  uint64_t slot = (uint64_t)a[1];
  if (g == NULL) return mmd_answer(s, ev, 0, 1, NULL, 0);
  if (slot == 0 || slot % MMD_SLOT_ALIGN || slot > MMD_SLAB_SIZE) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  int want = a[2] < 1 ? 1 : a[2] > MMD_LEASE_MAX ? MMD_LEASE_MAX : (int)a[2];
  mmd_cell_t cells[MMD_LEASE_MAX];
  int got = mmd_region_lease(&s->R, g, slot, ev->from, want, cells);
  uint64_t granted[2 * MMD_LEASE_MAX];
  for (int i = 0; i < got; i++) {
    const mmd_slab_t *slab = mmd_cell(&s->R.meta, cells[i]);
    granted[2 * i] = slab->key << MMD_SLAB_SHIFT;
    granted[2 * i + 1] = slab->live;
  }
  mmd_answer(s, ev, got, 0, granted, got > 0 ? 2 * (size_t)got : 0);
}
