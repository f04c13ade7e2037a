/* SPDX-License-Identifier: Apache-2.0 */
/* worker.c: a worker's state and its round trips to the scheduler. Every
 * request carries the lease reports that are due; every reply brings the
 * regions whose leases to drop and the remote frees in leased slabs, which
 * are applied here before the caller sees the reply. */
#include <stdlib.h>
#include <time.h>
#include "worker.h"
#include "errors.h"
#include "slab.h"
#include "transport.h"

mmd_worker_t *mmd_self;

int mmd_worker_init(mmd_worker_t *w) {
  mmd_leases_init(&w->leases, w->base, mmd_trie_bits_for(w->size >> MMD_SLAB_SHIFT));
  mmd_resident_init(&w->resident);
  mmd_retain_init(&w->retain, w->retain_ms);
  return 0;
}

void mmd_worker_destroy(mmd_worker_t *w) {
  mmd_leases_destroy(&w->leases);
  mmd_resident_destroy(&w->resident);
  mmd_retain_destroy(&w->retain);
  mmd_buf_free(&w->req);
  mmd_buf_free(&w->rep);
}

/* The slabs of revoked leases, gathered to go back as merged runs. */
typedef struct worker_dropped {
  mmd_worker_t *w;
  mmd_ranges_t runs;
} worker_dropped_t;

static void worker_drop_slab(void *ctx, uint64_t off) {
  worker_dropped_t *d = ctx;
  mmd_resident_defer(d->w, &d->runs, off, MMD_SLAB_SIZE);
}

static void worker_apply_reply(mmd_worker_t *w) {
  const mmd_rep_view_t *v = &w->reply;
  worker_dropped_t dropped = {.w = w};
  for (uint32_t i = 0; i < v->hdr->nrevokes; i++)
    mmd_lease_revoke(&w->leases, v->revokes[i], worker_drop_slab, &dropped);
  mmd_resident_release_runs(w, &dropped.runs, false);
  mmd_ranges_free(&dropped.runs);
  for (uint32_t i = 0; i < v->hdr->nremote; i++) {
    int twice = mmd_lease_remote(&w->leases, v->remote[i].off, v->remote[i].bits);
    if (twice > 0)
      mmd_fail(SYS_ERR_FREED, "sys_free", "%d object(s) of the slab at %p, freed by another worker",
               twice, mmd_ptr(w, v->remote[i].off));
  }
}

static int worker_build(mmd_worker_t *w, mmd_msg_type_t type, const int64_t arg[3],
                        const void *items, size_t nitems) {
  mmd_req_hdr_t h = {.type = type, .nitems = (uint32_t)nitems, .arg = {arg[0], arg[1], arg[2]}};
  w->req.len = 0;
  if (mmd_buf_put(&w->req, &h, sizeof h) != 0) return SYS_ERR_NOMEM;
  uint32_t nreports = 0;
  if (mmd_lease_reports(&w->leases, &w->req, &nreports) != 0 ||
      mmd_buf_put(&w->req, items, nitems * 8) != 0)
    return SYS_ERR_NOMEM;
  ((mmd_req_hdr_t *)w->req.p)->nreports = nreports;
  return 0;
}

int64_t mmd_call(mmd_worker_t *w, mmd_msg_type_t type, int64_t a0, int64_t a1, int64_t a2,
                 const void *items, size_t nitems) {
  const int64_t arg[3] = {a0, a1, a2};
  mmd_worker_tidy(w);
  int rc = worker_build(w, type, arg, items, nitems);
  if (rc != 0) return rc;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  rc = mmd_tp_call(w->sched_rank, &w->req, &w->rep);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  w->calls++;
  w->wait_ns += (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
  if (rc != 0 || mmd_rep_view(&w->rep, &w->reply) != 0) return SYS_ERR_MPI;
  worker_apply_reply(w);
  return w->reply.hdr->status;
}

int mmd_notify_done(mmd_worker_t *w) {
  const int64_t arg[3] = {0};
  mmd_lease_return_all(&w->leases);
  int rc = worker_build(w, MMD_MSG_DONE, arg, NULL, 0);
  return rc ? rc : mmd_tp_send_request(w->sched_rank, &w->req);
}
