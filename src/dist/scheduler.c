/* scheduler.c: the scheduler's event server. One handler a request type, in
 * the table at the end of this file; every handler answers through
 * sched_reply(), which also delivers what the worker is owed (leases to
 * drop, remote frees in its leased slabs). A handler may defer its reply
 * (the barrier) and answer later from another event. */
#include <stdio.h>
#include <stdlib.h>
#include "scheduler.h"
#include "transport.h"
#include "errors.h"

#define MMD_MAX_RID     ((rid_t)INT32_MAX)
#define MMD_LEASE_MAX   64

typedef void mmd_handler_fn(mmd_sched_t *s, const mmd_event_t *ev);

/* ---------------------------------------------------------------------------
 * Replies and what they carry
 * ------------------------------------------------------------------------- */

/* The leased slab of worker at off, or NULL (unleased or freed since). */
static mmd_slab_t *owed_slab(mmd_sched_t *s, int worker, uint64_t off, mmd_region_t **g, mmd_cell_t *cell) {
  *g = mmd_region_of(&s->R, off);
  mmd_slab_t *slab = *g ? mmd_pool_find(&(*g)->pool, off, cell) : NULL;
  return slab && slab->lease == worker ? slab : NULL;
}

/* The remote frees worker is owed, read but not yet taken. */
static void owed_remote(mmd_sched_t *s, const mmd_owed_t *o, int worker, mmd_buf_t *remote) {
  const uint64_t *offs = (const uint64_t *)o->remote.p;
  for (size_t i = 0; i < o->remote.len / 8; i++) {
    mmd_region_t *g;
    mmd_cell_t cell;
    mmd_slab_t *slab = owed_slab(s, worker, offs[i], &g, &cell);
    mmd_remote_t r = {slab ? slab->key << MMD_SLAB_SHIFT : 0, slab ? slab->remote : 0};
    if (r.bits) mmd_buf_put(remote, &r, sizeof r);
  }
}

/* The reply carrying what worker was owed is on its way: the remote frees
 * are the worker's to clear now, and the runs of the leases it will drop
 * are free. */
static void owed_settle(mmd_sched_t *s, mmd_owed_t *o, int worker, const mmd_buf_t *remote) {
  const mmd_remote_t *r = (const mmd_remote_t *)remote->p;
  for (size_t i = 0; i < remote->len / sizeof *r; i++) {
    mmd_region_t *g;
    mmd_cell_t cell;
    if (owed_slab(s, worker, r[i].off, &g, &cell)) mmd_pool_take_remote(&g->pool, cell);
  }
  for (size_t i = 0; i < o->zombies.n; i++)
    mmd_regions_release(&s->R, o->zombies.r[i].off, o->zombies.r[i].len);
  o->zombies.n = 0;
  o->revokes.len = 0;
  o->remote.len = 0;
}

static void sched_reply(mmd_sched_t *s, int worker, int64_t status, int64_t val,
                        const void *items, size_t nitems) {
  mmd_owed_t *o = &s->owed[worker];
  mmd_buf_t remote = {0};
  owed_remote(s, o, worker, &remote);
  mmd_rep_hdr_t h = {.status = status, .val = val, .nrevokes = (uint32_t)(o->revokes.len / 8),
                     .nremote = (uint32_t)(remote.len / sizeof(mmd_remote_t)),
                     .nitems = (uint32_t)nitems};
  s->rep.len = 0;
  if (mmd_buf_put(&s->rep, &h, sizeof h) != 0 || mmd_buf_put(&s->rep, o->revokes.p, o->revokes.len) != 0 ||
      mmd_buf_put(&s->rep, remote.p, remote.len) != 0 || mmd_buf_put(&s->rep, items, nitems * 8) != 0) {
    h = (mmd_rep_hdr_t){.status = SYS_ERR_NOMEM};  /* what the worker is owed waits for the next reply */
    s->rep.len = 0;
    mmd_buf_put(&s->rep, &h, sizeof h);
  } else {
    owed_settle(s, o, worker, &remote);
  }
  mmd_buf_free(&remote);
  mmd_tp_reply(s->first_worker + worker, &s->rep);
}

static void sched_reply_status(mmd_sched_t *s, const mmd_event_t *ev, int64_t status) {
  sched_reply(s, ev->worker, status, 0, NULL, 0);
}

static void sched_reply_ranges(mmd_sched_t *s, const mmd_event_t *ev, int64_t status,
                               const mmd_ranges_t *l) {
  sched_reply(s, ev->worker, status, 0, l->r, l->n * 2);
}

/* A leased slab of a destroyed region: free once its holder has heard. */
static void sched_zombie(void *ctx, rid_t rid, uint64_t key, uint64_t n, int32_t worker) {
  mmd_sched_t *s = ctx;
  mmd_owed_t *o = &s->owed[worker];
  const int64_t *last = o->revokes.len ? (const int64_t *)(o->revokes.p + o->revokes.len - 8) : NULL;
  if (!last || *last != rid) mmd_buf_put(&o->revokes, &rid, sizeof rid);
  mmd_ranges_add(&o->zombies, key, n);
}

/* ---------------------------------------------------------------------------
 * Lease reports, applied before every request
 * ------------------------------------------------------------------------- */

static void sched_apply_report(mmd_sched_t *s, int worker, const mmd_report_t *r) {
  mmd_region_t *g = mmd_region_of(&s->R, r->off);
  mmd_cell_t cell;
  mmd_slab_t *slab = g ? mmd_pool_find(&g->pool, r->off, &cell) : NULL;
  if (slab == NULL || slab->lease != worker) return;  /* revoked meanwhile */
  if (!r->unlease) {
    mmd_pool_sync(&g->pool, cell, r->live);
    return;
  }
  int twice = mmd_region_unlease(&s->R, g, cell, r->live);
  if (twice > 0)
    mmd_fail(SYS_ERR_FREED, "sys_free", "%d object(s) of the slab at offset 0x%llx, seen when worker %d returned it",
             twice, (unsigned long long)r->off, worker);
}

/* ---------------------------------------------------------------------------
 * Handlers: regions
 * ------------------------------------------------------------------------- */

static void on_ralloc(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  sched_reply_status(s, ev, mmd_region_create(&s->R, a[0], (int)a[1]));
}

static void on_rfree(mmd_sched_t *s, const mmd_event_t *ev) {
  mmd_region_t *g = mmd_region_get(&s->R, ev->req.hdr->arg[0]);
  mmd_ranges_t freed = {0};
  if (g && g->rid != 0) mmd_pack_region(g, 1, &freed);   /* what the caller may give back */
  int rc = mmd_region_destroy(&s->R, ev->req.hdr->arg[0]);
  sched_reply_ranges(s, ev, rc, rc == 0 ? &freed : &(mmd_ranges_t){0});
  mmd_ranges_free(&freed);
}

static void on_stats(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  mmd_region_t *g = mmd_region_get(&s->R, a[0]);
  if (g == NULL) return sched_reply_status(s, ev, SYS_ERR_NOREGION);
  mmd_pool_counts_t c;
  uint64_t sub;
  mmd_region_counts(g, (int)a[1], &c, &sub);
  mmd_ranges_t packed = {0};
  mmd_pack_region(g, (int)a[1], &packed);
  mmd_ranges_normalize(&packed);
  sys_region_stats_t st = {
      .live_objects = (int64_t)c.live_objects, .live_bytes = (int64_t)c.live_bytes,
      .slabs_full = (int64_t)c.slabs_full, .slabs_partial = (int64_t)(c.slabs_partial + c.slabs_leased_live),
      .slabs_free = (int64_t)c.slabs_free, .transfer_bytes = (int64_t)mmd_ranges_bytes(&packed),
      .transfer_ranges = (int64_t)packed.n, .subregions = (int64_t)sub};
  mmd_ranges_free(&packed);
  sched_reply(s, ev->worker, 0, 0, &st, sizeof st / 8);
}

/* ---------------------------------------------------------------------------
 * Handlers: objects
 * ------------------------------------------------------------------------- */

static void on_alloc(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  mmd_region_t *g = mmd_region_get(&s->R, a[1]);
  uint64_t off = 0;
  int rc = g ? mmd_region_alloc(&s->R, g, (uint64_t)a[0], &off) : SYS_ERR_NOREGION;
  sched_reply(s, ev->worker, rc, (int64_t)off, NULL, 0);
}

/* A free into a slab another worker leases: that worker hears of it. */
static int sched_free(mmd_sched_t *s, uint64_t off) {
  int32_t notify;
  int rc = mmd_region_free(&s->R, off, &notify);
  if (notify != MMD_NO_WORKER) mmd_buf_put(&s->owed[notify].remote, &off, sizeof off);
  return rc;
}

static void on_free(mmd_sched_t *s, const mmd_event_t *ev) {
  sched_reply_status(s, ev, sched_free(s, (uint64_t)ev->req.hdr->arg[0]));
}

static void on_balloc(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  mmd_region_t *g = mmd_region_get(&s->R, a[1]);
  if (g == NULL) return sched_reply_status(s, ev, SYS_ERR_NOREGION);
  uint64_t n = (uint64_t)a[2], *offs = malloc(n * sizeof *offs);
  if (offs == NULL) return sched_reply_status(s, ev, SYS_ERR_NOMEM);
  int rc = 0;
  uint64_t i = 0;
  for (; i < n && rc == 0; i++) rc = mmd_region_alloc(&s->R, g, (uint64_t)a[0], &offs[i]);
  if (rc != 0)
    while (--i > 0) sched_free(s, offs[i - 1]);  /* all or nothing */
  sched_reply(s, ev->worker, rc, 0, offs, rc == 0 ? n : 0);
  free(offs);
}

static void on_usable(mmd_sched_t *s, const mmd_event_t *ev) {
  uint64_t off = (uint64_t)ev->req.hdr->arg[0];
  mmd_region_t *g = mmd_region_of(&s->R, off);
  sched_reply(s, ev->worker, g ? mmd_pool_usable(&g->pool, off) : SYS_ERR_FREED, g ? g->rid : 0, NULL, 0);
}

/* ---------------------------------------------------------------------------
 * Handlers: transfers and leases
 * ------------------------------------------------------------------------- */

/* Appends one item's runs to l, and an object's region to owners. */
static int pack_item(mmd_sched_t *s, bool is_region, uint64_t item, mmd_ranges_t *l, mmd_buf_t *owners) {
  if (is_region) {
    mmd_region_t *g = mmd_region_get(&s->R, (rid_t)item);
    return g ? mmd_pack_region(g, 1, l) : SYS_ERR_NOREGION;
  }
  mmd_region_t *g = mmd_region_of(&s->R, item);
  int64_t size = g ? mmd_pool_usable(&g->pool, item) : SYS_ERR_FREED;
  if (size < 0) return (int)size;
  return mmd_ranges_add(l, item, (uint64_t)size) | mmd_buf_put(owners, &g->rid, 8);
}

/* items: the rids, then the object offsets. Replies with the runs to move
 * (val: how many items they take), then each object's region; or with the
 * index of the first item that fails in val. */
static void on_pack(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (a[0] < 0 || a[1] < 0 || (uint64_t)(a[0] + a[1]) != ev->req.hdr->nitems)
    return sched_reply_status(s, ev, SYS_ERR_ARG);
  mmd_ranges_t l = {0};
  mmd_buf_t out = {0}, owners = {0};
  int64_t rc = 0, i = 0;
  for (; rc == 0 && i < a[0] + a[1]; i++) rc = pack_item(s, i < a[0], ev->req.items[i], &l, &owners);
  mmd_ranges_normalize(&l);
  if (rc == 0) rc = mmd_ranges_split(&l, MMD_TP_MAX_BLOCK);
  if (rc == 0) rc = mmd_buf_put(&out, l.r, l.n * sizeof *l.r) | mmd_buf_put(&out, owners.p, owners.len);
  if (rc != 0) out.len = 0;
  sched_reply(s, ev->worker, rc, rc == 0 ? (int64_t)l.n * 2 : i - 1, out.p, out.len / 8);
  mmd_ranges_free(&l);
  mmd_buf_free(&out);
  mmd_buf_free(&owners);
}

static void on_lease(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  mmd_region_t *g = mmd_region_get(&s->R, a[0]);
  uint64_t slot = (uint64_t)a[1];
  if (g == NULL) return sched_reply_status(s, ev, SYS_ERR_NOREGION);
  if (slot == 0 || slot % MMD_SLOT_ALIGN || slot > MMD_SLAB_SIZE) return sched_reply_status(s, ev, SYS_ERR_ARG);
  int want = a[2] < 1 ? 1 : a[2] > MMD_LEASE_MAX ? MMD_LEASE_MAX : (int)a[2];
  mmd_cell_t cells[MMD_LEASE_MAX];
  int got = mmd_region_lease(&s->R, g, slot, ev->worker, want, cells);
  uint64_t granted[2 * MMD_LEASE_MAX];
  for (int i = 0; i < got; i++) {
    const mmd_slab_t *slab = mmd_cell(&s->R.meta, cells[i]);
    granted[2 * i] = slab->key << MMD_SLAB_SHIFT;
    granted[2 * i + 1] = slab->live;
  }
  sched_reply(s, ev->worker, got, 0, granted, got > 0 ? 2 * (size_t)got : 0);
}

/* The regions a worker has used, sorted: a part is live for it when its
 * region or one of that region's ancestors (the root aside) is among them. */
typedef struct live_set {
  const int64_t *rids;
  size_t n;
} live_set_t;

static bool live_set_has(const live_set_t *set, rid_t rid) {
  size_t lo = 0, hi = set->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (set->rids[mid] < rid) lo = mid + 1;
    else hi = mid;
  }
  return lo < set->n && set->rids[lo] == rid;
}

static bool live_for_worker(void *ctx, const mmd_region_t *g) {
  for (const mmd_region_t *r = g; r; r = r->parent)
    if ((r == g || r->rid != 0) && live_set_has(ctx, r->rid)) return true;
  return false;
}

/* items: (offset, length) pairs, then the worker's regions, sorted (arg 0:
 * how many items are pairs). Replies with the parts still live for it,
 * then those of its regions that still exist (val: how many items are pairs). */
static void on_live(mmd_sched_t *s, const mmd_event_t *ev) {
  const uint64_t *items = ev->req.items;
  uint64_t npair_items = (uint64_t)ev->req.hdr->arg[0];
  if (npair_items % 2 || npair_items > ev->req.hdr->nitems) return sched_reply_status(s, ev, SYS_ERR_ARG);
  live_set_t set = {(const int64_t *)items + npair_items, ev->req.hdr->nitems - npair_items};
  mmd_ranges_t live = {0};
  mmd_buf_t out = {0};
  int rc = 0;
  for (uint64_t i = 0; rc == 0 && i < npair_items; i += 2)
    rc = mmd_pack_live_part(&s->R, items[i], items[i + 1], live_for_worker, &set, &live);
  if (rc == 0) rc = mmd_buf_put(&out, live.r, live.n * sizeof *live.r);
  for (size_t i = 0; rc == 0 && i < set.n; i++)
    if (mmd_region_get(&s->R, set.rids[i])) rc = mmd_buf_put(&out, &set.rids[i], 8);
  if (rc != 0) out.len = 0;
  sched_reply(s, ev->worker, rc, rc == 0 ? (int64_t)live.n * 2 : 0, out.p, out.len / 8);
  mmd_ranges_free(&live);
  mmd_buf_free(&out);
}

/* ---------------------------------------------------------------------------
 * Handlers: workers together
 * ------------------------------------------------------------------------- */

static void sched_barrier_release(mmd_sched_t *s) {
  if (s->nbarrier == 0 || s->nbarrier < s->nworkers - s->ndone) return;
  for (int w = 0; w < s->nworkers; w++)
    if (s->owed[w].at_barrier) {
      s->owed[w].at_barrier = false;
      sched_reply(s, w, 0, 0, NULL, 0);
    }
  s->nbarrier = 0;
}

static void on_barrier(mmd_sched_t *s, const mmd_event_t *ev) {
  s->owed[ev->worker].at_barrier = true;
  s->nbarrier++;
  sched_barrier_release(s);
}

static void on_done(mmd_sched_t *s, const mmd_event_t *ev) {
  mmd_owed_t *o = &s->owed[ev->worker];
  if (o->done) return;
  o->done = true;
  owed_settle(s, o, ev->worker, &(mmd_buf_t){0});   /* it has returned every lease */
  s->ndone++;
  sched_barrier_release(s);   /* the others need not wait for it */
}

/* ---------------------------------------------------------------------------
 * The protocol table and the loop
 * ------------------------------------------------------------------------- */

static mmd_handler_fn *const handlers[MMD_MSG_COUNT] = {
    [MMD_MSG_RALLOC] = on_ralloc,   [MMD_MSG_RFREE] = on_rfree,   [MMD_MSG_ALLOC] = on_alloc,
    [MMD_MSG_FREE] = on_free,       [MMD_MSG_BALLOC] = on_balloc, [MMD_MSG_USABLE] = on_usable,
    [MMD_MSG_PACK] = on_pack,       [MMD_MSG_STATS] = on_stats,   [MMD_MSG_LEASE] = on_lease,
    [MMD_MSG_LIVE] = on_live,       [MMD_MSG_BARRIER] = on_barrier, [MMD_MSG_DONE] = on_done,
};

static void sched_dispatch(mmd_sched_t *s, int worker) {
  mmd_event_t ev = {.worker = worker};
  if (mmd_req_view(&s->req, &ev.req) != 0 || ev.req.hdr->type >= MMD_MSG_COUNT)
    return sched_reply(s, worker, SYS_ERR_ARG, 0, NULL, 0);
  for (uint32_t i = 0; i < ev.req.hdr->nreports; i++) sched_apply_report(s, worker, &ev.req.reports[i]);
  handlers[ev.req.hdr->type](s, &ev);
}

int mmd_sched_serve(mmd_sched_t *s) {
  while (s->ndone < s->nworkers) {
    int src;
    if (mmd_tp_next_request(&s->req, &src) != 0) return SYS_ERR_MPI;
    int worker = src - s->first_worker;
    if (worker >= 0 && worker < s->nworkers) sched_dispatch(s, worker);
  }
  return 0;
}

int mmd_sched_init(mmd_sched_t *s, uint64_t space_bytes, int first_worker, int nworkers) {
  *s = (mmd_sched_t){.first_worker = first_worker, .nworkers = nworkers};
  s->owed = calloc((size_t)nworkers, sizeof *s->owed);
  if (s->owed == NULL || mmd_regions_init(&s->R, space_bytes, MMD_MAX_RID) != 0) return SYS_ERR_NOMEM;
  s->R.zombie = sched_zombie;
  s->R.zombie_ctx = s;
  return 0;
}

void mmd_sched_destroy(mmd_sched_t *s) {
  s->R.zombie = NULL;   /* nobody is owed anything any more */
  for (int w = 0; w < s->nworkers; w++) {
    mmd_buf_free(&s->owed[w].revokes);
    mmd_buf_free(&s->owed[w].remote);
    mmd_ranges_free(&s->owed[w].zombies);
  }
  free(s->owed);
  mmd_regions_destroy(&s->R);
  mmd_buf_free(&s->req);
  mmd_buf_free(&s->rep);
}
