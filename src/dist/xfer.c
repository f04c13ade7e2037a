/* SPDX-License-Identifier: Apache-2.0 */
/* xfer.c: sys_send, sys_recv, sys_sendrecv and sys_barrier. The sender asks
 * its scheduler to pack the regions (with their sub-regions) and objects into
 * (offset, length) runs, sends the receiver one header with the region IDs,
 * the object offsets, the objects' regions and the runs, then the memory
 * itself in one transfer. A sender that fails still sends a header, carrying
 * its error, so that the receiver returns instead of waiting forever.
 * sys_sendrecv swaps the headers, then moves the memory both ways at once. */
#include "errors.h"
#include "transport.h"
#include "worker.h"
#include "space.h"

typedef struct mmd_xfer_hdr {
  int64_t status;      /* the sender's error, or 0 */
  uint32_t nregions;   /* rid_t, then */
  uint32_t nobjects;   /* uint64_t offsets, then the objects' rid_t, then */
  uint32_t nranges;    /* mmd_range_t */
  uint32_t pad;
} mmd_xfer_hdr_t;

static bool xfer_peer_ok(const mmd_worker_t *w, int peer) {
  return peer >= 0 && peer < w->nworkers && peer != w->id;
}

/* Counts that are not negative, and an array wherever a count is not 0. */
static bool xfer_arrays_ok(rid_t *regions, int nr, void **objects, int no) {
  return nr >= 0 && no >= 0 && (nr == 0 || regions) && (no == 0 || objects);
}

/* The header's first part, which is also the PACK request's items: the
 * region IDs and the object offsets. 0, or a code with *bad the item. */
static int xfer_named(mmd_worker_t *w, mmd_buf_t *b, rid_t *regions, int nr, void **objects, int no,
                      int64_t *bad) {
  mmd_xfer_hdr_t h = {.nregions = (uint32_t)nr, .nobjects = (uint32_t)no};
  if (mmd_buf_put(b, &h, sizeof h) != 0 || mmd_buf_put(b, regions, (size_t)nr * 8) != 0) return SYS_ERR_NOMEM;
  for (int i = 0; i < no; i++) {
    if (!mmd_in_space(w, objects[i])) {
      *bad = nr + i;
      return SYS_ERR_NOTGLOBAL;
    }
    uint64_t off = mmd_off(w, objects[i]);
    if (mmd_buf_put(b, &off, 8) != 0) return SYS_ERR_NOMEM;
  }
  return 0;
}

/* The scheduler's runs for what b names: 0, or a code with *bad the item. */
static int xfer_pack(mmd_worker_t *w, const mmd_buf_t *b, int nr, int no, int64_t *bad) {
  const uint64_t *items = (const uint64_t *)(b->p + sizeof(mmd_xfer_hdr_t));
  int rc = (int)mmd_call(w, MMD_MSG_PACK, nr, no, 0, items, (size_t)nr + (size_t)no);
  *bad = rc != SYS_ERR_MPI && rc != SYS_ERR_NOMEM ? w->reply.hdr->val : 0;
  return rc;
}

/* Completes the header with what the pack reply gave: the objects'
 * regions, then the runs. */
static int xfer_complete_header(mmd_worker_t *w, mmd_buf_t *b, int no) {
  const mmd_rep_view_t *v = &w->reply;
  size_t range_items = (size_t)v->hdr->val;
  ((mmd_xfer_hdr_t *)b->p)->nranges = (uint32_t)(range_items / 2);
  if (mmd_buf_put(b, v->items + range_items, (size_t)no * 8) != 0 ||
      mmd_buf_put(b, v->items, range_items * 8) != 0)
    return SYS_ERR_NOMEM;
  return 0;
}

static void xfer_fail_item(int rc, const char *call, int peer, rid_t *regions, int nr, void **objects,
                           int64_t bad) {
  if (bad < nr) mmd_fail(rc, call, "to worker %d, region %lld", peer, (long long)regions[bad]);
  else mmd_fail(rc, call, "to worker %d, object %p", peer, objects[bad - nr]);
}

/* The outgoing side: b becomes the header and *runs the memory to send
 * (inside the pack reply: read it before the next call). On failure b is a
 * header carrying the error, so that the peer returns instead of waiting,
 * and the one line is printed. */
static int xfer_outgoing(mmd_worker_t *w, const char *call, int peer, rid_t *regions, int nr, void **objects,
                         int no, mmd_buf_t *b, mmd_ranges_t *runs) {
  int64_t bad = 0;
  int rc = xfer_arrays_ok(regions, nr, objects, no) ? 0 : SYS_ERR_ARG;
  if (rc == 0) rc = xfer_named(w, b, regions, nr, objects, no, &bad);
  if (rc == 0 && (rc = xfer_pack(w, b, nr, no, &bad)) > 0) rc = 0;
  if (rc == 0) {
    size_t nruns = (size_t)w->reply.hdr->val / 2;
    *runs = (mmd_ranges_t){.r = (mmd_range_t *)w->reply.items, .n = nruns, .cap = nruns};
    rc = xfer_complete_header(w, b, no);
  }
  if (rc == 0) return 0;
  b->len = 0;
  mmd_buf_put(b, &(mmd_xfer_hdr_t){.status = rc}, sizeof(mmd_xfer_hdr_t));
  if (rc == SYS_ERR_ARG || rc == SYS_ERR_NOMEM || rc == SYS_ERR_MPI) mmd_fail(rc, call, "to worker %d", peer);
  else xfer_fail_item(rc, call, peer, regions, nr, objects, bad);
  return rc;
}

int sys_send(int peer_worker, rid_t *regions, int num_regions, void **objects, int num_objects) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_send", "to worker %d", peer_worker);
  if (!xfer_peer_ok(w, peer_worker)) return mmd_fail(SYS_ERR_PEER, "sys_send", "to worker %d", peer_worker);
  mmd_buf_t b = {0};
  mmd_ranges_t runs = {0};
  int rc = xfer_outgoing(w, "sys_send", peer_worker, regions, num_regions, objects, num_objects, &b, &runs);
  int sent = mmd_tp_send_msg(peer_worker, &b);
  mmd_buf_free(&b);
  if (rc != 0) return rc;
  if (sent == 0) sent = mmd_tp_send_ranges(peer_worker, w->base, &runs);
  return sent < 0 ? mmd_fail(sent, "sys_send", "to worker %d", peer_worker) : 0;
}

/* ---------------------------------------------------------------------------
 * Receiving
 * ------------------------------------------------------------------------- */

/* 0 when b is a well-formed header without an error; SYS_ERR_PEER when it
 * carries the sender's error. */
static int xfer_incoming_ok(const mmd_buf_t *b) {
  const mmd_xfer_hdr_t *h = (const mmd_xfer_hdr_t *)b->p;
  if (b->len < sizeof *h) return SYS_ERR_MPI;
  if (h->status != 0) return SYS_ERR_PEER;
  return b->len == sizeof *h + 8ull * (h->nregions + 2ull * h->nobjects) + 16ull * h->nranges ? 0 : SYS_ERR_MPI;
}

/* The memory an incoming header announces. */
static mmd_ranges_t xfer_incoming_runs(const mmd_xfer_hdr_t *h) {
  const mmd_range_t *r = (const mmd_range_t *)((const uint64_t *)(h + 1) + h->nregions + 2ull * h->nobjects);
  return (mmd_ranges_t){.r = (mmd_range_t *)r, .n = h->nranges, .cap = h->nranges};
}

/* Makes the pages ready for the data (decision 0008). */
static void xfer_prefault(mmd_worker_t *w, const mmd_ranges_t *l) {
  for (size_t i = 0; i < l->n; i++) mmd_space_prefault(w->base, l->r[i].off, l->r[i].len);
}

/* Records what arrived as resident, with the regions it came from. */
static void xfer_arrived(mmd_worker_t *w, const mmd_xfer_hdr_t *h, const mmd_ranges_t *l) {
  const int64_t *rids = (const int64_t *)(h + 1), *owners = rids + h->nregions + h->nobjects;
  for (uint32_t i = 0; i < h->nregions; i++) mmd_resident_touch(w, rids[i]);
  for (uint32_t i = 0; i < h->nobjects; i++) mmd_resident_touch(w, owners[i]);
  for (size_t i = 0; i < l->n; i++) mmd_resident_add(w, l->r[i].off, l->r[i].len);
}

/* Fills the caller's arrays from the header (h NULL: nothing arrived);
 * SYS_ERR_TRUNCATE when they are too small. */
static int xfer_fill(mmd_worker_t *w, const mmd_xfer_hdr_t *h, rid_t *regions, int nr, void **objects,
                     int no) {
  mmd_xfer_hdr_t none = {0};
  if (h == NULL) h = &none;
  const int64_t *rids = (const int64_t *)(h + 1);
  const uint64_t *offs = (const uint64_t *)(rids + h->nregions);
  for (int i = 0; i < nr; i++) regions[i] = (uint32_t)i < h->nregions ? rids[i] : SYS_NO_REGION;
  for (int i = 0; i < no; i++) objects[i] = (uint32_t)i < h->nobjects ? mmd_ptr(w, offs[i]) : NULL;
  return h->nregions > (uint32_t)nr || h->nobjects > (uint32_t)no ? SYS_ERR_TRUNCATE : 0;
}

int sys_recv(int peer_worker, rid_t *regions, int num_regions, void **objects, int num_objects) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_recv", "from worker %d", peer_worker);
  if (!xfer_peer_ok(w, peer_worker)) return mmd_fail(SYS_ERR_PEER, "sys_recv", "from worker %d", peer_worker);
  if (!xfer_arrays_ok(regions, num_regions, objects, num_objects))
    num_regions = num_objects = 0;   /* still receive, then report the arrays too small */
  mmd_buf_t b = {0};
  int rc = mmd_tp_recv_msg(peer_worker, &b);
  const mmd_xfer_hdr_t *h = (const mmd_xfer_hdr_t *)b.p;
  if (rc == 0) rc = xfer_incoming_ok(&b);
  if (rc == 0) {
    mmd_ranges_t l = xfer_incoming_runs(h);
    xfer_prefault(w, &l);
    rc = mmd_tp_recv_ranges(peer_worker, w->base, &l);
    if (rc == 0) xfer_arrived(w, h, &l);
  }
  int filled = xfer_fill(w, rc == 0 ? h : NULL, regions, num_regions, objects, num_objects);
  if (rc == 0) rc = filled;
  mmd_buf_free(&b);
  mmd_worker_tidy(w);   /* a receiver may never call otherwise */
  return rc < 0 ? mmd_fail(rc, "sys_recv", "from worker %d", peer_worker) : 0;
}

/* ---------------------------------------------------------------------------
 * Both ways at once
 * ------------------------------------------------------------------------- */

int sys_sendrecv(int peer_worker, rid_t *send_regions, int num_send_regions, void **send_objects,
                 int num_send_objects, rid_t *recv_regions, int num_recv_regions, void **recv_objects,
                 int num_recv_objects) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_sendrecv", "with worker %d", peer_worker);
  if (!xfer_peer_ok(w, peer_worker)) return mmd_fail(SYS_ERR_PEER, "sys_sendrecv", "with worker %d", peer_worker);
  if (!xfer_arrays_ok(recv_regions, num_recv_regions, recv_objects, num_recv_objects))
    num_recv_regions = num_recv_objects = 0;
  mmd_buf_t out = {0}, in = {0};
  mmd_ranges_t runs = {0};
  int mine = xfer_outgoing(w, "sys_sendrecv", peer_worker, send_regions, num_send_regions, send_objects,
                           num_send_objects, &out, &runs);
  int rc = mmd_tp_exchange_msg(peer_worker, &out, &in);
  const mmd_xfer_hdr_t *h = (const mmd_xfer_hdr_t *)in.p;
  bool shared = false;
  if (rc == 0) rc = xfer_incoming_ok(&in);
  if (rc == 0 && mine == 0) {   /* both sides know whether both headers were good */
    mmd_ranges_t l = xfer_incoming_runs(h);
    /* Sharing bytes, the two ways could not both see the other's old
     * contents; both sides find it and refuse, as MPI_Sendrecv would. */
    shared = mmd_ranges_overlap(&runs, &l);
    if (!shared) xfer_prefault(w, &l);
    rc = shared ? SYS_ERR_ARG : mmd_tp_exchange_ranges(peer_worker, w->base, &runs, &l);
    if (rc == 0) xfer_arrived(w, h, &l);
  }
  int filled = xfer_fill(w, rc == 0 && mine == 0 ? h : NULL, recv_regions, num_recv_regions, recv_objects,
                         num_recv_objects);
  if (rc == 0) rc = filled;
  mmd_buf_free(&out);
  mmd_buf_free(&in);
  mmd_worker_tidy(w);
  if (mine != 0) return mine;   /* its line is printed */
  if (shared) return mmd_fail(rc, "sys_sendrecv", "with worker %d: what goes and what comes share memory", peer_worker);
  return rc < 0 ? mmd_fail(rc, "sys_sendrecv", "with worker %d", peer_worker) : 0;
}

int sys_barrier(void) {
  mmd_worker_t *w = mmd_self;
  if (w == NULL) return mmd_fail(SYS_ERR_STATE, "sys_barrier", "%s", "");
  int64_t rc = mmd_call(w, MMD_MSG_BARRIER, 0, 0, 0, NULL, 0);
  return rc < 0 ? mmd_fail((int)rc, "sys_barrier", "%s", "") : 0;
}
