/* SPDX-License-Identifier: Apache-2.0 */
/* sched_region.c: handlers for regions: creating one (here, or down the
 * tree where its level hint and the load say), freeing one with the
 * sub-regions other schedulers own, their statistics, and the links a
 * parent region keeps to sub-regions owned below it. */
#include <stdlib.h>
#include <string.h>
#include "scheduler.h"

/* g's ID and its ancestors' (the root aside), nearest first, whichever
 * scheduler they live on. */
static int region_chain(const mmd_sched_t *s, const mmd_region_t *g, mmd_buf_t *out) {
  for (const mmd_region_t *r = g; r && r != s->R.root; r = r->parent) {
    if (mmd_buf_put(out, &r->rid, 8) != 0) return SYS_ERR_NOMEM;
    if (r->parent == s->R.root && mmd_buf_put(out, r->ancestors, (size_t)r->nancestors * 8) != 0)
      return SYS_ERR_NOMEM;
  }
  return 0;
}

/* ---------------------------------------------------------------------------
 * Creating
 * ------------------------------------------------------------------------- */

/* The scheduler level a hint asks for (see sys_ralloc). */
static int hint_level(const mmd_sched_t *s, int64_t hint) {
  int levels = s->tree->nlevels;
  return hint <= 0 || hint > levels ? levels - 1 : (int)hint - 1;
}

static void ralloc_placed(mmd_sched_t *s, mmd_job_t *job) {
  mmd_region_t *p = mmd_region_get(&s->R, job->arg[0]);
  int child = (int)job->arg[1];
  if (job->status >= 0 && (p == NULL || mmd_region_add_kid(p, job->status, child) != 0)) {
    /* the parent went meanwhile: the new region goes too */
    mmd_notify(s, child, MMD_MSG_RFREE, (int64_t[3]){job->status, 1, job->arg[0]}, NULL, 0);
    job->status = p ? SYS_ERR_NOMEM : SYS_ERR_NOREGION;
  }
  mmd_job_answer(s, job);
}

static void on_created(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  (void)aux;
  job->status = rep->hdr->status;
  mmd_job_settle(s, job);
}

/* The parent p is here, the new region belongs lower: a child makes it. */
static void ralloc_down(mmd_sched_t *s, const mmd_event_t *ev, mmd_region_t *p, int level) {
  mmd_buf_t chain = {0};
  int child = mmd_place_child(s, ev->leaf);
  mmd_job_t *job = mmd_job_new(ev, ralloc_placed);
  int rc = job ? region_chain(s, p, &chain) : SYS_ERR_NOMEM;
  if (rc == 0) {
    job->arg[0] = p->rid;
    job->arg[1] = child;
    rc = mmd_send_request(s, child, job, on_created, 0, ev->leaf, MMD_MSG_CREATE,
                          (int64_t[3]){level, ev->req.hdr->arg[1]}, chain.p, chain.len / 8);
  }
  mmd_buf_free(&chain);
  if (rc != 0) {
    if (job) mmd_job_free(job);
    mmd_answer_status(s, ev, rc);
  }
}

/* arg: parent, level hint. */
void mmd_on_ralloc(mmd_sched_t *s, const mmd_event_t *ev) {
  rid_t parent = ev->req.hdr->arg[0];
  int level = hint_level(s, ev->req.hdr->arg[1]);
  int route = mmd_route_rid(s, parent, ev->from == MMD_FROM_PARENT);
  if (route == MMD_HERE) {
    if (level <= s->level || s->nchildren == 0)
      return mmd_answer_status(s, ev, mmd_region_create(&s->R, parent, (int)ev->req.hdr->arg[1]));
    return ralloc_down(s, ev, mmd_region_get(&s->R, parent), level);
  }
  if (parent == 0 && route == MMD_TO_PARENT && level >= s->level) {
    /* under the root, at this level: made here, and the top told */
    rid_t rid = mmd_region_create_remote(&s->R, NULL, 0, (int)ev->req.hdr->arg[1]);
    if (rid >= 0) mmd_notify(s, MMD_TO_PARENT, MMD_MSG_LINK, (int64_t[3]){0, rid}, NULL, 0);
    return mmd_answer_status(s, ev, rid);
  }
  mmd_elsewhere(s, ev, route, SYS_ERR_NOREGION);
}

/* From the parent: arg: level, hint; items: the parent region's chain. */
void mmd_on_create(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (ev->from != MMD_FROM_PARENT || ev->req.hdr->nitems == 0) return mmd_answer_status(s, ev, SYS_ERR_ARG);
  if (a[0] > s->level && s->nchildren > 0) return mmd_forward(s, ev, mmd_place_child(s, ev->leaf));
  mmd_answer_status(s, ev, mmd_region_create_remote(&s->R, (const rid_t *)ev->req.items, ev->req.hdr->nitems,
                                                     (int)a[1]));
}

/* arg: parent, rid. A region was made under parent in the sender's subtree. */
void mmd_on_link(mmd_sched_t *s, const mmd_event_t *ev) {
  int route = mmd_route_rid(s, ev->req.hdr->arg[0], false), child = mmd_child_of(s, ev);
  if (route == MMD_TO_PARENT) return mmd_forward(s, ev, route);
  mmd_region_t *p = route == MMD_HERE && child >= 0 ? mmd_region_get(&s->R, ev->req.hdr->arg[0]) : NULL;
  if (p) mmd_region_add_kid(p, ev->req.hdr->arg[1], child);
}

void mmd_on_unlink(mmd_sched_t *s, const mmd_event_t *ev) {
  int route = mmd_route_rid(s, ev->req.hdr->arg[0], false);
  if (route == MMD_TO_PARENT) return mmd_forward(s, ev, route);
  mmd_region_t *p = route == MMD_HERE ? mmd_region_get(&s->R, ev->req.hdr->arg[0]) : NULL;
  if (p) mmd_region_drop_kid(p, ev->req.hdr->arg[1]);
}

/* ---------------------------------------------------------------------------
 * Freeing
 * ------------------------------------------------------------------------- */

static void rfree_done(mmd_sched_t *s, mmd_job_t *job) {
  mmd_answer(s, &job->origin, 0, 0, job->runs.r, job->runs.n * 2);
  mmd_job_free(job);
}

static void on_kid_freed(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  (void)aux;
  for (uint32_t i = 0; rep->hdr->status == 0 && i + 1 < rep->hdr->nitems; i += 2)
    mmd_ranges_add(&job->runs, rep->items[i], rep->items[i + 1]);
  mmd_job_settle(s, job);
}

/* arg: rid; from the owner of its parent: 1, the parent. Replies with the
 * runs freed, in every scheduler, for the caller to give back. */
void mmd_on_rfree(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (a[0] == 0) return mmd_answer_status(s, ev, SYS_ERR_ROOT);
  if (mmd_elsewhere(s, ev, mmd_route_rid(s, a[0], ev->from == MMD_FROM_PARENT), SYS_ERR_NOREGION)) return;
  mmd_region_t *g = mmd_region_get(&s->R, a[0]);
  bool from_owner = a[1] == 1;
  if (from_owner && (g->nancestors == 0 || g->ancestors[0] != a[2]))
    return mmd_answer_status(s, ev, SYS_ERR_NOREGION);
  mmd_job_t *job = mmd_job_new(ev, rfree_done);
  if (job == NULL) return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  mmd_pack_region(g, 1, &job->runs);
  for (const mmd_region_t *r = g; r; r = mmd_region_walk_next(r, g))
    for (uint32_t k = 0; k < r->nkids; k++)
      mmd_send_request(s, r->kids[k].child, job, on_kid_freed, 0, ev->leaf, MMD_MSG_RFREE,
                       (int64_t[3]){r->kids[k].rid, 1, r->rid}, NULL, 0);
  if (!from_owner && g->nancestors > 0)
    mmd_notify(s, MMD_TO_PARENT, MMD_MSG_UNLINK, (int64_t[3]){g->ancestors[0], g->rid}, NULL, 0);
  mmd_region_destroy(&s->R, a[0]);
  mmd_job_start(s, job);
}

/* ---------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------- */

static void stats_done(mmd_sched_t *s, mmd_job_t *job) {
  mmd_answer(s, &job->origin, job->status, 0, job->out.p, job->status == 0 ? job->out.len / 8 : 0);
  mmd_job_free(job);
}

/* aux: 1 to sum the sub-region's figures, 0 to count its regions only. */
static void on_kid_stats(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  sys_region_stats_t *st = (sys_region_stats_t *)job->out.p, kid;
  if (rep->hdr->status == 0 && rep->hdr->nitems * 8 == sizeof kid) {
    memcpy(&kid, rep->items, sizeof kid);
    st->subregions += kid.subregions + 1;
    if (!aux) return mmd_job_settle(s, job);
    st->live_objects += kid.live_objects;
    st->live_bytes += kid.live_bytes;
    st->slabs_full += kid.slabs_full;
    st->slabs_partial += kid.slabs_partial;
    st->slabs_free += kid.slabs_free;
    st->transfer_bytes += kid.transfer_bytes;
    st->transfer_ranges += kid.transfer_ranges;
  }
  mmd_job_settle(s, job);
}

static sys_region_stats_t stats_local(const mmd_sched_t *s, mmd_region_t *g, int with_sub) {
  mmd_pool_counts_t c;
  uint64_t sub;
  mmd_region_counts(g, with_sub, &c, &sub);
  mmd_ranges_t packed = {0};
  mmd_pack_region(g, with_sub, &packed);
  mmd_ranges_normalize(&packed);
  sys_region_stats_t st = {
      .live_objects = (int64_t)c.live_objects, .live_bytes = (int64_t)c.live_bytes,
      .slabs_full = (int64_t)c.slabs_full, .slabs_partial = (int64_t)(c.slabs_partial + c.slabs_leased_live),
      .slabs_free = (int64_t)c.slabs_free, .transfer_bytes = (int64_t)mmd_ranges_bytes(&packed),
      .transfer_ranges = (int64_t)packed.n, .subregions = (int64_t)sub,
      .scheduler = s->self, .scheduler_level = s->level};
  mmd_ranges_free(&packed);
  return st;
}

/* arg: rid, with sub-regions. Those owned below are asked and summed. */
void mmd_on_stats(mmd_sched_t *s, const mmd_event_t *ev) {
  const int64_t *a = ev->req.hdr->arg;
  if (mmd_elsewhere(s, ev, mmd_route_rid(s, a[0], ev->from == MMD_FROM_PARENT), SYS_ERR_NOREGION)) return;
  mmd_region_t *g = mmd_region_get(&s->R, a[0]);
  sys_region_stats_t st = stats_local(s, g, a[1] != 0);
  mmd_job_t *job = mmd_job_new(ev, stats_done);
  if (job == NULL || mmd_buf_put(&job->out, &st, sizeof st) != 0) {
    if (job) mmd_job_free(job);
    return mmd_answer_status(s, ev, SYS_ERR_NOMEM);
  }
  for (const mmd_region_t *r = g; r; r = mmd_region_walk_next(r, g))
    for (uint32_t k = 0; k < r->nkids; k++)
      mmd_send_request(s, r->kids[k].child, job, on_kid_stats, a[1] != 0, ev->leaf, MMD_MSG_STATS,
                       (int64_t[3]){r->kids[k].rid, a[1] != 0}, NULL, 0);
  mmd_job_start(s, job);
}
