/* SPDX-License-Identifier: Apache-2.0 */
/* scheduler.c: the scheduler's event loop and the protocol table. One
 * handler a request type (the handlers live in sched_*.c and trade.c by
 * subject); every answer goes through mmd_answer(), which also delivers
 * what a worker is owed (leases to drop, remote frees in its leased slabs).
 * A handler may defer its answer: the barrier, a child's done, and every
 * request that needs another scheduler (event.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runs.h"
#include "scheduler.h"
#include "transport.h"
#include "errors.h"

#define MMD_MAX_RID ((rid_t)INT32_MAX)

static void sched_check_barrier(mmd_sched_t *s);
static void sched_check_done(mmd_sched_t *s);

/* ---------------------------------------------------------------------------
 * What a worker is owed
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

void mmd_owe_remote(mmd_sched_t *s, int32_t worker, uint64_t off) {
  mmd_buf_put(&s->owed[worker].remote, &off, sizeof off);
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
 * Answers
 * ------------------------------------------------------------------------- */

static void sched_reply_worker(mmd_sched_t *s, int worker, int64_t status, int64_t val,
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
  mmd_tp_reply(s->member_rank[worker], &s->rep);
}

static void sched_reply_link(mmd_sched_t *s, const mmd_event_t *ev, int64_t status, int64_t val,
                             const void *items, size_t nitems) {
  mmd_link_hdr_t l = {.is_reply = 1, .ticket = ev->ticket};
  mmd_rep_hdr_t h = {.status = status, .val = val, .nitems = (uint32_t)nitems};
  s->rep.len = 0;
  if (mmd_buf_put(&s->rep, &l, sizeof l) != 0 || mmd_buf_put(&s->rep, &h, sizeof h) != 0 ||
      mmd_buf_put(&s->rep, items, nitems * 8) != 0) {
    h = (mmd_rep_hdr_t){.status = SYS_ERR_NOMEM};
    s->rep.len = sizeof l;
    mmd_buf_put(&s->rep, &h, sizeof h);
  }
  s->counts.sched_messages++;
  mmd_tp_link_send(ev->from == MMD_FROM_PARENT ? s->parent_rank : s->member_rank[ev->from], &s->rep);
}

void mmd_answer(mmd_sched_t *s, const mmd_event_t *ev, int64_t status, int64_t val, const void *items,
                size_t nitems) {
  if ((status == SYS_ERR_NOMEM || status == SYS_ERR_NOIDS) && !ev->retry && mmd_trade_park(s, ev, status))
    return;
  if (mmd_from_worker(s, ev)) sched_reply_worker(s, ev->from, status, val, items, nitems);
  else if (ev->ticket != 0) sched_reply_link(s, ev, status, val, items, nitems);
}

/* ---------------------------------------------------------------------------
 * Lease reports, applied before every worker's request
 * ------------------------------------------------------------------------- */

void mmd_apply_report(mmd_sched_t *s, int worker, const mmd_report_t *r) {
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
             twice, (unsigned long long)r->off, s->first_worker + worker);
}

/* ---------------------------------------------------------------------------
 * Members together: the barrier, the end, the shutdown
 * ------------------------------------------------------------------------- */

static void sched_release(mmd_sched_t *s) {
  for (int m = 0; m < s->nmembers; m++) {
    if (!s->at_barrier[m]) continue;
    s->at_barrier[m] = false;
    if (m < s->nworkers) {
      sched_reply_worker(s, m, 0, 0, NULL, 0);
    } else {
      mmd_job_answer(s, s->deferred[m - s->nworkers]);
      s->deferred[m - s->nworkers] = NULL;
    }
  }
  s->nbarrier = 0;
  s->barrier_sent = false;
}

static void sched_released(mmd_sched_t *s, mmd_job_t *job) {
  mmd_job_free(job);
  sched_release(s);
}

static void sched_check_barrier(mmd_sched_t *s) {
  if (s->nbarrier == 0 || s->nbarrier < s->nmembers - s->ndone || s->barrier_sent) return;
  if (s->parent_rank < 0) return sched_release(s);
  s->barrier_sent = true;   /* every member is in: this subtree joins the parent's barrier */
  mmd_send_request(s, MMD_TO_PARENT, mmd_job_new(&(mmd_event_t){0}, sched_released), mmd_reply_keep, 0, -1,
                   MMD_MSG_BARRIER, (int64_t[3]){0}, NULL, 0);
}

/* A child's barrier or done is answered when the subtree is released. */
static void sched_defer(mmd_sched_t *s, const mmd_event_t *ev) {
  int c = mmd_child_of(s, ev);
  if (c >= 0) s->deferred[c] = mmd_job_new(ev, mmd_job_answer);
}

static void on_barrier(mmd_sched_t *s, const mmd_event_t *ev) {
  if (ev->from < 0 || s->at_barrier[ev->from] || s->done[ev->from]) return mmd_answer_status(s, ev, SYS_ERR_STATE);
  sched_defer(s, ev);
  s->at_barrier[ev->from] = true;
  s->nbarrier++;
  sched_check_barrier(s);
}

static void sched_check_finish(mmd_sched_t *s) {
  if (s->finished || !s->shutting || s->nbye < s->nchildren) return;
  if (s->parent_rank >= 0) mmd_notify(s, MMD_TO_PARENT, MMD_MSG_BYE, (int64_t[3]){0}, NULL, 0);
  s->finished = true;
}

/* The whole tree is done: the children may stop, and this one once they
 * have said bye (whatever they sent before has then arrived). */
static void sched_shutdown(mmd_sched_t *s, mmd_job_t *job) {
  if (job) mmd_job_free(job);
  for (int c = 0; c < s->nchildren; c++) {
    if (s->deferred[c]) mmd_job_answer(s, s->deferred[c]);
    s->deferred[c] = NULL;
  }
  s->shutting = true;
  sched_check_finish(s);
}

/* Every member is done: the top shuts the tree down; any other scheduler
 * tells its parent and serves the others until the shutdown comes. */
static void sched_check_done(mmd_sched_t *s) {
  if (s->ndone < s->nmembers || s->done_asked) return;
  s->done_asked = true;
  if (s->parent_rank < 0) return sched_shutdown(s, NULL);
  mmd_send_request(s, MMD_TO_PARENT, mmd_job_new(&(mmd_event_t){0}, sched_shutdown), mmd_reply_keep, 0, -1,
                   MMD_MSG_DONE, (int64_t[3]){0}, NULL, 0);
}

static void on_done(mmd_sched_t *s, const mmd_event_t *ev) {
  if (ev->from < 0 || s->done[ev->from]) return;
  if (mmd_from_worker(s, ev)) owed_settle(s, &s->owed[ev->from], ev->from, &(mmd_buf_t){0});  /* every lease is back */
  sched_defer(s, ev);
  s->done[ev->from] = true;
  s->ndone++;
  sched_check_barrier(s);   /* the others need not wait for it */
  sched_check_done(s);
}

static void on_bye(mmd_sched_t *s, const mmd_event_t *ev) {
  (void)ev;
  s->nbye++;
  sched_check_finish(s);
}

/* ---------------------------------------------------------------------------
 * The protocol table and the loop
 * ------------------------------------------------------------------------- */

static mmd_handler_fn *const handlers[MMD_MSG_COUNT] = {
    [MMD_MSG_RALLOC] = mmd_on_ralloc,   [MMD_MSG_RFREE] = mmd_on_rfree,
    [MMD_MSG_ALLOC] = mmd_on_alloc,     [MMD_MSG_FREE] = mmd_on_free,
    [MMD_MSG_BALLOC] = mmd_on_balloc,   [MMD_MSG_USABLE] = mmd_on_usable,
    [MMD_MSG_PACK] = mmd_on_pack,       [MMD_MSG_STATS] = mmd_on_stats,
    [MMD_MSG_LEASE] = mmd_on_lease,     [MMD_MSG_LIVE] = mmd_on_live,
    [MMD_MSG_BARRIER] = on_barrier,     [MMD_MSG_DONE] = on_done,
    [MMD_MSG_SCHED_STATS] = mmd_on_sched_stats,
    /* between schedulers only */
    [MMD_MSG_CREATE] = mmd_on_create,   [MMD_MSG_LINK] = mmd_on_link,
    [MMD_MSG_UNLINK] = mmd_on_unlink,   [MMD_MSG_GRANT] = mmd_on_grant,
    [MMD_MSG_RETURN] = mmd_on_return,   [MMD_MSG_RECLAIM] = mmd_on_reclaim,
    [MMD_MSG_LOAD] = mmd_on_load,
    [MMD_MSG_BYE] = on_bye,
};

void mmd_sched_handle(mmd_sched_t *s, const mmd_event_t *ev) {
  handlers[ev->req.hdr->type](s, ev);
}

static void sched_from_worker(mmd_sched_t *s, int worker) {
  mmd_event_t ev = {.from = worker, .leaf = s->self};
  if (worker < 0 || worker >= s->nworkers) return;
  if (mmd_req_view(&s->msg, &ev.req) != 0 || ev.req.hdr->type >= MMD_MSG_CREATE)
    return sched_reply_worker(s, worker, SYS_ERR_ARG, 0, NULL, 0);
  s->counts.requests++;
  for (uint32_t i = 0; i < ev.req.hdr->nreports; i++) mmd_apply_report(s, worker, &ev.req.reports[i]);
  mmd_sched_handle(s, &ev);
}

static void sched_from_sched(mmd_sched_t *s, int src) {
  mmd_link_hdr_t l;
  if (s->msg.len < sizeof l) return;
  memcpy(&l, s->msg.p, sizeof l);
  mmd_buf_t body = {.p = s->msg.p + sizeof l, .len = s->msg.len - sizeof l};
  if (l.is_reply) {
    mmd_rep_view_t v;
    if (mmd_rep_view(&body, &v) == 0) mmd_on_link_reply(s, &l, &v);
    return;
  }
  mmd_event_t ev = {.from = s->member_of[src], .ticket = l.ticket, .leaf = l.leaf};
  if (ev.from != MMD_FROM_PARENT && ev.from < s->nworkers) return;   /* not a neighbour */
  if (mmd_req_view(&body, &ev.req) != 0 || ev.req.hdr->type >= MMD_MSG_COUNT || ev.req.hdr->nreports)
    return mmd_answer_status(s, &ev, SYS_ERR_ARG);
  mmd_sched_handle(s, &ev);
}

int mmd_sched_serve(mmd_sched_t *s) {
  mmd_trade_check(s);   /* a lower scheduler asks for its first chunks */
  while (!s->finished) {
    int src;
    bool link;
    if (mmd_tp_next_message(&s->msg, &src, &link) != 0) return SYS_ERR_MPI;
    if (src < 0 || src >= s->tree->size) continue;
    if (link) sched_from_sched(s, src);
    else sched_from_worker(s, s->member_of[src]);
    mmd_trade_check(s);
    mmd_load_check(s);
  }
  return mmd_tp_link_drain();
}

/* ---------------------------------------------------------------------------
 * Start and end
 * ------------------------------------------------------------------------- */

static int sched_members(mmd_sched_t *s) {
  const mmd_tree_t *t = s->tree;
  s->member_rank = malloc((size_t)(s->nmembers ? s->nmembers : 1) * sizeof(int));
  s->member_of = malloc((size_t)t->size * sizeof(int));
  s->owed = calloc((size_t)s->nworkers + 1, sizeof *s->owed);
  s->at_barrier = calloc((size_t)s->nmembers + 1, sizeof(bool));
  s->done = calloc((size_t)s->nmembers + 1, sizeof(bool));
  s->deferred = calloc((size_t)s->nchildren + 1, sizeof *s->deferred);
  s->child_load = calloc((size_t)s->nchildren + 1, sizeof *s->child_load);
  if (!s->member_rank || !s->member_of || !s->owed || !s->at_barrier || !s->done || !s->deferred || !s->child_load)
    return SYS_ERR_NOMEM;
  for (int r = 0; r < t->size; r++) s->member_of[r] = -2;
  if (s->parent_rank >= 0) s->member_of[s->parent_rank] = MMD_FROM_PARENT;
  for (int w = 0; w < s->nworkers; w++) s->member_rank[w] = t->worker_rank[s->first_worker + w];
  for (int c = 0; c < s->nchildren; c++) s->member_rank[s->nworkers + c] = t->sched_rank[s->first_child + c];
  for (int m = 0; m < s->nmembers; m++) s->member_of[s->member_rank[m]] = m;
  return 0;
}

int mmd_sched_init(mmd_sched_t *s, const mmd_tree_t *tree, int self, uint64_t space_bytes) {
  *s = (mmd_sched_t){.tree = tree, .self = self, .level = mmd_tree_level(tree, self), .parent_rank = -1};
  int parent = mmd_tree_parent(tree, self);
  if (parent >= 0) s->parent_rank = tree->sched_rank[parent];
  s->nchildren = mmd_tree_nchildren(tree, self);
  if (s->nchildren) s->first_child = mmd_tree_first_child(tree, self);
  if (mmd_tree_is_leaf(tree, self)) {
    s->first_worker = tree->leaf_first[mmd_tree_leaf_pos(tree, self)];
    s->nworkers = tree->leaf_workers[mmd_tree_leaf_pos(tree, self)];
  }
  s->nmembers = s->nworkers + s->nchildren;
  int rc = sched_members(s);
  if (rc == 0) rc = mmd_regions_init(&s->R, space_bytes, MMD_MAX_RID, parent < 0);
  if (rc != 0) return rc;
  mmd_trie_init(&s->held, &s->R.meta, s->R.key_bits);
  mmd_trie_init(&s->lent_ranges, &s->R.meta, s->R.key_bits);
  mmd_trie_init(&s->lent_ids, &s->R.meta, mmd_trie_bits_for((uint64_t)MMD_MAX_RID));
  if (parent < 0 && mmd_runs_add(&s->held, 0, s->R.space_slabs) != 0) return SYS_ERR_NOMEM;
  s->R.zombie = sched_zombie;
  s->R.zombie_ctx = s;
  mmd_trade_init(s, space_bytes);
  return 0;
}

void mmd_sched_destroy(mmd_sched_t *s) {
  s->R.zombie = NULL;   /* nobody is owed anything any more */
  for (int w = 0; s->owed && w < s->nworkers; w++) {
    mmd_buf_free(&s->owed[w].revokes);
    mmd_buf_free(&s->owed[w].remote);
    mmd_ranges_free(&s->owed[w].zombies);
  }
  while (s->parked) {
    mmd_parked_t *p = s->parked;
    s->parked = p->next;
    mmd_buf_free(&p->req);
    free(p);
  }
  free(s->waits);
  free(s->free_waits);
  free(s->owed);
  free(s->member_rank);
  free(s->member_of);
  free(s->at_barrier);
  free(s->done);
  free(s->deferred);
  free(s->child_load);
  mmd_regions_destroy(&s->R);
  mmd_buf_free(&s->msg);
  mmd_buf_free(&s->rep);
  mmd_buf_free(&s->link);
}
