/* SPDX-License-Identifier: Apache-2.0 */
/* event.c: requests that need other schedulers (the paper's re-entrant,
 * stateful events). A job keeps where a request came from and what its
 * replies gathered; each request sent for it waits in the table under a
 * ticket the reply echoes. */
#include <stdlib.h>
#include <string.h>
#include "scheduler.h"
#include "transport.h"

mmd_job_t *mmd_job_new(const mmd_event_t *origin, mmd_job_done_fn *done) {
  mmd_job_t *job = calloc(1, sizeof *job);
  if (job == NULL) return NULL;
  job->origin = *origin;
  job->origin.req = (mmd_req_view_t){0};
  job->origin.retry = true;   /* whoever served it has asked for memory already */
  job->done = done;
  return job;
}

void mmd_job_free(mmd_job_t *job) {
  mmd_ranges_free(&job->runs);
  mmd_buf_free(&job->out);
  free(job->slots);
  free(job);
}

void mmd_job_answer(mmd_sched_t *s, mmd_job_t *job) {
  mmd_answer(s, &job->origin, job->status, job->val, job->out.p, job->out.len / 8);
  mmd_job_free(job);
}

void mmd_job_start(mmd_sched_t *s, mmd_job_t *job) {
  if (job->waiting == 0) job->done(s, job);
}

void mmd_job_settle(mmd_sched_t *s, mmd_job_t *job) {
  if (--job->waiting == 0) job->done(s, job);
}

/* ---------------------------------------------------------------------------
 * The table of waiting requests
 * ------------------------------------------------------------------------- */

static uint64_t wait_add(mmd_sched_t *s, mmd_job_t *job, mmd_reply_fn *fn, uint64_t aux) {
  uint32_t i;
  if (s->nfree_waits) {
    i = s->free_waits[--s->nfree_waits];
  } else {
    if (s->nwaits == s->waits_cap) {
      uint32_t cap = s->waits_cap ? 2 * s->waits_cap : 64;
      mmd_wait_t *w = realloc(s->waits, cap * sizeof *w);
      if (w) s->waits = w;
      uint32_t *f = w ? realloc(s->free_waits, cap * sizeof *f) : NULL;
      if (f == NULL) return 0;
      s->free_waits = f;
      s->waits_cap = cap;
    }
    i = s->nwaits++;
    s->waits[i].gen = 0;
  }
  mmd_wait_t *w = &s->waits[i];
  w->job = job;
  w->on_reply = fn;
  w->aux = aux;
  w->gen++;
  return (uint64_t)w->gen << 32 | (i + 1);
}

void mmd_on_link_reply(mmd_sched_t *s, const mmd_link_hdr_t *h, const mmd_rep_view_t *rep) {
  uint32_t i = (uint32_t)h->ticket - 1;
  if (i >= s->nwaits || s->waits[i].gen != (uint32_t)(h->ticket >> 32) || s->waits[i].job == NULL) return;
  mmd_wait_t w = s->waits[i];
  s->waits[i].job = NULL;
  s->free_waits[s->nfree_waits++] = i;
  w.on_reply(s, w.job, rep, w.aux);
}

/* ---------------------------------------------------------------------------
 * Sending
 * ------------------------------------------------------------------------- */

static int send_link(mmd_sched_t *s, int to, uint64_t ticket, int leaf, uint32_t type, const int64_t arg[3],
                     const void *items, size_t nitems) {
  mmd_link_hdr_t l = {.leaf = leaf, .ticket = ticket};
  mmd_req_hdr_t h = {.type = type, .nitems = (uint32_t)nitems, .arg = {arg[0], arg[1], arg[2]}};
  s->link.len = 0;
  if (mmd_buf_put(&s->link, &l, sizeof l) != 0 || mmd_buf_put(&s->link, &h, sizeof h) != 0 ||
      mmd_buf_put(&s->link, items, nitems * 8) != 0)
    return SYS_ERR_NOMEM;
  s->counts.sched_messages++;
  return mmd_tp_link_send(to == MMD_TO_PARENT ? s->parent_rank : s->member_rank[s->nworkers + to], &s->link);
}

int mmd_send_request(mmd_sched_t *s, int to, mmd_job_t *job, mmd_reply_fn *on_reply, uint64_t aux,
                     int leaf, uint32_t type, const int64_t arg[3], const void *items, size_t nitems) {
  if (job == NULL) return SYS_ERR_NOMEM;
  uint64_t ticket = wait_add(s, job, on_reply, aux);
  if (ticket == 0) return SYS_ERR_NOMEM;
  int rc = send_link(s, to, ticket, leaf, type, arg, items, nitems);
  if (rc != 0) {
    uint32_t i = (uint32_t)ticket - 1;
    s->waits[i].job = NULL;
    s->free_waits[s->nfree_waits++] = i;
    return rc;
  }
  job->waiting++;
  return 0;
}

int mmd_notify(mmd_sched_t *s, int to, uint32_t type, const int64_t arg[3], const void *items, size_t nitems) {
  return send_link(s, to, 0, -1, type, arg, items, nitems);
}

/* ---------------------------------------------------------------------------
 * Forwarding
 * ------------------------------------------------------------------------- */

void mmd_reply_keep(mmd_sched_t *s, mmd_job_t *job, const mmd_rep_view_t *rep, uint64_t aux) {
  (void)aux;
  job->status = rep->hdr->status;
  job->val = rep->hdr->val;
  if (mmd_buf_put(&job->out, rep->items, (size_t)rep->hdr->nitems * 8) != 0) {
    job->status = SYS_ERR_NOMEM;
    job->out.len = 0;
  }
  mmd_job_settle(s, job);
}

void mmd_forward(mmd_sched_t *s, const mmd_event_t *ev, int to) {
  const mmd_req_hdr_t *h = ev->req.hdr;
  s->counts.forwarded++;
  if (!mmd_from_worker(s, ev) && ev->ticket == 0) {   /* a notification passes on as one */
    mmd_notify(s, to, h->type, h->arg, ev->req.items, h->nitems);
    return;
  }
  mmd_job_t *job = mmd_job_new(ev, mmd_job_answer);
  int rc = mmd_send_request(s, to, job, mmd_reply_keep, 0, ev->leaf, h->type, h->arg, ev->req.items, h->nitems);
  if (rc != 0) {
    if (job) mmd_job_free(job);
    mmd_answer(s, &(mmd_event_t){.from = ev->from, .ticket = ev->ticket, .leaf = ev->leaf, .retry = true}, rc, 0,
               NULL, 0);
  }
}
