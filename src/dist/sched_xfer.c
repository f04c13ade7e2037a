/* SPDX-License-Identifier: Apache-2.0 */
/* sched_xfer.c: handlers that gather from several schedulers: packing
 * regions and objects for sys_send, the check of which resident memory is
 * still live for a worker, and the tree's counters. Each splits its items
 * by where they are served (route.c), answers its own part, sends one
 * request to each neighbour that serves the rest, and merges the replies. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "scheduler.h"
#include "transport.h"
#include "runs.h"

/* Items bound for one neighbour (children by position, then the parent),
 * and which of the job's items each one is. */
typedef struct split {
  mmd_buf_t first, second;   /* items of the request's two kinds */
  mmd_buf_t idx;             /* uint32_t: job item index of each, first kind then second */
  uint32_t nfirst;
} split_t;

typedef struct split_map {
  uint32_t nfirst, n;
  uint32_t idx[];
} split_map_t;

static split_t *splits_new(const mmd_sched_t *s) {
  return calloc((size_t)s->nchildren + 1, sizeof(split_t));
}

static split_t *split_for(const mmd_sched_t *s, split_t *sp, int route) {
  return &sp[route == MMD_TO_PARENT ? s->nchildren : route];
}

static int split_add(split_t *d, bool first, uint64_t item, uint32_t idx) {
  if (first) d->nfirst++;
  return mmd_buf_put(first ? &d->first : &d->second, &item, 8) | mmd_buf_put(&d->idx, &idx, 4);
}

/* Sends each neighbour its part (extra: items every part carries after
 * its own), with the map of its items as aux. */
static void splits_send(mmd_sched_t *s, mmd_job_t *job, split_t *sp, const mmd_event_t *ev, uint32_t type,
                        mmd_reply_fn *fn, const void *extra, size_t nextra) {
  for (int d = 0; d <= s->nchildren; d++) {
    split_t *p = &sp[d];
    size_t nfirst = p->first.len / 8, nsecond = p->second.len / 8;
    if (nfirst + nsecond > 0) {
      split_map_t *map = malloc(sizeof *map + p->idx.len);
      int rc = map && mmd_buf_put(&p->first, p->second.p, p->second.len) == 0 &&
               mmd_buf_put(&p->first, extra, nextra * 8) == 0 ? 0 : SYS_ERR_NOMEM;
      if (rc == 0) {
        *map = (split_map_t){(uint32_t)nfirst, (uint32_t)(nfirst + nsecond)};
        memcpy(map->idx, p->idx.p, p->idx.len);
        int64_t arg[3] = {(int64_t)nfirst, (int64_t)nsecond};
        rc = mmd_send_request(s, d == s->nchildren ? MMD_TO_PARENT : d, job, fn, (uint64_t)(uintptr_t)map,
                              ev->leaf, type, arg, p->first.p, p->first.len / 8);
      }
      if (rc != 0) {
        free(map);
        job->status = rc;
      }
    }
    mmd_buf_free(&p->first);
    mmd_buf_free(&p->second);
    mmd_buf_free(&p->idx);
  }
  free(sp);
}

/* ---------------------------------------------------------------------------
 * PACK
 * ------------------------------------------------------------------------- */

static void pack_fail(mmd_job_t *job, int64_t item, int64_t code) {
  if (item < job->bad) {
    job->bad = item;
    job->status = code;
  }
}

static void pack_done(mmd_sched_t *s, mmd_job_t *job) {
  mmd_ranges_t *l = &job->runs;
  int64_t rc = job->status;
  mmd_ranges_normalize(l);
  if (rc == 0) rc = mmd_ranges_split(l, MMD_TP_MAX_BLOCK);
  mmd_buf_t out = {0};
  if (rc == 0) rc = mmd_buf_put(&out, l->r, l->n * sizeof *l->r) | mmd_buf_put(&out, job->slots, job->nslots * 8);
  if (rc != 0) out.len = 0;
  mmd_answer(s, &job->origin, rc, rc == 0 ? (int64_t)l->n * 2 : job->bad, out.p, out.len / 8);
  mmd_buf_free(&out);
  mmd_job_free(job);
}

static void on_packed(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  split_map_t *map = (split_map_t *)(uintptr_t)aux;
  const mmd_rep_hdr_t *h = rep->hdr;
  uint64_t nrids = (uint64_t)job->arg[0];
  if (h->status < 0) {
    pack_fail(job, h->val >= 0 && h->val < map->n ? map->idx[h->val] : map->idx[0], h->status);
  } else {
    uint64_t run_items = (uint64_t)h->val, nobj = map->n - map->nfirst;
    for (uint64_t i = 0; i + 1 < run_items && i + 1 < h->nitems; i += 2)
      mmd_ranges_add(&job->runs, rep->items[i], rep->items[i + 1]);
    for (uint64_t j = 0; j < nobj && run_items + j < h->nitems; j++)
      job->slots[map->idx[map->nfirst + j] - nrids] = rep->items[run_items + j];
  }
  free(map);
  mmd_job_settle(s, job);
}

/* One region item: its local subtree packed, sub-regions owned below and
 * regions served elsewhere sent on. */
static void pack_rid(mmd_sched_t *s, mmd_job_t *job, split_t *sp, const mmd_event_t *ev, uint64_t i) {
  rid_t rid = (rid_t)ev->req.items[i];
  int route = mmd_route_rid(s, rid, ev->from == MMD_FROM_PARENT);
  if (route == MMD_NOWHERE) return pack_fail(job, (int64_t)i, SYS_ERR_NOREGION);
  if (route != MMD_HERE) {
    split_add(split_for(s, sp, route), true, (uint64_t)rid, (uint32_t)i);
    return;
  }
  mmd_region_t *g = mmd_region_get(&s->R, rid);
  if (mmd_pack_region(g, 1, &job->runs) != 0) return pack_fail(job, (int64_t)i, SYS_ERR_NOMEM);
  for (const mmd_region_t *r = g; r; r = mmd_region_walk_next(r, g))
    for (uint32_t k = 0; k < r->nkids; k++) split_add(&sp[r->kids[k].child], true, (uint64_t)r->kids[k].rid, (uint32_t)i);
}

static void pack_object(mmd_sched_t *s, mmd_job_t *job, split_t *sp, const mmd_event_t *ev, uint64_t i) {
  uint64_t off = ev->req.items[i], nrids = (uint64_t)job->arg[0];
  int route = mmd_route_off(s, off, ev->from == MMD_FROM_PARENT);
  if (route == MMD_NOWHERE) return pack_fail(job, (int64_t)i, SYS_ERR_FREED);
  if (route != MMD_HERE) {
    split_add(split_for(s, sp, route), false, off, (uint32_t)i);
    return;
  }
  const mmd_region_t *g = mmd_region_of(&s->R, off);
  int64_t size = mmd_pool_usable(&g->pool, off);
  if (size < 0) return pack_fail(job, (int64_t)i, size);
  if (mmd_ranges_add(&job->runs, off, (uint64_t)size) != 0) return pack_fail(job, (int64_t)i, SYS_ERR_NOMEM);
  job->slots[i - nrids] = (uint64_t)g->rid;
}

/* arg: #rids, #offsets; items: the rids, then the object offsets. Replies
 * with the runs to move (val: how many items they take), then each
 * object's region; or with the index of the first item that fails in val. */
void mmd_on_pack(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (a[0] < 0 || a[1] < 0 || (uint64_t)(a[0] + a[1]) != ev->req.hdr->nitems)
    return mmd_answer_status(s, ev, SYS_ERR_ARG);
  mmd_job_t *job = mmd_job_new(ev, pack_done);
  split_t *sp = splits_new(s);
  if (job) job->slots = calloc((size_t)a[1] + 1, 8);
  if (!job || !sp || !job->slots) {
    if (job) mmd_job_free(job);
    free(sp);
    return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  }
  job->nslots = (size_t)a[1];
  job->arg[0] = a[0];
  job->bad = INT64_MAX;
  for (int64_t i = 0; i < a[0] + a[1]; i++) {
    if (i < a[0]) pack_rid(s, job, sp, ev, (uint64_t)i);
    else pack_object(s, job, sp, ev, (uint64_t)i);
  }
  if (job->status == 0) splits_send(s, job, sp, ev, MMD_MSG_PACK, on_packed, NULL, 0);
  else free(sp);   /* nothing sent on: the error is known */
  mmd_job_start(s, job);
}

/* ---------------------------------------------------------------------------
 * LIVE
 * ------------------------------------------------------------------------- */

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
  for (const mmd_region_t *r = g; r; r = r->parent) {
    if ((r == g || r->rid != 0) && live_set_has(ctx, r->rid)) return true;
    for (uint32_t i = 0; i < r->nancestors; i++)
      if (live_set_has(ctx, r->ancestors[i])) return true;
  }
  return false;
}

static int rid_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void live_done(mmd_sched_t *s, mmd_job_t *job) {
  mmd_buf_t out = {0};
  size_t nrids = job->out.len / 8;
  if (nrids) qsort(job->out.p, nrids, 8, rid_cmp);   /* the worker merges both with its sorted lists */
  mmd_ranges_normalize(&job->runs);
  int rc = job->status ? (int)job->status
                       : mmd_buf_put(&out, job->runs.r, job->runs.n * 16) | mmd_buf_put(&out, job->out.p, job->out.len);
  if (rc != 0) out.len = 0;
  mmd_answer(s, &job->origin, rc, rc == 0 ? (int64_t)job->runs.n * 2 : 0, out.p, out.len / 8);
  mmd_buf_free(&out);
  mmd_job_free(job);
}

static void on_live_part(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  free((void *)(uintptr_t)aux);
  const mmd_rep_hdr_t *h = rep->hdr;
  if (h->status < 0) job->status = h->status;
  for (uint64_t i = 0; h->status == 0 && i + 1 < (uint64_t)h->val; i += 2)
    mmd_ranges_add(&job->runs, rep->items[i], rep->items[i + 1]);
  if (h->status == 0) mmd_buf_put(&job->out, rep->items + h->val, (h->nitems - (uint64_t)h->val) * 8);
  mmd_job_settle(s, job);
}

/* The parts of [off, end) lent to children, each to its child. */
static void live_lent_parts(mmd_sched_t *s, split_t *sp, uint64_t off, uint64_t end) {
  uint64_t key, v, klo = off >> MMD_SLAB_SHIFT;
  bool ok = mmd_trie_floor(&s->lent_ranges, klo, &key, &v);
  if (!ok || (key + (v >> 32)) << MMD_SLAB_SHIFT <= off) ok = mmd_trie_ceil(&s->lent_ranges, klo, &key, &v);
  for (; ok && (key << MMD_SLAB_SHIFT) < end; ok = mmd_trie_next(&s->lent_ranges, &key, &v)) {
    uint64_t lo = key << MMD_SLAB_SHIFT, hi = (key + (v >> 32)) << MMD_SLAB_SHIFT;
    lo = lo > off ? lo : off;
    hi = hi < end ? hi : end;
    if (lo < hi) {
      split_add(&sp[v & 0xffffffffu], true, lo, 0);
      split_add(&sp[v & 0xffffffffu], true, hi - lo, 0);
    }
  }
}

/* The parts of [off, end) this scheduler does not hold: the parent's. */
static void live_parent_parts(mmd_sched_t *s, split_t *sp, uint64_t off, uint64_t end) {
  uint64_t key, n, at = off;
  bool ok = mmd_trie_floor(&s->held, off >> MMD_SLAB_SHIFT, &key, &n);
  if (!ok || (key + n) << MMD_SLAB_SHIFT <= off) ok = mmd_trie_ceil(&s->held, off >> MMD_SLAB_SHIFT, &key, &n);
  while (at < end) {
    uint64_t lo = ok && key << MMD_SLAB_SHIFT < end ? key << MMD_SLAB_SHIFT : end;
    if (lo > at) {
      split_add(&sp[s->nchildren], true, at, 0);
      split_add(&sp[s->nchildren], true, lo - at, 0);
    }
    if (lo == end) break;
    uint64_t hi = (key + n) << MMD_SLAB_SHIFT;
    if (hi > at) at = hi;
    ok = mmd_trie_next(&s->held, &key, &n);
  }
}

/* arg: #pair items, #rids to confirm (-1: every rid of the set); items:
 * (offset, length) pairs, the rids to confirm, the worker's regions, sorted.
 * Replies with the parts live for it, then the confirmed rids that still
 * exist (val: how many items are pairs). */
void mmd_on_live(mmd_sched_t *s, const mmd_event_t *ev) {
  const uint64_t *items = ev->req.items;
  uint64_t npair = (uint64_t)ev->req.hdr->arg[0], n = ev->req.hdr->nitems;
  int64_t nconf = ev->req.hdr->arg[1];
  if (npair % 2 || npair > n || (nconf >= 0 && (uint64_t)nconf > n - npair)) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  const int64_t *conf = (const int64_t *)items + npair;
  live_set_t set = {conf + (nconf < 0 ? 0 : nconf), n - npair - (uint64_t)(nconf < 0 ? 0 : nconf)};
  uint64_t nconfirm = nconf < 0 ? set.n : (uint64_t)nconf;
  bool from_parent = ev->from == MMD_FROM_PARENT, up = s->parent_rank >= 0 && !from_parent;
  mmd_job_t *job = mmd_job_new(ev, live_done);
  split_t *sp = splits_new(s);
  if (!job || !sp) {
    if (job) mmd_job_free(job);
    free(sp);
    return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  }
  for (uint64_t i = 0; i < npair; i += 2) {
    uint64_t off = items[i], end = items[i] + items[i + 1];
    if (mmd_pack_live_part(&s->R, off, items[i + 1], live_for_worker, &set, &job->runs) != 0) job->status = SYS_ERR_NOMEM;
    live_lent_parts(s, sp, off, end);
    if (up) live_parent_parts(s, sp, off, end);
  }
  for (uint64_t i = 0; i < nconfirm; i++) {
    int route = mmd_route_rid(s, conf[i], from_parent);
    if (route == MMD_HERE) mmd_buf_put(&job->out, &conf[i], 8);
    else if (route != MMD_NOWHERE) split_add(split_for(s, sp, route), false, (uint64_t)conf[i], 0);
  }
  splits_send(s, job, sp, ev, MMD_MSG_LIVE, on_live_part, set.rids, set.n);
  mmd_job_start(s, job);
}

/* ---------------------------------------------------------------------------
 * SCHED_STATS
 * ------------------------------------------------------------------------- */

static void on_child_counts(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  (void)aux;
  int64_t *sum = (int64_t *)job->out.p;
  if (rep->hdr->status == 0 && rep->hdr->nitems * 8 == sizeof(sys_sched_stats_t))
    for (size_t i = 0; i < sizeof(sys_sched_stats_t) / 8; i++)
      if (i != offsetof(sys_sched_stats_t, levels) / 8) sum[i] += (int64_t)rep->items[i];
  mmd_job_settle(s, job);
}

/* The tree's counters: asked of the top, which sums its subtree's. */
void mmd_on_sched_stats(mmd_sched_t *s, const mmd_event_t *ev) {
  if (ev->from != MMD_FROM_PARENT && s->parent_rank >= 0) return mmd_forward(s, ev, MMD_TO_PARENT);
  sys_sched_stats_t st = {
      .schedulers = 1, .levels = s->tree->nlevels, .requests = s->counts.requests,
      .sched_messages = s->counts.sched_messages, .forwarded = s->counts.forwarded,
      .grants = s->counts.grants, .returns = s->counts.returns, .regions = (int64_t)s->R.nregions - 1};
  mmd_job_t *job = mmd_job_new(ev, mmd_job_answer);
  if (job == NULL || mmd_buf_put(&job->out, &st, sizeof st) != 0) {
    if (job) mmd_job_free(job);
    return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  }
  for (int c = 0; c < s->nchildren; c++)
    mmd_send_request(s, c, job, on_child_counts, 0, ev->leaf, MMD_MSG_SCHED_STATS, (int64_t[3]){0}, NULL, 0);
  mmd_job_start(s, job);
}
